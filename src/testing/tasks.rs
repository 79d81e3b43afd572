//! The task store, the script runners and the listen subscriptions.
//!
//! All state lives behind one mutex that is never held across an `.await`,
//! so every change to a task and every push about it happen in one step and
//! in order.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use serde_json::{Map, Value, json};
use tokio::sync::{Notify, mpsc};
use tokio::task::AbortHandle;
use tokio::time::Instant;

use super::counts::Tally;
use super::faults::{Faults, REORDER_HOLD, STRAY_SUBSCRIPTION, STRAY_TASK};
use super::record::RecordedRequest;
use super::script::{Action, Step, TaskScript};
use super::wire::{notification, response};
use crate::protocol::{
    CallToolResult, ContentBlock, CreateTaskResult, DetailedTask, InputResponse,
    META_SUBSCRIPTION_ID, RequestId, RpcError, TaskId, TaskInfo, TaskPayload, TaskStatus,
};
use crate::transport::Outbound;

/// 2026-08-01T09:00:00Z in Unix milliseconds: the fake wall clock starts
/// here when the server is created and follows tokio's clock from then on.
const EPOCH_UNIX_MS: u64 = 1_785_574_800_000;

/// The `statusMessage` of a task cancelled through `tasks/cancel`.
const CANCELLED_MESSAGE: &str = "cancelled at the client's request";

/// State shared by every connection of one server and by the task runners.
#[derive(Debug)]
pub(super) struct Shared {
    state: Mutex<State>,
}

impl Shared {
    pub(super) fn new() -> Arc<Shared> {
        Arc::new(Shared {
            state: Mutex::new(State {
                requests: Vec::new(),
                methods: HashMap::new(),
                tasks: HashMap::new(),
                created: Vec::new(),
                next_task: 0,
                next_conn: 0,
                subs: Vec::new(),
                pushes: 0,
                epoch: Instant::now(),
                faults: Faults::new(),
                faults_fired: 0,
                next_hold: 0,
                tally: Tally::default(),
            }),
        })
    }

    pub(super) fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Why a `tasks/*` request could not be served.
#[derive(Debug)]
pub(super) enum TaskError {
    /// Unknown, expired or deleted task.
    NotFound,
    /// Malformed params (the message says which).
    Invalid(String),
}

/// The mutable part of the server.
#[derive(Debug)]
pub(super) struct State {
    requests: Vec<RecordedRequest>,
    /// How many requests and notifications came, by method.
    methods: HashMap<String, usize>,
    tasks: HashMap<String, TaskEntry>,
    created: Vec<TaskId>,
    next_task: u64,
    next_conn: u64,
    subs: Vec<Subscription>,
    pushes: usize,
    epoch: Instant,
    faults: Faults,
    faults_fired: usize,
    /// Numbers the pushes held back by `reorder_pushes`.
    next_hold: u64,
    /// What clients asked about each task.
    tally: Tally,
}

#[derive(Debug)]
struct TaskEntry {
    id: TaskId,
    payload: TaskPayload,
    status_message: Option<String>,
    created: Instant,
    updated: Instant,
    ttl: Option<Duration>,
    poll_interval: Option<Duration>,
    /// Every answer received, by key, as sent.
    answered: Map<String, Value>,
    /// Wakes the runner when an input step is fully answered.
    wake: Arc<Notify>,
    runner: Option<AbortHandle>,
    cancel_delay: Duration,
    ignore_cancel: bool,
    cancel_requested: bool,
    /// Reads (`tasks/get`) served since the task ended.
    terminal_reads: u32,
}

/// What a listen stream hears besides tasks, as accepted.
#[derive(Debug, Default)]
pub(super) struct Lists {
    /// `notifications/tools/list_changed`.
    pub(super) tools: bool,
    /// `notifications/resources/list_changed`.
    pub(super) resources: bool,
    /// `notifications/prompts/list_changed`.
    pub(super) prompts: bool,
    /// `notifications/resources/updated` for these URIs.
    pub(super) uris: Vec<String>,
}

/// An open `subscriptions/listen` stream.
#[derive(Debug)]
struct Subscription {
    conn: u64,
    id: RequestId,
    tx: mpsc::UnboundedSender<Outbound>,
    tasks: HashSet<String>,
    lists: Lists,
    /// A push held back by `reorder_pushes`, with its number.
    held: Held,
}

type Held = Arc<Mutex<Option<(u64, Vec<Outbound>)>>>;

/// What the runner does after a step.
enum Next {
    Continue,
    WaitForInput(Arc<Notify>),
    Stop,
}

fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

impl TaskEntry {
    fn expired(&self, now: Instant) -> bool {
        self.ttl
            .and_then(|t| self.created.checked_add(t))
            .is_some_and(|end| now >= end)
    }

    fn snapshot(&self, epoch: Instant) -> DetailedTask {
        let info = TaskInfo {
            status: self.payload.status(),
            status_message: self.status_message.clone(),
            created_at: Some(timestamp(epoch, self.created)),
            last_updated_at: Some(timestamp(epoch, self.updated)),
            ttl_ms: self.ttl.map(millis),
            poll_interval_ms: self.poll_interval.map(millis),
            unknown_status: None,
        };
        DetailedTask::new(self.id.clone(), info, self.payload.clone())
    }

    fn is_terminal(&self) -> bool {
        self.payload.status().is_terminal()
    }
}

impl State {
    /// Counts one request or notification by its method; keeps it too
    /// when `keep` says so.
    pub(super) fn record(&mut self, request: RecordedRequest, keep: bool) {
        match self.methods.get_mut(&request.method) {
            Some(n) => *n += 1,
            None => {
                self.methods.insert(request.method.clone(), 1);
            }
        }
        if keep {
            self.requests.push(request);
        }
    }

    /// How many requests or notifications with this method came.
    pub(super) fn count(&self, method: &str) -> usize {
        self.methods.get(method).copied().unwrap_or(0)
    }

    pub(super) fn requests(&self) -> &[RecordedRequest] {
        &self.requests
    }

    pub(super) fn task_ids(&self) -> &[TaskId] {
        &self.created
    }

    pub(super) fn pushes(&self) -> usize {
        self.pushes
    }

    pub(super) fn open_subscriptions(&self) -> usize {
        self.subs.len()
    }

    pub(super) fn tally(&self) -> &Tally {
        &self.tally
    }

    pub(super) fn tally_mut(&mut self) -> &mut Tally {
        &mut self.tally
    }

    pub(super) fn set_faults(&mut self, faults: Faults) {
        self.faults = faults;
    }

    pub(super) fn faults(&self) -> &Faults {
        &self.faults
    }

    pub(super) fn faults_fired(&self) -> usize {
        self.faults_fired
    }

    /// Counts one misdeed of a fault.
    pub(super) fn fired(&mut self) {
        self.faults_fired += 1;
    }

    pub(super) fn next_conn(&mut self) -> u64 {
        self.next_conn += 1;
        self.next_conn
    }

    /// The task, unless it is unknown or its TTL has passed (then it is deleted).
    fn live(&mut self, id: &str) -> Option<&mut TaskEntry> {
        if self.tasks.get(id)?.expired(Instant::now()) {
            if let Some(runner) = self.tasks.remove(id).and_then(|e| e.runner) {
                runner.abort();
            }
            return None;
        }
        self.tasks.get_mut(id)
    }

    /// What `tasks/get` returns for `id` now.
    pub(super) fn snapshot(&mut self, id: &str) -> Option<DetailedTask> {
        let epoch = self.epoch;
        let regress = self.faults.regress_after_terminal;
        let entry = self.live(id)?;
        let snapshot = entry.snapshot(epoch);
        if !(regress && entry.is_terminal()) {
            return Some(snapshot);
        }
        entry.terminal_reads += 1;
        if entry.terminal_reads == 1 {
            return Some(snapshot);
        }
        self.fired();
        Some(regressed(snapshot))
    }

    /// Pushes the current snapshot of `id` to every subscription watching
    /// it (misbehaving as the faults say).
    fn emit(&mut self, id: &str) {
        let Some(entry) = self.tasks.get(id) else {
            return;
        };
        let snapshot = entry.snapshot(self.epoch);
        let terminal = entry.is_terminal();
        let regress = self.faults.regress_after_terminal && terminal;
        let Ok(Value::Object(base)) = serde_json::to_value(&snapshot) else {
            return;
        };
        let back = serde_json::to_value(regressed(snapshot.clone())).unwrap_or_default();
        let lie = serde_json::to_value(stray(snapshot)).unwrap_or_default();
        let faults = self.faults.clone();
        let mut sent = 0;
        let mut fired = 0;
        let mut next_hold = self.next_hold;
        for sub in self.subs.iter().filter(|s| s.tasks.contains(id)) {
            let push = |body: &Value, sub_id: Value| {
                let mut params = body.as_object().cloned().unwrap_or_default();
                params.insert("_meta".into(), json!({ META_SUBSCRIPTION_ID: sub_id }));
                notification("notifications/tasks", Value::Object(params))
            };
            let base = Value::Object(base.clone());
            let mut group = vec![push(&base, json!(sub.id))];
            if faults.duplicate_pushes {
                group.push(push(&base, json!(sub.id)));
                fired += 1;
            }
            if regress {
                group.push(push(&back, json!(sub.id)));
                fired += 1;
            }
            if faults.stray_pushes {
                let mut other = lie.clone();
                other["taskId"] = json!(STRAY_TASK);
                // Sent at once, whatever happens to the real push.
                let _ = sub.tx.send(push(&other, json!(STRAY_SUBSCRIPTION)));
                let _ = sub.tx.send(push(&other, json!(sub.id)));
                fired += 1;
            }
            sent += 1;
            if !faults.reorder_pushes {
                for message in group {
                    let _ = sub.tx.send(message);
                }
                continue;
            }
            // Swap with the push held back before, or hold this one back.
            let mut held = sub.held.lock().unwrap_or_else(|e| e.into_inner());
            match held.take() {
                Some((_, older)) => {
                    fired += 1;
                    for message in group.into_iter().chain(older) {
                        let _ = sub.tx.send(message);
                    }
                }
                None if terminal => {
                    for message in group {
                        let _ = sub.tx.send(message);
                    }
                }
                None => {
                    next_hold += 1;
                    let number = next_hold;
                    *held = Some((number, group));
                    tokio::spawn(release(sub.held.clone(), number, sub.tx.clone()));
                }
            }
        }
        self.pushes += sent;
        self.faults_fired += fired;
        self.next_hold = next_hold;
    }

    /// Applies one script step to the task.
    fn apply(&mut self, id: &str, action: Action) -> Next {
        let Some(entry) = self.live(id) else {
            return Next::Stop;
        };
        if entry.is_terminal() {
            return Next::Stop;
        }
        let mut next = Next::Continue;
        match action {
            Action::Working(message) => {
                entry.payload = TaskPayload::Working;
                entry.status_message = Some(message);
            }
            Action::SetPollInterval(d) => entry.poll_interval = Some(d),
            Action::Input(mut requests) => {
                requests.retain(|key, _| !entry.answered.contains_key(key));
                if requests.is_empty() {
                    return Next::Continue;
                }
                entry.payload = TaskPayload::InputRequired(requests);
                next = Next::WaitForInput(entry.wake.clone());
            }
            Action::Complete(result) => {
                entry.payload = TaskPayload::Completed(result);
                next = Next::Stop;
            }
            Action::CompleteWithInputs => {
                let answers = Value::Object(entry.answered.clone());
                let result = CallToolResult {
                    content: vec![ContentBlock::text(answers.to_string())],
                    ..CallToolResult::default()
                };
                entry.payload = TaskPayload::Completed(
                    result.with_structured(json!({ "inputResponses": answers })),
                );
                next = Next::Stop;
            }
            Action::Fail(error) => {
                entry.status_message = Some(error.message.clone());
                entry.payload = TaskPayload::Failed(error);
                next = Next::Stop;
            }
        }
        entry.updated = Instant::now();
        self.emit(id);
        next
    }

    /// Whether the runner of `id` may go on after an input step:
    /// `Some(true)` yes, `Some(false)` not yet, `None` the task is gone or over.
    fn input_done(&mut self, id: &str) -> Option<bool> {
        let entry = self.live(id)?;
        match entry.payload {
            TaskPayload::InputRequired(_) => Some(false),
            TaskPayload::Working => Some(true),
            _ => None,
        }
    }

    /// `tasks/update`: records the answers to outstanding keys.
    pub(super) fn update(
        &mut self,
        id: &str,
        responses: &Map<String, Value>,
    ) -> Result<(), TaskError> {
        let entry = self.live(id).ok_or(TaskError::NotFound)?;
        let TaskPayload::InputRequired(outstanding) = &mut entry.payload else {
            return Ok(());
        };
        for (key, value) in responses {
            if outstanding.contains_key(key) {
                serde_json::from_value::<InputResponse>(value.clone()).map_err(|e| {
                    TaskError::Invalid(format!("inputResponses[{key:?}] is malformed: {e}"))
                })?;
            }
        }
        let mut changed = false;
        for (key, value) in responses {
            if outstanding.remove(key).is_some() {
                entry.answered.insert(key.clone(), value.clone());
                changed = true;
            }
        }
        if !changed {
            return Ok(());
        }
        if outstanding.is_empty() {
            entry.payload = TaskPayload::Working;
            entry.wake.notify_one();
        }
        entry.updated = Instant::now();
        self.emit(id);
        Ok(())
    }

    /// Turns the task `cancelled` (unless it is gone or already over).
    fn apply_cancel(&mut self, id: &str) {
        let Some(entry) = self.live(id) else {
            return;
        };
        if entry.is_terminal() {
            return;
        }
        if let Some(runner) = entry.runner.take() {
            runner.abort();
        }
        entry.payload = TaskPayload::Cancelled;
        entry.status_message = Some(CANCELLED_MESSAGE.to_owned());
        entry.updated = Instant::now();
        self.emit(id);
    }

    /// Opens a listen stream: sends the acknowledgement, then registers it so
    /// every later change of an accepted task is pushed after the ack.
    pub(super) fn subscribe(
        &mut self,
        conn: u64,
        id: RequestId,
        tx: mpsc::UnboundedSender<Outbound>,
        requested: Option<&[String]>,
        accept_task_ids: bool,
        lists: Lists,
    ) {
        let mut accepted: Vec<String> = Vec::new();
        for task in requested.unwrap_or_default() {
            if !accepted.contains(task) && self.live(task).is_some() {
                accepted.push(task.clone());
            }
        }
        let mut filter = Map::new();
        if accept_task_ids && requested.is_some() {
            filter.insert("taskIds".into(), json!(accepted));
        } else {
            accepted.clear();
        }
        if lists.tools {
            filter.insert("toolsListChanged".into(), json!(true));
        }
        if lists.resources {
            filter.insert("resourcesListChanged".into(), json!(true));
        }
        if lists.prompts {
            filter.insert("promptsListChanged".into(), json!(true));
        }
        if !lists.uris.is_empty() {
            filter.insert("resourceSubscriptions".into(), json!(lists.uris));
        }
        let ack = json!({ "notifications": filter, "_meta": { META_SUBSCRIPTION_ID: id } });
        // A closed connection is noticed by the read loop, which drops the subscription.
        let _ = tx.send(notification(
            "notifications/subscriptions/acknowledged",
            ack,
        ));
        self.subs.retain(|s| !(s.conn == conn && s.id == id));
        self.subs.push(Subscription {
            conn,
            id,
            tx,
            tasks: accepted.into_iter().collect(),
            lists,
            held: Held::default(),
        });
    }

    /// Sends `notifications/resources/updated` for `uri` on every stream
    /// subscribed to it; how many.
    pub(super) fn resource_updated(&mut self, uri: &str) -> usize {
        let mut sent = 0;
        for sub in self
            .subs
            .iter()
            .filter(|s| s.lists.uris.iter().any(|u| u == uri))
        {
            let params = json!({ "uri": uri, "_meta": { META_SUBSCRIPTION_ID: sub.id } });
            let _ = sub
                .tx
                .send(notification("notifications/resources/updated", params));
            sent += 1;
        }
        sent
    }

    /// Sends a `*/list_changed` on every stream that asked for it; how many.
    pub(super) fn list_changed(&mut self, method: &str) -> usize {
        let mut sent = 0;
        for sub in &self.subs {
            let wanted = match method {
                "notifications/tools/list_changed" => sub.lists.tools,
                "notifications/resources/list_changed" => sub.lists.resources,
                "notifications/prompts/list_changed" => sub.lists.prompts,
                _ => false,
            };
            if wanted {
                let params = json!({ "_meta": { META_SUBSCRIPTION_ID: sub.id } });
                let _ = sub.tx.send(notification(method, params));
                sent += 1;
            }
        }
        sent
    }

    /// Forgets a listen stream the client cancelled; nothing more is sent for it.
    pub(super) fn unsubscribe(&mut self, conn: u64, id: &RequestId) -> bool {
        let before = self.subs.len();
        self.subs.retain(|s| {
            let keep = !(s.conn == conn && &s.id == id);
            if !keep {
                // A push held back for reordering dies with its stream.
                s.held.lock().unwrap_or_else(|e| e.into_inner()).take();
            }
            keep
        });
        self.subs.len() != before
    }

    /// Forgets every listen stream of a closed connection.
    pub(super) fn drop_connection(&mut self, conn: u64) {
        self.subs.retain(|s| s.conn != conn);
    }

    /// Ends every listen stream with its final response.
    pub(super) fn end_subscriptions(&mut self) {
        for sub in self.subs.drain(..) {
            let result = json!({
                "resultType": "complete",
                "_meta": { META_SUBSCRIPTION_ID: sub.id },
            });
            let _ = sub.tx.send(response(&sub.id, result));
        }
    }
}

/// The snapshot a regressing server reports after the task ended.
fn regressed(mut snapshot: DetailedTask) -> DetailedTask {
    snapshot.payload = TaskPayload::Working;
    snapshot.info.status = TaskStatus::Working;
    snapshot.info.status_message = Some("working again".to_owned());
    snapshot
}

/// The false snapshot of a stray push: the task failed.
fn stray(mut snapshot: DetailedTask) -> DetailedTask {
    snapshot.payload = TaskPayload::Failed(RpcError::new(-32603, "a stray push"));
    snapshot.info.status = TaskStatus::Failed;
    snapshot.info.status_message = Some("a stray push".to_owned());
    snapshot
}

/// Sends a push held back by `reorder_pushes` once its time is up, unless
/// a later push already took it along.
async fn release(held: Held, number: u64, tx: mpsc::UnboundedSender<Outbound>) {
    tokio::time::sleep(REORDER_HOLD).await;
    let mut held = held.lock().unwrap_or_else(|e| e.into_inner());
    if held.as_ref().is_some_and(|(n, _)| *n == number)
        && let Some((_, group)) = held.take()
    {
        for message in group {
            let _ = tx.send(message);
        }
    }
}

/// A task id that looks unguessable: a counter run through a 64-bit mixer.
fn task_id(n: u64) -> String {
    let mut z = n.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    format!("task-{n}-{z:016x}")
}

/// A read being answered: it stops counting as one when dropped, whether
/// its reply was sent or its handler was stopped.
pub(super) struct Reading {
    shared: Arc<Shared>,
    task: String,
}

impl Reading {
    pub(super) fn new(shared: Arc<Shared>, task: String) -> Reading {
        Reading { shared, task }
    }
}

impl Drop for Reading {
    fn drop(&mut self) {
        self.shared.lock().tally_mut().read_done(&self.task);
    }
}

/// Creates a task following `script`, starts its runner, and returns the
/// `CreateTaskResult` (without `resultType`).
pub(super) fn create_task(shared: &Arc<Shared>, script: &TaskScript) -> CreateTaskResult {
    let mut state = shared.lock();
    state.next_task += 1;
    let id = task_id(state.next_task);
    let task_id = TaskId::new(id.as_str());
    let now = Instant::now();
    let stamp = timestamp(state.epoch, now);
    let entry = TaskEntry {
        id: task_id.clone(),
        payload: TaskPayload::Working,
        status_message: script.status_message.clone(),
        created: now,
        updated: now,
        ttl: script.ttl,
        poll_interval: script.poll_interval,
        answered: Map::new(),
        wake: Arc::new(Notify::new()),
        runner: None,
        cancel_delay: script.cancel_delay,
        ignore_cancel: script.ignore_cancel,
        cancel_requested: false,
        terminal_reads: 0,
    };
    state.tasks.insert(id.clone(), entry);
    state.created.push(task_id.clone());
    state.tally.created(&id);
    // Steps due at once are applied before the creation result is sent, so a
    // read right after creation sees them.
    let mut steps = script.steps.clone().into_iter().peekable();
    let mut first_wait = None;
    let mut stopped = false;
    while let Some(step) = steps.next_if(|s| s.after.is_zero()) {
        match state.apply(&id, step.action) {
            Next::Continue => {}
            Next::Stop => {
                stopped = true;
                break;
            }
            Next::WaitForInput(wake) => {
                first_wait = Some(wake);
                break;
            }
        }
    }
    if !stopped {
        let rest: Vec<Step> = steps.collect();
        let runner = tokio::spawn(run(shared.clone(), id.clone(), first_wait, rest));
        if let Some(entry) = state.tasks.get_mut(&id) {
            entry.runner = Some(runner.abort_handle());
        }
    }
    CreateTaskResult {
        task_id,
        info: TaskInfo {
            status: script.initial_status,
            status_message: script.status_message.clone(),
            created_at: Some(stamp.clone()),
            last_updated_at: Some(stamp),
            ttl_ms: script.ttl.map(millis),
            poll_interval_ms: script.poll_interval.map(millis),
            unknown_status: None,
        },
        meta: None,
    }
}

/// `tasks/cancel`: acknowledged whatever happens next (see [`TaskScript`]).
pub(super) fn cancel(shared: &Arc<Shared>, id: &str) -> Result<(), TaskError> {
    let mut state = shared.lock();
    let entry = state.live(id).ok_or(TaskError::NotFound)?;
    if entry.is_terminal() || entry.ignore_cancel || entry.cancel_requested {
        return Ok(());
    }
    entry.cancel_requested = true;
    let delay = entry.cancel_delay;
    if delay.is_zero() {
        state.apply_cancel(id);
    } else {
        let shared = shared.clone();
        let id = id.to_owned();
        tokio::spawn(async move {
            tokio::time::sleep(delay).await;
            shared.lock().apply_cancel(&id);
        });
    }
    Ok(())
}

/// Runs a task's script, step by step, on tokio's clock.
async fn run(shared: Arc<Shared>, id: String, first_wait: Option<Arc<Notify>>, steps: Vec<Step>) {
    if let Some(wake) = first_wait
        && !wait_for_input(&shared, &id, wake).await
    {
        return;
    }
    for step in steps {
        if !step.after.is_zero() {
            tokio::time::sleep(step.after).await;
        }
        let next = shared.lock().apply(&id, step.action);
        match next {
            Next::Continue => {}
            Next::Stop => return,
            Next::WaitForInput(wake) => {
                if !wait_for_input(&shared, &id, wake).await {
                    return;
                }
            }
        }
    }
}

/// Waits until every outstanding input of the task is answered; `false`
/// when the task is gone.
async fn wait_for_input(shared: &Arc<Shared>, id: &str, wake: Arc<Notify>) -> bool {
    loop {
        let done = shared.lock().input_done(id);
        match done {
            Some(true) => return true,
            Some(false) => wake.notified().await,
            None => return false,
        }
    }
}

/// The fake wall-clock time of `at`, as ISO 8601 with milliseconds.
fn timestamp(epoch: Instant, at: Instant) -> String {
    let ms = EPOCH_UNIX_MS.saturating_add(millis(at.saturating_duration_since(epoch)));
    crate::protocol::iso8601_utc(ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_follow_the_fake_clock() {
        let epoch = Instant::now();
        assert_eq!(timestamp(epoch, epoch), "2026-08-01T09:00:00.000Z");
        let later = epoch + Duration::from_millis(86_400_000 * 31 + 3_723_456);
        assert_eq!(timestamp(epoch, later), "2026-09-01T10:02:03.456Z");
    }

    #[test]
    fn task_ids_look_random_and_are_unique() {
        let a = task_id(1);
        let b = task_id(2);
        assert_ne!(a, b);
        assert!(a.starts_with("task-1-"));
        assert_eq!(a.len(), "task-1-".len() + 16);
        assert!(a["task-1-".len()..].chars().all(|c| c.is_ascii_hexdigit()));
    }
}
