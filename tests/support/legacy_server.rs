//! An in-process 2025-11-25 server with that era's experimental tasks
//! (PROTOCOL.md §7, §7.2), over the memory transport: `initialize`, tools
//! with `execution.taskSupport`, `tools/call` with `params.task` answered
//! `{"task": {…}}`, `tasks/get` (status only), `tasks/result` (blocks until
//! the task ends, and carries its input requests as `elicitation/create`
//! tagged `related-task`), `tasks/cancel` (returns the task; `-32602` once
//! it ended), `tasks/list`, and optional `notifications/tasks/status`.
//! Every message it receives is recorded with the tokio clock.
//!
//! It can also be the requestor of tasks the client hosts:
//! [`LegacyServer::request_client`] sends the client a request (such as a
//! task-augmented `elicitation/create`, then `tasks/get`, `tasks/result`,
//! `tasks/list`, `tasks/cancel`) and waits for its answer. `initialize`
//! answers with the version offered when it is an initialize-era one.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks::transport::memory::{self, MemorySink};
use mcp_tasks::transport::{Inbound, MessageSink, MessageStream, Outbound, Transport};
use serde_json::{Value, json};
use tokio::sync::{Notify, oneshot};
use tokio::time::Instant;

/// What a tool does once called as a task.
#[derive(Clone, Debug)]
pub enum Step {
    /// Works for `ms`, with this status message.
    Work(u64, &'static str),
    /// Asks a form question (`message`) and waits for the answer.
    Ask(&'static str),
}

/// How a tool ends.
#[derive(Clone, Debug)]
pub enum End {
    /// `completed` with this text.
    Text(&'static str),
    /// `failed` with a tool result that has `isError: true` (the era's rule).
    ToolError(&'static str),
    /// `failed` with a JSON-RPC error.
    Error(i64, &'static str),
    /// Never ends by itself.
    Forever,
}

/// A tool of the server.
#[derive(Clone, Debug)]
pub struct LegacyTool {
    name: &'static str,
    support: &'static str,
    steps: Vec<Step>,
    end: End,
}

impl LegacyTool {
    pub fn new(name: &'static str, support: &'static str, steps: Vec<Step>, end: End) -> Self {
        LegacyTool {
            name,
            support,
            steps,
            end,
        }
    }
}

/// Faults and knobs.
#[derive(Clone, Debug, Default)]
pub struct Knobs {
    /// `pollInterval` in the tasks (ms; none when 0).
    pub poll_interval: u64,
    /// Send `notifications/tasks/status` on every change.
    pub status_notifications: bool,
    /// `tasks/result` is never answered.
    pub result_never_returns: bool,
    /// Close the connection when `tasks/result` arrives.
    pub drop_on_result: bool,
    /// Make a task of every call, asked for or not.
    pub task_for_every_call: bool,
    /// After a task completed, the next `tasks/get` says `working`.
    pub working_after_completed: bool,
    /// Follow every `tools/list` answer with `notifications/tools/list_changed`
    /// (server-everything sends bursts of them after the handshake).
    pub list_changed_after_list: bool,
    /// Answer each `tools/list` page after this long, always with a
    /// cursor to one more page: a listing that never ends.
    pub endless_listing_every: Option<Duration>,
}

/// One message the server received.
#[derive(Clone, Debug)]
pub struct Seen {
    pub message: Value,
    pub at: Instant,
}

#[derive(Default)]
struct Task {
    status: &'static str,
    message: Option<String>,
    ttl: u64,
    outcome: Option<Result<Value, Value>>,
    /// The question waiting for an answer, and where the answer goes.
    asking: Option<(&'static str, Option<oneshot::Sender<Value>>)>,
    runner: Option<tokio::task::AbortHandle>,
    reverted: bool,
    /// The call's `progressToken`, which stays valid for the task's life.
    token: Option<Value>,
}

struct State {
    tools: Vec<LegacyTool>,
    knobs: Knobs,
    tasks: HashMap<String, Task>,
    next: u64,
    seen: Vec<Seen>,
    /// The client's answers, by the id of the server's request.
    waiting: HashMap<String, oneshot::Sender<Value>>,
    /// Answers given, in order.
    answers: Vec<Value>,
    /// Questions sent so far (their ids).
    asked: u64,
    /// Requests sent with `request_client` so far (their ids).
    requested: u64,
}

/// The server; clones share it.
#[derive(Clone)]
pub struct LegacyServer {
    state: Arc<Mutex<State>>,
    changed: Arc<Notify>,
    sink: Arc<tokio::sync::Mutex<Option<MemorySink>>>,
}

impl LegacyServer {
    pub fn new(tools: Vec<LegacyTool>, knobs: Knobs) -> Self {
        LegacyServer {
            state: Arc::new(Mutex::new(State {
                tools,
                knobs,
                tasks: HashMap::new(),
                next: 0,
                seen: Vec::new(),
                waiting: HashMap::new(),
                answers: Vec::new(),
                asked: 0,
                requested: 0,
            })),
            changed: Arc::new(Notify::new()),
            sink: Arc::new(tokio::sync::Mutex::new(None)),
        }
    }

    /// The client's end of a new connection; the server runs on a task.
    pub async fn connect(&self) -> memory::MemoryTransport {
        let (ours, theirs) = memory::pair();
        let (sink, mut stream) = theirs.connect().await.unwrap();
        *self.sink.lock().await = Some(sink);
        let server = self.clone();
        tokio::spawn(async move {
            while let Ok(Some(Inbound::Message(text))) = stream.recv().await {
                let message: Value = serde_json::from_str(&text).unwrap();
                server.state.lock().unwrap().seen.push(Seen {
                    message: message.clone(),
                    at: Instant::now(),
                });
                server.handle(message).await;
            }
        });
        ours
    }

    /// The messages of `method` the server received.
    pub fn seen(&self, method: &str) -> Vec<Seen> {
        let state = self.state.lock().unwrap();
        state
            .seen
            .iter()
            .filter(|s| s.message["method"] == method)
            .cloned()
            .collect()
    }

    /// The client's answers to the server's requests, in order.
    pub fn answers(&self) -> Vec<Value> {
        self.state.lock().unwrap().answers.clone()
    }

    /// A task's status now.
    pub fn status(&self, id: &str) -> Option<&'static str> {
        self.state.lock().unwrap().tasks.get(id).map(|t| t.status)
    }

    /// Sends a request to the client (as a server may, for any task).
    pub async fn ask_client(&self, id: &str, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
    }

    /// Sends the client a request and waits (at most a minute of paused
    /// time) for its answer, the whole response message.
    pub async fn request_client(&self, method: &str, params: Value) -> Value {
        let (tx, rx) = oneshot::channel();
        let id = {
            let mut state = self.state.lock().unwrap();
            state.requested += 1;
            let id = format!("c-{}", state.requested);
            state.waiting.insert(id.clone(), tx);
            id
        };
        self.ask_client(&id, method, params).await;
        tokio::time::timeout(Duration::from_secs(60), rx)
            .await
            .unwrap_or_else(|_| panic!("the client answers {method} within a minute"))
            .expect("the connection stays open")
    }

    /// Sends a notification to the client.
    pub async fn notify_client(&self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    async fn send(&self, message: Value) {
        if let Some(sink) = self.sink.lock().await.as_mut() {
            let _ = sink
                .send(Outbound::new(message.to_string(), "server"))
                .await;
        }
    }

    async fn close(&self) {
        if let Some(mut sink) = self.sink.lock().await.take() {
            // The test server ends its side; how gracefully is no matter.
            let _ = sink.close().await;
        }
    }

    async fn answer(&self, request: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
            .await;
    }

    async fn refuse(&self, request: &Value, code: i64, message: &str) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"],
            "error": {"code": code, "message": message}}))
            .await;
    }

    fn task_json(&self, id: &str) -> Option<Value> {
        let state = self.state.lock().unwrap();
        let t = state.tasks.get(id)?;
        let mut v = json!({"taskId": id, "status": t.status, "ttl": t.ttl,
            "createdAt": "2026-12-01T00:00:00Z", "lastUpdatedAt": "2026-12-01T00:00:00Z"});
        if let Some(m) = &t.message {
            v["statusMessage"] = json!(m);
        }
        if state.knobs.poll_interval > 0 {
            v["pollInterval"] = json!(state.knobs.poll_interval);
        }
        Some(v)
    }

    /// Sets a task's status (and message) and tells whoever waits.
    async fn set(&self, id: &str, status: &'static str, message: Option<String>) {
        let notify = {
            let mut state = self.state.lock().unwrap();
            let Some(t) = state.tasks.get_mut(id) else {
                return;
            };
            if matches!(t.status, "completed" | "failed" | "cancelled") {
                return;
            }
            t.status = status;
            if message.is_some() {
                t.message = message;
            }
            state.knobs.status_notifications
        };
        self.changed.notify_waiters();
        if notify && let Some(task) = self.task_json(id) {
            self.send(
                json!({"jsonrpc": "2.0", "method": "notifications/tasks/status", "params": task}),
            )
            .await;
        }
    }

    async fn handle(&self, m: Value) {
        let method = m["method"].as_str().unwrap_or("").to_owned();
        if method.is_empty() {
            // The client's answer to one of the server's requests.
            let id = m["id"].as_str().unwrap_or("").to_owned();
            let mut state = self.state.lock().unwrap();
            state.answers.push(m.clone());
            if let Some(tx) = state.waiting.remove(&id) {
                let _ = tx.send(m);
            }
            return;
        }
        match method.as_str() {
            "initialize" => {
                let offered = m["params"]["protocolVersion"].as_str().unwrap_or("");
                let version = match offered {
                    "2025-06-18" | "2025-03-26" | "2024-11-05" => offered.to_owned(),
                    _ => "2025-11-25".to_owned(),
                };
                self.answer(
                    &m,
                    json!({
                        "protocolVersion": version,
                        "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {},
                            "requests": {"tools": {"call": {}}}}},
                        "serverInfo": {"name": "legacy", "version": "1"}
                    }),
                )
                .await;
            }
            "tools/list" => {
                let tools: Vec<Value> = {
                    let state = self.state.lock().unwrap();
                    state
                        .tools
                        .iter()
                        .map(|t| {
                            json!({"name": t.name,
                        "inputSchema": {"type": "object"},
                        "execution": {"taskSupport": t.support}})
                        })
                        .collect()
                };
                let endless = self.state.lock().unwrap().knobs.endless_listing_every;
                match endless {
                    Some(every) => {
                        tokio::time::sleep(every).await;
                        let page = self.seen("tools/list").len();
                        let next = format!("page-{page}");
                        self.answer(&m, json!({"tools": tools, "nextCursor": next}))
                            .await;
                    }
                    None => self.answer(&m, json!({"tools": tools})).await,
                }
                if self.state.lock().unwrap().knobs.list_changed_after_list {
                    self.send(
                        json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
                    )
                    .await;
                }
            }
            "tools/call" => self.call(m).await,
            "tasks/get" => {
                let id = m["params"]["taskId"].as_str().unwrap_or("").to_owned();
                let revert = {
                    let mut state = self.state.lock().unwrap();
                    let knob = state.knobs.working_after_completed;
                    match state.tasks.get_mut(&id) {
                        Some(t) if knob && t.status == "completed" && !t.reverted => {
                            t.reverted = true;
                            true
                        }
                        _ => false,
                    }
                };
                match self.task_json(&id) {
                    Some(mut task) => {
                        if revert {
                            task["status"] = json!("working");
                        }
                        self.answer(&m, task).await;
                    }
                    None => self.refuse(&m, -32602, "no such task").await,
                }
            }
            "tasks/result" => {
                let server = self.clone();
                tokio::spawn(async move { server.result(m).await });
            }
            "tasks/cancel" => {
                let id = m["params"]["taskId"].as_str().unwrap_or("").to_owned();
                let ended = {
                    let mut state = self.state.lock().unwrap();
                    match state.tasks.get_mut(&id) {
                        None => None,
                        Some(t) if matches!(t.status, "completed" | "failed" | "cancelled") => {
                            Some(true)
                        }
                        Some(t) => {
                            if let Some(r) = t.runner.take() {
                                r.abort();
                            }
                            t.status = "cancelled";
                            Some(false)
                        }
                    }
                };
                self.changed.notify_waiters();
                match (ended, self.task_json(&id)) {
                    (Some(false), Some(task)) => self.answer(&m, task).await,
                    (Some(true), _) => self.refuse(&m, -32602, "the task has ended").await,
                    _ => self.refuse(&m, -32602, "no such task").await,
                }
            }
            "tasks/list" => {
                let ids: Vec<String> = {
                    let state = self.state.lock().unwrap();
                    let mut ids: Vec<String> = state.tasks.keys().cloned().collect();
                    ids.sort();
                    ids
                };
                let tasks: Vec<Value> = ids.iter().filter_map(|id| self.task_json(id)).collect();
                self.answer(&m, json!({"tasks": tasks})).await;
            }
            "ping" => self.answer(&m, json!({})).await,
            _ if m.get("id").is_some() => self.refuse(&m, -32601, "Method not found").await,
            _ => {}
        }
    }

    async fn call(&self, m: Value) {
        let name = m["params"]["name"].as_str().unwrap_or("").to_owned();
        let (tool, every) = {
            let state = self.state.lock().unwrap();
            (
                state.tools.iter().find(|t| t.name == name).cloned(),
                state.knobs.task_for_every_call,
            )
        };
        let Some(tool) = tool else {
            return self.refuse(&m, -32602, "unknown tool").await;
        };
        let task = m["params"].get("task");
        if task.is_none() && !every {
            if tool.support == "required" {
                return self
                    .refuse(&m, -32601, "Tool requires task augmented call")
                    .await;
            }
            let result = match tool.end {
                End::Text(t) => json!({"content": [{"type": "text", "text": t}]}),
                End::ToolError(t) => {
                    json!({"content": [{"type": "text", "text": t}], "isError": true})
                }
                End::Error(code, msg) => return self.refuse(&m, code, msg).await,
                End::Forever => return,
            };
            return self.answer(&m, result).await;
        }
        let ttl = task.and_then(|t| t["ttl"].as_u64()).unwrap_or(60_000);
        let id = {
            let mut state = self.state.lock().unwrap();
            state.next += 1;
            let id = format!("legacy-task-{}", state.next);
            let token = m["params"]["_meta"].get("progressToken").cloned();
            state.tasks.insert(
                id.clone(),
                Task {
                    status: "working",
                    ttl,
                    token,
                    ..Task::default()
                },
            );
            id
        };
        let created = json!({"task": self.task_json(&id).unwrap()});
        self.answer(&m, created).await;
        let server = self.clone();
        let run_id = id.clone();
        let handle = tokio::spawn(async move { server.run(&run_id, tool).await });
        if let Some(t) = self.state.lock().unwrap().tasks.get_mut(&id) {
            t.runner = Some(handle.abort_handle());
        }
    }

    async fn run(&self, id: &str, tool: LegacyTool) {
        let total = tool.steps.len();
        for (n, step) in tool.steps.into_iter().enumerate() {
            let token = self
                .state
                .lock()
                .unwrap()
                .tasks
                .get(id)
                .and_then(|t| t.token.clone());
            if let Some(token) = token {
                self.send(json!({"jsonrpc": "2.0", "method": "notifications/progress",
                    "params": {"progressToken": token, "progress": n + 1, "total": total}}))
                    .await;
            }
            match step {
                Step::Work(ms, message) => {
                    self.set(id, "working", Some(message.to_owned())).await;
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                }
                Step::Ask(question) => {
                    let (tx, rx) = oneshot::channel();
                    if let Some(t) = self.state.lock().unwrap().tasks.get_mut(id) {
                        t.asking = Some((question, Some(tx)));
                    }
                    self.set(id, "input_required", Some(question.to_owned()))
                        .await;
                    let _ = rx.await;
                    if let Some(t) = self.state.lock().unwrap().tasks.get_mut(id) {
                        t.asking = None;
                    }
                    self.set(id, "working", None).await;
                }
            }
        }
        let (status, outcome) = match tool.end {
            End::Text(t) => (
                "completed",
                Ok(json!({"content": [{"type": "text", "text": t}]})),
            ),
            End::ToolError(t) => (
                "failed",
                Ok(json!({"content": [{"type": "text", "text": t}], "isError": true})),
            ),
            End::Error(code, msg) => ("failed", Err(json!({"code": code, "message": msg}))),
            End::Forever => return std::future::pending().await,
        };
        if let Some(t) = self.state.lock().unwrap().tasks.get_mut(id) {
            t.outcome = Some(outcome);
        }
        self.set(id, status, None).await;
    }

    /// `tasks/result`: sends the task's questions as they come, and answers
    /// once the task has ended.
    async fn result(&self, m: Value) {
        let id = m["params"]["taskId"].as_str().unwrap_or("").to_owned();
        let (never, drop_it) = {
            let state = self.state.lock().unwrap();
            (state.knobs.result_never_returns, state.knobs.drop_on_result)
        };
        if drop_it {
            return self.close().await;
        }
        let related = json!({"io.modelcontextprotocol/related-task": {"taskId": id}});
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let found = {
                let mut state = self.state.lock().unwrap();
                state.asked += 1;
                let next = state.asked;
                match state.tasks.get_mut(&id) {
                    None => None,
                    Some(t) => {
                        let question = t
                            .asking
                            .as_mut()
                            .and_then(|(q, tx)| tx.take().map(|tx| (*q, tx)));
                        let status = t.status;
                        let outcome = t.outcome.clone();
                        let question = question.map(|(q, tx)| {
                            let sid = format!("s-{id}-{next}");
                            state.waiting.insert(sid.clone(), tx);
                            (q, sid)
                        });
                        Some((status, outcome, question))
                    }
                }
            };
            let Some((status, outcome, question)) = found else {
                return self.refuse(&m, -32602, "no such task").await;
            };
            if let Some((question, sid)) = question {
                self.ask_client(
                    &sid,
                    "elicitation/create",
                    json!({
                        "message": question,
                        "requestedSchema": {"type": "object",
                            "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]},
                        "_meta": related
                    }),
                )
                .await;
                continue;
            }
            if !never && matches!(status, "completed" | "failed" | "cancelled") {
                match outcome {
                    Some(Ok(mut result)) => {
                        result["_meta"] = related.clone();
                        self.answer(&m, result).await;
                    }
                    Some(Err(error)) => {
                        self.send(json!({"jsonrpc": "2.0", "id": m["id"], "error": error}))
                            .await;
                    }
                    None => self.refuse(&m, -32602, "the task was cancelled").await,
                }
                return;
            }
            changed.await;
        }
    }
}
