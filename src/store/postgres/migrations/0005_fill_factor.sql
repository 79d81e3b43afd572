-- mcp-tasks task store, schema version 5: room on each page of the tasks
-- table for the next version of its rows, so that a claim (which changes
-- no indexed column) is a HOT update: no new index entries, and no dead
-- ones left in the claim's index for the next claims to walk. Pages
-- written before keep their fill until rewritten (VACUUM FULL) or pruned.
-- And vacuumed once a small share of its rows are dead, whatever its
-- size: every save leaves a dead entry in the due index, where each
-- claim starts its walk, until a vacuum removes it.
ALTER TABLE mcp_tasks_tasks SET (
    fillfactor = 50,
    autovacuum_vacuum_scale_factor = 0.02,
    autovacuum_vacuum_threshold = 1000
);
INSERT INTO mcp_tasks_schema (version, applied)
    VALUES (5, (extract(epoch FROM now()) * 1000)::int8);
