//! `PostgresStore`: a task store on Postgres, for many workers on many
//! machines sharing one database.

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use tokio::sync::Mutex;
use tokio_postgres::error::SqlState;
use tokio_postgres::types::FromSql;
use tokio_postgres::{Client, Config, NoTls, Row, Statement};

use super::questions;
use super::row::{self, millis};
use super::{
    Answers, Claim, Ending, Fence, Filter, Lease, NewTask, Progress, Questions, RecordId,
    RecordState, Refusal, StoreError, StoreResult, TaskRecord, TaskStore,
};
use crate::protocol::{InputRequests, InputResponse};

/// The schema version this code writes and reads.
const VERSION: i64 = 2;

/// The key of the advisory lock that migrations hold, so that workers
/// starting together apply them once ("mcp-task" in ASCII).
const MIGRATION_LOCK: i64 = 0x6d63_702d_7461_736b;

/// The migrations, in order: a version and the statements that reach it.
/// Append only: a published migration never changes.
const MIGRATIONS: &[(i64, &str)] = &[(1, SCHEMA_V1), (2, SCHEMA_V2)];

/// Version 1: the tasks table, the fencing sequence and the claim indexes.
const SCHEMA_V1: &str = "
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
const SCHEMA_V2: &str = "
ALTER TABLE mcp_tasks_tasks ADD COLUMN questions TEXT NOT NULL DEFAULT '{}';
ALTER TABLE mcp_tasks_tasks ADD COLUMN asking_since BIGINT;
ALTER TABLE mcp_tasks_tasks ADD COLUMN schedule TEXT NOT NULL DEFAULT '{}';
ALTER TABLE mcp_tasks_tasks ADD COLUMN nudged BOOLEAN NOT NULL DEFAULT FALSE;
ALTER TABLE mcp_tasks_tasks ADD COLUMN revision BIGINT NOT NULL DEFAULT 0;
CREATE INDEX mcp_tasks_tasks_asking ON mcp_tasks_tasks (asking_since, id)
    WHERE asking_since IS NOT NULL AND ending IS NULL;
";

/// How many times a write of a record's questions and answers reads the
/// record again after another write came between its read and its write.
const REWRITE_TRIES: usize = 16;

/// A record's columns, in the order [`decode`] reads them by name.
macro_rules! columns {
    () => {
        "t.id, t.task_id, t.server, t.protocol_version, t.tool, t.key, t.scope, \
         t.created, t.updated, t.status, t.status_message, t.poll_interval_ms, t.due, \
         t.failed_reads, t.lease_owner, t.lease_until, t.fence, t.answers, \
         t.cancel_requested, t.ending, t.delivered, t.questions, t.schedule"
    };
}

/// A task store on Postgres: many worker processes on many machines share
/// one database, and the database alone decides who holds a task.
///
/// ```no_run
/// use mcp_tasks::store::{Filter, PostgresStore, TaskStore};
///
/// # async fn run() -> Result<(), mcp_tasks::store::StoreError> {
/// let store = PostgresStore::connect("postgres://tasks@db.internal/app").await?;
/// for record in store.list(&Filter::all().scope("tenant-7")).await? {
///     let record = record?;
///     println!("{} {:?}", record.id, record.status);
/// }
/// # Ok(())
/// # }
/// ```
///
/// # Schema
///
/// [`connect`](PostgresStore::connect) applies the schema's migrations
/// inside one transaction that holds an advisory lock, so that workers
/// starting together apply them once; the version is kept in
/// `mcp_tasks_schema`. Every name starts with `mcp_tasks_`, so the store
/// can share a database with the application; to keep it in a schema of
/// its own, name that schema in the connection string
/// (`options=-csearch_path=tasks`).
///
/// | column | type | |
/// |---|---|---|
/// | `id` | `BIGSERIAL` | the [`RecordId`](super::RecordId) |
/// | `task_id`, `server`, `protocol_version` | `TEXT` | the task reference (the id is a secret) |
/// | `tool`, `key`, `scope` | `TEXT` | |
/// | `created`, `updated`, `due`, `lease_until` | `BIGINT` | milliseconds since the Unix epoch |
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
/// tasks whose outcome awaits delivery. A third serves the listing of open
/// tasks that ask ([`Filter::asking`](super::Filter::asking)), by
/// `asking_since`.
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
/// second statement tell a stale fence from a missing record. A tracked
/// read therefore costs two statements: its share of one batched claim,
/// and one save. Statements are prepared once per connection.
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
/// next call connects again. There is no TLS: keep the database on
/// loopback or a private network, or put TLS in front of it.
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
    config: Config,
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
}

/// The statements a store runs, prepared on each connection.
struct Statements {
    insert: Statement,
    get: Statement,
    claim_due: Statement,
    claim_one: Statement,
    renew: Statement,
    read_book: Statement,
    write_book: Statement,
    save: Statement,
    finish: Statement,
    acknowledge: Statement,
    request_cancel: Statement,
    remove: Statement,
    exists: Statement,
    list: Statement,
    next_due: Statement,
}

impl Statements {
    async fn prepare(client: &Client) -> Result<Statements, tokio_postgres::Error> {
        Ok(Statements {
            insert: client
                .prepare(
                    "INSERT INTO mcp_tasks_tasks (task_id, server, protocol_version, tool, key, \
                     scope, created, updated, status, status_message, poll_interval_ms, due, ending, \
                     schedule) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $7, $8, $9, $10, $11, $12, $13) \
                     RETURNING id",
                )
                .await?,
            get: client
                .prepare(concat!(
                    "SELECT ",
                    columns!(),
                    " FROM mcp_tasks_tasks AS t WHERE t.id = $1"
                ))
                .await?,
            claim_due: client
                .prepare(concat!(
                    // One ordered walk per partial index (open tasks by due
                    // time, undelivered endings), merged: a single condition
                    // with OR read and sorted every due row (110 ms for a
                    // claim of 64 among 100,000 due records).
                    "WITH open AS MATERIALIZED (SELECT id, due FROM mcp_tasks_tasks \
                     WHERE ending IS NULL AND due <= $1 \
                     AND (lease_until IS NULL OR lease_until <= $1) \
                     ORDER BY due, id LIMIT $4 FOR UPDATE SKIP LOCKED), \
                     ended AS MATERIALIZED (SELECT id, due FROM mcp_tasks_tasks \
                     WHERE ending IS NOT NULL AND NOT delivered \
                     AND (lease_until IS NULL OR lease_until <= $1) \
                     ORDER BY due, id LIMIT $4 FOR UPDATE SKIP LOCKED), \
                     picked AS (SELECT id FROM (SELECT id, due FROM open UNION ALL \
                     SELECT id, due FROM ended) AS due_now ORDER BY due, id LIMIT $4), \
                     claimed AS (UPDATE mcp_tasks_tasks AS t SET lease_owner = $2, \
                     lease_until = $3, fence = nextval('mcp_tasks_fence'), nudged = FALSE \
                     FROM picked WHERE t.id = picked.id RETURNING ",
                    columns!(),
                    ") SELECT * FROM claimed ORDER BY due, id"
                ))
                .await?,
            claim_one: client
                .prepare(concat!(
                    "WITH picked AS MATERIALIZED (SELECT id FROM mcp_tasks_tasks \
                     WHERE id = $4 AND (lease_until IS NULL OR lease_until <= $1) \
                     AND (ending IS NULL OR NOT delivered) FOR UPDATE SKIP LOCKED) \
                     UPDATE mcp_tasks_tasks AS t SET lease_owner = $2, lease_until = $3, \
                     fence = nextval('mcp_tasks_fence'), nudged = FALSE \
                     FROM picked WHERE t.id = picked.id RETURNING ",
                    columns!()
                ))
                .await?,
            renew: client
                .prepare("UPDATE mcp_tasks_tasks SET lease_until = $3 WHERE id = $1 AND fence = $2")
                .await?,
            read_book: client
                .prepare(
                    "SELECT questions, answers, revision, fence, lease_owner IS NOT NULL AS held, \
                     ending IS NOT NULL AS ended FROM mcp_tasks_tasks WHERE id = $1",
                )
                .await?,
            // The only statement that writes questions and answers: it
            // changes the row only if no other write came since the read
            // of revision $2 (and, for the lease's holder $8, only while
            // the lease is still its own). $7: make the record due at $6,
            // for an answer from elsewhere.
            write_book: client
                .prepare(
                    "UPDATE mcp_tasks_tasks SET questions = $3, answers = $4, \
                     asking_since = $5, revision = revision + 1, updated = $6, \
                     due = CASE WHEN $7 THEN LEAST(due, $6) ELSE due END, \
                     nudged = nudged OR $7 \
                     WHERE id = $1 AND revision = $2 AND ($8::int8 IS NULL OR fence = $8)",
                )
                .await?,
            // An answer or a cancel from elsewhere since the claim: due
            // now, not at the step's due time.
            save: client
                .prepare(
                    "UPDATE mcp_tasks_tasks SET status = $3, status_message = $4, \
                     poll_interval_ms = $5, failed_reads = $6, \
                     due = CASE WHEN nudged THEN LEAST($7::int8, $8::int8) ELSE $7 END, \
                     updated = $8, lease_until = 0 \
                     WHERE id = $1 AND fence = $2",
                )
                .await?,
            finish: client
                .prepare(
                    "UPDATE mcp_tasks_tasks SET ending = $3, updated = $4 \
                     WHERE id = $1 AND fence = $2",
                )
                .await?,
            acknowledge: client
                .prepare(
                    "UPDATE mcp_tasks_tasks SET delivered = TRUE, updated = $3, lease_until = 0 \
                     WHERE id = $1 AND fence = $2",
                )
                .await?,
            request_cancel: client
                .prepare(
                    "UPDATE mcp_tasks_tasks SET cancel_requested = TRUE, due = LEAST(due, $2), \
                     nudged = TRUE, updated = $2 WHERE id = $1 AND ending IS NULL",
                )
                .await?,
            remove: client
                .prepare("DELETE FROM mcp_tasks_tasks WHERE id = $1 AND fence = $2")
                .await?,
            exists: client
                .prepare("SELECT 1 FROM mcp_tasks_tasks WHERE id = $1")
                .await?,
            list: client
                .prepare(concat!(
                    "SELECT ",
                    columns!(),
                    " FROM mcp_tasks_tasks AS t WHERE ($1::text IS NULL OR t.scope = $1) \
                     AND ($2::int4 IS NULL OR CASE $2 \
                     WHEN 0 THEN t.ending IS NULL \
                     WHEN 1 THEN t.ending IS NOT NULL AND NOT t.delivered \
                     ELSE t.ending IS NOT NULL AND t.delivered END) \
                     AND (NOT $4::bool OR (t.asking_since IS NOT NULL AND t.ending IS NULL)) \
                     ORDER BY CASE WHEN $4 THEN t.asking_since END, t.id LIMIT $3"
                ))
                .await?,
            next_due: client
                .prepare(
                    "SELECT min(GREATEST(COALESCE(lease_until, 0), \
                     CASE WHEN ending IS NULL THEN due ELSE 0 END)) \
                     FROM mcp_tasks_tasks WHERE ending IS NULL OR NOT delivered",
                )
                .await?,
        })
    }
}

impl PostgresStore {
    /// Connects to the database at `url` and brings its schema up to date.
    ///
    /// `url` is a libpq connection string, as a URL
    /// (`postgres://user:password@host:5432/dbname`) or as `key=value`
    /// pairs (`host=/run/postgresql dbname=app`). Unless it says otherwise,
    /// connecting gives up after 10 seconds and the connection names
    /// itself `mcp-tasks` (`application_name`).
    ///
    /// # Errors
    ///
    /// - [`StoreError::is_unavailable`]: the database cannot be reached.
    /// - [`StoreError::is_schema_too_new`]: the database was set up by a
    ///   newer version of this crate.
    /// - otherwise: `url` is not a connection string, the login was
    ///   refused, or a migration failed.
    pub async fn connect(url: &str) -> StoreResult<PostgresStore> {
        let mut config: Config = url
            .parse()
            .map_err(|e| StoreError::other("not a Postgres connection string").with_source(e))?;
        if config.get_connect_timeout().is_none() {
            config.connect_timeout(Duration::from_secs(10));
        }
        if config.get_application_name().is_none() {
            config.application_name("mcp-tasks");
        }
        let conn = open(&config).await?;
        Ok(PostgresStore {
            inner: Arc::new(Inner {
                config,
                conn: Mutex::new(Some(Arc::new(conn))),
            }),
        })
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
        let conn = Arc::new(open(&self.inner.config).await?);
        *slot = Some(Arc::clone(&conn));
        Ok(conn)
    }

    /// The store's error for `e`, dropping `conn` when it is lost, so that
    /// the next call connects again.
    async fn fail(&self, conn: &Arc<Conn>, e: tokio_postgres::Error) -> StoreError {
        let (error, lost) = classify(e);
        if lost || conn.client.is_closed() {
            let mut slot = self.inner.conn.lock().await;
            if slot.as_ref().is_some_and(|c| Arc::ptr_eq(c, conn)) {
                *slot = None;
            }
        }
        error
    }

    /// After a fenced write changed no row: whether the record is gone
    /// (not found) or held under another fence (stale).
    async fn refused(&self, conn: &Arc<Conn>, id: RecordId) -> StoreError {
        match conn.client.query_opt(&conn.st.exists, &[&id.0]).await {
            Ok(Some(_)) => StoreError::stale(id),
            Ok(None) => StoreError::not_found(id),
            Err(e) => self.fail(conn, e).await,
        }
    }

    /// Runs a fenced write of `id`: `Ok` when it changed the record.
    async fn fenced(
        &self,
        conn: &Arc<Conn>,
        id: RecordId,
        statement: &Statement,
        params: &[&(dyn tokio_postgres::types::ToSql + Sync)],
    ) -> StoreResult<()> {
        match conn.client.execute(statement, params).await {
            Ok(0) => Err(self.refused(conn, id).await),
            Ok(_) => Ok(()),
            Err(e) => Err(self.fail(conn, e).await),
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
        let r = match conn.client.query_opt(&conn.st.read_book, &[&id.0]).await {
            Ok(Some(r)) => r,
            Ok(None) => return Err(StoreError::not_found(id)),
            Err(e) => return Err(self.fail(conn, e).await),
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
            let written = conn
                .client
                .execute(
                    &conn.st.write_book,
                    &[
                        &id.0,
                        &revision,
                        &questions::questions_json(&book.questions),
                        &row::answers_json(&book.answers),
                        &since,
                        &millis(now),
                        &nudge,
                        &held,
                    ],
                )
                .await;
            match written {
                // Another write came since the read, or the record was
                // claimed again or removed: the next read says which.
                Ok(0) => continue,
                Ok(_) => return Ok((out, book)),
                Err(e) => return Err(self.fail(conn, e).await),
            }
        }
        Err(StoreError::other(format!(
            "record {id}: its questions and answers stayed contended (other writes came \
             between read and write {REWRITE_TRIES} times)"
        )))
    }

    /// Rows decoded one by one, each in its place.
    fn records(rows: &[Row]) -> Vec<StoreResult<TaskRecord>> {
        rows.iter().map(decode).collect()
    }
}

/// A record's questions and answers, as [`PostgresStore::rewrite`] reads
/// them.
struct Book {
    questions: Questions,
    answers: Answers,
    /// Whether the task ended.
    ended: bool,
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

/// Connects, applies the migrations and prepares the statements.
async fn open(config: &Config) -> StoreResult<Conn> {
    let (mut client, connection) = config.connect(NoTls).await.map_err(refused)?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!("the task store's connection closed: {e}");
        }
    });
    migrate(&mut client).await?;
    let st = Statements::prepare(&client)
        .await
        .map_err(|e| classify(e).0)?;
    Ok(Conn { client, st })
}

/// Brings the schema up to date, under an advisory lock held until the
/// transaction ends.
async fn migrate(client: &mut Client) -> StoreResult<()> {
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

/// The store's error for a server that refused a new connection. A
/// database that is not accepting connections for now (`ALLOW_CONNECTIONS
/// false`, a server starting or stopping) is unavailable, as a lost
/// connection is: a tracker pauses and tries again. Wrong credentials or a
/// database that does not exist stay errors.
fn refused(e: tokio_postgres::Error) -> StoreError {
    if let Some(db) = e.as_db_error()
        && *db.code() == SqlState::OBJECT_NOT_IN_PREREQUISITE_STATE
    {
        let what = format!("{} ({})", db.message(), db.code().code());
        return StoreError::unavailable(what);
    }
    classify(e).0
}

/// The store's error for a database error, and whether the connection is
/// lost. A server's message is kept, never its detail (which may quote a
/// row, task id included).
fn classify(e: tokio_postgres::Error) -> (StoreError, bool) {
    if e.is_closed() {
        return (StoreError::unavailable("the connection was lost"), true);
    }
    if let Some(db) = e.as_db_error() {
        let code = db.code();
        let what = format!("{} ({})", db.message(), code.code());
        let lost = code.code().starts_with("08")
            || [
                SqlState::ADMIN_SHUTDOWN,
                SqlState::CRASH_SHUTDOWN,
                SqlState::CANNOT_CONNECT_NOW,
            ]
            .contains(code);
        let error = if *code == SqlState::DISK_FULL {
            StoreError::full()
        } else if lost
            || [
                SqlState::TOO_MANY_CONNECTIONS,
                SqlState::OUT_OF_MEMORY,
                SqlState::T_R_SERIALIZATION_FAILURE,
                SqlState::T_R_DEADLOCK_DETECTED,
                SqlState::LOCK_NOT_AVAILABLE,
                SqlState::QUERY_CANCELED,
            ]
            .contains(code)
        {
            StoreError::unavailable(what)
        } else {
            StoreError::other(what)
        };
        return (error, lost);
    }
    let io = std::error::Error::source(&e).is_some_and(|s| s.is::<std::io::Error>());
    if io {
        (
            StoreError::unavailable("cannot reach the database").with_source(e),
            true,
        )
    } else {
        (StoreError::other("a database error").with_source(e), false)
    }
}

/// Column `name` of `row`, or a corrupt record.
fn column<'a, T: FromSql<'a>>(row: &'a Row, id: RecordId, name: &str) -> StoreResult<T> {
    row.try_get(name)
        .map_err(|e| StoreError::corrupt(Some(id), format!("its column {name} is not valid: {e}")))
}

/// A record from its row, strictly: a value the code would not have
/// written is a corrupt record.
fn decode(row: &Row) -> StoreResult<TaskRecord> {
    let id = RecordId(
        row.try_get("id")
            .map_err(|e| StoreError::corrupt(None, format!("an unreadable id: {e}")))?,
    );
    let lease = match (
        column::<Option<String>>(row, id, "lease_owner")?,
        column::<Option<i64>>(row, id, "lease_until")?,
        column::<Option<i64>>(row, id, "fence")?,
    ) {
        (Some(owner), Some(until), Some(fence)) => Some(Lease {
            owner,
            until: row::time(until),
            fence: Fence(fence),
        }),
        (None, None, None) => None,
        _ => return Err(StoreError::corrupt(Some(id), "a partial lease")),
    };
    let failed_reads = column::<i32>(row, id, "failed_reads")?;
    Ok(TaskRecord {
        id,
        reference: row::reference(
            id,
            column(row, id, "task_id")?,
            column(row, id, "server")?,
            column(row, id, "protocol_version")?,
        )?,
        tool: column(row, id, "tool")?,
        key: column(row, id, "key")?,
        scope: column(row, id, "scope")?,
        created: row::time(column(row, id, "created")?),
        updated: row::time(column(row, id, "updated")?),
        status: row::status(id, column(row, id, "status")?)?,
        status_message: column(row, id, "status_message")?,
        poll_interval_ms: row::interval(id, column(row, id, "poll_interval_ms")?)?,
        due: row::time(column(row, id, "due")?),
        failed_reads: row::count(id, "failed_reads", i64::from(failed_reads))?,
        lease,
        questions: row::questions(id, column(row, id, "questions")?)?,
        answers: row::answers(id, column(row, id, "answers")?)?,
        schedule: row::schedule(id, column(row, id, "schedule")?)?,
        cancel_requested: column(row, id, "cancel_requested")?,
        ending: row::ending(id, column(row, id, "ending")?)?,
        delivered: column(row, id, "delivered")?,
    })
}

/// A count or limit as a column value (saturating).
fn big(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

impl TaskStore for PostgresStore {
    async fn insert(&self, task: NewTask) -> StoreResult<RecordId> {
        let conn = self.conn().await?;
        let ending = task.ending.as_ref().map(row::ending_json);
        let r = &task.reference;
        let result = conn
            .client
            .query_one(
                &conn.st.insert,
                &[
                    &r.task_id().expose(),
                    &r.server(),
                    &r.protocol_version(),
                    &task.tool,
                    &task.key,
                    &task.scope,
                    &millis(SystemTime::now()),
                    &task.status.as_str(),
                    &task.status_message,
                    &row::interval_column(task.poll_interval_ms),
                    &millis(task.due),
                    &ending,
                    &row::schedule_json(&task.schedule),
                ],
            )
            .await;
        match result {
            Ok(row) => row
                .try_get(0)
                .map(RecordId)
                .map_err(|e| StoreError::other("an insert returned no id").with_source(e)),
            Err(e) => Err(self.fail(&conn, e).await),
        }
    }

    async fn get(&self, id: RecordId) -> StoreResult<Option<TaskRecord>> {
        let conn = self.conn().await?;
        match conn.client.query_opt(&conn.st.get, &[&id.0]).await {
            Ok(row) => row.as_ref().map(decode).transpose(),
            Err(e) => Err(self.fail(&conn, e).await),
        }
    }

    async fn claim(&self, claim: Claim<'_>) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        if claim.limit == 0 {
            return Ok(Vec::new());
        }
        let conn = self.conn().await?;
        let now = millis(claim.now);
        let until = claim.now.checked_add(claim.lease).map_or(i64::MAX, millis);
        let rows = match claim.record {
            Some(id) => {
                conn.client
                    .query(&conn.st.claim_one, &[&now, &claim.worker, &until, &id.0])
                    .await
            }
            None => {
                conn.client
                    .query(
                        &conn.st.claim_due,
                        &[&now, &claim.worker, &until, &big(claim.limit)],
                    )
                    .await
            }
        };
        match rows {
            Ok(rows) => Ok(Self::records(&rows)),
            Err(e) => Err(self.fail(&conn, e).await),
        }
    }

    async fn renew(&self, id: RecordId, fence: Fence, until: SystemTime) -> StoreResult<()> {
        let conn = self.conn().await?;
        self.fenced(
            &conn,
            id,
            &conn.st.renew,
            &[&id.0, &fence.0, &millis(until)],
        )
        .await
    }

    async fn ask(
        &self,
        id: RecordId,
        fence: Fence,
        asked: &InputRequests,
        now: SystemTime,
    ) -> StoreResult<(Questions, Answers)> {
        let conn = self.conn().await?;
        let ((), book) = self
            .rewrite(&conn, id, Some(fence), now, false, |book| {
                let changed = questions::ask(&mut book.questions, asked, now);
                Ok(Change::when(changed, ()))
            })
            .await?;
        Ok((book.questions, book.answers))
    }

    async fn answer(
        &self,
        id: RecordId,
        key: &str,
        response: &InputResponse,
        now: SystemTime,
    ) -> StoreResult<()> {
        let conn = self.conn().await?;
        self.rewrite(&conn, id, None, now, true, |book| {
            questions::answer(
                &book.questions,
                &mut book.answers,
                book.ended,
                key,
                response,
            )
            .map_err(|why| StoreError::refused(id, why))?;
            Ok(Change::Write(()))
        })
        .await?;
        Ok(())
    }

    async fn record_answer(
        &self,
        id: RecordId,
        fence: Fence,
        key: &str,
        response: &InputResponse,
    ) -> StoreResult<InputResponse> {
        let conn = self.conn().await?;
        let now = SystemTime::now();
        let (standing, _) = self
            .rewrite(&conn, id, Some(fence), now, false, |book| {
                match questions::answer(
                    &book.questions,
                    &mut book.answers,
                    book.ended,
                    key,
                    response,
                ) {
                    Ok(()) => Ok(Change::Write(response.clone())),
                    // Someone answered first: their answer stands.
                    Err(Refusal::Answered { .. }) => {
                        Ok(Change::Keep(book.answers[key].response.clone()))
                    }
                    Err(why) => Err(StoreError::refused(id, why)),
                }
            })
            .await?;
        Ok(standing)
    }

    async fn save(&self, id: RecordId, fence: Fence, progress: Progress) -> StoreResult<()> {
        let conn = self.conn().await?;
        let now = SystemTime::now();
        if !progress.taken.is_empty() || !progress.offered.is_empty() {
            self.rewrite(&conn, id, Some(fence), now, false, |book| {
                let taken =
                    questions::take(&mut book.questions, &mut book.answers, &progress.taken, now);
                let offered = questions::offer(&mut book.questions, &progress.offered);
                Ok(Change::when(taken || offered, ()))
            })
            .await?;
        }
        let failed_reads = i32::try_from(progress.failed_reads).unwrap_or(i32::MAX);
        self.fenced(
            &conn,
            id,
            &conn.st.save,
            &[
                &id.0,
                &fence.0,
                &progress.status.as_str(),
                &progress.status_message,
                &row::interval_column(progress.poll_interval_ms),
                &failed_reads,
                &millis(progress.due),
                &millis(now),
            ],
        )
        .await
    }

    async fn finish(&self, id: RecordId, fence: Fence, ending: &Ending) -> StoreResult<()> {
        let conn = self.conn().await?;
        let json = row::ending_json(ending);
        let now = millis(SystemTime::now());
        self.fenced(&conn, id, &conn.st.finish, &[&id.0, &fence.0, &json, &now])
            .await
    }

    async fn acknowledge(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let conn = self.conn().await?;
        let now = millis(SystemTime::now());
        self.fenced(&conn, id, &conn.st.acknowledge, &[&id.0, &fence.0, &now])
            .await
    }

    async fn request_cancel(&self, id: RecordId, now: SystemTime) -> StoreResult<bool> {
        let conn = self.conn().await?;
        match conn
            .client
            .execute(&conn.st.request_cancel, &[&id.0, &millis(now)])
            .await
        {
            Ok(n) => Ok(n > 0),
            Err(e) => Err(self.fail(&conn, e).await),
        }
    }

    async fn remove(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let conn = self.conn().await?;
        self.fenced(&conn, id, &conn.st.remove, &[&id.0, &fence.0])
            .await
    }

    async fn list(&self, filter: &Filter) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        let conn = self.conn().await?;
        let state: Option<i32> = filter.state.map(|s| match s {
            RecordState::Open => 0,
            RecordState::Undelivered => 1,
            RecordState::Delivered => 2,
        });
        let limit = filter.limit.map(big);
        match conn
            .client
            .query(
                &conn.st.list,
                &[&filter.scope, &state, &limit, &filter.asking],
            )
            .await
        {
            Ok(rows) => Ok(Self::records(&rows)),
            Err(e) => Err(self.fail(&conn, e).await),
        }
    }

    async fn next_due(&self) -> StoreResult<Option<SystemTime>> {
        let conn = self.conn().await?;
        match conn.client.query_one(&conn.st.next_due, &[]).await {
            Ok(row) => row
                .try_get::<_, Option<i64>>(0)
                .map(|ms| ms.map(row::time))
                .map_err(|e| StoreError::other("an unreadable due time").with_source(e)),
            Err(e) => Err(self.fail(&conn, e).await),
        }
    }
}
