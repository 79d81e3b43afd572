//! The SQLite store's schema: its migrations, applied when a file is
//! opened, and the file's creation and connection settings.

use std::path::Path;

use rusqlite::Connection;

use super::super::{StoreError, StoreResult};
use super::sql::{BUSY_TIMEOUT, sql};

/// The schema, one migration per version: the database's version is the
/// number of migrations applied to it (`PRAGMA user_version`). Append only:
/// a published migration never changes.
pub(super) const MIGRATIONS: &[&str] = &[
    // 1: the tasks, their indexes for claims and listings, the fence counter.
    "CREATE TABLE tasks (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        task_id TEXT NOT NULL,
        server TEXT,
        protocol_version TEXT,
        tool TEXT NOT NULL,
        key TEXT,
        scope TEXT NOT NULL,
        created_ms INTEGER NOT NULL,
        updated_ms INTEGER NOT NULL,
        status TEXT NOT NULL,
        status_message TEXT,
        poll_interval_ms INTEGER,
        due_ms INTEGER NOT NULL,
        failed_reads INTEGER NOT NULL DEFAULT 0,
        lease_owner TEXT,
        lease_until_ms INTEGER NOT NULL DEFAULT 0,
        fence INTEGER NOT NULL DEFAULT 0,
        answers TEXT NOT NULL DEFAULT '{}',
        cancel_requested INTEGER NOT NULL DEFAULT 0,
        ending TEXT,
        delivered INTEGER NOT NULL DEFAULT 0
    );
    CREATE INDEX tasks_open_by_due ON tasks (due_ms) WHERE ending IS NULL;
    CREATE INDEX tasks_undelivered_by_due ON tasks (due_ms)
        WHERE ending IS NOT NULL AND delivered = 0;
    CREATE INDEX tasks_by_scope ON tasks (scope);
    CREATE TABLE fences (
        only INTEGER PRIMARY KEY CHECK (only = 1),
        last INTEGER NOT NULL
    );
    INSERT INTO fences (only, last) VALUES (1, 0);",
    // 2: the questions a task asks, the oldest one waiting (for listings
    // of records that ask), the builder's schedule, and whether an answer
    // or a cancel came from elsewhere since the last claim.
    "ALTER TABLE tasks ADD COLUMN questions TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE tasks ADD COLUMN asking_since_ms INTEGER;
    ALTER TABLE tasks ADD COLUMN schedule TEXT NOT NULL DEFAULT '{}';
    ALTER TABLE tasks ADD COLUMN nudged INTEGER NOT NULL DEFAULT 0;
    CREATE INDEX tasks_asking ON tasks (asking_since_ms, id)
        WHERE asking_since_ms IS NOT NULL AND ending IS NULL;",
    // 3: the caller's key, unique in its scope unless the label says
    // otherwise (records written before keep theirs as they were), and
    // found by its own index.
    "ALTER TABLE tasks ADD COLUMN unique_key INTEGER NOT NULL DEFAULT 0;
    CREATE UNIQUE INDEX tasks_unique_key ON tasks (scope, key)
        WHERE unique_key <> 0 AND key IS NOT NULL;
    CREATE INDEX tasks_by_key ON tasks (key) WHERE key IS NOT NULL;",
    // 4: the rows no claim can judge, a value of the wrong type where a
    // claim compares or writes one (`misfiled!`), so that the claims find
    // and report them at once; empty while nothing is damaged.
    concat!(
        "CREATE INDEX tasks_misfiled ON tasks (id) WHERE ",
        misfiled!(),
        ";"
    ),
    // 5: the delivered records by when they were recorded, for `prune`,
    // which removes the oldest a small batch at a time. A record enters
    // it once, when delivered; no save of an open record touches it.
    concat!(
        "CREATE INDEX tasks_delivered_by_created ON tasks (created_ms, id) WHERE ",
        delivered!(),
        ";"
    ),
    // 6: each record's history (a JSON array of its newest entries) and
    // how many older entries it dropped; records written before start
    // with none.
    "ALTER TABLE tasks ADD COLUMN history TEXT NOT NULL DEFAULT '[]';
    ALTER TABLE tasks ADD COLUMN history_dropped INTEGER NOT NULL DEFAULT 0;",
];

/// Creates the file at `path` readable by its owner alone, unless it
/// exists; SQLite then opens it as an empty database.
pub(super) fn create_private(path: &Path) -> StoreResult<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    match options.open(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(()),
        Err(e) => {
            Err(StoreError::unavailable(format!("cannot create {}", path.display())).with_source(e))
        }
    }
}

/// Sets the connection up (busy timeout, write-ahead log) and migrates.
pub(super) fn prepare(conn: &Connection) -> StoreResult<()> {
    conn.busy_timeout(BUSY_TIMEOUT).map_err(sql)?;
    conn.set_prepared_statement_cache_capacity(32);
    // An in-memory database answers `memory`: it has no log to share.
    let _mode: String = conn
        .query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))
        .map_err(sql)?;
    conn.pragma_update(None, "synchronous", "NORMAL")
        .map_err(sql)?;
    migrate(conn)
}

/// The number of migrations this code knows.
pub(super) fn known_version() -> i64 {
    i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX)
}

pub(super) fn schema_version(conn: &Connection) -> StoreResult<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql)
}

/// Applies the migrations the database lacks, each in its own write
/// transaction (another process may be migrating the same file).
pub(super) fn migrate(conn: &Connection) -> StoreResult<()> {
    let known = known_version();
    loop {
        let found = schema_version(conn)?;
        if found > known {
            return Err(StoreError::schema_too_new(found, known));
        }
        if found == known {
            return Ok(());
        }
        conn.execute_batch("BEGIN IMMEDIATE").map_err(sql)?;
        match migrate_from(conn, found) {
            Ok(()) => conn.execute_batch("COMMIT").map_err(sql)?,
            Err(e) => {
                let _ = conn.execute_batch("ROLLBACK");
                return Err(e);
            }
        }
    }
}

/// Inside a write transaction: applies the migration after version
/// `found`, unless another connection did since.
pub(super) fn migrate_from(conn: &Connection, found: i64) -> StoreResult<()> {
    let version = schema_version(conn)?;
    if version != found {
        return Ok(());
    }
    let Some(migration) = usize::try_from(version)
        .ok()
        .and_then(|i| MIGRATIONS.get(i))
    else {
        return Err(StoreError::schema_too_new(version, known_version()));
    };
    conn.execute_batch(migration).map_err(sql)?;
    conn.pragma_update(None, "user_version", version + 1)
        .map_err(sql)
}
