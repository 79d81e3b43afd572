//! Tasks on a 2025-11-25 session (PROTOCOL.md §7, §7.2), behind the same
//! reads the task layer makes on 2026-07-28.
//!
//! - `tasks/get` gives a status without payload.
//! - `tasks/result` gives the payload, and is also the stream on which the
//!   server sends a task's input requests (`elicitation/create`,
//!   `sampling/createMessage`, tagged with the task): it stays open until
//!   the task ends. The client sends it once per task, in the background,
//!   when the task first needs input or has ended ("the fetch"), and keeps
//!   its answer for the read that reports the end.
//! - Input requests tagged with a task the client follows are held here
//!   (not answered by the inbound handler loop) and shown to the task
//!   layer as the task's `inputRequests`, keyed by the request's JSON-RPC
//!   id; `tasks/update` becomes one JSON-RPC response per answer.
//!
//! A task is followed while a handle holds its [`Follow`]. Dropping the
//! last one stops the fetch (the server sees the request cancelled) and
//! refuses the requests still held, so the server never waits on silence.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::Notify;
use tokio::sync::mpsc::{self, error::TrySendError};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::client::connection::{Cancelled, Connection, Responder, later};
use crate::client::wire::pushes::{Push, Watch};
use crate::client::wire::same_task;
use crate::error::{Error, Kind, Result};
use crate::protocol::method;
use crate::protocol::{
    CallToolResult, InputRequest, InputRequests, InputResponses, LegacyTask, RequestId, RpcError,
    TaskId, TaskPayload, TaskStatus, error_codes, with_related_task,
};

/// The longest a fetch stays open when the task names no lifetime.
const MAX_FETCH: Duration = Duration::from_secs(24 * 60 * 60);

/// The longest a read waits for `tasks/result` once `tasks/get` stated
/// the task `failed`: the status is final, and the fetch's answer only
/// fills in the error. Past it (or when the fetch fails) the task ends
/// `Failed` with what the status said.
pub(crate) const FAILED_RESULT_WAIT: Duration = Duration::from_secs(5);

/// The tasks a session follows.
#[derive(Default)]
pub(crate) struct Registry {
    tasks: Mutex<HashMap<TaskId, Entry>>,
}

#[derive(Default)]
struct Entry {
    /// How many [`Follow`]s hold the task.
    followers: usize,
    /// Input requests the server sent for the task, not answered yet, with
    /// the signal of the server withdrawing one.
    asked: BTreeMap<String, (InputRequest, Responder, Cancelled)>,
    fetch: Option<Fetch>,
    /// Woken when a request is held or the fetch ends.
    changed: Arc<Notify>,
    /// Handles that listen: told to read when the server says the status changed.
    listeners: Vec<mpsc::Sender<Push>>,
}

struct Fetch {
    abort: AbortHandle,
    /// The fetch's answer, once it came.
    outcome: Option<Fetched>,
}

/// What a fetch got. The server's answer is kept while the task is
/// followed (every read of the ended task reports it); a failure to get
/// one is reported once, and the next read sends the fetch again.
enum Fetched {
    Answer(Box<RawValue>),
    Refused(RpcError),
    Failed(Error),
}

/// A handle's hold on a task: while it lives, the task's input requests
/// are held for the handle. Dropping it lets the task go.
pub(crate) struct Follow {
    registry: Weak<Registry>,
    id: TaskId,
}

impl std::fmt::Debug for Follow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Follow").field("task", &self.id).finish()
    }
}

impl Drop for Follow {
    fn drop(&mut self) {
        if let Some(registry) = self.registry.upgrade() {
            registry.unfollow(&self.id);
        }
    }
}

/// Where a task's fetch stands after [`Registry::ensure_fetch`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fetching {
    /// Sent just now: the server may not have sent its questions yet.
    Started,
    /// Sent earlier.
    Running,
    /// No handle follows the task: nothing was sent.
    NotFollowed,
}

/// Most questions held for one task; past that the server's requests are
/// refused, as a flood of plain requests is.
const MAX_HELD: usize = 64;

/// What a read found while it waited on the fetch.
enum Gathered {
    /// The task's outstanding input requests.
    Asked(InputRequests),
    /// The fetch answered: the task ended.
    Ended(Result<Box<RawValue>>),
    /// Neither within the bound.
    Nothing,
}

impl Registry {
    /// Follows `id` until the returned hold is dropped.
    pub(crate) fn follow(self: &Arc<Self>, id: &TaskId) -> Follow {
        let mut tasks = self.tasks.lock().unwrap();
        tasks.entry(id.clone()).or_default().followers += 1;
        Follow {
            registry: Arc::downgrade(self),
            id: id.clone(),
        }
    }

    fn unfollow(&self, id: &TaskId) {
        let removed = {
            let mut tasks = self.tasks.lock().unwrap();
            let Some(entry) = tasks.get_mut(id) else {
                return;
            };
            entry.followers = entry.followers.saturating_sub(1);
            if entry.followers > 0 {
                return;
            }
            tasks.remove(id)
        };
        let Some(entry) = removed else { return };
        if let Some(fetch) = entry.fetch {
            fetch.abort.abort();
        }
        for (_, (_, responder, _)) in entry.asked {
            let error = RpcError::new(
                error_codes::INTERNAL_ERROR,
                "the client no longer follows this task",
            );
            responder.try_error(error);
        }
    }

    /// A listening handle's registration: each
    /// `notifications/tasks/status` for the task makes it read at once.
    pub(crate) fn watch(&self, id: &TaskId) -> Watch {
        let (tx, rx) = mpsc::channel(1);
        if let Some(entry) = self.tasks.lock().unwrap().get_mut(id) {
            entry.listeners.push(tx);
        }
        Watch::detached(rx)
    }

    /// The server said task `id` changed (`notifications/tasks/status`,
    /// which carries no payload): listening handles read it now.
    pub(crate) fn status_changed(&self, id: &TaskId) {
        let mut tasks = self.tasks.lock().unwrap();
        let Some(entry) = tasks.get_mut(id) else {
            return;
        };
        // A full queue already holds a wake-up; a closed one is gone.
        entry
            .listeners
            .retain(|tx| !matches!(tx.try_send(Push::Lagged), Err(TrySendError::Closed(_))));
    }

    /// Holds a request from the server tagged with task `id`, if the
    /// client follows it; otherwise hands the responder back.
    pub(crate) fn hold(
        &self,
        id: &TaskId,
        request: InputRequest,
        responder: Responder,
        cancelled: Cancelled,
    ) -> Option<(Responder, Cancelled)> {
        let mut tasks = self.tasks.lock().unwrap();
        let Some(entry) = tasks.get_mut(id) else {
            return Some((responder, cancelled));
        };
        withdraw_cancelled(&mut entry.asked);
        if entry.asked.len() >= MAX_HELD {
            let error = RpcError::new(
                error_codes::INTERNAL_ERROR,
                "the client is busy: too many questions waiting for this task",
            );
            responder.try_error(error);
            return None;
        }
        let key = match responder.id() {
            RequestId::String(s) => s.clone(),
            RequestId::Number(n) => n.to_string(),
        };
        entry.asked.insert(key, (request, responder, cancelled));
        entry.changed.notify_waiters();
        None
    }

    /// Starts the task's fetch unless it runs (or ran) already, for a task
    /// a handle follows (a bare read starts nothing it would not end).
    fn ensure_fetch(
        self: &Arc<Self>,
        conn: &Connection,
        id: &TaskId,
        ttl: Option<u64>,
    ) -> Fetching {
        let mut tasks = self.tasks.lock().unwrap();
        let Some(entry) = tasks.get_mut(id) else {
            return Fetching::NotFollowed;
        };
        if entry.fetch.is_some() {
            return Fetching::Running;
        }
        let bound = ttl.map_or(MAX_FETCH, |ms| Duration::from_millis(ms).min(MAX_FETCH));
        let conn = conn.clone();
        let registry = Arc::downgrade(self);
        let task_id = id.clone();
        let handle = tokio::spawn(async move {
            let outcome = request(&conn, method::TASKS_RESULT, &task_id, bound).await;
            if let Some(registry) = registry.upgrade() {
                registry.fetched(&task_id, outcome);
            }
        });
        entry.fetch = Some(Fetch {
            abort: handle.abort_handle(),
            outcome: None,
        });
        Fetching::Started
    }

    fn fetched(&self, id: &TaskId, outcome: Result<Box<RawValue>>) {
        let outcome = match outcome {
            Ok(raw) => Fetched::Answer(raw),
            Err(e) => match e.rpc_error() {
                // An overloaded server's error is no answer about the
                // task: the next read fetches again, after the wait's pause.
                Some(_) if e.is_overloaded() => Fetched::Failed(e),
                Some(rpc) => Fetched::Refused(rpc.clone()),
                None => Fetched::Failed(e),
            },
        };
        let mut tasks = self.tasks.lock().unwrap();
        if let Some(fetch) = tasks.get_mut(id).and_then(|e| e.fetch.as_mut()) {
            fetch.outcome = Some(outcome);
            if let Some(entry) = tasks.get(id) {
                entry.changed.notify_waiters();
            }
        }
    }

    /// Waits until the task has input requests held (`want_input`) or its
    /// fetch answered, within `until`. A fetch that failed (other than
    /// with the server's own error) is forgotten, so the next read sends
    /// it again.
    async fn gather(&self, id: &TaskId, want_input: bool, until: Instant) -> Gathered {
        loop {
            let changed = {
                let mut tasks = self.tasks.lock().unwrap();
                let Some(entry) = tasks.get_mut(id) else {
                    return Gathered::Nothing;
                };
                match entry.fetch.as_ref().and_then(|f| f.outcome.as_ref()) {
                    Some(Fetched::Answer(raw)) => return Gathered::Ended(Ok(raw.clone())),
                    Some(Fetched::Refused(rpc)) => {
                        let e = Error::rpc(rpc.clone())
                            .with_method(method::TASKS_RESULT)
                            .with_task(id);
                        return Gathered::Ended(Err(e));
                    }
                    Some(Fetched::Failed(_)) => {
                        // Reported once; the next read fetches again.
                        if let Some(Fetch {
                            outcome: Some(Fetched::Failed(e)),
                            ..
                        }) = entry.fetch.take()
                        {
                            return Gathered::Ended(Err(e));
                        }
                    }
                    None => {}
                }
                withdraw_cancelled(&mut entry.asked);
                if want_input && !entry.asked.is_empty() {
                    let asked = entry
                        .asked
                        .iter()
                        .map(|(k, (r, _, _))| (k.clone(), r.clone()))
                        .collect();
                    return Gathered::Asked(asked);
                }
                entry.changed.clone()
            };
            let notified = changed.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            // Checked again now that a wake-up cannot be missed.
            if self.ready(id, want_input) {
                continue;
            }
            if tokio::time::timeout_at(until, notified).await.is_err() {
                return Gathered::Nothing;
            }
        }
    }

    /// Drops the task's fetch (its answer was no outcome), so that the next
    /// read sends it again.
    fn forget_fetch(&self, id: &TaskId) {
        if let Some(entry) = self.tasks.lock().unwrap().get_mut(id)
            && let Some(fetch) = entry.fetch.take()
        {
            fetch.abort.abort();
        }
    }

    fn ready(&self, id: &TaskId, want_input: bool) -> bool {
        let tasks = self.tasks.lock().unwrap();
        tasks.get(id).is_some_and(|e| {
            e.fetch.as_ref().is_some_and(|f| f.outcome.is_some())
                || (want_input && !e.asked.is_empty())
        })
    }

    /// Sends the answers as JSON-RPC responses to the held requests.
    async fn answer(&self, id: &TaskId, responses: &InputResponses) -> Result<()> {
        let mut ready = Vec::with_capacity(responses.len());
        {
            let mut tasks = self.tasks.lock().unwrap();
            let entry = tasks.get_mut(id);
            let Some(entry) = entry else {
                return Err(not_waiting(id, "any input"));
            };
            withdraw_cancelled(&mut entry.asked);
            // Every key first: answer all or none.
            if let Some(key) = responses.keys().find(|k| !entry.asked.contains_key(*k)) {
                return Err(not_waiting(id, &format!("input {key:?}")));
            }
            for (key, response) in responses {
                if let Some((_, responder, _)) = entry.asked.remove(key) {
                    ready.push((responder, response));
                }
            }
        }
        for (responder, response) in ready {
            let answer = serde_json::to_value(response).unwrap_or(serde_json::Value::Null);
            responder.result(&with_related_task(answer, id)).await?;
        }
        Ok(())
    }
}

/// Drops the questions the server has withdrawn (`notifications/cancelled`):
/// they are no longer shown, and answering one is refused.
fn withdraw_cancelled(asked: &mut BTreeMap<String, (InputRequest, Responder, Cancelled)>) {
    asked.retain(|_, (_, _, cancelled)| !cancelled.has_fired());
}

fn not_waiting(id: &TaskId, what: &str) -> Error {
    Error::new(Kind::Builder(format!(
        "the server is not waiting for {what} on this task (answered already, or withdrawn)"
    )))
    .with_method(method::TASKS_UPDATE)
    .with_task(id)
}

/// The payload of a task the server stated ended (`task.status`), from
/// the fetch's answer. The status decides ([`TaskPayload::ended`]): a
/// `failed` task is a failure whatever `tasks/result` returned (a tool
/// result, a bare `_meta`, a JSON-RPC error), and only a `completed` one
/// turns a result into a completion.
///
/// A transport error is no answer about the task: it is returned, and the
/// wait reads again.
fn ended(id: &TaskId, task: &LegacyTask, outcome: Result<Box<RawValue>>) -> Result<TaskPayload> {
    let malformed = |e: &dyn std::fmt::Display| {
        Error::protocol(format!("malformed tasks/result: {e}"))
            .with_method(method::TASKS_RESULT)
            .with_task(id)
    };
    let (result, error) = match outcome {
        Ok(raw) => match serde_json::from_str::<CallToolResult>(raw.get()) {
            Ok(result) => (Some(result), None),
            // A failed task's payload only fills in its error.
            Err(_) if task.info.status != TaskStatus::Completed => (None, None),
            Err(e) => return Err(malformed(&e)),
        },
        Err(e) => match e.rpc_error() {
            Some(rpc) => (None, Some(rpc.clone())),
            None => return Err(e),
        },
    };
    TaskPayload::ended(
        task.info.status,
        task.info.status_message.as_deref(),
        result,
        error,
    )
    .ok_or_else(|| malformed(&"a completed task gave no result"))
}

/// The reads, answers and cancels of one session's tasks.
pub(crate) struct LegacyTasks {
    pub(crate) registry: Arc<Registry>,
}

impl LegacyTasks {
    pub(crate) fn new() -> Self {
        LegacyTasks {
            registry: Arc::new(Registry::default()),
        }
    }

    /// One read: `tasks/get`, then what the status needs: the held input
    /// requests (starting the fetch, which makes the server send them), or
    /// the fetch's answer for an ended task. All within `timeout`.
    pub(crate) async fn read(
        &self,
        conn: &Connection,
        id: &TaskId,
        timeout: Duration,
    ) -> Result<crate::protocol::DetailedTask> {
        let until = later(Instant::now(), timeout);
        let task = status(conn, id, timeout).await?;
        let payload = match task.info.status {
            TaskStatus::InputRequired => {
                // A fetch sent just now gives the server time to send its
                // questions; one sent earlier has sent them already (or
                // they were answered): nothing to wait for.
                let until = match self.registry.ensure_fetch(conn, id, task.info.ttl_ms) {
                    Fetching::Started => until,
                    Fetching::Running => Instant::now(),
                    // A bare read shows the status; questions go to handles.
                    Fetching::NotFollowed => {
                        return Ok(
                            task.into_detailed(TaskPayload::InputRequired(InputRequests::new()))
                        );
                    }
                };
                match self.registry.gather(id, true, until).await {
                    Gathered::Asked(requests) => TaskPayload::InputRequired(requests),
                    // The fetch answered, so the task has ended since the
                    // status was read: only the status it states now says
                    // what the answer means. The answer is kept for that read.
                    Gathered::Ended(Ok(_)) => {
                        let now = status(conn, id, timeout).await?;
                        if !now.info.status.is_terminal() {
                            return Ok(task
                                .into_detailed(TaskPayload::InputRequired(InputRequests::new())));
                        }
                        return self.read_ended(conn, id, now, timeout, until).await;
                    }
                    // The task still asks, so an error is no outcome: the
                    // fetch is sent again on a later read.
                    Gathered::Ended(Err(e)) => {
                        self.registry.forget_fetch(id);
                        return Err(e);
                    }
                    // Not sent yet: the task layer reads again.
                    Gathered::Nothing => TaskPayload::InputRequired(InputRequests::new()),
                }
            }
            TaskStatus::Completed | TaskStatus::Failed => {
                return self.read_ended(conn, id, task, timeout, until).await;
            }
            _ => task.bare_payload(),
        };
        Ok(task.into_detailed(payload))
    }

    /// The rest of a read of a task whose status says it ended: the
    /// fetch's answer (sent now unless a handle's fetch has it already).
    async fn read_ended(
        &self,
        conn: &Connection,
        id: &TaskId,
        task: LegacyTask,
        timeout: Duration,
        until: Instant,
    ) -> Result<crate::protocol::DetailedTask> {
        // A failed task has failed, whatever `tasks/result` does: its
        // answer is awaited a short while only.
        let failed = task.info.status == TaskStatus::Failed;
        let (timeout, until) = if failed {
            let bound = timeout.min(FAILED_RESULT_WAIT);
            (bound, until.min(later(Instant::now(), bound)))
        } else {
            (timeout, until)
        };
        let outcome =
            if self.registry.ensure_fetch(conn, id, task.info.ttl_ms) == Fetching::NotFollowed {
                // A bare read of an ended task: its result, inline.
                request(conn, method::TASKS_RESULT, id, timeout).await
            } else {
                match self.registry.gather(id, false, until).await {
                    Gathered::Ended(outcome) => outcome,
                    Gathered::Asked(_) | Gathered::Nothing => Err(Error::new(Kind::Timeout {
                        after: timeout,
                        discarded: 0,
                    })
                    .with_method(method::TASKS_RESULT)
                    .with_task(id)),
                }
            };
        let payload = match outcome {
            // No answer about a failed task: it failed with what its
            // status said.
            Err(e) if failed && e.rpc_error().is_none() => {
                tracing::debug!(task = ?id, "no tasks/result for a failed task: {e}");
                TaskPayload::ended(
                    task.info.status,
                    task.info.status_message.as_deref(),
                    None,
                    None,
                )
                .ok_or(e)?
            }
            outcome => ended(id, &task, outcome)?,
        };
        Ok(task.into_detailed(payload))
    }

    /// Answers held input requests.
    pub(crate) async fn answer(&self, id: &TaskId, responses: &InputResponses) -> Result<()> {
        self.registry.answer(id, responses).await
    }

    /// `tasks/cancel`. Its answer is the task, not read here: the wait
    /// reads next. This era answers `-32602` both for a task that has
    /// ended and for one it does not know: a `tasks/get` tells them apart,
    /// and an ended task has nothing left to cancel (`Ok`).
    pub(crate) async fn cancel(
        &self,
        conn: &Connection,
        id: &TaskId,
        timeout: Duration,
    ) -> Result<()> {
        match request(conn, method::TASKS_CANCEL, id, timeout).await {
            Ok(_) => Ok(()),
            Err(e) if e.is_task_not_found() => {
                let ended = request(conn, method::TASKS_GET, id, timeout)
                    .await
                    .ok()
                    .and_then(|raw| serde_json::from_str::<LegacyTask>(raw.get()).ok())
                    .is_some_and(|t| t.info.status.is_terminal());
                if ended { Ok(()) } else { Err(e) }
            }
            Err(e) => Err(e),
        }
    }
}

/// `tasks/get`: the task's status, without payload.
async fn status(conn: &Connection, id: &TaskId, timeout: Duration) -> Result<LegacyTask> {
    let raw = request(conn, method::TASKS_GET, id, timeout).await?;
    let task: LegacyTask = serde_json::from_str(raw.get()).map_err(|e| {
        Error::protocol(format!("malformed task: {e}"))
            .with_method(method::TASKS_GET)
            .with_task(id)
    })?;
    same_task(id, &task.task_id)?;
    Ok(task)
}

/// One `tasks/*` request naming `id`, as this era sends it (no `_meta`).
pub(crate) async fn request(
    conn: &Connection,
    method: &'static str,
    id: &TaskId,
    timeout: Duration,
) -> Result<Box<RawValue>> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Params<'a> {
        task_id: &'a TaskId,
    }
    conn.request(
        method,
        Some(id.expose().to_owned()),
        &Params { task_id: id },
        timeout,
    )
    .await
    .map_err(|e| e.with_method(method).with_task(id))
}
