//! `Task<S>`: a typed handle on a task, with the methods valid in state `S`.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::ops::Deref;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use serde::de::DeserializeOwned;
use tokio::time::Instant;

use super::builder::Settings;
use super::machine::{Machine, Transition};
use super::state::{Cancellable, Finished, InputRequired, Pending, State};
use super::{Outcome, TaskRef, TaskState};
use crate::Client;
use crate::error::{Error, Result};
use crate::input::validate;
use crate::protocol::{
    CallToolResult, CreateTaskResult, DetailedTask, InputRequests, InputResponse, InputResponses,
    TaskId, TaskPayload, TaskStatus,
};
use crate::wait::listen::Watch;
use crate::wait::{self, Goal, Observed};

/// What the client last saw of a task, without its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// The status.
    pub status: TaskStatus,
    /// Progress or explanation for people.
    pub status_message: Option<String>,
    /// Creation time, as the server sent it.
    pub created_at: Option<String>,
    /// Time of the last change, as the server sent it.
    pub last_updated_at: Option<String>,
    /// The server's lifetime for the task in milliseconds (`None`: unlimited).
    pub ttl_ms: Option<u64>,
    /// The server's suggested polling interval in milliseconds.
    pub poll_interval_ms: Option<u64>,
    /// The status as sent, when the client does not know it (`status` is
    /// then [`TaskStatus::Unknown`]); `None` otherwise.
    pub unknown_status: Option<String>,
}

impl Snapshot {
    pub(crate) fn from_created(t: &CreateTaskResult) -> Self {
        Snapshot {
            status: t.status,
            status_message: t.status_message.clone(),
            created_at: t.created_at.clone(),
            last_updated_at: t.last_updated_at.clone(),
            ttl_ms: t.ttl_ms,
            poll_interval_ms: t.poll_interval_ms,
            unknown_status: None,
        }
    }

    pub(crate) fn from_detailed(t: &DetailedTask) -> Self {
        Snapshot {
            status: t.status(),
            status_message: t.status_message.clone(),
            created_at: t.created_at.clone(),
            last_updated_at: t.last_updated_at.clone(),
            ttl_ms: t.ttl_ms,
            poll_interval_ms: t.poll_interval_ms,
            unknown_status: match &t.payload {
                TaskPayload::Unknown(raw) => Some(raw.clone()),
                _ => None,
            },
        }
    }
}

/// What every handle holds, whatever its state.
pub(crate) struct Core {
    pub(crate) settings: Arc<Settings>,
    /// `None` only for an immediate (non-task) result.
    pub(crate) id: Option<TaskId>,
    pub(crate) machine: Machine,
    pub(crate) snapshot: Snapshot,
    /// When the task was last read; `None` means read at once.
    pub(crate) last_read: Option<Instant>,
    /// When the `with_ttl` lifetime passes.
    pub(crate) expires_at: Option<Instant>,
    /// Whether dropping the handle may send `tasks/cancel`.
    pub(crate) armed: bool,
    /// The registration with the listen watcher, while listening.
    pub(crate) watch: Option<Watch>,
    /// Listening was tried and fell back to polling for this task.
    pub(crate) listen_failed: bool,
    /// A read due soon after a write (`tasks/update`, `tasks/cancel`), once.
    pub(crate) read_soon: Option<Instant>,
    /// An unknown status was reported for this task already.
    warned_unknown: bool,
}

impl Core {
    pub(crate) fn immediate(settings: Arc<Settings>, status: TaskStatus) -> Box<Core> {
        Box::new(Core {
            settings,
            id: None,
            machine: Machine::finished(status),
            snapshot: Snapshot {
                status,
                status_message: None,
                created_at: None,
                last_updated_at: None,
                ttl_ms: None,
                poll_interval_ms: None,
                unknown_status: None,
            },
            last_read: None,
            expires_at: None,
            armed: false,
            watch: None,
            listen_failed: false,
            read_soon: None,
            warned_unknown: false,
        })
    }

    /// The core of a task that exists on the server. Its `with_ttl`
    /// lifetime starts now.
    pub(crate) fn live(
        settings: Arc<Settings>,
        id: TaskId,
        machine: Machine,
        snapshot: Snapshot,
        last_read: Option<Instant>,
    ) -> Box<Core> {
        let now = Instant::now();
        Box::new(Core {
            // A lifetime too long to count is no lifetime.
            expires_at: settings.ttl.and_then(|d| now.checked_add(d)),
            settings,
            id: Some(id),
            machine,
            snapshot,
            last_read,
            armed: true,
            watch: None,
            listen_failed: false,
            read_soon: None,
            warned_unknown: false,
        })
    }

    /// Schedules one read soon after a write the server acknowledged, so
    /// its effect is seen without waiting a whole interval: at the floor
    /// (`min_poll_interval`) from now.
    pub(crate) fn wrote(&mut self) {
        self.read_soon = Instant::now().checked_add(self.settings.min_poll_interval);
    }
    pub(crate) fn client(&self) -> &Client {
        &self.settings.client
    }

    /// The id of a task that exists on the server.
    pub(crate) fn task_id(&self) -> &TaskId {
        self.id
            .as_ref()
            .expect("only immediate results have no id, and they are never waited on")
    }

    /// The spacing of reads: the server's interval (or the default), never
    /// above the ceiling nor under the floor.
    pub(crate) fn interval(&self) -> Duration {
        self.settings.interval(self.snapshot.poll_interval_ms)
    }

    /// Whether a wait may answer these requests itself: input is not
    /// manual and a handler answers every one of them.
    pub(crate) fn can_answer(&self, requests: &InputRequests) -> bool {
        let handlers = self.client().handlers();
        self.settings.input != super::InputMode::Manual
            && requests.values().all(|r| handlers.can_answer(r))
    }

    /// Applies a detailed snapshot. `None` when the machine rejected it.
    pub(crate) fn apply(&mut self, task: DetailedTask) -> Option<Observed> {
        let was_final = self.machine.is_final();
        match self.machine.observe(task.status()) {
            Transition::Rejected { current, claimed } => {
                tracing::warn!(
                    task = ?task.task_id,
                    "ignoring a snapshot that breaks the task state machine ({current} -> {claimed})"
                );
                return None;
            }
            // A repeat of the final snapshot: the first one won.
            Transition::Same if was_final => return None,
            Transition::Same | Transition::Moved { .. } => {}
        }
        let DetailedTask {
            task_id: _,
            payload,
            status_message,
            created_at,
            last_updated_at,
            ttl_ms,
            poll_interval_ms,
        } = task;
        self.snapshot = Snapshot {
            status: payload.status(),
            status_message,
            created_at,
            last_updated_at,
            ttl_ms,
            poll_interval_ms,
            unknown_status: None,
        };
        Some(match payload {
            TaskPayload::Working => Observed::Pending,
            TaskPayload::InputRequired(requests) => {
                let open = self.machine.ledger().unanswered(&requests);
                if open.is_empty() {
                    Observed::Pending
                } else {
                    Observed::InputRequired(open)
                }
            }
            TaskPayload::Completed(r) => Observed::Finished(Outcome::Completed(r)),
            TaskPayload::Failed(e) => Observed::Finished(Outcome::Failed(e)),
            TaskPayload::Cancelled => Observed::Finished(Outcome::Cancelled),
            TaskPayload::Unknown(raw) => {
                if !self.warned_unknown {
                    self.warned_unknown = true;
                    tracing::warn!(
                        task = ?self.id,
                        status = %raw,
                        "the server sent a task status this client does not know; \
                         treating the task as still running"
                    );
                }
                self.snapshot.unknown_status = Some(raw);
                Observed::Pending
            }
        })
    }

    /// One `tasks/get`, applied. `Ok(None)` when the snapshot was ignored.
    pub(crate) async fn read_within(&mut self, timeout: Duration) -> Result<Option<Observed>> {
        let id = self.task_id().clone();
        let task = self.client().get_task_within(&id, Some(timeout)).await?;
        self.last_read = Some(Instant::now());
        self.read_soon = None;
        Ok(self.apply(task))
    }

    pub(crate) async fn read(&mut self) -> Result<Option<Observed>> {
        let t = self.settings.request_timeout();
        self.read_within(t).await
    }

    /// Builds the handle for what was observed.
    pub(crate) fn into_state(self: Box<Self>, observed: Observed) -> TaskState {
        let mut this = self;
        match observed {
            Observed::Pending => TaskState::Pending(Task {
                core: this,
                state: Pending {},
            }),
            Observed::InputRequired(requests) => TaskState::InputRequired(Task {
                core: this,
                state: InputRequired { requests },
            }),
            Observed::Finished(outcome) => {
                this.armed = false;
                this.watch = None;
                if let Outcome::Expired = outcome {
                    this.snapshot.status = TaskStatus::Cancelled;
                }
                TaskState::Finished(Task {
                    core: this,
                    state: Finished { outcome },
                })
            }
        }
    }

    /// Sends `tasks/cancel`; an unknown task means there is nothing to cancel.
    pub(crate) async fn send_cancel(&self) -> Result<()> {
        let id = self.task_id();
        match self
            .client()
            .cancel_task_within(id, Some(self.settings.request_timeout()))
            .await
        {
            Err(e) if e.is_task_not_found() => Ok(()),
            other => other,
        }
    }
}

impl Drop for Core {
    fn drop(&mut self) {
        if !(self.armed && self.settings.cancel_on_drop) {
            return;
        }
        let (Some(id), Ok(rt)) = (self.id.clone(), tokio::runtime::Handle::try_current()) else {
            return;
        };
        let client = self.settings.client.clone();
        tracing::debug!(task = ?id, "handle dropped; cancelling the task");
        rt.spawn(async move {
            if let Err(e) = client.cancel_task(&id).await {
                tracing::debug!(task = ?id, "cancel on drop failed: {e}");
            }
        });
    }
}

/// A handle on a task, typed by what the client last observed.
///
/// `S` is [`Pending`], [`InputRequired`] or [`Finished`]; each state has
/// only the methods valid in it (see the table in the [`task`](crate::task)
/// module). Transitions consume the handle; a failed transition returns it
/// inside a [`TaskError`].
///
/// Handles are `'static + Send + Sync`: park them, move them into
/// `tokio::spawn`, or persist a [`TaskRef`] and resume later.
///
/// # Drop behavior
///
/// Dropping a handle stops local waiting only; the task runs on on the
/// server. With [`TaskBuilder::cancel_on_drop`](crate::TaskBuilder::cancel_on_drop),
/// dropping an unfinished handle sends `tasks/cancel` in the background.
#[must_use = "a task handle is how to act on a task: finish or cancel it, keep its reference(), or read its outcome()"]
pub struct Task<S: State> {
    // Boxed: handles move through every transition and sit in results.
    pub(crate) core: Box<Core>,
    pub(crate) state: S,
}

impl<S: State + fmt::Debug> fmt::Debug for Task<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.core.id)
            .field("status", &self.core.snapshot.status)
            .field("state", &self.state)
            .finish()
    }
}

impl<S: State> Task<S> {
    /// The last status message the server sent.
    pub fn status_message(&self) -> Option<&str> {
        self.core.snapshot.status_message.as_deref()
    }

    /// What the client last saw of the task.
    pub fn snapshot(&self) -> &Snapshot {
        &self.core.snapshot
    }

    /// The client this handle talks through.
    pub fn client(&self) -> &Client {
        self.core.client()
    }
}

/// A failed transition: the error, and the handle to carry on with.
///
/// Nothing is lost when a wait times out or a request fails: take the handle
/// back with [`TaskError::into_task`] and try again, or cancel. It
/// dereferences to the [`Error`], so `err.is_deadline()` works directly, and
/// `?` turns it into an [`Error`] (dropping the handle).
pub struct TaskError<T> {
    error: Error,
    task: T,
}

impl<T> TaskError<T> {
    pub(crate) fn new(error: Error, task: T) -> Self {
        TaskError { error, task }
    }

    /// What went wrong.
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The handle, in the state it was left in.
    pub fn into_task(self) -> T {
        self.task
    }

    /// The error, dropping the handle.
    pub fn into_error(self) -> Error {
        self.error
    }

    /// Both parts.
    pub fn into_parts(self) -> (Error, T) {
        (self.error, self.task)
    }
}

impl<T> Deref for TaskError<T> {
    type Target = Error;
    fn deref(&self) -> &Error {
        &self.error
    }
}

impl<T: fmt::Debug> fmt::Debug for TaskError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskError")
            .field("error", &self.error)
            .field("task", &self.task)
            .finish()
    }
}

impl<T> fmt::Display for TaskError<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.error, f)
    }
}

impl<T: fmt::Debug> std::error::Error for TaskError<T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

impl<T> From<TaskError<T>> for Error {
    fn from(e: TaskError<T>) -> Error {
        e.error
    }
}

type Finish = Result<Task<Finished>, TaskError<TaskState>>;

/// Waits for `goal`, within the builder's `timeout`.
pub(crate) async fn drive(
    core: Box<Core>,
    observed: Observed,
    goal: Goal,
) -> (Box<Core>, Observed, Result<()>) {
    let bound = core.settings.timeout;
    drive_within(core, observed, goal, bound).await
}

/// Waits for `goal`, within `bound`.
pub(crate) async fn drive_within(
    core: Box<Core>,
    observed: Observed,
    goal: Goal,
    bound: Duration,
) -> (Box<Core>, Observed, Result<()>) {
    let mut core = core;
    let mut observed = observed;
    let r = wait::wait(&mut core, &mut observed, goal, bound).await;
    (core, observed, r)
}

fn settle(core: Box<Core>, observed: Observed, r: Result<()>) -> Finish {
    let state = core.into_state(observed);
    match (r, state) {
        (Ok(()), TaskState::Finished(t)) => Ok(t),
        (Err(e), state) => Err(TaskError::new(e, state)),
        (Ok(()), state) => {
            let e = Error::new(crate::error::Kind::InputRequired(
                "the task asks for input that no installed handler answers (or input is manual)"
                    .into(),
            ));
            let e = match state.id() {
                Some(id) => e.with_task(id),
                None => e,
            };
            Err(TaskError::new(e, state))
        }
    }
}

async fn cancel_and_settle(core: Box<Core>, observed: Observed) -> Finish {
    let mut core = core;
    if let Err(e) = core.send_cancel().await {
        return Err(TaskError::new(e, core.into_state(observed)));
    }
    core.wrote();
    let (core, observed, r) = drive(core, observed, Goal::Settle).await;
    match r {
        // Gone after an acknowledged cancel: the server dropped it.
        Err(e) if e.is_task_not_found() => {
            settle(core, Observed::Finished(Outcome::Cancelled), Ok(()))
        }
        r => settle(core, observed, r),
    }
}

impl<S: Cancellable> Task<S> {
    /// The task's id. Treat it as a secret: its `Debug` shows only a short
    /// prefix, it has no `Display`, and [`TaskId::expose`] gives the full
    /// string where one is needed (to store it, say; or keep a
    /// [`reference`](Task::reference)).
    pub fn id(&self) -> &TaskId {
        self.core.task_id()
    }

    /// A serialisable reference to resume the task later.
    pub fn reference(&self) -> TaskRef {
        TaskRef::new(self.id().clone(), self.client().server_id().map(Into::into))
    }

    /// Asks the server to cancel the task (`tasks/cancel`) and lets go of
    /// the handle. Cancellation is cooperative: the task may still finish
    /// otherwise. An acknowledgement for a task that already ended, and an
    /// unknown task, both mean there is nothing more to do.
    ///
    /// # Errors
    ///
    /// The request failed; the handle is in the error.
    pub async fn cancel(self) -> Result<(), TaskError<Self>> {
        match self.core.send_cancel().await {
            Ok(()) => {
                let mut core = self.core;
                core.armed = false;
                Ok(())
            }
            Err(e) => Err(TaskError::new(e, self)),
        }
    }
}

impl Task<Pending> {
    /// Reads the task once (`tasks/get`).
    ///
    /// # Errors
    ///
    /// The request failed; the handle is in the error, unchanged.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the handle; keep a [`TaskRef`] to resume.
    pub async fn refresh(self) -> Result<TaskState, TaskError<Self>> {
        let mut core = self.core;
        match core.read().await {
            Ok(Some(observed)) => Ok(core.into_state(observed)),
            Ok(None) => Ok(core.into_state(Observed::Pending)),
            Err(e) => Err(TaskError::new(
                e,
                Task {
                    core,
                    state: Pending {},
                },
            )),
        }
    }

    /// Waits for the next change of status or status message (polling, or
    /// pushes with `listen()`), honouring `pollIntervalMs`.
    ///
    /// # Errors
    ///
    /// [`Error::is_deadline`] when nothing changed within the builder's
    /// `timeout`; a request error that retrying cannot fix. The handle is in
    /// the error.
    pub async fn next(self) -> Result<TaskState, TaskError<TaskState>> {
        let (core, observed, r) = drive(self.core, Observed::Pending, Goal::Change).await;
        let state = core.into_state(observed);
        match r {
            Ok(()) => Ok(state),
            Err(e) => Err(TaskError::new(e, state)),
        }
    }

    /// Drives the task to its end: waits (polling at the server's interval,
    /// or listening), answers input with the client's handlers, and returns
    /// the finished handle. Also what `.await` on the handle does.
    ///
    /// # Errors
    ///
    /// The handle comes back inside the error, in its latest state:
    /// - [`Error::is_deadline`]: the builder's `timeout` passed (the task runs
    ///   on; wait again or cancel);
    /// - [`Error::is_input_required`]: input no handler answers (or manual
    ///   mode): answer with [`Task::respond`];
    /// - [`Error::is_input`]: a handler failed or gave an invalid answer;
    /// - [`Error::is_task_not_found`]: the server forgot the task;
    /// - a request error that retrying cannot fix (reads are retried within
    ///   the deadline; `tasks/update` is never retried blindly).
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the handle; the task runs on on the server.
    pub async fn finish(self) -> Finish {
        let (core, observed, r) = drive(self.core, Observed::Pending, Goal::Finish).await;
        settle(core, observed, r)
    }

    /// [`finish`](Task::<Pending>::finish), bounded by `bound` for this
    /// wait instead of the builder's `timeout`.
    ///
    /// ```
    /// # async fn f(task: mcp_tasks::Task<mcp_tasks::Pending>) {
    /// # use std::time::Duration;
    /// match task.finish_within(Duration::from_secs(5)).await {
    ///     Ok(done) => println!("{:?}", done.outcome()),
    ///     Err(e) if e.error().is_deadline() => {
    ///         let still_running = e.into_task(); // wait again later, or cancel
    /// #       drop(still_running);
    ///     }
    ///     Err(e) => println!("{e}"),
    /// }
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Task::<Pending>::finish`]; [`Error::is_deadline`] after `bound`.
    pub async fn finish_within(self, bound: Duration) -> Finish {
        let (core, observed, r) =
            drive_within(self.core, Observed::Pending, Goal::Finish, bound).await;
        settle(core, observed, r)
    }

    /// Cancels the task and waits to see how it really ended (it may have
    /// completed first). Input requests are left unanswered meanwhile.
    ///
    /// # Errors
    ///
    /// As [`Task::finish`].
    pub async fn cancel_and_wait(self) -> Finish {
        cancel_and_settle(self.core, Observed::Pending).await
    }
}

impl Task<InputRequired> {
    /// The input requests not answered yet, by key.
    pub fn requests(&self) -> &InputRequests {
        &self.state.requests
    }

    /// Answers some or all outstanding requests (`tasks/update`).
    ///
    /// Each key must be outstanding, and each answer must fit its request
    /// (see [`validate`](crate::input::validate)); nothing is sent otherwise.
    /// Returns `InputRequired` with the keys still open, or `Pending` once
    /// every key is answered. No read is made: the server applies answers
    /// eventually.
    ///
    /// # Errors
    ///
    /// [`Error::is_builder`] for an unknown, answered or mismatched key;
    /// a request error. The handle is in the error, unchanged.
    pub async fn respond(self, responses: InputResponses) -> Result<TaskState, TaskError<Self>> {
        if let Err(why) = self.check(&responses) {
            let e = Error::builder(why).with_task(self.id());
            return Err(TaskError::new(e, self));
        }
        let mut core = self.core;
        let timeout = core.settings.request_timeout();
        let id = core.task_id().clone();
        if let Err(e) = core
            .client()
            .update_task_within(&id, &responses, Some(timeout))
            .await
        {
            return Err(TaskError::new(
                e,
                Task {
                    core,
                    state: self.state,
                },
            ));
        }
        core.machine.ledger_mut().record(&responses);
        core.wrote();
        let open = core.machine.ledger().unanswered(&self.state.requests);
        Ok(if open.is_empty() {
            core.into_state(Observed::Pending)
        } else {
            core.into_state(Observed::InputRequired(open))
        })
    }

    /// Answers one outstanding request: [`respond`](Task::respond) with a
    /// one-key map.
    ///
    /// ```
    /// # async fn f(task: mcp_tasks::Task<mcp_tasks::InputRequired>) -> mcp_tasks::Result<()> {
    /// use mcp_tasks::protocol::{ElicitResult, InputResponse};
    /// let answer = InputResponse::Elicit(ElicitResult::accept(serde_json::json!({ "ok": true })));
    /// let state = task.respond_one("confirm", answer).await?;
    /// # Ok(()) }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`respond`](Task::respond).
    pub async fn respond_one(
        self,
        key: impl Into<String>,
        response: InputResponse,
    ) -> Result<TaskState, TaskError<Self>> {
        self.respond(InputResponses::from([(key.into(), response)]))
            .await
    }

    fn check(&self, responses: &InputResponses) -> Result<(), String> {
        if responses.is_empty() {
            return Err("no answers given".into());
        }
        for (key, response) in responses {
            let request = self
                .state
                .requests
                .get(key)
                .ok_or_else(|| format!("input {key:?} is not outstanding"))?;
            validate(request, response)
                .map_err(|why| format!("the answer to {key:?} is invalid: {why}"))?;
        }
        Ok(())
    }

    /// Reads the task once (`tasks/get`).
    ///
    /// # Errors
    ///
    /// The request failed; the handle is in the error, unchanged.
    pub async fn refresh(self) -> Result<TaskState, TaskError<Self>> {
        let mut core = self.core;
        match core.read().await {
            Ok(Some(observed)) => Ok(core.into_state(observed)),
            Ok(None) => Ok(core.into_state(Observed::InputRequired(self.state.requests))),
            Err(e) => Err(TaskError::new(
                e,
                Task {
                    core,
                    state: self.state,
                },
            )),
        }
    }

    /// Answers the outstanding requests with the client's handlers, then
    /// drives the task to its end, as [`Task::<Pending>::finish`] does.
    ///
    /// # Errors
    ///
    /// As [`Task::<Pending>::finish`].
    pub async fn finish(self) -> Finish {
        let (core, observed, r) = drive(
            self.core,
            Observed::InputRequired(self.state.requests),
            Goal::Finish,
        )
        .await;
        settle(core, observed, r)
    }

    /// [`finish`](Task::<InputRequired>::finish), bounded by `bound` for
    /// this wait instead of the builder's `timeout`.
    ///
    /// # Errors
    ///
    /// As [`Task::<Pending>::finish`]; [`Error::is_deadline`] after `bound`.
    pub async fn finish_within(self, bound: Duration) -> Finish {
        let observed = Observed::InputRequired(self.state.requests);
        let (core, observed, r) = drive_within(self.core, observed, Goal::Finish, bound).await;
        settle(core, observed, r)
    }

    /// Cancels the task and waits to see how it ended; see
    /// [`Task::<Pending>::cancel_and_wait`].
    ///
    /// # Errors
    ///
    /// As [`Task::<Pending>::finish`].
    pub async fn cancel_and_wait(self) -> Finish {
        cancel_and_settle(self.core, Observed::InputRequired(self.state.requests)).await
    }
}

impl Task<Finished> {
    /// The task's id; `None` when the server answered at once without a task.
    pub fn id(&self) -> Option<&TaskId> {
        self.core.id.as_ref()
    }

    /// How the task ended.
    pub fn outcome(&self) -> &Outcome {
        &self.state.outcome
    }

    /// How the task ended, by value.
    pub fn into_outcome(self) -> Outcome {
        self.state.outcome
    }

    /// The result for `?` users; see [`Outcome::into_result`].
    ///
    /// # Errors
    ///
    /// The task failed, was cancelled or expired.
    pub fn into_result(self) -> Result<CallToolResult> {
        let id = self.core.id.clone();
        self.state.outcome.into_result().map_err(|e| match &id {
            Some(id) => e.with_task(id),
            None => e,
        })
    }

    /// Decodes the completed result's `structuredContent` as `T`.
    ///
    /// # Errors
    ///
    /// See [`Outcome::structured`].
    pub fn structured<T: DeserializeOwned>(&self) -> Result<T> {
        self.state.outcome.structured()
    }
}

impl IntoFuture for Task<Pending> {
    type Output = Finish;
    type IntoFuture = Pin<Box<dyn Future<Output = Finish> + Send>>;

    /// Same as [`Task::<Pending>::finish`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.finish())
    }
}

impl IntoFuture for Task<InputRequired> {
    type Output = Finish;
    type IntoFuture = Pin<Box<dyn Future<Output = Finish> + Send>>;

    /// Same as [`Task::<InputRequired>::finish`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.finish())
    }
}
