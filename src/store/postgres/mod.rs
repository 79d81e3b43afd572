//! `PostgresStore`: a task store on Postgres, for many workers on many
//! machines sharing one database.
//!
//! Here the store's handle and its connection; `schema.rs` the schema and
//! its migrations, `statements.rs` the prepared SQL, `calls.rs` the
//! [`TaskStore`] calls, `rows.rs` a row read back as a record, `errors.rs`
//! what a database error means to the store.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::{Duration, SystemTime};

use tokio::sync::Mutex;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::FromSql;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};

use std::future::Future;

use super::history::{self, HistoryEntry, MAX_HISTORY, MAX_HISTORY_TEXT};
use super::questions;
use super::row::{self, millis};
use super::{
    Answerer, Answers, Claim, Counts, Ending, Fence, Filter, Forgotten, Lease, NewTask, Questions,
    RecordId, RecordState, Refusal, Reservation, Schedule, StepReport, StoreError, StoreResult,
    TaskRecord, TaskStore,
};
use crate::protocol::{InputRequests, InputResponse};
use crate::task::TaskRef;

/// A record's columns but its history, which [`decode`] reads by name.
macro_rules! record_columns {
    () => {
        "t.id, t.task_id, t.server, t.protocol_version, t.tool, t.key, t.scope, \
         t.created, t.updated, t.status, t.status_message, t.poll_interval_ms, t.due, \
         t.failed_reads, t.lease_owner, t.lease_until, t.fence, t.answers, \
         t.cancel_requested, t.ending, t.delivered, t.questions, t.schedule, t.unique_key"
    };
}

/// A record's columns, which [`decode`] reads by name.
macro_rules! columns {
    () => {
        concat!(
            record_columns!(),
            ", t.history::text AS history, t.history_dropped"
        )
    };
}

/// The database's clock, in milliseconds since the Unix epoch.
macro_rules! db_now {
    () => {
        "(extract(epoch FROM clock_timestamp()) * 1000)::int8"
    };
}

mod calls;
mod connect;
mod errors;
mod rows;
mod schema;
mod statements;
mod tls;

pub use connect::PostgresBuilder;
pub use schema::Migrated;

use connect::{Clock, Settings};
use errors::{classify, refused};
use rows::{big, column, decode};
use statements::Statements;

/// How many times a write of a record's questions and answers reads the
/// record again after another write came between its read and its write.
const REWRITE_TRIES: usize = 16;

/// How many claims with a limit of their own a connection prepares; a
/// claim with another limit uses the one with the limit as a parameter.
const CLAIM_PLANS: usize = 64;

/// A task store on Postgres: many worker processes on many machines share
/// one database, and the database alone decides who holds a task.
///
/// ```no_run
/// use mcp_tasks::store::{Filter, PostgresStore, TaskStore};
///
/// # async fn run() -> Result<(), mcp_tasks::store::StoreError> {
/// let url = "postgres://tasks@db.internal/app?sslmode=verify-full";
/// PostgresStore::migrate(url).await?; // once per deploy, as the schema's owner
/// let store = PostgresStore::connect(url).await?;
/// for record in store.list(&Filter::all().scope("tenant-7")).await? {
///     let record = record?;
///     println!("{} {:?}", record.id, record.status);
/// }
/// # Ok(())
/// # }
/// ```
///
/// # Schema and roles
///
/// Setting the schema up is a step of its own:
/// [`migrate`](PostgresStore::migrate) (or `mcp-tasks store migrate URL`,
/// or the SQL files of `src/store/postgres/migrations/` applied by hand,
/// in order) creates and upgrades the tables, as a role that may change
/// the schema, and may grant a worker's role what it needs
/// ([`PostgresBuilder::grant_to`]). [`connect`](PostgresStore::connect)
/// changes nothing: it checks the schema's version (an older one, or
/// none, is [`StoreError::is_schema_too_old`]; a newer one
/// [`StoreError::is_schema_too_new`]), so workers run as a role that may
/// only read and write rows:
///
/// ```sql
/// GRANT USAGE ON SCHEMA tasks TO worker;
/// GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA tasks TO worker;
/// GRANT USAGE, SELECT ON ALL SEQUENCES IN SCHEMA tasks TO worker;
/// ```
///
/// The tables live in the schema [`PostgresBuilder::schema`] names
/// (`public` unless set); every name starts with `mcp_tasks_`, so the
/// store can share a schema with the application. The version is kept in
/// `mcp_tasks_schema`.
///
/// | column | type | |
/// |---|---|---|
/// | `id` | `BIGSERIAL` | the [`RecordId`](super::RecordId) |
/// | `task_id`, `server`, `protocol_version` | `TEXT` | the task reference (the id is a secret) |
/// | `tool`, `key`, `scope` | `TEXT` | |
/// | `created`, `updated`, `due`, `lease_until` | `BIGINT` | milliseconds since the Unix epoch, on the database's clock |
/// | `status`, `status_message` | `TEXT` | the status by its wire name |
/// | `poll_interval_ms` | `BIGINT` | |
/// | `failed_reads` | `INTEGER` | |
/// | `lease_owner`, `fence` | `TEXT`, `BIGINT` | the fence from the sequence `mcp_tasks_fence` |
/// | `questions`, `answers`, `schedule`, `ending` | `TEXT` | JSON, kept as text (`JSONB` refuses `\u0000`, which a tool result may hold) |
/// | `asking_since` | `BIGINT` | when the oldest question that waits for an answer was first seen, or `NULL` |
/// | `cancel_requested`, `delivered` | `BOOLEAN` | |
/// | `nudged` | `BOOLEAN` | an answer or a cancel came from elsewhere since the last claim |
/// | `revision` | `BIGINT` | grows on every write of `questions` and `answers` |
///
/// Two partial indexes serve the claim: open tasks by due time, and ended
/// tasks whose outcome awaits delivery. The table keeps half of each page
/// free (fill factor 50), so that a claim, which changes no indexed
/// column, is a HOT update, and is vacuumed once 2% of its rows are dead:
/// each save leaves a dead entry at the head of the due index, which
/// every claim steps over until a vacuum removes it. A third serves the listing of open
/// tasks that ask ([`Filter::asking`](super::Filter::asking)), by
/// `asking_since`; a fourth [`prune`](TaskStore::prune), the delivered
/// records by `created` (a column no save changes).
///
/// # Clocks
///
/// Which leases ran out and which records are due is judged by the
/// database's clock, never a worker's, so that a worker whose clock runs
/// ahead takes no record another worker holds. The times a worker passes
/// and reads ([`Claim::now`], a due time, a lease's end) are on its own
/// clock: the store converts them by the difference between the two
/// clocks, measured when it connects and again at every claim. (For tests
/// that drive time themselves, [`PostgresBuilder::worker_clock`] takes
/// the times as they are.)
///
/// # Statements
///
/// A claim is one statement (`WITH open AS (SELECT id … ORDER BY due
/// LIMIT n FOR UPDATE SKIP LOCKED), ended AS (…), picked AS (… ORDER BY
/// due LIMIT n) UPDATE … SET fence = nextval(…) FROM picked … RETURNING
/// …`): one ordered walk of each partial index, so that a claim reads about
/// `n` rows however many are due, and concurrent workers skip each other's
/// rows instead of waiting on them, and every fenced write is one `UPDATE …
/// WHERE id = $1 AND fence = $2`; only when it changes no row does a
/// second statement tell a stale fence from a missing record. A
/// [`prune`](TaskStore::prune) is one statement too (`DELETE … WHERE id =
/// ANY(ARRAY(SELECT id … ORDER BY created, id LIMIT n FOR UPDATE SKIP
/// LOCKED))`): it
/// locks only the rows of its batch, for as long as the batch takes, and
/// skips rows another pruner holds. A tracked
/// read therefore costs two statements: its share of one batched claim,
/// and one save. Statements are prepared once per connection, and the
/// claim once per limit asked (with its limit written in, Postgres plans
/// it once; with the limit as a parameter it planned every claim again).
///
/// The walk relies on the table's statistics. On a table never analyzed
/// (many records loaded at once into a new table, say), Postgres takes
/// open records for rare and may plan a claim as a read and a sort of
/// every due record instead: 48 ms for a claim of 64 among 100,000, where
/// the walk takes 0.1 ms. Autovacuum analyzes the table within a minute
/// or so of such a load; `ANALYZE mcp_tasks_tasks` after the load, as the
/// table's owner, spares the workers that minute.
///
/// # Questions and answers
///
/// Clones share one connection, so the store opens no transaction: a
/// record's questions and answers change by optimistic concurrency
/// instead. A change reads them (with the record's `revision`, fence and
/// whether it ended) in one `SELECT`, applies the rules in Rust, and
/// writes them back in one `UPDATE … SET revision = revision + 1 … WHERE
/// id = $1 AND revision = $2` (and `AND fence = $f` for the lease's
/// holder). When another write came in between, the `UPDATE` changes no
/// row and the change starts again from a fresh read (at most 16 times),
/// so an answer given from elsewhere is never overwritten. Without
/// contention, a question seen ([`ask`](TaskStore::ask) finding a new
/// key, or closing one) costs one read and one write, and a read that
/// finds nothing new the read alone; an answer
/// ([`answer`](TaskStore::answer) or
/// [`record_answer`](TaskStore::record_answer)) costs one read and one
/// write; a save that marks answers taken or questions offered costs that
/// read and write before its own statement.
///
/// # Connection
///
/// A store keeps one connection, shared by its clones; statements from
/// concurrent calls are pipelined on it. When the connection is lost, the
/// call that finds out fails with [`StoreError::is_unavailable`] and the
/// next call connects again. Everything is bounded: connecting (login and
/// checks included) by the connection string's `connect_timeout`, 10
/// seconds unless it says otherwise, and each statement by
/// [`PostgresBuilder::statement_timeout`], 10 seconds unless set; a bound
/// that fires is [`StoreError::is_unavailable`], so that a tracker pauses
/// and resumes as for an outage.
///
/// # TLS
///
/// As libpq's `sslmode` in the connection string says, on rustls: `disable`;
/// `prefer` (the default: TLS when the server offers it) and `require`
/// encrypt without checking the server's certificate, as libpq does;
/// `verify-ca` checks that a trusted root signed it, `verify-full` also
/// that it names the host. The trusted roots are the system's, or the PEM
/// file `sslrootcert` names (`require` with `sslrootcert` checks the chain,
/// and `sslrootcert=system` means `verify-full`, as in libpq). Use
/// `verify-full` for a database across a network. Client certificates are
/// not supported.
///
/// # Secrets
///
/// The table holds every task id in full, and a task id lets whoever
/// knows it read, answer or cancel the task: grant access to the database
/// as to a password store. The connection string may hold a password; the
/// store never logs it, nor a task id.
#[derive(Clone)]
pub struct PostgresStore {
    inner: Arc<Inner>,
}

struct Inner {
    settings: Settings,
    clock: Clock,
    /// The database's clock minus the workers', in milliseconds.
    skew: AtomicI64,
    conn: Mutex<Option<Arc<Conn>>>,
}

impl fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PostgresStore").finish_non_exhaustive()
    }
}

/// One connection and its prepared statements.
struct Conn {
    client: Client,
    st: Statements,
    /// The claim of due records for each limit asked so far, the limit
    /// written in (see [`statements::claim_due`]); at most
    /// [`CLAIM_PLANS`] of them.
    claims: std::sync::Mutex<HashMap<usize, Statement>>,
    /// The database's clock minus the local one when it connected.
    skew: i64,
}

impl PostgresStore {
    /// Connects to the database at `url` with the default settings, and
    /// checks that its schema is the one this code knows (changing
    /// nothing): [`PostgresStore::builder`]`(url).connect()`.
    ///
    /// `url` is a libpq connection string, as a URL
    /// (`postgres://user:password@host:5432/dbname?sslmode=verify-full`)
    /// or as `key=value` pairs (`host=/run/postgresql dbname=app`).
    /// Unless it says otherwise, connecting gives up after 10 seconds and
    /// the connection names itself `mcp-tasks` (`application_name`).
    ///
    /// # Errors
    ///
    /// See [`PostgresBuilder::connect`].
    pub async fn connect(url: &str) -> StoreResult<PostgresStore> {
        PostgresStore::builder(url).connect().await
    }

    /// Creates or upgrades the store's tables in the database at `url`:
    /// [`PostgresStore::builder`]`(url).migrate()`. Run it once per deploy
    /// as a role that may change the schema.
    ///
    /// # Errors
    ///
    /// See [`PostgresBuilder::migrate`].
    pub async fn migrate(url: &str) -> StoreResult<Migrated> {
        PostgresStore::builder(url).migrate().await
    }

    /// The settings for a store at `url`: its schema, its bounds, whose
    /// clock decides, and the role a migration grants rights to.
    pub fn builder(url: &str) -> PostgresBuilder {
        PostgresBuilder::new(url)
    }

    /// The live connection, connecting again when it was lost.
    async fn conn(&self) -> StoreResult<Arc<Conn>> {
        let mut slot = self.inner.conn.lock().await;
        if let Some(conn) = slot.as_ref()
            && !conn.client.is_closed()
        {
            return Ok(Arc::clone(conn));
        }
        *slot = None;
        let conn = Arc::new(self.inner.settings.open().await?);
        if self.inner.clock == Clock::Database {
            self.inner.skew.store(conn.skew, Ordering::Relaxed);
        }
        *slot = Some(Arc::clone(&conn));
        Ok(conn)
    }

    /// Runs one statement on `conn` within the statement bound: its
    /// result, or the store's error (a bound that fired is unavailable,
    /// and the connection is dropped, as when it is lost).
    async fn run<T>(
        &self,
        conn: &Arc<Conn>,
        statement: impl Future<Output = Result<T, tokio_postgres::Error>>,
    ) -> StoreResult<T> {
        let bound = self.inner.settings.statement_timeout;
        match tokio::time::timeout(bound, statement).await {
            Ok(Ok(out)) => Ok(out),
            Ok(Err(e)) => Err(self.fail(conn, e).await),
            Err(_) => {
                self.forget(conn).await;
                Err(StoreError::unavailable(format!(
                    "the database did not answer a statement within {} ms",
                    bound.as_millis()
                )))
            }
        }
    }

    /// Drops `conn`, if it is still the store's, so that the next call
    /// connects again.
    async fn forget(&self, conn: &Arc<Conn>) {
        let mut slot = self.inner.conn.lock().await;
        if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
            *slot = None;
        }
    }

    /// The database's clock minus the workers', in milliseconds (0 with
    /// [`PostgresBuilder::worker_clock`]).
    fn skew(&self) -> i64 {
        match self.inner.clock {
            Clock::Database => self.inner.skew.load(Ordering::Relaxed),
            Clock::Worker => 0,
        }
    }

    /// A worker's moment as a column value, on the database's clock.
    fn to_db(&self, t: SystemTime) -> i64 {
        millis(t).saturating_add(self.skew())
    }

    /// The claim of at most `limit` due records prepared on `conn` with
    /// the limit written in, prepared now if need be; `None` when the
    /// connection holds as many such claims as it keeps.
    async fn claim_due(&self, conn: &Arc<Conn>, limit: usize) -> StoreResult<Option<Statement>> {
        {
            let claims = conn.claims.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(statement) = claims.get(&limit) {
                return Ok(Some(statement.clone()));
            }
            if claims.len() >= CLAIM_PLANS {
                return Ok(None);
            }
        }
        let sql = statements::claim_due(&limit.to_string());
        let statement = self.run(conn, conn.client.prepare(&sql)).await?;
        conn.claims
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(limit, statement.clone());
        Ok(Some(statement))
    }

    /// The store's error for `e`, dropping `conn` when it is lost, so that
    /// the next call connects again.
    async fn fail(&self, conn: &Arc<Conn>, e: tokio_postgres::Error) -> StoreError {
        let (error, lost) = classify(e);
        if lost || conn.client.is_closed() {
            self.forget(conn).await;
        }
        error
    }

    /// After a fenced write changed no row: whether the record is gone
    /// (not found) or held under another fence (stale).
    async fn refused(&self, conn: &Arc<Conn>, id: RecordId) -> StoreError {
        match self
            .run(conn, conn.client.query_opt(&conn.st.exists, &[&id.0]))
            .await
        {
            Ok(Some(_)) => StoreError::stale(id),
            Ok(None) => StoreError::not_found(id),
            Err(e) => e,
        }
    }

    /// Writes `saves` (records named once, no question touched) in one
    /// statement, and returns the ids of the records written: the others
    /// were claimed by another worker since, or are gone.
    async fn save_together<'a>(
        &self,
        saves: impl Iterator<Item = &'a (RecordId, Fence, StepReport)>,
    ) -> StoreResult<HashSet<i64>> {
        let conn = self.conn().await?;
        let now = self.to_db(SystemTime::now());
        let (mut ids, mut fences, mut statuses, mut messages) = (vec![], vec![], vec![], vec![]);
        let (mut intervals, mut failed, mut due) = (vec![], vec![], vec![]);
        for (id, fence, p) in saves {
            ids.push(id.0);
            fences.push(fence.0);
            statuses.push(p.status.as_str());
            messages.push(p.status_message.as_deref());
            intervals.push(row::interval_column(p.poll_interval_ms));
            failed.push(i32::try_from(p.failed_reads).unwrap_or(i32::MAX));
            due.push(self.to_db(p.due));
        }
        let rows = self
            .run(
                &conn,
                conn.client.query(
                    &conn.st.save_all,
                    &[
                        &ids, &fences, &statuses, &messages, &intervals, &failed, &due, &now,
                    ],
                ),
            )
            .await?;
        rows.iter()
            .map(|r| {
                r.try_get("id")
                    .map_err(|e| StoreError::corrupt(None, format!("a saved id is not valid: {e}")))
            })
            .collect()
    }

    /// Runs a fenced write of `id`: `Ok` when it changed the record.
    async fn fenced(
        &self,
        conn: &Arc<Conn>,
        id: RecordId,
        statement: &Statement,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> StoreResult<()> {
        match self
            .run(conn, conn.client.execute(statement, params))
            .await?
        {
            0 => Err(self.refused(conn, id).await),
            _ => Ok(()),
        }
    }

    /// The questions and answers of `id` and the revision they were read
    /// at; with `fence`, only while the record is held under it.
    async fn read_book(
        &self,
        conn: &Arc<Conn>,
        id: RecordId,
        fence: Option<Fence>,
    ) -> StoreResult<(Book, i64)> {
        let Some(r) = self
            .run(conn, conn.client.query_opt(&conn.st.read_book, &[&id.0]))
            .await?
        else {
            return Err(StoreError::not_found(id));
        };
        if let Some(fence) = fence {
            let current = column::<Option<i64>>(&r, id, "fence")?;
            if current != Some(fence.0) || !column::<bool>(&r, id, "held")? {
                return Err(StoreError::stale(id));
            }
        }
        let book = Book {
            questions: row::questions(id, column(&r, id, "questions")?)?,
            answers: row::answers(id, column(&r, id, "answers")?)?,
            ended: column(&r, id, "ended")?,
            noted: Vec::new(),
        };
        Ok((book, column(&r, id, "revision")?))
    }

    /// Changes the questions and answers of `id` by `change`, under
    /// optimistic concurrency: read them, change them, and write them back
    /// only if nothing else wrote them since the read (nor, with `fence`,
    /// claimed the record again); otherwise read again and start over.
    /// This is the only way the store writes questions and answers.
    ///
    /// `change` sees a fresh read on every try. With `nudge`, the write
    /// also makes the record due at `now` and marks it nudged (an answer
    /// from elsewhere). Returns what `change` returned, with the book as it
    /// stands after the write (or as read, when nothing was written).
    async fn rewrite<T>(
        &self,
        conn: &Arc<Conn>,
        id: RecordId,
        fence: Option<Fence>,
        now: SystemTime,
        nudge: bool,
        mut change: impl FnMut(&mut Book) -> StoreResult<Change<T>> + Send,
    ) -> StoreResult<(T, Book)> {
        let held = fence.map(|f| f.0);
        for _ in 0..REWRITE_TRIES {
            let (mut book, revision) = self.read_book(conn, id, fence).await?;
            let out = match change(&mut book)? {
                Change::Keep(out) => return Ok((out, book)),
                Change::Write(out) => out,
            };
            let since = questions::asking_since(&book.questions, &book.answers).map(millis);
            let written = self
                .run(
                    conn,
                    conn.client.execute(
                        &conn.st.write_book,
                        &[
                            &id.0,
                            &revision,
                            &questions::questions_json(&book.questions),
                            &row::answers_json(&book.answers),
                            &since,
                            &self.to_db(now),
                            &nudge,
                            &held,
                            &self.entries_json(&book.noted),
                        ],
                    ),
                )
                .await?;
            match written {
                // Another write came since the read, or the record was
                // claimed again or removed: the next read says which.
                0 => continue,
                _ => return Ok((out, book)),
            }
        }
        Err(StoreError::other(format!(
            "record {id}: its questions and answers stayed contended (other writes came \
             between read and write {REWRITE_TRIES} times)"
        )))
    }

    /// Inserts `task`, held by `(worker, until)` under a new fence when
    /// given; a unique key already taken inserts nothing and names the
    /// record that has it.
    async fn add(
        &self,
        task: &NewTask,
        lease: Option<(&str, SystemTime)>,
    ) -> StoreResult<Reservation> {
        let conn = self.conn().await?;
        let ending = task.ending.as_ref().map(row::ending_json);
        let r = &task.reference;
        let unique = task.unique_key && task.key.is_some();
        // A taken key may lose its record between the insert and the
        // look-up (removed): then try again.
        for _ in 0..REWRITE_TRIES {
            let (task_id, server, version) =
                (r.task_id().expose(), r.server(), r.protocol_version());
            let (now, due) = (self.to_db(SystemTime::now()), self.to_db(task.due));
            let (status, interval) = (
                task.recorded_status().as_str(),
                row::interval_column(task.poll_interval_ms),
            );
            let schedule = row::schedule_json(&task.schedule);
            let entries = self.entries_json(&history::created(
                task.recorded_status(),
                task.status_message.as_deref(),
                task.ending.as_ref(),
                SystemTime::now(),
            ));
            let mut params: Vec<&(dyn tokio_postgres::types::ToSql + Sync)> = vec![
                &task_id,
                &server,
                &version,
                &task.tool,
                &task.key,
                &task.scope,
                &now,
                &status,
                &task.status_message,
                &interval,
                &due,
                &ending,
                &schedule,
                &unique,
                &entries,
            ];
            let held = lease.map(|(owner, until)| (owner, self.to_db(until)));
            let statement = match &held {
                Some((owner, until)) => {
                    params.push(owner);
                    params.push(until);
                    &conn.st.reserve
                }
                None => &conn.st.insert,
            };
            let inserted = self
                .run(&conn, conn.client.query_opt(statement, &params))
                .await?;
            if let Some(row) = inserted {
                let id = row
                    .try_get(0)
                    .map(RecordId)
                    .map_err(|e| StoreError::other("an insert returned no id").with_source(e))?;
                let fence = match held {
                    Some(_) => row.try_get(1).map(Fence).map_err(|e| {
                        StoreError::other("a reservation returned no fence").with_source(e)
                    })?,
                    None => Fence(0),
                };
                return Ok(Reservation::Reserved { id, fence });
            }
            let existing = self
                .run(
                    &conn,
                    conn.client
                        .query_opt(&conn.st.named, &[&task.scope, &task.key]),
                )
                .await?;
            if let Some(row) = existing {
                let id = row
                    .try_get(0)
                    .map(RecordId)
                    .map_err(|e| StoreError::other("an unreadable id").with_source(e))?;
                return Ok(Reservation::Taken(id));
            }
        }
        Err(StoreError::other(
            "a unique key stayed contended (its record came and went 16 times)",
        ))
    }

    /// History entries as the JSON the database keeps, their times moved
    /// to its clock (as every other time in a row).
    fn entries_json(&self, entries: &[HistoryEntry]) -> String {
        let skew = self.skew();
        let moved: Vec<HistoryEntry> = entries
            .iter()
            .map(|e| HistoryEntry {
                at: row::time(millis(e.at).saturating_add(skew)),
                event: e.event.clone(),
            })
            .collect();
        history::entries_json(&moved)
    }

    /// Rows decoded one by one, each in its place, their times on the
    /// workers' clock.
    fn records(&self, rows: &[Row]) -> Vec<StoreResult<TaskRecord>> {
        let skew = self.skew();
        rows.iter().map(|r| decode(r, skew)).collect()
    }
}

/// A record's questions and answers, as [`PostgresStore::rewrite`] reads
/// them.
struct Book {
    questions: Questions,
    answers: Answers,
    /// Whether the task ended.
    ended: bool,
    /// The history entries a change adds: appended to the record's
    /// history by the write, in SQL, so that no entry another statement
    /// appended since the read is lost.
    noted: Vec<HistoryEntry>,
}

/// The `SET` clauses that append the entries of the jsonb array `new` to
/// a record's history when `cond` holds, in the statement that makes the
/// change, keeping the newest [`MAX_HISTORY`] and counting the ones
/// dropped. A history that is not an array is left as it is, for the
/// reads to report, and never fails the statement (a claim of many
/// records among them).
fn append_history(cond: &str, new: &str) -> String {
    let keep = MAX_HISTORY - 1;
    format!(
        "history = CASE WHEN ({cond}) AND jsonb_typeof(history) = 'array' THEN \
         CASE WHEN jsonb_array_length(history) + jsonb_array_length({new}) > {MAX_HISTORY} \
         THEN jsonb_path_query_array(history || {new}, '$[last-{keep} to last]') \
         ELSE history || {new} END ELSE history END, \
         history_dropped = CASE WHEN ({cond}) AND jsonb_typeof(history) = 'array' \
         THEN history_dropped + GREATEST(jsonb_array_length(history) \
         + jsonb_array_length({new}) - {MAX_HISTORY}, 0) ELSE history_dropped END"
    )
}

/// Server text as a history entry keeps it: at most
/// [`MAX_HISTORY_TEXT`] characters of the SQL expression `text`.
fn cut_text(text: &str) -> String {
    format!("left({text}, {MAX_HISTORY_TEXT})")
}

/// What a change of a [`Book`] asks of [`PostgresStore::rewrite`].
enum Change<T> {
    /// The book changed: write it back, then return `T`.
    Write(T),
    /// Nothing changed: return `T` without writing.
    Keep(T),
}

impl<T> Change<T> {
    /// A write when `changed`, else nothing.
    fn when(changed: bool, out: T) -> Change<T> {
        if changed {
            Change::Write(out)
        } else {
            Change::Keep(out)
        }
    }
}
