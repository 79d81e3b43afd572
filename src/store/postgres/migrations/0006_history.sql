-- mcp-tasks task store, schema version 6: each record's history, a JSON
-- array of its newest entries (at most 32, the oldest dropped first), and
-- how many older entries it dropped. Records written before start with
-- none. A column with a constant default is added without rewriting the
-- table.
ALTER TABLE mcp_tasks_tasks ADD COLUMN history JSONB NOT NULL DEFAULT '[]';
ALTER TABLE mcp_tasks_tasks ADD COLUMN history_dropped BIGINT NOT NULL DEFAULT 0;
INSERT INTO mcp_tasks_schema (version, applied)
    VALUES (6, (extract(epoch FROM now()) * 1000)::int8);
