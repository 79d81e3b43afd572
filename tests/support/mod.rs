//! Shared helpers for the integration tests.
#![allow(
    dead_code,
    unused_imports,
    reason = "each test binary uses a different subset of these helpers"
)]

use std::time::Duration;

use mcp_tasks::Client;
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{CallToolResult, InputRequest, InputRequests};
use mcp_tasks::testing::{RecordedRequest, ScriptedTool, TaskScript, TestServer};
use serde_json::json;

pub async fn client(server: &TestServer) -> Client {
    Client::connect(server.connect()).await.expect("connect")
}

pub async fn client_with(server: &TestServer, handlers: InputHandlers) -> Client {
    Client::builder()
        .input_handlers(handlers)
        .connect(server.connect())
        .await
        .expect("connect")
}

/// Handlers that accept every form with `{"ok": true}`.
pub fn accept_forms() -> InputHandlers {
    InputHandlers::new().elicitation_form(|_| async {
        Ok(mcp_tasks::protocol::ElicitResult::accept(
            json!({"ok": true}),
        ))
    })
}

/// Handlers that accept every form with `{"ok": true}` and count their
/// calls in `calls`.
pub fn counting_forms(calls: std::sync::Arc<std::sync::atomic::AtomicUsize>) -> InputHandlers {
    InputHandlers::new().elicitation_form(move |_| {
        let calls = calls.clone();
        async move {
            calls.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok(mcp_tasks::protocol::ElicitResult::accept(
                json!({"ok": true}),
            ))
        }
    })
}

/// A server with one tool, `export`, that runs `script` as a task.
pub fn export(script: TaskScript) -> TestServer {
    TestServer::new().tool(ScriptedTool::task("export", script))
}

/// A server whose `export` task asks to be polled every `poll` and
/// completes after `after` with the text `result`.
pub fn polled_export(poll: Duration, after: Duration, result: &str) -> TestServer {
    export(
        TaskScript::new()
            .poll_interval(poll)
            .complete(after, text(result)),
    )
}

/// What waiting for a task to finish gives.
pub type Waited =
    Result<mcp_tasks::Task<mcp_tasks::Finished>, mcp_tasks::TaskError<mcp_tasks::TaskState>>;

/// Calls `tool` (no arguments) as a task started by `task` and waits for
/// its end: the finished task, or the error the wait ended with.
pub async fn run_task<S: mcp_tasks::task_builder::IsComplete>(
    task: mcp_tasks::TaskBuilder<S>,
    tool: &str,
) -> Waited {
    task.call_tool(tool, json!({})).await.unwrap().await
}

/// [`run_task`] with the client's default task settings.
pub async fn call_and_wait(client: &Client, tool: &str) -> Waited {
    run_task(client.task(), tool).await
}

/// Calls `tool` (no arguments) as a task and waits for its end.
pub async fn finish_call(client: &Client, tool: &str) -> mcp_tasks::Task<mcp_tasks::Finished> {
    call_and_wait(client, tool).await.unwrap()
}

/// Starts `export` (no arguments) with a wait deadline of `timeout`.
pub async fn start_export_within(client: &Client, timeout: Duration) -> mcp_tasks::TaskState {
    client
        .task()
        .timeout(timeout)
        .call_tool("export", json!({}))
        .await
        .unwrap()
}

pub fn text(t: &str) -> CallToolResult {
    CallToolResult::text(t)
}

fn confirm_form() -> InputRequest {
    InputRequest::form(
        "Confirm the export?",
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
    )
}

pub fn requests(keys: &[&str]) -> InputRequests {
    keys.iter()
        .map(|k| (k.to_string(), confirm_form()))
        .collect()
}

/// The requests of one method, in order.
pub fn of(server: &TestServer, method: &str) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == method)
        .collect()
}

/// Gaps between consecutive requests of one method.
pub fn gaps(server: &TestServer, method: &str) -> Vec<Duration> {
    let at: Vec<_> = of(server, method).iter().map(|r| r.at).collect();
    at.windows(2).map(|w| w[1] - w[0]).collect()
}

/// A peer that answers each method from its own queue of canned results,
/// in order, and records what it was sent. For server behaviour the test
/// kit does not script (stale snapshots, say).
pub struct CannedPeer {
    pub sent: std::sync::Arc<std::sync::Mutex<Vec<serde_json::Value>>>,
}

impl CannedPeer {
    pub fn start(
        answers: Vec<(&'static str, serde_json::Value)>,
    ) -> (CannedPeer, mcp_tasks::transport::memory::MemoryTransport) {
        use mcp_tasks::transport::{Inbound, MessageSink, MessageStream, Outbound, Transport};
        let (ours, theirs) = mcp_tasks::transport::memory::pair();
        let sent = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let log = sent.clone();
        tokio::spawn(async move {
            let (mut sink, mut stream) = theirs.connect().await.unwrap();
            let mut answers: std::collections::VecDeque<_> = answers.into();
            while let Ok(Some(Inbound::Message(text))) = stream.recv().await {
                let request: serde_json::Value = serde_json::from_str(&text).unwrap();
                if request["method"] == "server/discover" {
                    // The connect probe, answered as a 2026-07-28 server and
                    // not logged: the canned answers are for what follows.
                    let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": {"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}}});
                    sink.send(Outbound::new(answer.to_string(), "reply"))
                        .await
                        .unwrap();
                    continue;
                }
                log.lock().unwrap().push(request.clone());
                let Some(id) = request.get("id") else {
                    continue;
                };
                let method = request["method"].as_str().unwrap_or_default();
                let pos = answers.iter().position(|(m, _)| *m == method);
                let result = match pos.and_then(|p| answers.remove(p)) {
                    Some((_, result)) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                    None => {
                        json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": "no canned answer"}})
                    }
                };
                sink.send(Outbound::new(result.to_string(), "reply"))
                    .await
                    .unwrap();
            }
        });
        (CannedPeer { sent }, ours)
    }

    pub fn methods(&self) -> Vec<String> {
        self.sent
            .lock()
            .unwrap()
            .iter()
            .map(|r| r["method"].as_str().unwrap_or("").to_owned())
            .collect()
    }
}

mod calls;
mod chaos;
pub mod hand_peer;
mod legacy_server;
mod time;

pub use calls::{call_text, start_pending, structured, tool_names};
pub use chaos::{Chaos, Fate, Lossy, Rng};
pub use hand_peer::{handshaken, next_json, pinned_peer, raw_peer, reply};
pub use legacy_server::{End, Knobs, LegacyServer, LegacyTool, Step};
pub use time::{bounded, ms};

/// Starts `tool` (no arguments) as a task tracked by `tracker`; its record.
pub async fn track<S: mcp_tasks::store::TaskStore>(
    tracker: &mcp_tasks::store::Tracker<S, Client>,
    client: &Client,
    tool: &str,
) -> mcp_tasks::store::RecordId {
    tracker
        .call_tool(client.task(), tool, ())
        .await
        .unwrap()
        .record()
        .expect("a task")
}

/// A record of a `working` task as a tracker inserts it: `export`, in
/// the default scope, without key, first due at `due`.
pub fn working_task(
    reference: mcp_tasks::TaskRef,
    due: std::time::SystemTime,
    ending: Option<mcp_tasks::store::Ending>,
) -> mcp_tasks::store::backend::NewTask {
    mcp_tasks::store::backend::NewTask {
        unique_key: false,
        reference,
        tool: "export".into(),
        key: None,
        scope: "default".into(),
        status: mcp_tasks::protocol::TaskStatus::Working,
        status_message: None,
        poll_interval_ms: None,
        due,
        ending,
        schedule: Default::default(),
    }
}

/// The tools the tracker's tests drive: `export` (works, then completes),
/// `approve` (asks `confirm`), `long` (an hour) and `broken` (fails).
pub fn tracker_server() -> TestServer {
    TestServer::new()
        .tool(ScriptedTool::task(
            "export",
            TaskScript::new()
                .poll_interval(ms(10))
                .working(ms(20), "writing")
                .complete(ms(20), text("exported")),
        ))
        .tool(ScriptedTool::task(
            "approve",
            TaskScript::new()
                .poll_interval(ms(10))
                .input(ms(10), requests(&["confirm"]))
                .complete_with_inputs(ms(10)),
        ))
        .tool(ScriptedTool::task(
            "long",
            TaskScript::new()
                .poll_interval(ms(10))
                .working(Duration::from_secs(3600), "still going")
                .complete(ms(1), text("never")),
        ))
        .tool(ScriptedTool::task(
            "broken",
            TaskScript::new().poll_interval(ms(10)).fail(
                ms(10),
                mcp_tasks::protocol::RpcError::new(-32000, "disk on fire"),
            ),
        ))
}
