-- mcp-tasks task store, schema version 3: the caller's key, unique in its
-- scope unless the label says otherwise (records written before keep
-- theirs as they were), and found by its own index.
ALTER TABLE mcp_tasks_tasks ADD COLUMN unique_key BOOLEAN NOT NULL DEFAULT FALSE;
CREATE UNIQUE INDEX mcp_tasks_tasks_unique_key ON mcp_tasks_tasks (scope, key)
    WHERE unique_key AND key IS NOT NULL;
CREATE INDEX mcp_tasks_tasks_key ON mcp_tasks_tasks (key) WHERE key IS NOT NULL;
INSERT INTO mcp_tasks_schema (version, applied)
    VALUES (3, (extract(epoch FROM now()) * 1000)::int8);
