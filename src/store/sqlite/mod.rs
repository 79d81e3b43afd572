//! `SqliteStore`: the embedded default task store, one SQLite file. Its
//! documentation (what the file holds, sharing, cost) is on the type.

use std::path::{Path, PathBuf};
use std::sync::{Arc, LazyLock, Mutex};
use std::time::{Duration, SystemTime};

use rusqlite::{Connection, OptionalExtension, params};

use super::history;
use super::questions;
use super::row;
use super::{
    Answerer, Answers, Claim, Counts, Ending, Fence, Filter, Forgotten, NewTask, Questions,
    RecordId, RecordState, Refusal, Reservation, Schedule, StepReport, StoreError, StoreResult,
    TaskRecord, TaskStore,
};
use crate::protocol::{InputRequests, InputResponse};
use crate::task::TaskRef;

/// The rows a claim cannot judge, as an SQL condition: a value that is
/// not an integer where a claim compares or writes one (the due time, the
/// lease's end, the fencing token, whether the ending was delivered), or a
/// lease owner that is not text. Such a row would otherwise never be
/// claimed (text sorts after every number), or have its damage written
/// over by the claim. Migration 3 indexes these rows (an index that stays
/// empty while nothing is damaged), and the claims use it: the condition
/// must be written the same in both.
macro_rules! misfiled {
    () => {
        "(typeof(due_ms) <> 'integer' OR typeof(lease_until_ms) <> 'integer' \
         OR typeof(fence) <> 'integer' OR typeof(delivered) <> 'integer' \
         OR typeof(lease_owner) NOT IN ('null', 'text'))"
    };
}

/// The delivered records (ended, their ending acknowledged), as an SQL
/// condition: migration 5 indexes them by `created_ms` for `prune`, which
/// must spell the condition the same way to read that index.
macro_rules! delivered {
    () => {
        "ending IS NOT NULL AND delivered = 1"
    };
}

/// At most `?2` delivered records recorded and last changed before `?1`,
/// the oldest first, by their own index (migration 5).
const PRUNE: &str = concat!(
    "DELETE FROM tasks WHERE id IN (SELECT id FROM tasks WHERE ",
    delivered!(),
    " AND created_ms < ?1 AND updated_ms < ?1 ORDER BY created_ms, id LIMIT ?2)"
);

mod schema;
mod sql;

use schema::{create_private, prepare};
use sql::{
    CLAIMABLE, CLAIMABLE_ONE, COLUMNS, HELD, append_history, cut_text, decode, immediate,
    lease_misfiled, lease_picked, pick_sql, pool_stopped, read_book, sql, write_book, write_held,
};

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
/// (JSON) with whether that was delivered, and its history (a JSON array
/// of at most [`MAX_HISTORY`](super::MAX_HISTORY) entries, appended by
/// the statement that makes each change). A one-row table `fences` keeps
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
/// A tracker's step costs its share of one claim (a look for damaged rows
/// in an index that is empty while nothing is damaged, one
/// `UPDATE … RETURNING` for the whole batch, and one bump of the fence
/// counter, in one transaction) and one `UPDATE` to write back:
/// `1 + 3/batch` statements per read. A [`prune`](TaskStore::prune) is
/// one `DELETE` of at most its limit, the oldest delivered records by an
/// index of their own, in a write transaction of its own: other writers
/// wait for one batch at most.
///
/// # Damaged rows
///
/// A row that cannot be read as a record (a value of the wrong type or
/// out of range in any column, JSON that does not parse, an unknown
/// status) is an error in place of its record ([`StoreError::is_corrupt`],
/// naming the record), from listings, `get` and claims alike: a claim
/// leases it like the others, so it comes back once its lease runs out,
/// and keeps no other record from being claimed. A row whose due time,
/// lease or delivery is not a number is reported by the claims too, first
/// in their batch: such a row is never due by comparison. Only recording an answer, or a step that finds answers
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
    pub const BUSY_TIMEOUT: Duration = sql::BUSY_TIMEOUT;

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

/// What a step found, written into record `id` held under `fence`, the
/// record given up until the due time (see [`TaskStore::save`]); `now` in
/// milliseconds.
fn write_save(
    conn: &Connection,
    id: RecordId,
    fence: Fence,
    progress: &StepReport,
    now: i64,
) -> StoreResult<()> {
    static SAVE: LazyLock<String> = LazyLock::new(|| {
        // A new status or message goes into the history in the same
        // statement: a save that changes neither appends nothing.
        let status_changed = append_history(
            "status IS NOT ?3 OR status_message IS NOT ?4",
            &format!(
                "json_object('at', ?8, 'event', 'status', 'status', ?3, 'message', {})",
                cut_text("?4")
            ),
        );
        // An answer or a cancel from elsewhere since the claim: due now.
        format!(
            "UPDATE tasks SET status = ?3, status_message = ?4, \
             poll_interval_ms = ?5, failed_reads = ?6, \
             due_ms = CASE WHEN nudged <> 0 THEN min(?7, ?8) ELSE ?7 END, \
             updated_ms = ?8, lease_until_ms = 0, {status_changed} WHERE {HELD}"
        )
    });
    let status = progress.status.as_str();
    let interval = row::interval_column(progress.poll_interval_ms);
    let failed = i64::from(progress.failed_reads);
    let due = row::millis(progress.due);
    let rest: [&dyn rusqlite::ToSql; 6] = [
        &status,
        &progress.status_message,
        &interval,
        &failed,
        &due,
        &now,
    ];
    write_held(conn, &SAVE, id, fence, &rest)
}

impl TaskStore for SqliteStore {
    async fn insert(&self, task: NewTask) -> StoreResult<RecordId> {
        self.run(move |conn| {
            immediate(conn, |tx| {
                if let Some(existing) = named(tx, &task)? {
                    return Err(StoreError::duplicate(existing));
                }
                add(tx, &task, None)
            })
        })
        .await
    }

    async fn reserve(
        &self,
        task: NewTask,
        worker: &str,
        until: SystemTime,
    ) -> StoreResult<Reservation> {
        let worker = worker.to_owned();
        self.run(move |conn| {
            immediate(conn, |tx| {
                if let Some(existing) = named(tx, &task)? {
                    return Ok(Reservation::Taken(existing));
                }
                let fence: i64 = tx
                    .query_row(
                        "UPDATE fences SET last = last + 1 RETURNING last",
                        [],
                        |r| r.get(0),
                    )
                    .map_err(sql)?;
                let id = add(tx, &task, Some((&worker, row::millis(until), fence)))?;
                Ok(Reservation::Reserved {
                    id,
                    fence: Fence(fence),
                })
            })
        })
        .await
    }

    async fn start(
        &self,
        id: RecordId,
        fence: Fence,
        reference: &TaskRef,
        schedule: &Schedule,
        progress: StepReport,
    ) -> StoreResult<()> {
        let (task_id, server, version, schedule) = (
            reference.task_id().expose().to_owned(),
            reference.server().map(str::to_owned),
            reference.protocol_version().map(str::to_owned),
            row::schedule_json(schedule),
        );
        static START: LazyLock<String> = LazyLock::new(|| {
            format!(
                "UPDATE tasks SET task_id = ?3, server = ?4, protocol_version = ?5, \
                 schedule = ?6 WHERE {HELD} AND task_id = ''"
            )
        });
        self.run(move |conn| {
            write_held(
                conn,
                &START,
                id,
                fence,
                &[&task_id, &server, &version, &schedule],
            )
        })
        .await?;
        self.save(id, fence, progress).await
    }

    async fn get(&self, id: RecordId) -> StoreResult<Option<TaskRecord>> {
        static GET: LazyLock<String> =
            LazyLock::new(|| format!("SELECT {COLUMNS} FROM tasks WHERE id = ?1"));
        self.run(move |conn| {
            let mut s = conn.prepare_cached(&GET).map_err(sql)?;
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
        let limit = i64::try_from(claim.limit).unwrap_or(i64::MAX);
        static PICK_DUE: LazyLock<String> = LazyLock::new(|| pick_sql(CLAIMABLE));
        static PICK_ONE: LazyLock<String> = LazyLock::new(|| pick_sql(CLAIMABLE_ONE));
        let (pick, selector): (&'static str, _) = match claim.record {
            Some(id) => (&PICK_ONE, id.0),
            None => (&PICK_DUE, limit),
        };
        let record = claim.record;
        self.run(move |conn| {
            immediate(conn, |tx| {
                // Damaged rows first: reported, and leased like the others.
                let damaged = lease_misfiled(tx, now, record, limit, &worker, until)?;
                let left = limit - i64::try_from(damaged.len()).unwrap_or(limit);
                let mut out = Vec::new();
                if left > 0 && (record.is_none() || damaged.is_empty()) {
                    let selector = if record.is_some() { selector } else { left };
                    out = lease_picked(tx, pick, now, selector, &worker, until)?;
                }
                if !out.is_empty() || !damaged.is_empty() {
                    tx.prepare_cached("UPDATE fences SET last = last + 1")
                        .and_then(|mut s| s.execute([]))
                        .map_err(sql)?;
                }
                // RETURNING gives the rows in no promised order.
                out.sort_by_key(|(order, _)| *order);
                Ok(damaged
                    .into_iter()
                    .map(Err)
                    .chain(out.into_iter().map(|(_, r)| r))
                    .collect())
            })
        })
        .await
    }

    async fn renew(&self, id: RecordId, fence: Fence, until: SystemTime) -> StoreResult<()> {
        static RENEW: LazyLock<String> =
            LazyLock::new(|| format!("UPDATE tasks SET lease_until_ms = ?3 WHERE {HELD}"));
        let until = row::millis(until);
        self.run(move |conn| write_held(conn, &RENEW, id, fence, &[&until]))
            .await
    }

    async fn release(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        static RELEASE: LazyLock<String> =
            LazyLock::new(|| format!("UPDATE tasks SET lease_until_ms = 0 WHERE {HELD}"));
        self.run(move |conn| write_held(conn, &RELEASE, id, fence, &[]))
            .await
    }

    async fn release_worker(&self, worker: &str) -> StoreResult<u64> {
        let worker = worker.to_owned();
        self.run(move |conn| {
            let now = row::millis(SystemTime::now());
            // A lease's end that is not a number is left as it is, for
            // the claims to report.
            let released = conn
                .prepare_cached(
                    "UPDATE tasks SET lease_until_ms = 0 WHERE lease_owner = ?1 \
                     AND typeof(lease_until_ms) = 'integer' AND lease_until_ms > ?2 \
                     AND (ending IS NULL OR delivered = 0)",
                )
                .and_then(|mut s| s.execute(params![worker, now]))
                .map_err(sql)?;
            Ok(u64::try_from(released).unwrap_or(u64::MAX))
        })
        .await
    }

    async fn ask(
        &self,
        id: RecordId,
        fence: Fence,
        asked: &InputRequests,
        now: SystemTime,
    ) -> StoreResult<(Questions, Answers)> {
        let asked = asked.clone();
        self.run(move |conn| {
            immediate(conn, |tx| {
                let mut book = read_book(tx, id, Some(fence))?;
                let (changed, entries) = questions::ask_noting(&mut book.questions, &asked, now);
                if changed {
                    book.note(entries);
                    write_book(tx, id, &book, row::millis(now), false)?;
                }
                Ok((book.questions, book.answers))
            })
        })
        .await
    }

    async fn answer_by(
        &self,
        id: RecordId,
        key: &str,
        response: &InputResponse,
        by: Answerer,
        now: SystemTime,
    ) -> StoreResult<()> {
        let key = key.to_owned();
        let response = response.clone();
        self.run(move |conn| {
            immediate(conn, |tx| {
                let mut book = read_book(tx, id, None)?;
                questions::answer(
                    &book.questions,
                    &mut book.answers,
                    book.ended,
                    &key,
                    &response,
                )
                .map_err(|why| StoreError::refused(id, why))?;
                book.history.push(now, questions::answered(&key, by));
                write_book(tx, id, &book, row::millis(now), true)
            })
        })
        .await
    }

    async fn record_answer(
        &self,
        id: RecordId,
        fence: Fence,
        key: &str,
        response: &InputResponse,
    ) -> StoreResult<InputResponse> {
        let key = key.to_owned();
        let response = response.clone();
        self.run(move |conn| {
            immediate(conn, |tx| {
                let mut book = read_book(tx, id, Some(fence))?;
                match questions::answer(
                    &book.questions,
                    &mut book.answers,
                    book.ended,
                    &key,
                    &response,
                ) {
                    Ok(()) => {
                        let now = SystemTime::now();
                        book.history
                            .push(now, questions::answered(&key, Answerer::Handler));
                        write_book(tx, id, &book, row::millis(now), false)?;
                        Ok(response)
                    }
                    Err(Refusal::Answered { .. }) => Ok(book.answers[&key].response.clone()),
                    Err(why) => Err(StoreError::refused(id, why)),
                }
            })
        })
        .await
    }

    async fn save(&self, id: RecordId, fence: Fence, progress: StepReport) -> StoreResult<()> {
        self.run(move |conn| {
            let now = row::millis(SystemTime::now());
            let save = |conn: &Connection| write_save(conn, id, fence, &progress, now);
            if progress.taken.is_empty() && progress.offered.is_empty() {
                return save(conn);
            }
            immediate(conn, |tx| {
                let mut book = read_book(tx, id, Some(fence))?;
                let entries =
                    questions::taken_now(&book.answers, &progress.taken, SystemTime::now());
                book.note(entries);
                let taken = questions::take(
                    &mut book.questions,
                    &mut book.answers,
                    &progress.taken,
                    SystemTime::now(),
                );
                let offered = questions::offer(&mut book.questions, &progress.offered);
                if taken || offered {
                    write_book(tx, id, &book, now, false)?;
                }
                save(tx)
            })
        })
        .await
    }

    async fn save_all(&self, saves: Vec<(RecordId, Fence, StepReport)>) -> Vec<StoreResult<()>> {
        // In one transaction; the rest one at a time after it. A failure
        // other than a refused write rolls the whole back, and every save
        // in it fails.
        let together = row::together(&saves);
        let at: Vec<usize> = (0..saves.len()).filter(|&i| together[i]).collect();
        let mut answers: Vec<Option<StoreResult<()>>> = saves.iter().map(|_| None).collect();
        if at.len() > 1 {
            let batch: Vec<_> = at.iter().map(|&i| saves[i].clone()).collect();
            let written = self
                .run(move |conn| {
                    let now = row::millis(SystemTime::now());
                    immediate(conn, |tx| {
                        let mut each = Vec::with_capacity(batch.len());
                        for (id, fence, progress) in &batch {
                            match write_save(tx, *id, *fence, progress, now) {
                                Err(e) if !e.is_stale() && !e.is_not_found() => return Err(e),
                                answer => each.push(answer),
                            }
                        }
                        Ok(each)
                    })
                })
                .await;
            match written {
                Ok(each) => {
                    for (&i, answer) in at.iter().zip(each) {
                        answers[i] = Some(answer);
                    }
                }
                Err(e) => {
                    for &i in &at {
                        answers[i] = Some(Err(e.again()));
                    }
                }
            }
        }
        row::save_the_rest(self, saves, answers).await
    }

    async fn finish(&self, id: RecordId, fence: Fence, ending: &Ending) -> StoreResult<()> {
        let status = ending.status().as_str();
        let name = ending.name();
        let ending = row::ending_json(ending);
        static FINISH: LazyLock<String> = LazyLock::new(|| {
            let ended = append_history(
                "ending IS NOT ?3",
                "json_object('at', ?4, 'event', 'ended', 'ending', ?6)",
            );
            format!(
                "UPDATE tasks SET ending = ?3, updated_ms = ?4, status = ?5, {ended} \
                 WHERE {HELD}"
            )
        });
        self.run(move |conn| {
            let now = row::millis(SystemTime::now());
            write_held(conn, &FINISH, id, fence, &[&ending, &now, &status, &name])
        })
        .await
    }

    async fn acknowledge(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        static ACKNOWLEDGE: LazyLock<String> = LazyLock::new(|| {
            let delivered = append_history(
                "delivered = 0",
                "json_object('at', ?3, 'event', 'delivered')",
            );
            format!(
                "UPDATE tasks SET delivered = 1, updated_ms = ?3, lease_until_ms = 0, \
                 {delivered} WHERE {HELD}"
            )
        });
        self.run(move |conn| {
            let now = row::millis(SystemTime::now());
            write_held(conn, &ACKNOWLEDGE, id, fence, &[&now])
        })
        .await
    }

    async fn request_cancel(&self, id: RecordId, now: SystemTime) -> StoreResult<bool> {
        static REQUEST_CANCEL: LazyLock<String> = LazyLock::new(|| {
            let asked = append_history(
                "cancel_requested = 0",
                "json_object('at', ?2, 'event', 'cancel_requested')",
            );
            format!(
                "UPDATE tasks SET cancel_requested = 1, due_ms = min(due_ms, ?2), \
                 updated_ms = ?2, nudged = 1, {asked} WHERE id = ?1 AND ending IS NULL"
            )
        });
        let now = row::millis(now);
        self.run(move |conn| {
            let changed = conn
                .prepare_cached(&REQUEST_CANCEL)
                .and_then(|mut s| s.execute(params![id.0, now]))
                .map_err(sql)?;
            Ok(changed > 0)
        })
        .await
    }

    async fn remove(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        static REMOVE: LazyLock<String> =
            LazyLock::new(|| format!("DELETE FROM tasks WHERE {HELD}"));
        self.run(move |conn| write_held(conn, &REMOVE, id, fence, &[]))
            .await
    }

    async fn forget(&self, id: RecordId, now: SystemTime) -> StoreResult<Forgotten> {
        let now = row::millis(now);
        self.run(move |conn| {
            immediate(conn, |tx| {
                let removed = tx
                    .prepare_cached(
                        "DELETE FROM tasks WHERE id = ?1 AND (lease_owner IS NULL \
                         OR lease_until_ms <= ?2 OR (ending IS NOT NULL AND delivered = 1))",
                    )
                    .and_then(|mut s| s.execute(params![id.0, now]))
                    .map_err(sql)?;
                if removed > 0 {
                    return Ok(Forgotten::Removed);
                }
                let holder = tx
                    .prepare_cached("SELECT lease_owner, lease_until_ms FROM tasks WHERE id = ?1")
                    .and_then(|mut s| {
                        s.query_row([id.0], |r| Ok((r.get::<_, String>(0), r.get::<_, i64>(1))))
                            .optional()
                    })
                    .map_err(sql)?;
                match holder {
                    None => Ok(Forgotten::Missing),
                    Some((Ok(owner), Ok(until))) => Ok(Forgotten::Held {
                        owner,
                        until: row::time(until),
                    }),
                    Some((Err(e), _) | (_, Err(e))) => Err(StoreError::corrupt(
                        Some(id),
                        "column lease_owner or lease_until_ms holds a bad value",
                    )
                    .with_source(e)),
                }
            })
        })
        .await
    }

    async fn prune(&self, older_than: SystemTime, limit: usize) -> StoreResult<usize> {
        if limit == 0 {
            return Ok(0);
        }
        let older_than = row::millis(older_than);
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        // One statement, one short write transaction: a batch at a time.
        self.run(move |conn| {
            conn.prepare_cached(PRUNE)
                .and_then(|mut s| s.execute(params![older_than, limit]))
                .map_err(sql)
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
        let key = filter.key.clone();
        let by_key = if key.is_some() {
            "key = ?3"
        } else {
            "?3 IS NULL"
        };
        let tool = filter.tool.clone();
        let server = filter.server.clone();
        let status = filter.status.map(|s| s.as_str());
        let before = filter.before.map(|id| id.0);
        // Spelled out, so that a page after the first reads a range of ids.
        let by_before = if before.is_some() {
            "id < ?5"
        } else {
            "?5 IS NULL"
        };
        let (asking, order) = if filter.asking {
            (
                "asking_since_ms IS NOT NULL AND ending IS NULL",
                "asking_since_ms, id",
            )
        } else if filter.newest_first {
            ("1", "id DESC")
        } else {
            ("1", "id")
        };
        self.run(move |conn| {
            let mut s = conn
                .prepare_cached(&format!(
                    "SELECT {COLUMNS} FROM tasks WHERE {by_scope} AND {by_key} AND {state} \
                     AND {asking} AND (?4 IS NULL OR tool = ?4) AND {by_before} \
                     AND (?6 IS NULL OR server = ?6) AND (?7 IS NULL OR status = ?7) \
                     ORDER BY {order} LIMIT ?2"
                ))
                .map_err(sql)?;
            let mut rows = s
                .query(params![scope, limit, key, tool, before, server, status])
                .map_err(sql)?;
            let mut out = Vec::new();
            while let Some(r) = rows.next().map_err(sql)? {
                out.push(decode(r));
            }
            Ok(out)
        })
        .await
    }

    async fn counts(&self, overdue_before: SystemTime) -> StoreResult<Counts> {
        let before = row::millis(overdue_before);
        self.run(move |conn| {
            // Each figure from its partial index (the open, undelivered and
            // asking ones), never a scan of the table: 45 ms at 100,000
            // records as one scan, under 5 ms so.
            conn.prepare_cached(
                "SELECT (SELECT count(*) FROM tasks WHERE ending IS NULL), \
                 (SELECT count(*) FROM tasks \
                  WHERE asking_since_ms IS NOT NULL AND ending IS NULL), \
                 (SELECT count(*) FROM tasks WHERE ending IS NOT NULL AND delivered = 0), \
                 (SELECT count(*) FROM tasks), \
                 (SELECT count(*) FROM tasks WHERE ending IS NULL AND due_ms < ?1), \
                 (SELECT min(asking_since_ms) FROM tasks \
                  WHERE asking_since_ms IS NOT NULL AND ending IS NULL)",
            )
            .and_then(|mut s| {
                s.query_row([before], |r| {
                    let n = |i| r.get::<_, i64>(i).map(|n| u64::try_from(n).unwrap_or(0));
                    let (open, undelivered) = (n(0)?, n(2)?);
                    Ok(Counts {
                        open,
                        asking: n(1)?,
                        undelivered,
                        delivered: n(3)?.saturating_sub(open + undelivered),
                        overdue: n(4)?,
                        asking_since: r.get::<_, Option<i64>>(5)?.map(row::time),
                    })
                })
            })
            .map_err(sql)
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
mod tests;

/// The record the unique key of `task` already names, if any.
fn named(conn: &Connection, task: &NewTask) -> StoreResult<Option<RecordId>> {
    let Some(key) = task.key.as_deref().filter(|_| task.unique_key) else {
        return Ok(None);
    };
    conn.prepare_cached("SELECT id FROM tasks WHERE scope = ?1 AND key = ?2 AND unique_key <> 0")
        .and_then(|mut s| {
            s.query_row(params![task.scope, key], |r| r.get(0))
                .optional()
        })
        .map(|id| id.map(RecordId))
        .map_err(sql)
}

/// Inserts `task`, held by `(worker, until, fence)` when given.
fn add(
    conn: &Connection,
    task: &NewTask,
    lease: Option<(&str, i64, i64)>,
) -> StoreResult<RecordId> {
    let now = row::millis(SystemTime::now());
    let ending = task.ending.as_ref().map(row::ending_json);
    let (owner, until, fence) = match lease {
        Some((owner, until, fence)) => (Some(owner), until, fence),
        None => (None, 0, 0),
    };
    let status = task.recorded_status();
    let entries = history::created(
        status,
        task.status_message.as_deref(),
        task.ending.as_ref(),
        row::time(now),
    );
    conn.prepare_cached(
        "INSERT INTO tasks (task_id, server, protocol_version, tool, key, scope, \
         created_ms, updated_ms, status, status_message, poll_interval_ms, due_ms, \
         ending, schedule, unique_key, lease_owner, lease_until_ms, fence, history) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, \
         ?18)",
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
            status.as_str(),
            task.status_message,
            row::interval_column(task.poll_interval_ms),
            row::millis(task.due),
            ending,
            row::schedule_json(&task.schedule),
            task.unique_key && task.key.is_some(),
            owner,
            until,
            fence,
            history::entries_json(&entries),
        ])
    })
    .map_err(sql)?;
    Ok(RecordId(conn.last_insert_rowid()))
}
