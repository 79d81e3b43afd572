//! `Task<S>`: a typed handle on a task, with the methods valid in state `S`.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::core::Core;
use super::drive::{Goal, drive, drive_within};
use super::observed::Observed;
use super::snapshot::Snapshot;
use super::state::{Cancellable, Finished, InputRequired, Pending, State};
use super::trace::{End, traced};
use super::{Outcome, TaskRef, TaskState};
use crate::Client;
use crate::error::{Error, Result};
use crate::input::validate;
use crate::protocol::{CallToolResult, InputRequests, InputResponse, InputResponses, TaskId};

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
/// [`Task::detach`] lets go of a handle on purpose, for a [`TaskRef`],
/// and never cancels.
#[must_use = "a task handle is how to act on a task: finish or cancel it, keep its reference(), or read its outcome()"]
pub struct Task<S: State> {
    pub(crate) core: Box<Core>,
    pub(crate) state: S,
}

impl<S: State + fmt::Debug> fmt::Debug for Task<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Task")
            .field("id", &self.core.id())
            .field("status", &self.core.snapshot().status)
            .field("state", &self.state)
            .finish()
    }
}

impl<S: State> Task<S> {
    /// The last status message the server sent.
    pub fn status_message(&self) -> Option<&str> {
        self.core.snapshot().status_message.as_deref()
    }

    /// What the client last saw of the task.
    pub fn snapshot(&self) -> &Snapshot {
        self.core.snapshot()
    }

    /// The client this handle talks through.
    pub fn client(&self) -> &Client {
        self.core.client()
    }

    /// The spacing settings its builder was given, and when its `with_ttl`
    /// lifetime passes: what a tracker keeps in the task's record.
    pub(crate) fn schedule(&self) -> (super::schedule::Chosen, Option<tokio::time::Instant>) {
        (self.core.settings().chosen, self.core.expires_at())
    }
}

/// A failed transition: the error, and the handle to carry on with.
///
/// Nothing is lost when a wait times out or a request fails: take the handle
/// back with [`TaskError::into_task`] and try again, or cancel. Ask
/// [`TaskError::error`] what happened (`err.error().is_deadline()`); `?`
/// turns it into an [`Error`] (dropping the handle).
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

/// The reference to task `id` of `client`'s server.
fn reference_to(id: &TaskId, client: &Client) -> TaskRef {
    TaskRef::new(id.clone(), client.server_id().map(Into::into))
        .with_protocol_version(&*client.protocol_version())
}

fn settle(core: Box<Core>, observed: Observed, r: Result<()>) -> Finish {
    let state = TaskState::from_core(core, observed);
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

async fn cancel_and_settle(mut core: Box<Core>, observed: Observed) -> Finish {
    if let Err(e) = traced!(core.span(), core.send_cancel()) {
        return Err(TaskError::new(e, TaskState::from_core(core, observed)));
    }
    let (core, observed, r) = drive(core, observed, Goal::Settle).await;
    match r {
        // Gone after an acknowledged cancel: the server dropped it.
        Err(e) if e.is_task_not_found() => settle(
            core,
            Observed::Finished(Box::new(Outcome::Cancelled)),
            Ok(()),
        ),
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
        reference_to(self.id(), self.client())
    }

    /// Asks the server to cancel the task (`tasks/cancel`) and lets go of
    /// the handle. Cancellation is cooperative: the task may still finish
    /// otherwise. An acknowledgement for a task that already ended, and an
    /// unknown task, both mean there is nothing more to do.
    ///
    /// # Errors
    ///
    /// The request failed; the handle is in the error.
    pub async fn cancel(mut self) -> Result<(), TaskError<Self>> {
        match traced!(self.core.span(), self.core.send_cancel()) {
            Ok(()) => {
                self.core.disarm(End::CancelRequested);
                Ok(())
            }
            Err(e) => Err(TaskError::new(e, self)),
        }
    }

    /// Lets go of the handle on purpose and returns its
    /// [`reference`](Task::reference): nothing is sent, now or on drop
    /// (not even with [`cancel_on_drop`](crate::TaskBuilder::cancel_on_drop)),
    /// and the task runs on on the server until someone
    /// [resumes](crate::TaskBuilder::resume) it.
    ///
    /// The task's tracing span ends here with `outcome = "detached"`;
    /// dropping a handle instead ends it with `outcome = "dropped"`. A
    /// resumed task gets a new span.
    ///
    /// ```
    /// # async fn f(task: mcp_tasks::Task<mcp_tasks::Pending>) {
    /// let saved = serde_json::to_string(&task.detach()).unwrap();
    /// # drop(saved); }
    /// ```
    pub fn detach(mut self) -> TaskRef {
        let reference = self.reference();
        self.core.disarm(End::Detached);
        reference
    }

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
        let Task { mut core, state } = self;
        match traced!(core.span(), core.read()) {
            Ok(Some(observed)) => Ok(TaskState::from_core(core, observed)),
            Ok(None) => Ok(TaskState::from_core(core, state.into_observed())),
            Err(e) => Err(TaskError::new(e, Task { core, state })),
        }
    }

    /// Drives the task to its end: answers the outstanding input requests
    /// (in `InputRequired`) and any that come later with the client's
    /// handlers, waits (polling at the server's interval, or listening),
    /// and returns the finished handle. Also what `.await` on the handle
    /// does.
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
    /// A read refused by an overloaded server ([`Error::is_overloaded`]:
    /// HTTP `429` or `503`) is retried after its `Retry-After` (at most 5
    /// minutes, and never sooner than the task's interval), which also
    /// holds back the reads of every other task of the client; without
    /// one, after an exponential backoff with jitter, up to 30 s.
    ///
    /// # Cancel safety
    ///
    /// Dropping the future drops the handle; the task runs on on the server.
    pub async fn finish(self) -> Finish {
        let bound = self.core.settings().timeout;
        self.finish_within(bound).await
    }

    /// [`finish`](Task::finish), bounded by `bound` for this
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
    /// As [`Task::finish`]; [`Error::is_deadline`] after `bound`.
    pub async fn finish_within(self, bound: Duration) -> Finish {
        let observed = self.state.into_observed();
        let (core, observed, r) = drive_within(self.core, observed, Goal::Finish, bound).await;
        settle(core, observed, r)
    }

    /// Cancels the task and waits to see how it really ended (it may have
    /// completed first). Input requests are left unanswered meanwhile.
    ///
    /// # Errors
    ///
    /// As [`Task::finish`].
    pub async fn cancel_and_wait(self) -> Finish {
        cancel_and_settle(self.core, self.state.into_observed()).await
    }
}

impl Task<Pending> {
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
        let state = TaskState::from_core(core, observed);
        match r {
            Ok(()) => Ok(state),
            Err(e) => Err(TaskError::new(e, state)),
        }
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
        if let Err(e) = traced!(core.span(), core.send_answers(&responses)) {
            return Err(TaskError::new(
                e,
                Task {
                    core,
                    state: self.state,
                },
            ));
        }
        let open = core.unanswered(&self.state.requests);
        Ok(if open.is_empty() {
            TaskState::from_core(core, Observed::Pending)
        } else {
            TaskState::from_core(core, Observed::InputRequired(open))
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
}

impl Task<Finished> {
    /// The task's id; `None` when the server answered at once without a task.
    pub fn id(&self) -> Option<&TaskId> {
        self.core.id()
    }

    /// A serialisable reference to the ended task (to read it again, or
    /// to name it in a log); `None` when the server answered at once
    /// without a task.
    pub fn reference(&self) -> Option<TaskRef> {
        Some(reference_to(self.id()?, self.client()))
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
        let id = self.core.id().cloned();
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

impl<S: Cancellable> IntoFuture for Task<S> {
    type Output = Finish;
    type IntoFuture = Pin<Box<dyn Future<Output = Finish> + Send>>;

    /// Same as [`Task::finish`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.finish())
    }
}
