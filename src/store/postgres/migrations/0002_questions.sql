-- mcp-tasks task store, schema version 2: the questions a task asks, when
-- its oldest waiting question was first seen (for listings of records that
-- ask, by their own partial index), the builder's schedule, whether an
-- answer or a cancel came from elsewhere since the last claim (`nudged`),
-- and the revision that guards every write of the questions and answers.
ALTER TABLE mcp_tasks_tasks ADD COLUMN questions TEXT NOT NULL DEFAULT '{}';
ALTER TABLE mcp_tasks_tasks ADD COLUMN asking_since BIGINT;
ALTER TABLE mcp_tasks_tasks ADD COLUMN schedule TEXT NOT NULL DEFAULT '{}';
ALTER TABLE mcp_tasks_tasks ADD COLUMN nudged BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE mcp_tasks_tasks ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
CREATE INDEX mcp_tasks_tasks_asking ON mcp_tasks_tasks (asking_since, id)
    WHERE asking_since IS NOT NULL AND ending IS NULL;
INSERT INTO mcp_tasks_schema (version, applied)
    VALUES (2, (extract(epoch FROM now()) * 1000)::int8);
