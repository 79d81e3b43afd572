-- mcp-tasks task store, schema version 4: the delivered records by when
-- they were recorded, for `prune`, which removes the oldest a small batch
-- at a time. The index reads only columns a save never changes (`created`,
-- and `ending` and `delivered` in its condition, which the claim indexes
-- read already), so that it costs an open record's saves nothing.
CREATE INDEX mcp_tasks_tasks_delivered ON mcp_tasks_tasks (created, id)
    WHERE ending IS NOT NULL AND delivered;
INSERT INTO mcp_tasks_schema (version, applied)
    VALUES (4, (extract(epoch FROM now()) * 1000)::int8);
