//! The schema and its migrations, applied once by workers starting together.

use super::*;

/// The schema version this code writes and reads.
pub(super) const VERSION: i64 = 2;

/// The key of the advisory lock that migrations hold, so that workers
/// starting together apply them once ("mcp-task" in ASCII).
pub(super) const MIGRATION_LOCK: i64 = 0x6d63_702d_7461_736b;

/// The migrations, in order: a version and the statements that reach it.
/// Append only: a published migration never changes.
pub(super) const MIGRATIONS: &[(i64, &str)] = &[(1, SCHEMA_V1), (2, SCHEMA_V2)];

/// Version 1: the tasks table, the fencing sequence and the claim indexes.
pub(super) const SCHEMA_V1: &str = "
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
";

/// Version 2: the questions a task asks, when its oldest waiting question
/// was first seen (for listings of records that ask, by their own partial
/// index), the builder's schedule, whether an answer or a cancel came from
/// elsewhere since the last claim (`nudged`), and the revision that guards
/// every write of the questions and answers.
pub(super) const SCHEMA_V2: &str = "
ALTER TABLE mcp_tasks_tasks ADD COLUMN questions TEXT NOT NULL DEFAULT '{}';
ALTER TABLE mcp_tasks_tasks ADD COLUMN asking_since BIGINT;
ALTER TABLE mcp_tasks_tasks ADD COLUMN schedule TEXT NOT NULL DEFAULT '{}';
ALTER TABLE mcp_tasks_tasks ADD COLUMN nudged BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE mcp_tasks_tasks ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
CREATE INDEX mcp_tasks_tasks_asking ON mcp_tasks_tasks (asking_since, id)
    WHERE asking_since IS NOT NULL AND ending IS NULL;
";

/// Brings the schema up to date, under an advisory lock held until the
/// transaction ends.
pub(super) async fn migrate(client: &mut Client) -> StoreResult<()> {
    let sql = |e| classify(e).0;
    let tx = client.transaction().await.map_err(sql)?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK])
        .await
        .map_err(sql)?;
    tx.batch_execute(
        "CREATE TABLE IF NOT EXISTS mcp_tasks_schema \
         (version BIGINT PRIMARY KEY, applied BIGINT NOT NULL)",
    )
    .await
    .map_err(sql)?;
    let found: Option<i64> = tx
        .query_one("SELECT max(version) FROM mcp_tasks_schema", &[])
        .await
        .map_err(sql)?
        .try_get(0)
        .map_err(sql)?;
    let found = found.unwrap_or(0);
    if found > VERSION {
        // Dropping the transaction rolls it back.
        return Err(StoreError::schema_too_new(found, VERSION));
    }
    for (version, statements) in MIGRATIONS.iter().filter(|(v, _)| *v > found) {
        tx.batch_execute(statements).await.map_err(sql)?;
        tx.execute(
            "INSERT INTO mcp_tasks_schema (version, applied) VALUES ($1, $2)",
            &[version, &millis(SystemTime::now())],
        )
        .await
        .map_err(sql)?;
        tracing::info!(version, "the task store's schema was migrated");
    }
    tx.commit().await.map_err(sql)
}
