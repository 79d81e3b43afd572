//! `Task<S>`: a typed handle on a task, with the methods valid in state `S`.

use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use serde::de::DeserializeOwned;

use super::core::Core;
use super::drive::{Goal, drive, drive_within};
use super::observed::Observed;
use super::state::{Cancellable, Finished, InputRequired, Pending, State};
use super::trace::{End, traced};
use super::{Outcome, TaskRef};
use crate::Client;
use crate::error::{Error, Result};
use crate::input::validate;
use crate::protocol::{
    CallToolResult, InputRequests, InputResponse, InputResponses, TaskId, TaskInfo,
};

/// A handle on a task, typed by what the client last observed.
///
/// `S` is [`Pending`], [`InputRequired`] or [`Finished`]; each state has
/// only the methods valid in it (see [the table](#lifecycle) below).
/// Transitions consume the handle; a failed transition returns it inside a
/// [`TaskError`].
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
///
/// # Lifecycle
///
/// ```text
///  client.task()…call_tool(name, args)
///        │
///        ├── immediate result ───────────────────────────────▶ Task<Finished>  (id() == None)
///        │
///        ▼
///  Task<Pending> ── next() / refresh() ──▶ TaskState ──┐
///        │  ▲                                           │
///        │  └──────────── respond(answers) ─────────────┤
///        │                                              ▼
///        │                                   Task<InputRequired>
///        │                                              │
///        └── finish() / .await ──┬──────────────────────┘
///                                ▼
///                          Task<Finished> ── outcome(): Completed | Failed | Cancelled | Expired
/// ```
///
/// | method | `Pending` | `InputRequired` | `Finished` |
/// |---|---|---|---|
/// | `status_message()`, `snapshot()` | yes | yes | yes |
/// | `id()` | yes | yes | `Option` |
/// | `refresh()` (`tasks/get`) | yes | yes | — |
/// | `next()` (wait for a change) | yes | — | — |
/// | `finish()`, `.await` | yes | yes | — |
/// | `requests()`, `respond()` (`tasks/update`) | — | yes | — |
/// | `cancel()`, `cancel_and_wait()` (`tasks/cancel`) | yes | yes | — |
/// | `reference()` | yes | yes | — |
/// | `updates()` (a `Stream` of snapshots) | yes | — | — |
/// | `outcome()`, `into_result()`, `structured()` | — | — | yes |
///
/// Transitions consume the handle. A failed one returns it inside a
/// [`TaskError`], so no error after creation loses the task; a wait that
/// reaches its deadline returns it too.
///
/// # Tracing
///
/// Each handle's life is one [`tracing`](https://docs.rs/tracing) span,
/// and each request it sends is a span inside it, so a tracing backend can
/// group by task and see what each one is doing.
///
/// **`mcp_tasks.task`** (level `INFO`) opens when `call_tool` sends its
/// `tools/call` (or `resume` its read) and closes when the handle's life
/// ends: the task is seen to end, or the handle is dropped, detached
/// ([`Task::detach`] turns it into a [`TaskRef`]), or let go by
/// [`Task::cancel`]. A wait (`finish`, `next`, `updates`, `cancel_and_wait`)
/// and every other method that sends a request (`refresh`, `respond`,
/// `cancel`) runs inside it. Its fields:
///
/// | field | value |
/// |---|---|
/// | `tool` | the tool's name (empty on a resumed task: a `TaskRef` does not carry it) |
/// | `task_id` | the redacted id, [`TaskId::redacted`](crate::protocol::TaskId::redacted) (`#a52d1d55`); never the whole id. Empty for an immediate answer |
/// | `protocol_version` | the revision the session speaks (`2026-07-28`, `2025-11-25`, …) |
/// | `era` | `modern` (2026-07-28) or `initialize` (the initialize-era revisions) |
/// | `resumed` | whether `resume` made the handle |
/// | `outcome` | at the end: `completed`, `failed`, `cancelled`, `expired` (the task's [`Outcome`]); `dropped` (the handle was dropped unfinished), `detached`, `cancel_requested` (`cancel()` was acknowledged and the handle let go); `error` (`call_tool` or `resume` failed before there was a handle) |
/// | `reads` | at the end: the `tasks/get` requests sent for the task |
/// | `input_rounds` | at the end: the answers to the task's input requests the server acknowledged (one per `tasks/update`) |
/// | `error` | with `outcome = "error"`: the kind of error (as on a request) |
///
/// Its events (`INFO`, but for `task resumed`): `task created`
/// (`status`), `task resumed` (`status`; `DEBUG`, since a
/// [`Tracker`](crate::store::Tracker) resumes a task on every read),
/// `status changed` (`from`, `to`, and `requests` open when
/// `to` is `input_required`), `input answered` (`round`, `answers`),
/// `cancel sent`, and `tools/call asked for input` (`round`, `requests`)
/// for the input rounds of the call itself, before a task exists. A
/// handle dropped with `cancel_on_drop` keeps its span open until the
/// `tasks/cancel` it sends has its answer.
///
/// **`mcp_tasks.request`** (level `DEBUG`), one per JSON-RPC request, a
/// child of the span current when it is sent (the task span for a task's
/// requests; requests that belong to no task, such as `server/discover`,
/// are children of the caller's span). Fields: `method`, `request_id`,
/// `duration_us` (until the reply, or until the request was given up),
/// and on failure `error`: `timeout`, `transport`, `rpc`, `protocol`,
/// `outcome_unknown`, `server_cancelled`, `refused`, … (`abandoned` when
/// the request's future was dropped first), with `rpc_code` for a JSON-RPC
/// error and `http_status` for a failed HTTP reply.
///
/// With no subscriber (or one that filters these spans out), a handle
/// holds no span and a wait is not wrapped in one: a pending task costs the
/// same as without tracing.
///
/// `cargo run --example tracing` prints the spans of a task that works,
/// asks for a confirmation (answered by a handler) and completes, with
/// `tracing-subscriber`'s `fmt` layer:
///
/// ```text
/// DEBUG mcp_tasks.request{method="server/discover"}: new
/// DEBUG mcp_tasks.request{method="server/discover" request_id=1 duration_us=638}: close
///  INFO mcp_tasks.task{tool="export" era="modern" resumed=false}: new
/// DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false}:mcp_tasks.request{method="tools/call"}: new
/// DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false}:mcp_tasks.request{method="tools/call" request_id=2 duration_us=434}: close
/// DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false}: tools/call became a task task=TaskId(#f1c4ac69) status=working
///  INFO mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}: task created status="working"
/// DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/get"}: new
/// DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/get" request_id=3 duration_us=566}: close
/// DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/get"}: new
/// DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/get" request_id=4 duration_us=703}: close
///  INFO mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}: status changed from="working" to="input_required" requests=1
/// DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/update"}: new
/// DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/update" request_id=5 duration_us=438}: close
///  INFO mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}: input answered round=1 answers=1
/// DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/get"}: new
/// DEBUG mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}:mcp_tasks.request{method="tasks/get" request_id=6 duration_us=633}: close
///  INFO mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69"}: status changed from="input_required" to="completed"
///  INFO mcp_tasks.task{tool="export" era="modern" resumed=false protocol_version="2026-07-28" task_id="#f1c4ac69" outcome="completed" reads=3 input_rounds=1}: close
/// result: 42 rows exported
/// ```
///
/// # Compile-time guarantees
///
/// Each guarantee below is shown by a program that compiles and a twin,
/// one line different, that does not, with the error it fails with (so a
/// twin that fails for another reason, a new lint say, fails the docs).
///
/// A setter can be called only once:
///
/// ```
/// # use std::time::Duration;
/// # async fn f(client: mcp_tasks::Client) -> mcp_tasks::Result<()> {
/// let state = client.task().with_ttl(Duration::from_secs(60)).call_tool("export", ()).await?;
/// # drop(state); Ok(()) }
/// ```
/// ```compile_fail,E0277
/// # use std::time::Duration;
/// # async fn f(client: mcp_tasks::Client) -> mcp_tasks::Result<()> {
/// let state = client.task().with_ttl(Duration::from_secs(60)).with_ttl(Duration::from_secs(9)).call_tool("export", ()).await?;
/// # drop(state); Ok(()) }
/// ```
///
/// `call_tool` needs the tool's name and its arguments:
///
/// ```
/// # async fn f(client: mcp_tasks::Client) -> mcp_tasks::Result<()> {
/// let state = client.task().listen().call_tool("export", serde_json::json!({"id": 7})).await?;
/// # drop(state); Ok(()) }
/// ```
/// ```compile_fail,E0061
/// # async fn f(client: mcp_tasks::Client) -> mcp_tasks::Result<()> {
/// let state = client.task().listen().call_tool("export").await?;
/// # drop(state); Ok(()) }
/// ```
///
/// Only a finished task has an outcome:
///
/// ```
/// # use mcp_tasks::{Task, Finished};
/// fn report(task: Task<Finished>) { println!("{:?}", task.outcome()); }
/// ```
/// ```compile_fail,E0599
/// # use mcp_tasks::{Task, Pending};
/// fn report(task: Task<Pending>) { println!("{:?}", task.outcome()); }
/// ```
///
/// Only a task that asks for input can be answered:
///
/// ```
/// # use mcp_tasks::{Task, InputRequired, protocol::InputResponses};
/// async fn answer(task: Task<InputRequired>, answers: InputResponses) { let _ = task.respond(answers).await; }
/// ```
/// ```compile_fail,E0599
/// # use mcp_tasks::{Task, Pending, protocol::InputResponses};
/// async fn answer(task: Task<Pending>, answers: InputResponses) { let _ = task.respond(answers).await; }
/// ```
///
/// A finished task cannot be cancelled:
///
/// ```
/// # use mcp_tasks::{Task, Pending};
/// async fn stop(task: Task<Pending>) { let _ = task.cancel().await; }
/// ```
/// ```compile_fail,E0599
/// # use mcp_tasks::{Task, Finished};
/// async fn stop(task: Task<Finished>) { let _ = task.cancel().await; }
/// ```
///
/// A handle is used up by a transition; carry on with the one it returns:
///
/// ```
/// # use mcp_tasks::{Task, Pending};
/// async fn wait(task: Task<Pending>) {
///     let state = task.refresh().await;
///     let _ = state;
/// }
/// ```
/// ```compile_fail,E0382
/// # use mcp_tasks::{Task, Pending};
/// async fn wait(task: Task<Pending>) {
///     let state = task.refresh().await;
///     let _ = task.refresh().await;
/// }
/// ```
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
    pub fn snapshot(&self) -> &TaskInfo {
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

/// A task handle in whichever state the server's answer put it.
///
/// Returned by [`TaskBuilder::call_tool`](crate::TaskBuilder::call_tool),
/// `refresh`, `next` and `respond`. Match on it, or `.await` it to drive the
/// task to its end.
#[must_use = "a task handle is how to act on a task: finish or cancel it, keep its reference(), or read its outcome()"]
#[derive(Debug)]
pub enum TaskState {
    /// Working: wait with `finish()`/`next()`, or `cancel()`.
    Pending(Task<Pending>),
    /// Waiting for input: `respond()` with answers, or `finish()` to let the
    /// client's handlers answer.
    InputRequired(Task<InputRequired>),
    /// Ended (or answered at once): read its `outcome()`.
    Finished(Task<Finished>),
}

impl TaskState {
    /// The handle for what was observed.
    pub(crate) fn from_core(mut core: Box<Core>, observed: Observed) -> TaskState {
        match observed {
            Observed::Pending => TaskState::Pending(Task {
                core,
                state: Pending {},
            }),
            Observed::InputRequired(requests) => TaskState::InputRequired(Task {
                core,
                state: InputRequired { requests },
            }),
            Observed::Finished(outcome) => {
                core.finish(&outcome);
                TaskState::Finished(Task {
                    core,
                    state: Finished { outcome: *outcome },
                })
            }
        }
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

    /// Lets go of the handle as [`Task::detach`] does, handing over what
    /// it last saw of the task rather than a copy of it.
    pub(crate) fn detach_seen(mut self) -> (TaskRef, TaskInfo) {
        let reference = self.reference();
        let seen = self.core.take_snapshot();
        self.core.disarm(End::Detached);
        (reference, seen)
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
