-- mcp-tasks task store, schema version 1: the tasks table, the fencing
-- sequence and the claim indexes. Apply the files of this folder in order,
-- each in a transaction, as the role that owns the schema; or let
-- `PostgresStore::migrate` (or `mcp-tasks store migrate URL`) do it.
CREATE TABLE IF NOT EXISTS mcp_tasks_schema (
    version BIGINT PRIMARY KEY,
    applied BIGINT NOT NULL
);
CREATE SEQUENCE mcp_tasks_fence AS BIGINT;
CREATE TABLE mcp_tasks_tasks (
    id BIGSERIAL PRIMARY KEY,
    task_id TEXT NOT NULL,
    server TEXT,
    protocol_version TEXT,
    tool TEXT NOT NULL,
    key TEXT,
    scope TEXT NOT NULL,
    created BIGINT NOT NULL,
    updated BIGINT NOT NULL,
    status TEXT NOT NULL,
    status_message TEXT,
    poll_interval_ms BIGINT,
    due BIGINT NOT NULL,
    failed_reads INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until BIGINT,
    fence BIGINT,
    answers TEXT NOT NULL DEFAULT '{}',
    cancel_requested BOOLEAN NOT NULL DEFAULT FALSE,
    ending TEXT,
    delivered BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX mcp_tasks_tasks_open_due ON mcp_tasks_tasks (due, id) WHERE ending IS NULL;
CREATE INDEX mcp_tasks_tasks_undelivered ON mcp_tasks_tasks (due, id)
    WHERE ending IS NOT NULL AND NOT delivered;
CREATE INDEX mcp_tasks_tasks_scope ON mcp_tasks_tasks (scope, id);
INSERT INTO mcp_tasks_schema (version, applied)
    VALUES (1, (extract(epoch FROM now()) * 1000)::int8);
