//! Tasks the client hosts for a 2025-11-25 server: the era's experimental
//! tasks run the other way round (PROTOCOL.md §7, "Bidirectional"). The
//! server sends `elicitation/create` or `sampling/createMessage` with
//! `params.task = {ttl?}`; the client answers at once with the creation
//! result `{"task": {…}}` (status `working`), runs the installed handler in
//! the background (its answer validated as for a plain request), and
//! answers the server's `tasks/get`, `tasks/result` (which blocks until the
//! task ends), `tasks/list` and `tasks/cancel` for it.
//!
//! A handler's error (or an answer that fails validation) makes the task
//! `failed` with the `-32603` error a plain request would have got, and
//! `tasks/result` returns that error. `tasks/cancel` moves a running task
//! to `cancelled` and stops its handler before it answers; `tasks/result`
//! of a cancelled task is a `-32603` error (there is no result). A request
//! that is both task-augmented and tagged with a task the client follows
//! as a requestor (`related-task`) is hosted: the server asked for a task.
//!
//! Only a session that negotiated 2025-11-25 hosts tasks, and only after
//! the `initialize` request declared `capabilities.tasks` for the handlers
//! installed (elicitation, sampling). Elsewhere the `task` param is ignored
//! and the request is answered as a plain one.
//!
//! # Bounds (RELIABILITY.md)
//!
//! - At most [`MAX_TASKS`] (64) hosted tasks at once, running and finished
//!   alike (a running handler holds its place until it ends or the server
//!   cancels it). A further task-augmented request is refused at once with
//!   `-32603` and its handler never runs, so a flood cannot grow memory or
//!   start unbounded work.
//! - A finished task (`completed`, `failed`, `cancelled`) is kept for its
//!   `ttl` counted from when it ended, then dropped (`-32602` afterwards).
//!   The `ttl` is the server's, clamped to 1 s ..= 10 min, and 60 s when
//!   it asks for none; the task reports the one in force. The specification
//!   lets a receiver drop a task `ttl` after its creation; counting from
//!   the end keeps a result at least that long and never drops one the
//!   moment it exists.
//! - At most 64 `tasks/result` requests wait at once (each waits off the
//!   loop that answers the server's requests, so `tasks/get` and
//!   `tasks/cancel` are answered while they wait); a further one is refused
//!   with `-32603`. A wait the server cancels (`notifications/cancelled`)
//!   ends and sends nothing.
//! - When the connection closes, every running handler is stopped (its
//!   future dropped) and every task forgotten.
//!
//! Task ids are 128 bits from the standard library's randomly keyed hasher
//! (SipHash keyed from the operating system's random source) over a
//! counter: unique in the session and not guessable from one another.
//! Logs carry only their redacted form, at debug level.

use std::collections::hash_map::RandomState;
use std::collections::{BTreeMap, HashMap};
use std::hash::BuildHasher;
use std::ops::Bound;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::{Map, Value, json};
use tokio::sync::{Semaphore, watch};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use crate::client::connection::{Cancelled, Responder};
use crate::error::Error;
use crate::input::InputHandlers;
use crate::protocol::method;
use crate::protocol::{
    InputRequest, LegacyTask, ListTasksResult, RpcError, TaskId, TaskInfo, TaskStatus, error_codes,
    iso8601_utc, with_related_task,
};

/// Most hosted tasks at once, running and finished.
pub(crate) const MAX_TASKS: usize = 64;
/// How long a finished task is kept when the server asks for no `ttl`.
pub(crate) const DEFAULT_TTL: Duration = Duration::from_secs(60);
/// The longest a finished task is kept, whatever the server asks.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(600);
/// The shortest a finished task is kept, whatever the server asks.
pub(crate) const MIN_TTL: Duration = Duration::from_secs(1);
/// The `pollInterval` suggested to the server.
pub(crate) const POLL_INTERVAL: Duration = Duration::from_secs(1);
/// Tasks on one page of `tasks/list`.
pub(crate) const PAGE_SIZE: usize = 20;
/// Most `tasks/result` requests waiting at once.
const MAX_RESULT_WAITS: usize = 64;

/// The `capabilities.tasks` an `initialize` declares for `handlers`:
/// `requests.elicitation.create` with an elicitation handler,
/// `requests.sampling.createMessage` with a sampling handler, and `list`
/// and `cancel`; `None` without either handler.
pub(crate) fn capability(handlers: &InputHandlers) -> Option<Map<String, Value>> {
    let mut requests = Map::new();
    if handlers.answers_elicitation() {
        requests.insert("elicitation".to_owned(), json!({"create": {}}));
    }
    if handlers.answers_sampling() {
        requests.insert("sampling".to_owned(), json!({"createMessage": {}}));
    }
    if requests.is_empty() {
        return None;
    }
    let mut tasks = Map::new();
    tasks.insert("requests".to_owned(), Value::Object(requests));
    tasks.insert("list".to_owned(), json!({}));
    tasks.insert("cancel".to_owned(), json!({}));
    Some(tasks)
}

/// Whether `method` is one of the requests a host answers for its tasks.
pub(crate) fn is_task_method(method: &str) -> bool {
    matches!(
        method,
        method::TASKS_GET | method::TASKS_RESULT | method::TASKS_LIST | method::TASKS_CANCEL
    )
}

/// Whether a request of this kind may become a hosted task (the kinds the
/// capability names; `roots/list` is always answered plainly).
pub(crate) fn may_host(input: &InputRequest) -> bool {
    matches!(
        input,
        InputRequest::Elicitation(_) | InputRequest::Sampling(_)
    )
}

/// What a task's request ends with: its result, or its JSON-RPC error.
type Outcome = Result<Value, RpcError>;

/// The tasks the client hosts for one session.
pub(crate) struct Host {
    state: Mutex<State>,
    keys: RandomState,
    waits: Arc<Semaphore>,
}

#[derive(Default)]
struct State {
    /// By creation order (the `tasks/list` order and cursor).
    tasks: BTreeMap<u64, Hosted>,
    /// Task id to creation number.
    ids: HashMap<String, u64>,
    next: u64,
    closed: bool,
}

struct Hosted {
    id: TaskId,
    status: TaskStatus,
    message: Option<String>,
    created_at: String,
    updated_at: String,
    ttl: Duration,
    /// When a finished task is dropped; `None` while it runs.
    expires: Option<Instant>,
    /// The outcome, once there is one; `tasks/result` waits on it.
    outcome: watch::Sender<Option<Outcome>>,
    /// Stops the handler.
    runner: Option<AbortHandle>,
}

impl Hosted {
    fn describe(&self) -> LegacyTask {
        LegacyTask {
            task_id: self.id.clone(),
            info: TaskInfo {
                status: self.status,
                status_message: self.message.clone(),
                created_at: Some(self.created_at.clone()),
                last_updated_at: Some(self.updated_at.clone()),
                ttl_ms: Some(millis(self.ttl)),
                poll_interval_ms: Some(millis(POLL_INTERVAL)),
                unknown_status: None,
            },
        }
    }

    /// Moves a running task to `status` with `outcome`, for good.
    fn end(&mut self, status: TaskStatus, message: Option<String>, outcome: Outcome) {
        self.status = status;
        self.message = message;
        self.updated_at = wall_clock();
        self.expires = Some(Instant::now() + self.ttl);
        if let Some(runner) = self.runner.take() {
            runner.abort();
        }
        self.outcome.send_replace(Some(outcome));
    }
}

impl State {
    /// Drops the finished tasks whose time is up.
    fn sweep(&mut self) {
        let now = Instant::now();
        let expired: Vec<u64> = self
            .tasks
            .iter()
            .filter(|(_, t)| t.expires.is_some_and(|at| at <= now))
            .map(|(seq, _)| *seq)
            .collect();
        for seq in expired {
            if let Some(t) = self.tasks.remove(&seq) {
                self.ids.remove(t.id.expose());
                tracing::debug!(task = %t.id.redacted(), "dropped a hosted task past its ttl");
            }
        }
    }

    fn find(&mut self, params: &Value) -> Result<&mut Hosted, RpcError> {
        let id = params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("params.taskId is missing or not a string"))?;
        self.sweep();
        let seq = self
            .ids
            .get(id)
            .ok_or_else(|| invalid("no such task (unknown, or dropped after its ttl)"))?;
        self.tasks
            .get_mut(seq)
            .ok_or_else(|| invalid("no such task (unknown, or dropped after its ttl)"))
    }

    fn abort_all(&mut self) {
        for t in self.tasks.values_mut() {
            if let Some(runner) = t.runner.take() {
                runner.abort();
            }
        }
    }
}

impl Host {
    pub(crate) fn new() -> Arc<Host> {
        Arc::new(Host {
            state: Mutex::new(State::default()),
            keys: RandomState::new(),
            waits: Arc::new(Semaphore::new(MAX_RESULT_WAITS)),
        })
    }

    /// How many tasks are hosted now, running and finished (finished ones
    /// past their time are dropped first).
    pub(crate) fn len(&self) -> usize {
        let mut state = self.state.lock().unwrap();
        state.sweep();
        state.tasks.len()
    }

    /// Accepts a task-augmented request (`task` is its `params.task`): the
    /// creation result `{"task": {…}}` to answer at once, the handler
    /// started in the background. A `-32603` error when the bound is
    /// reached (the handler does not run).
    pub(crate) fn accept(
        self: &Arc<Self>,
        task: &Map<String, Value>,
        input: InputRequest,
        handlers: InputHandlers,
        key: String,
    ) -> Outcome {
        let ttl = requested_ttl(task.get("ttl"));
        let (seq, created) = {
            let mut state = self.state.lock().unwrap();
            if state.closed {
                return Err(RpcError::new(
                    error_codes::INTERNAL_ERROR,
                    "the connection is closing",
                ));
            }
            state.sweep();
            if state.tasks.len() >= MAX_TASKS {
                tracing::warn!(
                    method = input.method(),
                    "refusing a task-augmented request: the client already hosts {MAX_TASKS} tasks"
                );
                return Err(RpcError::new(
                    error_codes::INTERNAL_ERROR,
                    format!(
                        "the client already hosts {MAX_TASKS} tasks; \
                         try again once some have ended"
                    ),
                ));
            }
            let (seq, id) = self.fresh_id(&mut state);
            let now = wall_clock();
            let hosted = Hosted {
                id: id.clone(),
                status: TaskStatus::Working,
                message: None,
                created_at: now.clone(),
                updated_at: now,
                ttl,
                expires: None,
                outcome: watch::Sender::new(None),
                runner: None,
            };
            let created = hosted.describe();
            state.ids.insert(id.expose().to_owned(), seq);
            state.tasks.insert(seq, hosted);
            tracing::debug!(task = %id.redacted(), method = input.method(), "hosting a task for the server");
            (seq, created)
        };
        let host = Arc::downgrade(self);
        let runner = tokio::spawn(async move {
            let outcome = run(&handlers, &key, &input).await;
            if let Some(host) = host.upgrade() {
                host.finish(seq, outcome);
            }
        });
        {
            let mut state = self.state.lock().unwrap();
            match state.tasks.get_mut(&seq) {
                Some(t) if !t.status.is_terminal() => t.runner = Some(runner.abort_handle()),
                // Ended already (or the host closed): nothing to stop later.
                _ => runner.abort(),
            }
        }
        to_value(&json!({ "task": created }))
    }

    /// A new creation number and an id no hosted task has.
    fn fresh_id(&self, state: &mut State) -> (u64, TaskId) {
        loop {
            state.next += 1;
            let seq = state.next;
            let high = self.keys.hash_one((seq, 0u8));
            let low = self.keys.hash_one((seq, 1u8));
            let id = format!("{high:016x}{low:016x}");
            if !state.ids.contains_key(&id) {
                return (seq, TaskId::new(id));
            }
        }
    }

    /// Records the handler's outcome, unless the task was cancelled.
    fn finish(&self, seq: u64, outcome: Outcome) {
        let mut state = self.state.lock().unwrap();
        let Some(t) = state.tasks.get_mut(&seq) else {
            return;
        };
        if t.status.is_terminal() {
            return;
        }
        t.runner = None;
        match outcome {
            Ok(result) => t.end(TaskStatus::Completed, None, Ok(result)),
            Err(error) => {
                let message = Some(error.message.clone());
                t.end(TaskStatus::Failed, message, Err(error));
            }
        }
    }

    /// Answers one of the server's `tasks/*` requests (see
    /// [`is_task_method`]). `tasks/result` is answered from a task of its
    /// own once the task ends, so this never waits for a handler.
    pub(crate) async fn serve(
        self: &Arc<Self>,
        method: &str,
        params: &Value,
        responder: Responder,
        cancelled: Cancelled,
    ) -> Result<(), Error> {
        let reply = match method {
            method::TASKS_GET => self.get(params),
            method::TASKS_LIST => self.list(params),
            method::TASKS_CANCEL => self.cancel(params),
            method::TASKS_RESULT => return self.result(params, responder, cancelled).await,
            _ => Err(RpcError::new(
                error_codes::METHOD_NOT_FOUND,
                format!("this client does not answer {method}"),
            )),
        };
        match reply {
            Ok(result) => responder.result(&result).await,
            Err(error) => responder.error(error).await,
        }
    }

    fn get(&self, params: &Value) -> Outcome {
        let mut state = self.state.lock().unwrap();
        let task = state.find(params)?.describe();
        to_value(&task)
    }

    fn cancel(&self, params: &Value) -> Outcome {
        let mut state = self.state.lock().unwrap();
        let t = state.find(params)?;
        if t.status.is_terminal() {
            return Err(invalid(
                "the task has already ended; a finished task cannot be cancelled",
            ));
        }
        tracing::debug!(task = %t.id.redacted(), "the server cancelled a hosted task");
        let message = "cancelled at the requestor's request";
        let outcome = Err(RpcError::new(
            error_codes::INTERNAL_ERROR,
            "the task was cancelled before it produced a result",
        ));
        t.end(TaskStatus::Cancelled, Some(message.to_owned()), outcome);
        to_value(&t.describe())
    }

    fn list(&self, params: &Value) -> Outcome {
        let mut state = self.state.lock().unwrap();
        let after = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(Value::String(cursor)) => cursor
                .parse::<u64>()
                .ok()
                .filter(|seq| *seq <= state.next)
                .ok_or_else(|| invalid("the cursor is not one this client gave"))?,
            Some(_) => return Err(invalid("params.cursor must be a string")),
        };
        state.sweep();
        let mut range = state
            .tasks
            .range((Bound::Excluded(after), Bound::Unbounded))
            .take(PAGE_SIZE + 1);
        let mut tasks = Vec::new();
        let mut last = after;
        for (seq, t) in range.by_ref().take(PAGE_SIZE) {
            tasks.push(t.describe());
            last = *seq;
        }
        let more = range.next().is_some();
        to_value(&ListTasksResult {
            tasks,
            next_cursor: more.then(|| last.to_string()),
        })
    }

    /// `tasks/result`: the handler's result with the related-task `_meta`,
    /// or its error, once the task has ended.
    async fn result(
        self: &Arc<Self>,
        params: &Value,
        responder: Responder,
        cancelled: Cancelled,
    ) -> Result<(), Error> {
        let found = {
            let mut state = self.state.lock().unwrap();
            state
                .find(params)
                .map(|t| (t.id.clone(), t.outcome.subscribe()))
        };
        let (id, mut outcome) = match found {
            Ok(found) => found,
            Err(error) => return responder.error(error).await,
        };
        let Ok(permit) = self.waits.clone().try_acquire_owned() else {
            tracing::warn!("refusing a tasks/result: too many are waiting");
            let error = RpcError::new(
                error_codes::INTERNAL_ERROR,
                "the client is busy: too many tasks/result requests waiting",
            );
            return responder.error(error).await;
        };
        tokio::spawn(async move {
            let _permit = permit;
            let ended = tokio::select! {
                biased;
                _ = cancelled.wait() => return,
                ended = outcome.wait_for(Option::is_some) => ended.ok().and_then(|o| o.clone()),
            };
            let sent = match ended {
                Some(Ok(result)) => responder.result(&with_related_task(result, &id)).await,
                Some(Err(error)) => responder.error(error).await,
                None => {
                    let error = invalid("the task is gone: the connection is closing");
                    responder.error(error).await
                }
            };
            if let Err(e) = sent {
                tracing::debug!("could not answer a tasks/result: {e}");
            }
        });
        Ok(())
    }

    /// Stops every handler and forgets every task (the connection closed).
    pub(crate) fn close(&self) {
        let mut state = self.state.lock().unwrap();
        state.closed = true;
        state.abort_all();
        state.tasks.clear();
        state.ids.clear();
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        if let Ok(state) = self.state.get_mut() {
            state.abort_all();
        }
    }
}

/// Runs the handler for `input` and validates its answer, as for a plain
/// request; a failure is the `-32603` error a plain request would get.
async fn run(handlers: &InputHandlers, key: &str, input: &InputRequest) -> Outcome {
    match handlers.answer(key, input).await {
        Ok(response) => to_value(&response),
        Err(e) => Err(RpcError::new(error_codes::INTERNAL_ERROR, e.to_string())),
    }
}

/// The `ttl` the server asked for, clamped; the default when it asked for
/// none (absent, `null`, or not a number).
fn requested_ttl(ttl: Option<&Value>) -> Duration {
    let ms = ttl.and_then(|v| {
        v.as_u64().or_else(|| {
            v.as_f64()
                .filter(|f| f.is_finite() && *f >= 0.0)
                .map(|f| f.min(u64::MAX as f64) as u64)
        })
    });
    ms.map_or(DEFAULT_TTL, |ms| {
        Duration::from_millis(ms).clamp(MIN_TTL, MAX_TTL)
    })
}

fn invalid(message: &str) -> RpcError {
    RpcError::new(error_codes::INVALID_PARAMS, message)
}

fn to_value<T: Serialize>(value: &T) -> Outcome {
    serde_json::to_value(value).map_err(|e| {
        RpcError::new(
            error_codes::INTERNAL_ERROR,
            format!("the answer does not serialize: {e}"),
        )
    })
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// Now, as ISO 8601 (the system clock; the Unix epoch if it is before it).
fn wall_clock() -> String {
    let ms = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, millis);
    iso8601_utc(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ttl_is_clamped_and_defaults_to_a_minute() {
        assert_eq!(requested_ttl(None), DEFAULT_TTL);
        assert_eq!(requested_ttl(Some(&Value::Null)), DEFAULT_TTL);
        assert_eq!(requested_ttl(Some(&json!("soon"))), DEFAULT_TTL);
        assert_eq!(requested_ttl(Some(&json!(5_000))), Duration::from_secs(5));
        assert_eq!(requested_ttl(Some(&json!(0))), MIN_TTL);
        assert_eq!(requested_ttl(Some(&json!(u64::MAX))), MAX_TTL);
        assert_eq!(requested_ttl(Some(&json!(1e300))), MAX_TTL);
        assert_eq!(requested_ttl(Some(&json!(-1))), DEFAULT_TTL);
    }

    #[test]
    fn the_capability_names_only_the_installed_handlers() {
        assert_eq!(capability(&InputHandlers::new()), None);
        let roots = InputHandlers::new().roots(|_| async { unreachable!() });
        assert_eq!(capability(&roots), None);
        let sampling = InputHandlers::new().sampling(|_| async { unreachable!() });
        assert_eq!(
            Value::Object(capability(&sampling).unwrap()),
            json!({"requests": {"sampling": {"createMessage": {}}}, "list": {}, "cancel": {}})
        );
        let url = InputHandlers::new().elicitation_url(|_| async { unreachable!() });
        assert_eq!(
            Value::Object(capability(&url).unwrap())["requests"],
            json!({"elicitation": {"create": {}}})
        );
    }

    #[test]
    fn ids_are_long_unique_and_unrelated() {
        let host = Host::new();
        let mut state = State::default();
        let (_, a) = host.fresh_id(&mut state);
        let (_, b) = host.fresh_id(&mut state);
        assert_eq!(a.expose().len(), 32);
        assert_ne!(a, b);
        assert_ne!(a.expose()[..16], b.expose()[..16]);
        let other = Host::new();
        let (_, c) = other.fresh_id(&mut State::default());
        assert_ne!(a, c, "another session's first id differs");
    }
}
