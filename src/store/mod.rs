//! Tasks that outlive the process: a durable task store and a tracker.
//!
//! A server keeps a task for minutes or hours, and the task id is the only
//! handle on it (2026-07-28 has no `tasks/list`). A [`Task`](crate::Task)
//! handle lives only as long as the process that holds it; this module
//! keeps tasks in a database instead, so that a restart, a redeploy or a
//! crash loses none of them, and so that many workers can share the work.
//!
//! - A [`TaskStore`] keeps one [`TaskRecord`] per task: how to find it
//!   again (a [`TaskRef`]), what it was last seen doing, when to read it
//!   next and how (its builder's poll settings and lifetime, a
//!   [`Schedule`]), who holds it (a [`Lease`] with a fencing token), the
//!   questions it asks and the answers given to them, whether a cancel
//!   was asked for, and how it ended, with whether the application has
//!   taken that outcome; and a short [`History`] of what happened to it,
//!   each entry written with the change it records.
//! - Three stores: [`MemoryStore`] (tests and examples), `SqliteStore`
//!   (feature `sqlite`: one file, the embedded default) and `PostgresStore`
//!   (feature `postgres`: many workers on many machines share one
//!   database).
//! - A [`Tracker`] is a worker: it claims the records that are due, takes
//!   each one step through a [`Client`](crate::Client) (one read, the input
//!   handlers when the task asks, a cancel when one was asked for), writes
//!   back under its lease, and hands each outcome to the application until
//!   the application acknowledges it.
//! - [`backend`]: the other half of [`TaskStore`], which a worker drives
//!   and an application never handles (a [`NewTask`] to insert, a
//!   [`Claim`], the [`Fence`] of a lease, a [`StepReport`]), with how to
//!   write a store of your own.
//! - Delivered records stay until removed: a worker with
//!   [`TrackerBuilder::retain`] prunes those older than its setting, a
//!   small batch at a time ([`TaskStore::prune`]), and
//!   [`TaskStore::forget`] removes one record by hand.
//!
//! # Questions that wait for a person
//!
//! A task in `input_required` asks questions (a form to fill in, a URL to
//! visit, a sampling request) meant for a person, who may answer hours
//! later, from another process: a web page, a chat bot, the command line.
//! The worker that reads such a task writes each question into its record
//! ([`TaskStore::ask`]) before anything else happens, tells the
//! application once ([`TrackerBuilder::on_question`]), lets the client's
//! input handlers answer what they can within a bound
//! ([`TrackerBuilder::answer_within`]), and goes on with other tasks.
//! Anyone who can reach the store lists what waits
//! ([`Filter::asking`]) and answers ([`TaskStore::answer`], or
//! [`Tracker::answer`]): the answer is checked against the question, the
//! first one stored wins, and the record is due at once, so the next
//! worker to claim it sends the answer with `tasks/update`, once.
//!
//! ```no_run
//! # async fn f(store: mcp_tasks::store::SqliteStore) -> Result<(), mcp_tasks::store::StoreError> {
//! use std::time::SystemTime;
//! use mcp_tasks::protocol::ElicitResult;
//! use mcp_tasks::store::{Filter, TaskStore};
//!
//! // In the web server, with the same database as the workers:
//! for record in store.list(&Filter::all().asking()).await? {
//!     let record = record?;
//!     for (key, question) in record.open_questions() {
//!         println!("{} asks {key}: {}", record.tool, question.message().unwrap_or(""));
//!     }
//! }
//! // A person approved: stored, checked, sent by the next worker.
//! # let (id, key) = (mcp_tasks::store::RecordId(1), "approve");
//! let answer = ElicitResult::accept(serde_json::json!({"ok": true}));
//! store.answer(id, key, &answer.into(), SystemTime::now()).await?;
//! # Ok(()) }
//! ```
//!
//! Questions wait for answers on the Tasks extension of 2026-07-28, which
//! lists them in `tasks/get` under keys the server never reuses and takes
//! their answers in `tasks/update` whenever they come. A 2025-11-25 task
//! asks its question as a server request inside `tasks/result`, which
//! lives only while a worker's step holds the task: the worker's input
//! handlers answer it then (within
//! [`answer_within`](TrackerBuilder::answer_within)). Such a question is
//! written to the record like any other, so that listings show what the
//! task asked, but it closes when the step ends, answered or not: a request
//! still unanswered is refused then (what a refused question means is the
//! server's to say: server-everything goes on with a default answer, other
//! servers fail the task), the
//! [`on_question`](TrackerBuilder::on_question) hook is not told of it, and
//! an answer given from elsewhere is refused as closed
//! ([`Refusal::Closed`]) rather than kept and never sent. Give a worker
//! that tracks initialize-era tasks the handlers that answer them.
//!
//! # What survives a crash, and when
//!
//! | moment | what a crash leaves |
//! |---|---|
//! | a unique key reserved ([`Label::key`](tracker::Label::key)), `tools/call` not answered | a record without a task, held by the caller's lease; once the lease runs out (at once for a worker restarted under the caller's name, [`TrackerBuilder::worker`]), a worker ends it [`Ending::StartUnknown`] (the call may or may not have started a task) and delivers that: never a second call for the key |
//! | the server answered, its task not yet written into the reserved record | the same: [`Ending::StartUnknown`]; a task the server started then runs on unwatched (the window is the time one write takes) |
//! | without a unique key: before the server answered `tools/call` | nothing: the call may or may not have started a task ([`Error::is_outcome_unknown`](crate::Error::is_outcome_unknown)) |
//! | without a unique key: between the server's answer and the insert | a task the store never saw: the window is the time one insert takes, since [`Tracker::call_tool`] inserts before it returns and before anything else is awaited |
//! | after the insert | everything: another worker claims the record once its lease runs out; a worker restarted under the same name ([`TrackerBuilder::worker`]) at once |
//! | a worker stopped with [`Tracker::shutdown`] | nothing: its jobs finish (or are cut after [`TrackerBuilder::stop_within`]) and every record it held is given back, claimable at once |
//! | a question seen, not yet written | nothing: the next read shows it again and writes it |
//! | a question written, not yet offered to the application | the question; the next read offers it ([`TrackerBuilder::on_question`]) |
//! | a question offered, the acknowledgement not written | the question, offered again: at least once |
//! | an answer given from elsewhere ([`TaskStore::answer`]) | the answer, stored and checked; the record is due at once, and the next worker to claim it sends it |
//! | a handler's answer recorded, `tasks/update` not sent (or not acknowledged) | the recorded answer, sent again for a key the server still asks for; the input handler is never asked twice |
//! | an answer sent and acknowledged, `taken` not written | the answer, sent once more if the server still lists its key (servers apply answers eventually, and a second copy of the same answer changes nothing) |
//! | an answer taken | nothing more: its question is closed in the same write, and a taken answer is never sent again, even while the server still lists its key |
//! | an outcome written, not acknowledged | the outcome, delivered again (at least once) |
//! | an outcome acknowledged | nothing more: a delivered outcome is never delivered again |
//!
//! # Fencing
//!
//! Every claim gives the record a new fencing token, larger than any
//! before it, and every write a worker makes carries the token of its
//! claim. A worker whose lease ran out (a long pause, a stopped process)
//! and whose record was claimed again cannot write: the store refuses the
//! stale token ([`StoreError::is_stale`]) and the worker drops the record.
//! The database decides who holds a task; nothing else does.
//!
//! # Secrets
//!
//! Task ids are bearer-like: whoever knows one may read the task, answer
//! it or cancel it. A store holds every id in full, so protect the
//! database file (or the database) as you would a password store. Nothing
//! in this module logs an id in full, and `Debug` of a record shows only
//! the redacted id.

use std::collections::BTreeMap;
use std::fmt;
use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::protocol::{CallToolResult, InputRequests, InputResponse, RpcError, TaskStatus};
use crate::task::{Outcome, TaskRef};

pub mod backend;
mod epoch;
mod error;
mod history;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod questions;
mod row;
#[cfg(feature = "sqlite")]
mod sqlite;
mod tracker;

use backend::{Claim, Fence, NewTask, Reservation, StepReport};
pub use error::StoreError;
pub use history::{Answerer, Event, History, HistoryEntry, MAX_HISTORY, MAX_HISTORY_TEXT};
pub use memory::MemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::{Migrated, PostgresBuilder, PostgresStore};
pub use questions::{
    Answers, MAX_ANSWER_BYTES, MAX_KEPT_QUESTIONS, MAX_OPEN_QUESTIONS, MAX_QUESTION_BYTES,
    Question, QuestionKind, Questions, Refusal,
};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;
pub use tracker::{
    Asking, Connector, Delivery, Label, Pass, TrackError, Tracker, TrackerBuilder, Tracking,
};

/// The result of a store operation.
pub type StoreResult<T> = std::result::Result<T, StoreError>;

/// A record's key in its store, assigned by the store at insert.
///
/// Short and not secret: it is what a person types (`mcp-tasks status 12`)
/// and what an application keeps beside its own data.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RecordId(pub i64);

impl fmt::Display for RecordId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

/// Who holds a record, until when, under which fencing token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The worker's name ([`TrackerBuilder::worker`]).
    pub owner: String,
    /// When the lease runs out; after that, any worker may claim the record.
    pub until: SystemTime,
    /// The token every write under this lease carries.
    pub fence: Fence,
}

/// An answer given to one of a task's questions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Answer {
    /// The answer, as `tasks/update` sends it.
    pub response: InputResponse,
    /// Whether the server acknowledged it (`tasks/update` succeeded).
    pub taken: bool,
}

/// How a tracked task ended: a task's [`Outcome`], or the end of a task
/// that can no longer be reached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "ending", rename_all = "snake_case")]
#[allow(clippy::large_enum_variant)]
pub enum Ending {
    /// The tool ran to the end (its result may still report a tool error).
    Completed {
        /// The tool's result.
        result: CallToolResult,
    },
    /// The task failed with this JSON-RPC error.
    Failed {
        /// The error the call would have returned.
        error: RpcError,
    },
    /// The task was cancelled.
    Cancelled,
    /// The task's lifetime (`with_ttl`) passed before it finished.
    Expired,
    /// Whether the task was ever started is unknown: its record was
    /// reserved for a key ([`Label::key`](tracker::Label::key)) before `tools/call`, and the
    /// process that made the call stopped before the server's answer was
    /// recorded. The call may or may not have started a task; it was not
    /// made again. Final: never retried.
    StartUnknown,
    /// The task can no longer be read: the server does not know it (it
    /// restarted, or the task's TTL passed), or the task belonged to a
    /// session that is gone, or its record names a server or a protocol
    /// revision the application cannot reach. Final: never retried.
    Unreachable {
        /// Why, in words.
        reason: String,
    },
}

impl Ending {
    /// The task's outcome, when it ended on the server (`None` for
    /// [`Ending::Unreachable`] and [`Ending::StartUnknown`]).
    pub fn outcome(&self) -> Option<Outcome> {
        match self {
            Ending::Completed { result } => Some(Outcome::Completed(result.clone())),
            Ending::Failed { error } => Some(Outcome::Failed(error.clone())),
            Ending::Cancelled => Some(Outcome::Cancelled),
            Ending::Expired => Some(Outcome::Expired),
            Ending::Unreachable { .. } | Ending::StartUnknown => None,
        }
    }

    /// Whether the task completed (even with a tool error).
    pub fn is_completed(&self) -> bool {
        matches!(self, Ending::Completed { .. })
    }

    /// Whether the task could not be reached any more.
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Ending::Unreachable { .. })
    }

    /// The status of a task that ended this way, as its record states it
    /// ([`TaskRecord::status`]): `completed`, `failed` or `cancelled`. An
    /// expired task was cancelled at its lifetime (`with_ttl`):
    /// `cancelled`; one that can no longer be reached, or whose start is
    /// unknown, never completed: `failed`.
    pub fn status(&self) -> TaskStatus {
        match self {
            Ending::Completed { .. } => TaskStatus::Completed,
            Ending::Failed { .. } | Ending::Unreachable { .. } | Ending::StartUnknown => {
                TaskStatus::Failed
            }
            Ending::Cancelled | Ending::Expired => TaskStatus::Cancelled,
        }
    }

    /// A short name: `completed`, `failed`, `cancelled`, `expired`,
    /// `unreachable` or `start_unknown`.
    pub fn name(&self) -> &'static str {
        match self {
            Ending::Completed { .. } => "completed",
            Ending::Failed { .. } => "failed",
            Ending::Cancelled => "cancelled",
            Ending::Expired => "expired",
            Ending::Unreachable { .. } => "unreachable",
            Ending::StartUnknown => "start_unknown",
        }
    }
}

impl From<Outcome> for Ending {
    fn from(outcome: Outcome) -> Ending {
        match outcome {
            Outcome::Completed(result) => Ending::Completed { result },
            Outcome::Failed(error) => Ending::Failed { error },
            Outcome::Cancelled => Ending::Cancelled,
            Outcome::Expired => Ending::Expired,
        }
    }
}

/// One tracked task, as its store keeps it.
#[derive(Debug, Clone, PartialEq)]
pub struct TaskRecord {
    /// The record's key in its store.
    pub id: RecordId,
    /// How to find the task again (server id, protocol revision, task id).
    pub reference: TaskRef,
    /// The tool that was called.
    pub tool: String,
    /// The caller's own key for the task.
    pub key: Option<String>,
    /// Whether `key` names this task alone in its scope.
    pub unique_key: bool,
    /// Whose task it is.
    pub scope: String,
    /// When the record was inserted.
    pub created: SystemTime,
    /// When the record last changed.
    pub updated: SystemTime,
    /// How the task stands: the status the server last stated while it
    /// runs; once it ended, the one its ending implies
    /// ([`Ending::status`]: `completed`, `failed` or `cancelled`).
    pub status: TaskStatus,
    /// The status message the server last stated.
    pub status_message: Option<String>,
    /// The server's suggested interval between reads, in milliseconds.
    pub poll_interval_ms: Option<u64>,
    /// When the task is next due for a read.
    pub due: SystemTime,
    /// Reads that failed in a row (a timeout, a lost connection, a refusal).
    pub failed_reads: u32,
    /// The current or last lease; a record is free once `until` has passed.
    pub lease: Option<Lease>,
    /// The questions the task asked, open and closed, by the server's key.
    pub questions: Questions,
    /// The answers given, by the key of the question they answer.
    pub answers: BTreeMap<String, Answer>,
    /// The spacing of its reads and its lifetime.
    pub schedule: Schedule,
    /// Whether someone asked for the task to be cancelled.
    pub cancel_requested: bool,
    /// How the task ended, once it did.
    pub ending: Option<Ending>,
    /// Whether the application acknowledged the ending.
    pub delivered: bool,
    /// What happened to the task, newest last: at most [`MAX_HISTORY`]
    /// entries (see [`History`]). In a record a claim returns, only what
    /// that claim added (see [`TaskStore::claim`]).
    pub history: History,
}

impl TaskRecord {
    /// Whether the task ended (its ending may still await delivery).
    pub fn is_finished(&self) -> bool {
        self.ending.is_some()
    }

    /// Whether the record names a task: `false` for a record reserved for
    /// its key ([`TaskStore::reserve`]) whose `tools/call` has not been
    /// answered (its task id is empty).
    pub fn is_started(&self) -> bool {
        !self.reference.task_id().expose().is_empty()
    }

    /// The fencing token of the record's lease, if it has one.
    pub fn fence(&self) -> Option<Fence> {
        self.lease.as_ref().map(|l| l.fence)
    }

    /// The questions that wait for an answer (open, not answered), by key.
    pub fn open_questions(&self) -> impl Iterator<Item = (&str, &Question)> {
        self.questions
            .iter()
            .filter(|(k, q)| !q.is_closed() && !self.answers.contains_key(*k))
            .map(|(k, q)| (k.as_str(), q))
    }

    /// When the oldest question that waits for an answer was first seen.
    pub fn asking_since(&self) -> Option<SystemTime> {
        questions::asking_since(&self.questions, &self.answers)
    }
}

/// How a tracked task is read, and for how long: the settings of the
/// [`TaskBuilder`](crate::TaskBuilder) that started it, kept in its record
/// so that every worker reads it as the in-process wait would have.
///
/// A setting left `None` takes the tracker's
/// ([`TrackerBuilder::poll_interval`] and the others).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Schedule {
    /// The interval when the server suggests none (`poll_interval`), in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval_ms: Option<u64>,
    /// The floor on any spacing (`min_poll_interval`), in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub floor_ms: Option<u64>,
    /// The ceiling on any interval (`max_poll_interval`), in ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceiling_ms: Option<u64>,
    /// When the task's lifetime (`with_ttl`) passes, in ms since the Unix
    /// epoch: the worker that reads it after then sends `tasks/cancel` and
    /// the task ends [`Ending::Expired`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_ms: Option<i64>,
}

impl Schedule {
    /// Whether every setting is left to the tracker.
    pub fn is_default(&self) -> bool {
        *self == Schedule::default()
    }

    /// When the task's lifetime passes, if it has one.
    pub fn deadline(&self) -> Option<SystemTime> {
        self.deadline_ms.map(row::time)
    }
}

/// Which records [`TaskStore::list`] returns.
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub struct Filter {
    /// Only records of this scope.
    pub scope: Option<String>,
    /// Only records in one of these states.
    pub state: Option<RecordState>,
    /// Only records with a question that waits for an answer, the oldest
    /// question first.
    pub asking: bool,
    /// Only records with this key (the caller's own).
    pub key: Option<String>,
    /// Only records of this tool.
    pub tool: Option<String>,
    /// Only records of tasks on this server (the id a [`TaskRef`] names).
    pub server: Option<String>,
    /// Only records whose task's status is this: as last read while it
    /// runs, the one its [`Ending::status`] gives once ended (so
    /// `Completed`, `Failed` or `Cancelled` with
    /// [`RecordState`]`::Undelivered` or `Delivered` lists the tasks that
    /// ended so).
    pub status: Option<TaskStatus>,
    /// Only records whose id is below this one: the next page of a
    /// listing [`newest_first`](Filter::newest_first), after its last id.
    pub before: Option<RecordId>,
    /// The newest record first (by id), instead of the oldest; ignored
    /// with [`asking`](Filter::asking), which orders by question.
    pub newest_first: bool,
    /// At most this many (oldest first); all when `None`.
    pub limit: Option<usize>,
}

impl Filter {
    /// Every record.
    pub fn all() -> Filter {
        Filter::default()
    }

    /// Only records of `scope`.
    pub fn scope(mut self, scope: impl Into<String>) -> Filter {
        self.scope = Some(scope.into());
        self
    }

    /// Only records with the caller's key `key` (with
    /// [`scope`](Filter::scope): the record a unique key names).
    pub fn key(mut self, key: impl Into<String>) -> Filter {
        self.key = Some(key.into());
        self
    }

    /// Only records in `state`.
    pub fn state(mut self, state: RecordState) -> Filter {
        self.state = Some(state);
        self
    }

    /// Only records with a question that waits for an answer, across
    /// scopes and servers unless [`scope`](Filter::scope) narrows it,
    /// ordered by when their oldest waiting question was first seen.
    pub fn asking(mut self) -> Filter {
        self.asking = true;
        self
    }

    /// At most `n` records.
    pub fn limit(mut self, n: usize) -> Filter {
        self.limit = Some(n);
        self
    }

    /// Only records of tool `tool`.
    pub fn tool(mut self, tool: impl Into<String>) -> Filter {
        self.tool = Some(tool.into());
        self
    }

    /// Only records of tasks on server `server` (the id their
    /// [`TaskRef`] names).
    pub fn server(mut self, server: impl Into<String>) -> Filter {
        self.server = Some(server.into());
        self
    }

    /// Only records whose task's status is `status`: see
    /// [`status`](Filter#structfield.status).
    pub fn status(mut self, status: TaskStatus) -> Filter {
        self.status = Some(status);
        self
    }

    /// Only records whose id is below `id` (a page after the one that
    /// ended at `id`, newest first).
    pub fn before(mut self, id: RecordId) -> Filter {
        self.before = Some(id);
        self
    }

    /// The newest record first; with [`limit`](Filter::limit) and
    /// [`before`](Filter::before), pages of a listing from the newest.
    pub fn newest_first(mut self) -> Filter {
        self.newest_first = true;
        self
    }

    /// Whether `record` passes the filter's conditions (not its order or
    /// limit).
    pub(crate) fn selects(&self, record: &TaskRecord) -> bool {
        self.scope.as_deref().is_none_or(|s| s == record.scope)
            && (self.key.is_none() || self.key == record.key)
            && self.tool.as_deref().is_none_or(|t| t == record.tool)
            && (self.server.is_none() || self.server.as_deref() == record.reference.server())
            && self.status.is_none_or(|s| s == record.status)
            && self.before.is_none_or(|b| record.id < b)
            && self.state.is_none_or(|s| s == RecordState::of(record))
            && (!self.asking || (record.ending.is_none() && record.asking_since().is_some()))
    }
}

/// How many records a store holds in each state, for a dashboard or
/// metrics: what [`TaskStore::counts`] returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Counts {
    /// Records whose task has not ended.
    pub open: u64,
    /// Open records with a question that waits for an answer.
    pub asking: u64,
    /// Ended records whose outcome awaits acknowledgement.
    pub undelivered: u64,
    /// Ended records whose outcome was acknowledged.
    pub delivered: u64,
    /// Open records due before the moment [`TaskStore::counts`] was given:
    /// workers falling behind, or none running.
    pub overdue: u64,
    /// When the oldest question that waits for an answer was first seen.
    pub asking_since: Option<SystemTime>,
}

impl Counts {
    /// Every record.
    pub fn total(&self) -> u64 {
        self.open + self.undelivered + self.delivered
    }

    /// Counts `records`, as a store without a query of its own does.
    pub(crate) fn of<'a>(
        records: impl IntoIterator<Item = &'a TaskRecord>,
        overdue_before: SystemTime,
    ) -> Counts {
        let mut c = Counts::default();
        for r in records {
            match RecordState::of(r) {
                RecordState::Open => {
                    c.open += 1;
                    if r.due < overdue_before {
                        c.overdue += 1;
                    }
                    if let Some(since) = r.asking_since() {
                        c.asking += 1;
                        c.asking_since = Some(c.asking_since.map_or(since, |s| s.min(since)));
                    }
                }
                RecordState::Undelivered => c.undelivered += 1,
                RecordState::Delivered => c.delivered += 1,
            }
        }
        c
    }
}

/// Where a record stands, for [`Filter::state`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordState {
    /// The task has not ended.
    Open,
    /// The task ended and its outcome awaits acknowledgement.
    Undelivered,
    /// The task ended and its outcome was acknowledged.
    Delivered,
}

impl RecordState {
    /// Where `record` stands.
    pub fn of(record: &TaskRecord) -> RecordState {
        match (&record.ending, record.delivered) {
            (None, _) => RecordState::Open,
            (Some(_), false) => RecordState::Undelivered,
            (Some(_), true) => RecordState::Delivered,
        }
    }
}

/// What [`TaskStore::forget`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Forgotten {
    /// The record was removed. A task that had not ended was not
    /// cancelled: it runs on at its server, unwatched.
    Removed,
    /// There is no such record.
    Missing,
    /// A worker holds the record (a step or a delivery is under way):
    /// nothing was removed. Try again once its lease runs out.
    Held {
        /// The worker's name.
        owner: String,
        /// When its lease runs out.
        until: SystemTime,
    },
}

/// Durable storage for tracked tasks.
///
/// Implemented by [`MemoryStore`], `SqliteStore` and `PostgresStore`; the
/// [`Tracker`] is written against this trait alone. Every method that
/// writes under a lease takes the lease's [`Fence`] and fails with
/// [`StoreError::is_stale`] when the record was claimed again since.
pub trait TaskStore: Send + Sync + 'static {
    /// Records a new task and returns its key.
    fn insert(&self, task: NewTask) -> impl Future<Output = StoreResult<RecordId>> + Send;

    /// The record with key `id`, if there is one.
    fn get(&self, id: RecordId) -> impl Future<Output = StoreResult<Option<TaskRecord>>> + Send;

    /// Reserves the unique key of `task` before its `tools/call` is made,
    /// so that a key starts one call however many processes try: a new
    /// record, not yet started ([`TaskRecord::is_started`]: its task id
    /// is empty), held by `worker` until `until`; or the record the key
    /// already names. `task.key` must be set and `task.unique_key` true.
    ///
    /// Whoever claims a reserved record after its lease ran out finds a
    /// call whose outcome is unknown, and ends it
    /// [`Ending::StartUnknown`].
    fn reserve(
        &self,
        task: NewTask,
        worker: &str,
        until: SystemTime,
    ) -> impl Future<Output = StoreResult<Reservation>> + Send;

    /// Writes the task the reserved call started into record `id`, held
    /// under `fence`, with its builder's schedule and what the server
    /// stated, and gives the record up
    /// until `progress.due`. Refused as stale when the record was claimed
    /// since, or is started already.
    fn start(
        &self,
        id: RecordId,
        fence: Fence,
        reference: &TaskRef,
        schedule: &Schedule,
        progress: StepReport,
    ) -> impl Future<Output = StoreResult<()>> + Send;

    /// Claims at most `claim.limit` records that have no live lease and
    /// either are due (an open task) or await delivery (an ended task),
    /// oldest due first, each under a new lease with a new fencing token.
    /// With `claim.record`, only that record, due or not, when it has no
    /// live lease and is open or undelivered.
    ///
    /// A claimed record comes without its history, which a worker does
    /// not need: its [`history`](TaskRecord::history) holds only what the
    /// claim added (a [`TakenOver`](Event::TakenOver) entry when the
    /// record's last lease ran out rather than being given back), so that
    /// a claim does not carry every record's history. [`get`](TaskStore::get)
    /// reads the whole.
    ///
    /// A record that cannot be read (a corrupt row) comes back as an
    /// error in its place, still leased, so that it is not claimed again
    /// before its lease runs out; a row so damaged that its due time or
    /// lease cannot be compared is reported too (first in the batch),
    /// never passed over in silence. A history that cannot be read does
    /// not keep a record from being claimed and tracked; `get` and `list`
    /// report it.
    fn claim(
        &self,
        claim: Claim<'_>,
    ) -> impl Future<Output = StoreResult<Vec<StoreResult<TaskRecord>>>> + Send;

    /// Extends the lease of `id` to `until`.
    fn renew(
        &self,
        id: RecordId,
        fence: Fence,
        until: SystemTime,
    ) -> impl Future<Output = StoreResult<()>> + Send;

    /// Gives the lease of `id`, held under `fence`, back at once, changing
    /// nothing else: the record is claimable now (by any worker, this one
    /// included) instead of when the lease would have run out. What a
    /// worker that stops does with the records in its hands
    /// ([`Tracker::shutdown`]). The fence stays until the next claim gives
    /// the record a new one.
    ///
    /// # Errors
    ///
    /// [`StoreError::is_stale`] when the record was claimed again since,
    /// [`StoreError::is_not_found`] when it is gone.
    fn release(&self, id: RecordId, fence: Fence) -> impl Future<Output = StoreResult<()>> + Send;

    /// Gives back every live lease held under the name `worker`, whatever
    /// its fence, and returns how many: the records a worker of that name
    /// held when it stopped (a crash, a `kill -9`) are claimable now
    /// instead of when their leases run out. What a worker restarted under
    /// its name does first ([`TrackerBuilder::worker`]). Should another
    /// process be running under the same name by mistake, it loses its
    /// records: the next claim gives each a new fence, and its writes are
    /// refused as stale from then on.
    ///
    /// It looks at every record whose lease has not ended (no index
    /// narrows it by owner): a statement per worker start, not per step.
    fn release_worker(&self, worker: &str) -> impl Future<Output = StoreResult<u64>> + Send;

    /// Records the questions a read of the held task showed: a key not
    /// seen before is added (first seen `now`), an open question the server
    /// no longer lists is closed (an empty `asked` closes them all). Returns
    /// the record's questions and answers as they stand now, answers given
    /// from elsewhere since the claim included.
    fn ask(
        &self,
        id: RecordId,
        fence: Fence,
        asked: &InputRequests,
        now: SystemTime,
    ) -> impl Future<Output = StoreResult<(Questions, Answers)>> + Send;

    /// Answers question `key` of record `id`, from any process and without
    /// a lease. The answer is checked against the question before anything
    /// is stored ([`Refusal`], through [`StoreError::refusal`]): the
    /// question must exist and be open, have no answer yet (the first
    /// answer wins), and the answer must fit it. The record becomes due at
    /// `now`, so that a worker sends the answer with `tasks/update`.
    ///
    /// The record's history says the application answered
    /// ([`Answerer::Application`]); [`answer_by`](TaskStore::answer_by)
    /// names someone else.
    ///
    /// # Errors
    ///
    /// [`StoreError::is_not_found`] when there is no such record;
    /// [`StoreError::is_refused`] when the answer was refused.
    fn answer(
        &self,
        id: RecordId,
        key: &str,
        response: &InputResponse,
        now: SystemTime,
    ) -> impl Future<Output = StoreResult<()>> + Send {
        self.answer_by(id, key, response, Answerer::Application, now)
    }

    /// [`answer`](TaskStore::answer), saying who answered: the record's
    /// history keeps it ([`Event::Answered`]). What a store implements;
    /// [`answer`](TaskStore::answer) calls it for the application.
    ///
    /// # Errors
    ///
    /// As [`answer`](TaskStore::answer).
    fn answer_by(
        &self,
        id: RecordId,
        key: &str,
        response: &InputResponse,
        by: Answerer,
        now: SystemTime,
    ) -> impl Future<Output = StoreResult<()>> + Send;

    /// Records the answer an input handler of the worker holding `id` gave
    /// to question `key`, before it is sent, by the same rules as
    /// [`answer`](TaskStore::answer): the first answer stored wins. Returns
    /// the answer that stands (another one, when someone answered first).
    /// The record's history says a handler answered
    /// ([`Answerer::Handler`]).
    fn record_answer(
        &self,
        id: RecordId,
        fence: Fence,
        key: &str,
        response: &InputResponse,
    ) -> impl Future<Output = StoreResult<InputResponse>> + Send;

    /// Writes what a step found and gives the record up until
    /// `progress.due`, or at once when an answer or a cancel came from
    /// elsewhere since the claim. A status or status message other than
    /// the record's adds an entry to its history, in the same statement;
    /// the same ones add none.
    fn save(
        &self,
        id: RecordId,
        fence: Fence,
        progress: StepReport,
    ) -> impl Future<Output = StoreResult<()>> + Send;

    /// Writes several steps' findings, each as [`save`](TaskStore::save)
    /// writes one, and answers for each, in the order given: a store may
    /// write them all in one statement. Each answer is what `save` would
    /// have returned (stale, not found, written); a statement that fails
    /// fails every save it carried. A record named twice is written in
    /// the order given.
    ///
    /// The [`Tracker`] writes the saves of its jobs this way, as many as
    /// end within a few milliseconds of each other. The default calls
    /// `save` for each, one after another; `PostgresStore` writes them in
    /// one `UPDATE`.
    fn save_all(
        &self,
        saves: Vec<(RecordId, Fence, StepReport)>,
    ) -> impl Future<Output = Vec<StoreResult<()>>> + Send {
        async move {
            let mut answers = Vec::with_capacity(saves.len());
            for (id, fence, progress) in saves {
                answers.push(self.save(id, fence, progress).await);
            }
            answers
        }
    }

    /// Records how the task ended, and the status that ending implies
    /// ([`Ending::status`]). The lease stays, so that the worker
    /// that saw the end delivers it; if that worker dies first, the ending
    /// is claimed for delivery once the lease runs out.
    fn finish(
        &self,
        id: RecordId,
        fence: Fence,
        ending: &Ending,
    ) -> impl Future<Output = StoreResult<()>> + Send;

    /// Marks the ending of `id` delivered: it is never claimed again.
    fn acknowledge(
        &self,
        id: RecordId,
        fence: Fence,
    ) -> impl Future<Output = StoreResult<()>> + Send;

    /// Asks for the task to be cancelled, from any process; the worker
    /// that next claims it sends `tasks/cancel`. `false` when there is no
    /// such record or the task already ended. The record becomes due at once.
    fn request_cancel(
        &self,
        id: RecordId,
        now: SystemTime,
    ) -> impl Future<Output = StoreResult<bool>> + Send;

    /// Removes the record of `id`, held under `fence` (a task taken back
    /// as a handle, see [`Tracker::take`]).
    fn remove(&self, id: RecordId, fence: Fence) -> impl Future<Output = StoreResult<()>> + Send;

    /// Removes the record of `id` whoever wrote it, unless a worker holds
    /// it at `now` (a lease that has not run out: a step or a delivery
    /// under way): an administrator's or a command line's way to drop one
    /// record. A delivered record is never held.
    ///
    /// Removing the record of a task that has not ended does **not** cancel
    /// the task: it runs on at its server, and no worker reads it again
    /// (ask for a cancel with [`request_cancel`](TaskStore::request_cancel)
    /// and wait for its ending first). Removing an ending that was not
    /// delivered means the application never gets it.
    fn forget(
        &self,
        id: RecordId,
        now: SystemTime,
    ) -> impl Future<Output = StoreResult<Forgotten>> + Send;

    /// Removes at most `limit` delivered records (ended, their ending
    /// acknowledged) that were recorded and last changed
    /// ([`TaskRecord::created`], [`TaskRecord::updated`]) before
    /// `older_than`, the oldest first, and returns how many it removed.
    /// Open records and endings that await delivery are never removed.
    ///
    /// One call is one short write (a transaction of its own), so that
    /// pruning a large backlog in calls of a few hundred or thousand
    /// records never holds the database for long: call again while it
    /// returns `limit`. A tracker does it for itself with
    /// [`TrackerBuilder::retain`].
    fn prune(
        &self,
        older_than: SystemTime,
        limit: usize,
    ) -> impl Future<Output = StoreResult<usize>> + Send;

    /// The records `filter` selects, oldest first.
    fn list(
        &self,
        filter: &Filter,
    ) -> impl Future<Output = StoreResult<Vec<StoreResult<TaskRecord>>>> + Send;

    /// How many records stand in each state, and how many open ones were
    /// due before `overdue_before`, in one query where the store allows.
    /// The default reads every record through [`list`](TaskStore::list);
    /// a corrupt one is left out of the counts.
    fn counts(
        &self,
        overdue_before: SystemTime,
    ) -> impl Future<Output = StoreResult<Counts>> + Send {
        async move {
            let records = self.list(&Filter::all()).await?;
            Ok(Counts::of(records.iter().flatten(), overdue_before))
        }
    }

    /// The earliest moment any record becomes claimable (a due time or the
    /// end of a lease), so that a worker sleeps on one timer for all of
    /// them. `None` when no record is open or undelivered.
    fn next_due(&self) -> impl Future<Output = StoreResult<Option<SystemTime>>> + Send;
}

#[cfg(any(test, feature = "test-util"))]
mod contract;

/// The contract every [`TaskStore`] keeps, for a store's own tests: call
/// it on an empty store; it panics on the first broken rule.
#[cfg(any(test, feature = "test-util"))]
#[doc(hidden)]
pub use contract::contract;
