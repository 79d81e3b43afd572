//! `SqliteStore`: the embedded default task store, one SQLite file. Its
//! documentation (what the file holds, sharing, cost) is on the type.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use rusqlite::types::FromSql;
use rusqlite::{Connection, ErrorCode, OptionalExtension, Row, TransactionBehavior, params};

use super::row;
use super::{
    Answer, Claim, Ending, Fence, Filter, Lease, NewTask, Progress, RecordId, RecordState,
    StoreError, StoreResult, TaskRecord, TaskStore,
};
use crate::protocol::InputResponse;

/// The schema, one migration per version: the database's version is the
/// number of migrations applied to it (`PRAGMA user_version`). Append only:
/// a published migration never changes.
const MIGRATIONS: &[&str] = &[
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
];

/// The columns of a record, in the order [`decode`] reads them.
const COLUMNS: &str = "id, task_id, server, protocol_version, tool, key, scope, \
    created_ms, updated_ms, status, status_message, poll_interval_ms, due_ms, failed_reads, \
    lease_owner, lease_until_ms, fence, answers, cancel_requested, ending, delivered";

/// A task store in one SQLite file: the embedded default.
///
/// Clones share one connection, and its statements run on tokio's
/// blocking pool one at a time: open one store per process and clone it.
///
/// ```
/// use mcp_tasks::store::{Filter, SqliteStore, TaskStore};
///
/// # tokio_test_block_on(async {
/// let dir = std::env::temp_dir().join(format!("mcp-tasks-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let store = SqliteStore::open(dir.join("tasks.db")).await?;
/// assert!(store.list(&Filter::all()).await?.is_empty());
/// assert_eq!(store.next_due().await?, None);
/// # drop(store);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// # }).unwrap();
/// # fn tokio_test_block_on<F: Future>(f: F) -> F::Output {
/// #     tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(f)
/// # }
/// ```
///
/// # What the file holds
///
/// One row per tracked task in a table `tasks`: the task's reference (the
/// server's name, the protocol revision and **the task id in full**), the
/// tool, the caller's key and scope, the last status, when the task is
/// due, its lease (owner, end, fencing token), the answers given to its
/// questions (JSON), whether a cancel was asked for, and how it ended
/// (JSON) with whether that was delivered. A one-row table `fences` keeps
/// the last fencing token handed out, and `PRAGMA user_version` the
/// version of the schema, which [`open`](SqliteStore::open) brings up to
/// date.
///
/// Task ids are bearer-like, so the file is a file of secrets: the store
/// creates it readable by its owner alone (mode `0600` on Unix; SQLite
/// gives its `-wal` and `-shm` files the same mode). Keep it, and its
/// backups, as you would a password store.
///
/// # Sharing
///
/// Several processes on one machine may open the same file: the journal is
/// a write-ahead log (readers never wait for the writer), and a writer
/// waits up to [`BUSY_TIMEOUT`](SqliteStore::BUSY_TIMEOUT) for another
/// before the store reports the database unavailable. A claim takes its
/// records in one write transaction, so no record goes to two workers. The
/// write-ahead log needs memory shared between the processes, so the file
/// must be on a local disk, not a network file system; workers on many
/// machines share a Postgres database instead (`PostgresStore`, feature
/// `postgres`).
///
/// # Cost
///
/// A tracker's step costs its share of one claim (one `UPDATE … RETURNING`
/// for the whole batch, and one bump of the fence counter, in one
/// transaction) and one `UPDATE` to write back: `1 + 2/batch` statements
/// per read. Only recording an answer, or a step that finds answers
/// acknowledged, reads the record first.
///
/// # Cancel safety
///
/// Dropping a call's future does not stop its statement: it runs to the
/// end on the blocking pool. A dropped claim leaves its records leased
/// until their lease runs out.
#[cfg_attr(docsrs, doc(cfg(feature = "sqlite")))]
#[derive(Clone)]
pub struct SqliteStore {
    conn: Arc<Mutex<Connection>>,
    path: Option<Arc<Path>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// How long a statement waits for another connection's write
    /// transaction before the store reports the database unavailable.
    pub const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

    /// Opens the store in the file at `path`, creating the file (readable
    /// by its owner alone) and bringing its schema up to date.
    ///
    /// # Errors
    ///
    /// - [`StoreError::is_unavailable`]: the file cannot be created or
    ///   opened, or another process held the database longer than
    ///   [`SqliteStore::BUSY_TIMEOUT`].
    /// - [`StoreError::is_schema_too_new`]: a newer version of this crate
    ///   made the database; this one will not guess at its schema.
    pub async fn open(path: impl AsRef<Path>) -> StoreResult<SqliteStore> {
        let path: PathBuf = path.as_ref().to_owned();
        let opened = tokio::task::spawn_blocking(move || {
            create_private(&path)?;
            let conn = Connection::open(&path).map_err(|e| {
                StoreError::unavailable(format!("cannot open {}", path.display())).with_source(e)
            })?;
            prepare(&conn)?;
            Ok::<_, StoreError>((conn, path))
        })
        .await
        .map_err(pool_stopped)??;
        let (conn, path) = opened;
        Ok(SqliteStore {
            conn: Arc::new(Mutex::new(conn)),
            path: Some(path.into()),
        })
    }

    /// A store in memory, gone with the last clone: for tests and
    /// examples that want SQLite's behaviour without a file.
    ///
    /// # Errors
    ///
    /// Only when SQLite cannot allocate the database.
    pub fn memory() -> StoreResult<SqliteStore> {
        let conn = Connection::open_in_memory().map_err(sql)?;
        prepare(&conn)?;
        Ok(SqliteStore {
            conn: Arc::new(Mutex::new(conn)),
            path: None,
        })
    }

    /// Runs `f` on the connection, on the blocking pool.
    async fn run<T, F>(&self, f: F) -> StoreResult<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection) -> StoreResult<T> + Send + 'static,
    {
        let conn = Arc::clone(&self.conn);
        tokio::task::spawn_blocking(move || {
            let mut conn = conn.lock().unwrap_or_else(|e| e.into_inner());
            f(&mut conn)
        })
        .await
        .map_err(pool_stopped)?
    }
}

/// Creates the file at `path` readable by its owner alone, unless it
/// exists; SQLite then opens it as an empty database.
fn create_private(path: &Path) -> StoreResult<()> {
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
fn prepare(conn: &Connection) -> StoreResult<()> {
    conn.busy_timeout(SqliteStore::BUSY_TIMEOUT).map_err(sql)?;
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
fn known_version() -> i64 {
    i64::try_from(MIGRATIONS.len()).unwrap_or(i64::MAX)
}

fn schema_version(conn: &Connection) -> StoreResult<i64> {
    conn.query_row("PRAGMA user_version", [], |r| r.get(0))
        .map_err(sql)
}

/// Applies the migrations the database lacks, each in its own write
/// transaction (another process may be migrating the same file).
fn migrate(conn: &Connection) -> StoreResult<()> {
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
fn migrate_from(conn: &Connection, found: i64) -> StoreResult<()> {
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

/// The error of a failed statement.
fn sql(e: rusqlite::Error) -> StoreError {
    match e.sqlite_error_code() {
        Some(ErrorCode::DiskFull) => StoreError::full().with_source(e),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            StoreError::unavailable(format!(
                "another connection held the database for over {:?}",
                SqliteStore::BUSY_TIMEOUT
            ))
            .with_source(e)
        }
        Some(
            ErrorCode::CannotOpen
            | ErrorCode::SystemIoFailure
            | ErrorCode::PermissionDenied
            | ErrorCode::ReadOnly
            | ErrorCode::NoLargeFileSupport,
        ) => StoreError::unavailable("the database file cannot be read or written").with_source(e),
        Some(ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            StoreError::other("the file is damaged or not a SQLite database").with_source(e)
        }
        _ => StoreError::other("an SQLite statement failed").with_source(e),
    }
}

/// The error of a call whose blocking task never ran to the end (the
/// runtime is shutting down, or the statement panicked).
fn pool_stopped(e: tokio::task::JoinError) -> StoreError {
    StoreError::unavailable("the blocking pool did not run the statement").with_source(e)
}

/// Column `index` of a row of record `id`; a value of the wrong type is a
/// corrupt record.
fn column<T: FromSql>(row: &Row<'_>, index: usize, id: RecordId) -> StoreResult<T> {
    row.get(index).map_err(|e| {
        let name = COLUMNS.split(", ").nth(index).unwrap_or("?").trim();
        StoreError::corrupt(Some(id), format!("column {name} holds a bad value")).with_source(e)
    })
}

/// A record from a row of [`COLUMNS`], strictly.
fn decode(row: &Row<'_>) -> StoreResult<TaskRecord> {
    let id =
        RecordId(row.get(0).map_err(|e| {
            StoreError::corrupt(None, "a record without an integer id").with_source(e)
        })?);
    let reference = row::reference(
        id,
        column(row, 1, id)?,
        column(row, 2, id)?,
        column(row, 3, id)?,
    )?;
    let lease = column::<Option<String>>(row, 14, id)?
        .map(|owner| {
            Ok::<_, StoreError>(Lease {
                owner,
                until: row::time(column(row, 15, id)?),
                fence: Fence(column(row, 16, id)?),
            })
        })
        .transpose()?;
    Ok(TaskRecord {
        id,
        reference,
        tool: column(row, 4, id)?,
        key: column(row, 5, id)?,
        scope: column(row, 6, id)?,
        created: row::time(column(row, 7, id)?),
        updated: row::time(column(row, 8, id)?),
        status: row::status(id, &column::<String>(row, 9, id)?)?,
        status_message: column(row, 10, id)?,
        poll_interval_ms: row::interval(id, column(row, 11, id)?)?,
        due: row::time(column(row, 12, id)?),
        failed_reads: row::count(id, "failed_reads", column(row, 13, id)?)?,
        lease,
        answers: row::answers(id, &column::<String>(row, 17, id)?)?,
        cancel_requested: column(row, 18, id)?,
        ending: row::ending(id, column::<Option<String>>(row, 19, id)?.as_deref())?,
        delivered: column(row, 20, id)?,
    })
}

/// Why a write under `fence` changed no row: a second look, taken only
/// when the write failed.
fn refused(conn: &Connection, id: RecordId) -> StoreError {
    let exists = conn
        .query_row("SELECT 1 FROM tasks WHERE id = ?1", [id.0], |_| Ok(()))
        .optional();
    match exists {
        Ok(Some(())) => StoreError::stale(id),
        Ok(None) => StoreError::not_found(id),
        Err(e) => sql(e),
    }
}

/// Runs `statement`, a write of record `id` under `fence` (parameters
/// `?1` and `?2`, then `rest`), and tells a refusal apart.
fn write_held(
    conn: &Connection,
    statement: &str,
    id: RecordId,
    fence: Fence,
    rest: &[&dyn rusqlite::ToSql],
) -> StoreResult<()> {
    let mut params: Vec<&dyn rusqlite::ToSql> = vec![&id.0, &fence.0];
    params.extend_from_slice(rest);
    let changed = conn
        .prepare_cached(statement)
        .and_then(|mut s| s.execute(params.as_slice()))
        .map_err(sql)?;
    if changed == 0 {
        return Err(refused(conn, id));
    }
    Ok(())
}

/// The `WHERE` clause of a write under a lease: the record `?1`, claimed
/// last under the fence `?2`.
const HELD: &str = "id = ?1 AND fence = ?2 AND lease_owner IS NOT NULL";

/// The answers of record `id` held under `fence`, read inside the caller's
/// transaction.
fn held_answers(
    conn: &Connection,
    id: RecordId,
    fence: Fence,
) -> StoreResult<std::collections::BTreeMap<String, Answer>> {
    let found: Option<(String, i64, bool)> = conn
        .prepare_cached("SELECT answers, fence, lease_owner IS NOT NULL FROM tasks WHERE id = ?1")
        .and_then(|mut s| {
            s.query_row([id.0], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .optional()
        })
        .map_err(sql)?;
    match found {
        None => Err(StoreError::not_found(id)),
        Some((_, f, held)) if f != fence.0 || !held => Err(StoreError::stale(id)),
        Some((json, ..)) => row::answers(id, &json),
    }
}

/// Runs `f` in a write transaction, committed when it succeeds.
fn immediate<T>(
    conn: &mut Connection,
    f: impl FnOnce(&Connection) -> StoreResult<T>,
) -> StoreResult<T> {
    let tx = conn
        .transaction_with_behavior(TransactionBehavior::Immediate)
        .map_err(sql)?;
    let out = f(&tx)?;
    tx.commit().map_err(sql)?;
    Ok(out)
}

/// The records a claim without `record` takes: open and due, or ended and
/// undelivered, with no live lease (`?1`: now), oldest due first, at most
/// `?2`. Each half reads its own partial index.
const CLAIMABLE: &str = "SELECT id FROM (
        SELECT id, due_ms FROM (
            SELECT id, due_ms FROM tasks
            WHERE ending IS NULL AND due_ms <= ?1 AND lease_until_ms <= ?1
            ORDER BY due_ms, id LIMIT ?2)
        UNION ALL
        SELECT id, due_ms FROM (
            SELECT id, due_ms FROM tasks
            WHERE ending IS NOT NULL AND delivered = 0 AND lease_until_ms <= ?1
            ORDER BY due_ms, id LIMIT ?2)
    ) ORDER BY due_ms, id LIMIT ?2";

/// Leases the records selected by `which` (parameters `?1`: now, `?2`:
/// limit or record) to `?3` until `?4`, under the next fence.
fn lease_sql(which: &str) -> String {
    format!(
        "UPDATE tasks SET lease_owner = ?3, lease_until_ms = ?4, \
         fence = (SELECT last + 1 FROM fences) \
         WHERE id IN ({which}) RETURNING {COLUMNS}"
    )
}

/// The claim of one record, due or not (`?2`), when it is free at `?1` and
/// open or undelivered.
const CLAIMABLE_ONE: &str = "SELECT id FROM tasks WHERE id = ?2 AND lease_until_ms <= ?1 \
    AND (ending IS NULL OR delivered = 0)";

impl TaskStore for SqliteStore {
    async fn insert(&self, task: NewTask) -> StoreResult<RecordId> {
        self.run(move |conn| {
            let now = row::millis(SystemTime::now());
            let ending = task.ending.as_ref().map(row::ending_json);
            conn.prepare_cached(
                "INSERT INTO tasks (task_id, server, protocol_version, tool, key, scope, \
                 created_ms, updated_ms, status, status_message, poll_interval_ms, due_ms, \
                 ending) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12)",
            )
            .and_then(|mut s| {
                s.execute(params![
                    task.reference.task_id().expose(),
                    task.reference.server(),
                    task.reference.protocol_version(),
                    task.tool,
                    task.key,
                    task.scope,
                    now,
                    task.status.as_str(),
                    task.status_message,
                    row::interval_column(task.poll_interval_ms),
                    row::millis(task.due),
                    ending,
                ])
            })
            .map_err(sql)?;
            Ok(RecordId(conn.last_insert_rowid()))
        })
        .await
    }

    async fn get(&self, id: RecordId) -> StoreResult<Option<TaskRecord>> {
        self.run(move |conn| {
            let mut s = conn
                .prepare_cached(&format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"))
                .map_err(sql)?;
            let mut rows = s.query([id.0]).map_err(sql)?;
            match rows.next().map_err(sql)? {
                Some(r) => decode(r).map(Some),
                None => Ok(None),
            }
        })
        .await
    }

    async fn claim(&self, claim: Claim<'_>) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        if claim.limit == 0 {
            return Ok(Vec::new());
        }
        let worker = claim.worker.to_owned();
        let now = row::millis(claim.now);
        let until = claim
            .now
            .checked_add(claim.lease)
            .map_or(i64::MAX, row::millis);
        let (statement, selector) = match claim.record {
            Some(id) => (lease_sql(CLAIMABLE_ONE), id.0),
            None => (
                lease_sql(CLAIMABLE),
                i64::try_from(claim.limit).unwrap_or(i64::MAX),
            ),
        };
        self.run(move |conn| {
            immediate(conn, |tx| {
                let mut s = tx.prepare_cached(&statement).map_err(sql)?;
                let mut rows = s
                    .query(params![now, selector, worker, until])
                    .map_err(sql)?;
                let mut out = Vec::new();
                while let Some(r) = rows.next().map_err(sql)? {
                    let order = (
                        r.get::<_, i64>("due_ms").unwrap_or(i64::MAX),
                        r.get::<_, i64>("id").unwrap_or(i64::MAX),
                    );
                    out.push((order, decode(r)));
                }
                drop(rows);
                if !out.is_empty() {
                    tx.prepare_cached("UPDATE fences SET last = last + 1")
                        .and_then(|mut s| s.execute([]))
                        .map_err(sql)?;
                }
                // RETURNING gives the rows in no promised order.
                out.sort_by_key(|(order, _)| *order);
                Ok(out.into_iter().map(|(_, r)| r).collect())
            })
        })
        .await
    }

    async fn renew(&self, id: RecordId, fence: Fence, until: SystemTime) -> StoreResult<()> {
        let until = row::millis(until);
        self.run(move |conn| {
            write_held(
                conn,
                &format!("UPDATE tasks SET lease_until_ms = ?3 WHERE {HELD}"),
                id,
                fence,
                &[&until],
            )
        })
        .await
    }

    async fn record_answer(
        &self,
        id: RecordId,
        fence: Fence,
        key: &str,
        response: &InputResponse,
    ) -> StoreResult<()> {
        let key = key.to_owned();
        let answer = Answer {
            response: response.clone(),
            taken: false,
        };
        self.run(move |conn| {
            immediate(conn, |tx| {
                let mut answers = held_answers(tx, id, fence)?;
                answers.insert(key, answer);
                let now = row::millis(SystemTime::now());
                write_held(
                    tx,
                    &format!("UPDATE tasks SET answers = ?3, updated_ms = ?4 WHERE {HELD}"),
                    id,
                    fence,
                    &[&row::answers_json(&answers), &now],
                )
            })
        })
        .await
    }

    async fn save(&self, id: RecordId, fence: Fence, progress: Progress) -> StoreResult<()> {
        self.run(move |conn| {
            let now = row::millis(SystemTime::now());
            let status = progress.status.as_str();
            let interval = row::interval_column(progress.poll_interval_ms);
            let failed = i64::from(progress.failed_reads);
            let due = row::millis(progress.due);
            if progress.taken.is_empty() {
                return write_held(
                    conn,
                    &format!(
                        "UPDATE tasks SET status = ?3, status_message = ?4, \
                         poll_interval_ms = ?5, failed_reads = ?6, due_ms = ?7, \
                         updated_ms = ?8, lease_until_ms = 0 WHERE {HELD}"
                    ),
                    id,
                    fence,
                    &[
                        &status,
                        &progress.status_message,
                        &interval,
                        &failed,
                        &due,
                        &now,
                    ],
                );
            }
            immediate(conn, |tx| {
                let mut answers = held_answers(tx, id, fence)?;
                for key in &progress.taken {
                    if let Some(a) = answers.get_mut(key) {
                        a.taken = true;
                    }
                }
                write_held(
                    tx,
                    &format!(
                        "UPDATE tasks SET status = ?3, status_message = ?4, \
                         poll_interval_ms = ?5, failed_reads = ?6, due_ms = ?7, \
                         updated_ms = ?8, lease_until_ms = 0, answers = ?9 WHERE {HELD}"
                    ),
                    id,
                    fence,
                    &[
                        &status,
                        &progress.status_message,
                        &interval,
                        &failed,
                        &due,
                        &now,
                        &row::answers_json(&answers),
                    ],
                )
            })
        })
        .await
    }

    async fn finish(&self, id: RecordId, fence: Fence, ending: &Ending) -> StoreResult<()> {
        let ending = row::ending_json(ending);
        self.run(move |conn| {
            let now = row::millis(SystemTime::now());
            write_held(
                conn,
                &format!("UPDATE tasks SET ending = ?3, updated_ms = ?4 WHERE {HELD}"),
                id,
                fence,
                &[&ending, &now],
            )
        })
        .await
    }

    async fn acknowledge(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        self.run(move |conn| {
            let now = row::millis(SystemTime::now());
            write_held(
                conn,
                &format!(
                    "UPDATE tasks SET delivered = 1, updated_ms = ?3, lease_until_ms = 0 \
                     WHERE {HELD}"
                ),
                id,
                fence,
                &[&now],
            )
        })
        .await
    }

    async fn request_cancel(&self, id: RecordId, now: SystemTime) -> StoreResult<bool> {
        let now = row::millis(now);
        self.run(move |conn| {
            let changed = conn
                .prepare_cached(
                    "UPDATE tasks SET cancel_requested = 1, due_ms = min(due_ms, ?2), \
                     updated_ms = ?2 WHERE id = ?1 AND ending IS NULL",
                )
                .and_then(|mut s| s.execute(params![id.0, now]))
                .map_err(sql)?;
            Ok(changed > 0)
        })
        .await
    }

    async fn remove(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        self.run(move |conn| {
            write_held(
                conn,
                &format!("DELETE FROM tasks WHERE {HELD}"),
                id,
                fence,
                &[],
            )
        })
        .await
    }

    async fn list(&self, filter: &Filter) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        let scope = filter.scope.clone();
        // Spelled out, so that a scope reads its index.
        let by_scope = if scope.is_some() {
            "scope = ?1"
        } else {
            "?1 IS NULL"
        };
        let state = match filter.state {
            None => "1",
            Some(RecordState::Open) => "ending IS NULL",
            Some(RecordState::Undelivered) => "ending IS NOT NULL AND delivered = 0",
            Some(RecordState::Delivered) => "ending IS NOT NULL AND delivered <> 0",
        };
        // A negative limit is none.
        let limit = filter
            .limit
            .map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        self.run(move |conn| {
            let mut s = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM tasks WHERE {by_scope} AND {state} \
                     ORDER BY id LIMIT ?2"
                ))
                .map_err(sql)?;
            let mut rows = s.query(params![scope, limit]).map_err(sql)?;
            let mut out = Vec::new();
            while let Some(r) = rows.next().map_err(sql)? {
                out.push(decode(r));
            }
            Ok(out)
        })
        .await
    }

    async fn next_due(&self) -> StoreResult<Option<SystemTime>> {
        self.run(|conn| {
            let ms: Option<i64> = conn
                .prepare_cached(
                    "SELECT min(at) FROM (
                        SELECT max(lease_until_ms, due_ms) AS at FROM tasks
                        WHERE ending IS NULL
                        UNION ALL
                        SELECT lease_until_ms FROM tasks
                        WHERE ending IS NOT NULL AND delivered = 0)",
                )
                .and_then(|mut s| s.query_row([], |r| r.get(0)))
                .map_err(sql)?;
            Ok(ms.map(row::time))
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::{Duration, SystemTime};

    use super::*;
    use crate::protocol::{ElicitResult, TaskId, TaskStatus};
    use crate::task::TaskRef;

    /// A directory of the test's own under the system's temp dir, removed
    /// when dropped.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(name: &str) -> Scratch {
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let n = NEXT.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir().join(format!(
                "mcp-tasks-sqlite-{name}-{}-{n}",
                std::process::id()
            ));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Scratch(dir)
        }

        fn db(&self) -> PathBuf {
            self.0.join("tasks.db")
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn t(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000 + secs)
    }

    fn task(n: u64, due: SystemTime) -> NewTask {
        NewTask {
            reference: TaskRef::new(TaskId::new(format!("task-{n}-secret")), Some("srv".into()))
                .with_protocol_version("2026-07-28"),
            tool: "export".into(),
            key: Some(format!("key-{n}")),
            scope: "tenant".into(),
            status: TaskStatus::Working,
            status_message: None,
            poll_interval_ms: Some(1_000),
            due,
            ending: None,
        }
    }

    fn claim(worker: &str, limit: usize, now: SystemTime) -> Claim<'_> {
        Claim {
            worker,
            limit,
            now,
            lease: Duration::from_secs(30),
            record: None,
        }
    }

    /// Runs raw SQL on the store's connection, as a person (or a bug) might.
    fn raw(store: &SqliteStore, statements: &str) {
        let conn = store.conn.lock().unwrap();
        conn.execute_batch(statements).unwrap();
    }

    #[tokio::test]
    async fn a_file_store_keeps_the_contract() {
        let dir = Scratch::new("contract");
        let store = SqliteStore::open(dir.db()).await.unwrap();
        crate::store::tests::contract(&store).await;
    }

    #[tokio::test]
    async fn a_memory_database_keeps_the_contract() {
        crate::store::tests::contract(&SqliteStore::memory().unwrap()).await;
    }

    #[tokio::test]
    async fn the_file_is_private_and_logged_ahead() {
        let dir = Scratch::new("private");
        let store = SqliteStore::open(dir.db()).await.unwrap();
        let mode: String = store
            .conn
            .lock()
            .unwrap()
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .unwrap();
        assert_eq!(mode, "wal");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = std::fs::metadata(dir.db()).unwrap().permissions().mode();
            assert_eq!(mode & 0o077, 0, "readable by its owner alone: {mode:o}");
        }
        assert!(!format!("{store:?}").contains("secret"));
    }

    #[tokio::test]
    async fn records_survive_closing_and_reopening_the_file() {
        let dir = Scratch::new("reopen");
        let store = SqliteStore::open(dir.db()).await.unwrap();
        let id = store.insert(task(1, t(0))).await.unwrap();
        let first = store.claim(claim("w1", 1, t(0))).await.unwrap().remove(0);
        let fence = first.unwrap().fence().unwrap();
        let yes: InputResponse = ElicitResult::accept(serde_json::json!({"ok": true})).into();
        store
            .record_answer(id, fence, "confirm", &yes)
            .await
            .unwrap();
        let mut progress = Progress {
            status: TaskStatus::InputRequired,
            status_message: Some("waiting".into()),
            poll_interval_ms: Some(2_000),
            failed_reads: 1,
            due: t(60),
            taken: vec!["confirm".into()],
        };
        store.save(id, fence, progress.clone()).await.unwrap();
        let before = store.get(id).await.unwrap().unwrap();
        drop(store);

        let store = SqliteStore::open(dir.db()).await.unwrap();
        let after = store.get(id).await.unwrap().expect("the record survives");
        assert_eq!(after, before);
        assert!(after.answers["confirm"].taken);
        // Fences keep growing across the restart.
        let again = store.claim(claim("w2", 1, t(60))).await.unwrap().remove(0);
        let again = again.unwrap().fence().unwrap();
        assert!(again > fence, "{again:?} after {fence:?}");
        progress.due = t(120);
        let stale = store.save(id, fence, progress).await.unwrap_err();
        assert!(stale.is_stale(), "{stale}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_connections_never_claim_the_same_record() {
        let dir = Scratch::new("two");
        let a = SqliteStore::open(dir.db()).await.unwrap();
        let b = SqliteStore::open(dir.db()).await.unwrap();
        for n in 0..200 {
            a.insert(task(n, t(n % 7))).await.unwrap();
        }
        let mut claims = tokio::task::JoinSet::new();
        for w in 0..40 {
            let store = if w % 2 == 0 { a.clone() } else { b.clone() };
            claims.spawn(async move {
                let worker = format!("w{w}");
                let got = store.claim(claim(&worker, 7, t(10))).await.unwrap();
                let ids: Vec<RecordId> = got.into_iter().map(|r| r.unwrap().id).collect();
                (worker, ids)
            });
        }
        let mut seen = BTreeSet::new();
        while let Some(joined) = claims.join_next().await {
            let (worker, ids) = joined.unwrap();
            for id in ids {
                assert!(seen.insert(id), "record {id} claimed twice");
                let held = b.get(id).await.unwrap().unwrap().lease.unwrap();
                assert_eq!(held.owner, worker);
            }
        }
        assert_eq!(seen.len(), 200, "every due record, once");
    }

    #[tokio::test]
    async fn corrupt_rows_are_errors_in_their_place() {
        let dir = Scratch::new("corrupt");
        let store = SqliteStore::open(dir.db()).await.unwrap();
        let mut ids = Vec::new();
        for n in 0..6 {
            ids.push(store.insert(task(n, t(n))).await.unwrap());
        }
        let damage = [
            "answers = '{not json'",
            "ending = '{\"ending\": \"exploded\"}'",
            "status = 'sleeping'",
            "protocol_version = '1999-01-01'",
            "failed_reads = 'many'",
        ];
        for (id, set) in ids[1..].iter().zip(damage) {
            raw(
                &store,
                &format!("UPDATE tasks SET {set} WHERE id = {}", id.0),
            );
        }

        let check = |got: Vec<StoreResult<TaskRecord>>, what: &str| {
            assert_eq!(got.len(), ids.len(), "{what}: every row, in its place");
            assert_eq!(got[0].as_ref().unwrap().id, ids[0], "{what}");
            for (r, id) in got[1..].iter().zip(&ids[1..]) {
                let e = r.as_ref().unwrap_err();
                assert!(e.is_corrupt(), "{what}: {e}");
                assert_eq!(e.record(), Some(*id), "{what}");
            }
        };
        check(store.list(&Filter::all()).await.unwrap(), "list");
        check(store.claim(claim("w", 10, t(100))).await.unwrap(), "claim");
        for id in &ids[1..] {
            assert!(store.get(*id).await.unwrap_err().is_corrupt());
        }
        // A corrupt record stays leased like the others: not claimed again
        // before its lease runs out.
        assert!(
            store
                .claim(claim("w", 10, t(100)))
                .await
                .unwrap()
                .is_empty()
        );
    }

    #[tokio::test]
    async fn a_schema_newer_than_the_code_is_refused() {
        let dir = Scratch::new("newer");
        let store = SqliteStore::open(dir.db()).await.unwrap();
        raw(&store, "PRAGMA user_version = 999");
        drop(store);
        let e = SqliteStore::open(dir.db()).await.unwrap_err();
        assert!(e.is_schema_too_new(), "{e}");
        assert!(e.to_string().contains("999"), "{e}");
    }

    #[tokio::test]
    async fn a_file_that_cannot_be_opened_is_unavailable() {
        let dir = Scratch::new("missing");
        let e = SqliteStore::open(dir.0.join("no-such-dir").join("tasks.db"))
            .await
            .unwrap_err();
        assert!(e.is_unavailable(), "{e}");

        std::fs::write(dir.db(), vec![0x42; 8192]).unwrap();
        let e = SqliteStore::open(dir.db()).await.unwrap_err();
        assert!(!e.is_schema_too_new() && !e.is_unavailable(), "{e}");
    }

    #[tokio::test]
    async fn a_full_disk_refuses_the_write_and_keeps_the_rest() {
        let dir = Scratch::new("full");
        let store = SqliteStore::open(dir.db()).await.unwrap();
        let mut kept = Vec::new();
        for n in 0..3 {
            kept.push(store.insert(task(n, t(0))).await.unwrap());
        }
        // The disk fills up: SQLite may grow the file by two pages at most.
        let pages: i64 = {
            let conn = store.conn.lock().unwrap();
            conn.query_row("PRAGMA page_count", [], |r| r.get(0))
                .unwrap()
        };
        raw(&store, &format!("PRAGMA max_page_count = {}", pages + 2));
        let mut big = task(99, t(0));
        big.status_message = Some("x".repeat(3_000));
        let mut refused = None;
        for _ in 0..50 {
            match store.insert(big.clone()).await {
                Ok(id) => kept.push(id),
                Err(e) => {
                    refused = Some(e);
                    break;
                }
            }
        }
        let e = refused.expect("the disk fills up");
        assert!(e.is_full() && e.is_unavailable(), "{e}");
        for id in &kept {
            assert!(store.get(*id).await.unwrap().is_some(), "record {id} kept");
        }
        assert_eq!(store.list(&Filter::all()).await.unwrap().len(), kept.len());

        // Room again: the store goes on.
        raw(&store, "PRAGMA max_page_count = 1000000");
        store.insert(big).await.unwrap();
    }
}
