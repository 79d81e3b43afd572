//! What an application hands a tracker and gets back from it: the
//! connector, a task's label, what starting one gives, its errors, the
//! deliveries of endings and of questions, and what a pass did.

use std::fmt;
use std::pin::Pin;
use std::sync::Arc;

use super::super::{Ending, Question, RecordId, StoreError, TaskRecord};
use crate::task::{Finished, Task, TaskState};
use crate::{Client, Error};

/// Gives a tracker a [`Client`] for the server a record names
/// ([`TaskRef::server`](crate::TaskRef::server), the client's
/// [`server_id`](crate::ClientBuilder::server_id) when the task was
/// started).
///
/// A [`Client`] is a connector for its own server. A tracker keeps each
/// client it was given and asks again only when one closes.
pub trait Connector: Send + Sync + 'static {
    /// A client for `server`. The client's input handlers answer the
    /// tracked tasks' questions.
    fn connect(&self, server: Option<&str>) -> impl Future<Output = crate::Result<Client>> + Send;
}

impl Connector for Client {
    async fn connect(&self, _server: Option<&str>) -> crate::Result<Client> {
        Ok(self.clone())
    }
}

/// How a tracked task is labelled in its store.
#[derive(Debug, Clone, Default)]
pub struct Label {
    pub(super) tool: String,
    pub(super) key: Option<String>,
    pub(super) shared_key: bool,
    pub(super) scope: Option<String>,
}

impl From<&str> for Label {
    fn from(tool: &str) -> Label {
        Label::tool(tool)
    }
}

impl Label {
    /// A task of the tool `name`.
    pub fn tool(name: impl Into<String>) -> Label {
        Label {
            tool: name.into(),
            ..Label::default()
        }
    }

    /// The caller's own key for the task (an order number, a job id),
    /// unique in its scope: a key names one task, so that starting "the
    /// export for order 17" again, after a restart or from another
    /// process, finds the task it started instead of starting a second
    /// one ([`Tracking::Known`]). [`Tracker::call_tool`](super::Tracker::call_tool)
    /// reserves the key in the store before it calls the tool, so that
    /// even two processes starting it at once make one call; see the
    /// crash table in the [`store`](crate::store) docs for what a crash
    /// while the call runs leaves.
    pub fn key(mut self, key: impl Into<String>) -> Label {
        self.key = Some(key.into());
        self
    }

    /// Lets several tasks carry the same key (a label to find them by,
    /// not a name): every start calls the tool.
    pub fn shared_key(mut self) -> Label {
        self.shared_key = true;
        self
    }

    /// Whose task it is; the tracker's scope when not set.
    pub fn scope(mut self, scope: impl Into<String>) -> Label {
        self.scope = Some(scope.into());
        self
    }
}

/// How a task came to be tracked, or why it was not: what
/// [`Tracker::call_tool`](super::Tracker::call_tool) and
/// [`Tracker::track`](super::Tracker::track) give back.
#[derive(Debug)]
pub enum Tracking {
    /// The task is in the store under this key; its outcome will come
    /// through [`Tracker::run`](super::Tracker::run).
    Tracked(RecordId),
    /// The label's unique key already names this record in its scope: the
    /// tool was not called again. Look the record up to see how its task
    /// stands.
    Known(RecordId),
    /// The server answered at once, without a task: there is nothing to
    /// track, and here is the answer.
    Immediate(Task<Finished>),
}

impl Tracking {
    /// The record's key, when the call became a tracked task.
    pub fn record(&self) -> Option<RecordId> {
        match self {
            Tracking::Tracked(id) | Tracking::Known(id) => Some(*id),
            Tracking::Immediate(_) => None,
        }
    }
}

/// An error of [`Tracker::call_tool`](super::Tracker::call_tool),
/// [`Tracker::track`](super::Tracker::track) or
/// [`Tracker::take`](super::Tracker::take).
///
/// Like [`TaskError`](crate::TaskError), it never loses a task that
/// exists: a live handle the store could not take comes back with
/// [`into_task`](TrackError::into_task). Ask what failed with
/// [`call_error`](TrackError::call_error) (the call, or the read that
/// takes a task back: an [`Error`] with its predicates) or
/// [`store_error`](TrackError::store_error) (the store: a [`StoreError`]
/// with its own); exactly one of them is `Some`.
///
/// ```no_run
/// # async fn f(tracker: mcp_tasks::store::Tracker<mcp_tasks::store::MemoryStore, mcp_tasks::Client>, client: mcp_tasks::Client) {
/// match tracker.call_tool(client.task(), "export", ()).await {
///     Ok(tracking) => println!("tracked as {:?}", tracking.record()),
///     Err(e) if e.store_error().is_some() => {
///         // Not recorded, but the task runs: keep the handle.
///         if let Some(state) = e.into_task() {
///             let _ = state;
///         }
///     }
///     Err(e) => eprintln!("the call failed: {e}"),
/// }
/// # }
/// ```
#[derive(Debug)]
pub struct TrackError {
    failure: Failure,
    task: Option<Box<TaskState>>,
}

/// What failed, inside a [`TrackError`].
#[derive(Debug)]
enum Failure {
    Call(Error),
    Store(StoreError),
}

impl TrackError {
    /// The store failed; `task` is the live handle it did not take.
    pub(super) fn store(error: StoreError, task: TaskState) -> TrackError {
        TrackError {
            failure: Failure::Store(error),
            task: Some(Box::new(task)),
        }
    }

    /// The client's error, when the call (or the read that takes a task
    /// back) failed.
    pub fn call_error(&self) -> Option<&Error> {
        match &self.failure {
            Failure::Call(e) => Some(e),
            Failure::Store(_) => None,
        }
    }

    /// The store's error, when the store failed.
    pub fn store_error(&self) -> Option<&StoreError> {
        match &self.failure {
            Failure::Store(e) => Some(e),
            Failure::Call(_) => None,
        }
    }

    /// The live task the store did not take, when there is one: act on it
    /// as on any handle, or it runs on at its server unwatched.
    pub fn into_task(self) -> Option<TaskState> {
        self.task.map(|t| *t)
    }
}

impl fmt::Display for TrackError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.failure {
            Failure::Call(e) => fmt::Display::fmt(e, f),
            Failure::Store(e) => fmt::Display::fmt(e, f),
        }
    }
}

impl std::error::Error for TrackError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        // The error inside stands for the whole, as its text does (as in
        // `TaskError`): its sources are this error's.
        match &self.failure {
            Failure::Call(e) => std::error::Error::source(e),
            Failure::Store(e) => std::error::Error::source(e),
        }
    }
}

impl From<Error> for TrackError {
    fn from(error: Error) -> TrackError {
        TrackError {
            failure: Failure::Call(error),
            task: None,
        }
    }
}

impl From<StoreError> for TrackError {
    fn from(error: StoreError) -> TrackError {
        TrackError {
            failure: Failure::Store(error),
            task: None,
        }
    }
}

/// An ended task, handed to the application by
/// [`Tracker::run`](super::Tracker::run).
///
/// Returning `true` from the callback acknowledges it: it is never
/// delivered again. Returning `false` (or a crash before the callback
/// returns) delivers it again later: at least once.
#[derive(Debug, Clone)]
pub struct Delivery {
    pub(super) record: TaskRecord,
    pub(super) ending: Ending,
}

impl Delivery {
    /// How the task ended.
    pub fn ending(&self) -> &Ending {
        &self.ending
    }

    /// The record's key.
    pub fn id(&self) -> RecordId {
        self.record.id
    }

    /// The whole record.
    pub fn record(&self) -> &TaskRecord {
        &self.record
    }

    /// The caller's own key, if the task was given one.
    pub fn key(&self) -> Option<&str> {
        self.record.key.as_deref()
    }

    /// The tool that was called.
    pub fn tool(&self) -> &str {
        &self.record.tool
    }
}

/// What one [`Tracker::pass`](super::Tracker::pass) did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pass {
    /// Records claimed.
    pub claimed: usize,
    /// Tasks read (one step each).
    pub stepped: usize,
    /// Tasks that ended in this pass.
    pub ended: usize,
    /// Endings the application acknowledged.
    pub delivered: usize,
    /// Records this worker let go: claimed by another worker since (a stale
    /// fencing token, or a lease that ran out), or removed.
    pub stale: usize,
    /// Records that could not be read (see [`StoreError::is_corrupt`]).
    pub corrupt: usize,
    /// Delivered records removed, older than the retention
    /// ([`TrackerBuilder::retain`](super::TrackerBuilder::retain)).
    pub pruned: usize,
}

/// The application's hook for new questions
/// ([`TrackerBuilder::on_question`](super::TrackerBuilder::on_question)).
#[derive(Clone)]
pub(super) struct QuestionHook(pub(super) Arc<dyn Fn(Asking) -> Offered + Send + Sync>);

/// What the hook's future comes to: `true` acknowledges the question.
pub(super) type Offered = Pin<Box<dyn Future<Output = bool> + Send>>;

impl std::fmt::Debug for QuestionHook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("QuestionHook")
    }
}

/// A new question of a tracked task, handed to the application by
/// [`TrackerBuilder::on_question`](super::TrackerBuilder::on_question): the
/// place to tell a person (a chat message, an email with a link to a page
/// that calls [`Tracker::answer`](super::Tracker::answer)).
#[derive(Debug, Clone)]
pub struct Asking {
    pub(super) id: RecordId,
    pub(super) tool: String,
    pub(super) task_key: Option<String>,
    pub(super) scope: String,
    pub(super) key: String,
    pub(super) question: Question,
}

impl Asking {
    /// The record's key: with [`key`](Asking::key), what
    /// [`Tracker::answer`](super::Tracker::answer) takes.
    pub fn id(&self) -> RecordId {
        self.id
    }

    /// The question's key (the server's).
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The question.
    pub fn question(&self) -> &Question {
        &self.question
    }

    /// The tool that was called.
    pub fn tool(&self) -> &str {
        &self.tool
    }

    /// The caller's own key for the task, if it was given one.
    pub fn task_key(&self) -> Option<&str> {
        self.task_key.as_deref()
    }

    /// Whose task it is.
    pub fn scope(&self) -> &str {
        &self.scope
    }
}
