//! The client against neva, a negative peer: it advertises the Tasks
//! extension but creates tasks only for the removed `params.task` opt-in.
//!
//! What must hold: no hang, no panic, and an error or an immediate result
//! that says what happened; and once the tools are listed, the client's
//! legacy opt-in makes neva's task tools work.

use std::time::{Duration, Instant};

use mcp_tasks::protocol::{TaskId, TaskSupport};
use mcp_tasks::{TaskRef, TaskState};
use serde_json::json;

use crate::support::*;

/// Everything a negative scenario may take: it must fail fast, not wait.
const PROMPT: Duration = Duration::from_secs(5);

/// neva claims the extension in `server/discover`; the claim is what a
/// client can see, and it is not kept.
pub async fn discover(peer: &Peer) {
    let client = peer.client().await;
    assert!(client.supports_tasks().await.expect("server/discover"));
    assert_eq!(client.server_id(), Some("neva-peer"));
    // Its tools still carry the 2025-11-25 `execution.taskSupport`.
    let tools = client.list_tools().await.expect("tools/list");
    assert_eq!(tools.len(), 3);
    let support = |name: &str| {
        tools
            .iter()
            .find(|t| t.name == name)
            .and_then(|t| t.task_support().cloned())
    };
    assert_eq!(support("export"), Some(TaskSupport::Required));
    assert_eq!(support("summary"), Some(TaskSupport::Optional));
    assert_eq!(support("echo"), None);
}

/// A tool whose task support is `required`, called before `list_tools()`:
/// neva wants `params.task`, ignores the declared extension, and answers
/// `-32601`. The client returns that error at once, saying which request
/// and why, and that listing the tools first fixes it.
pub async fn required_tool_fails_clearly(peer: &Peer) {
    let client = peer.client().await;
    let started = Instant::now();
    let err = client
        .task()
        .call_tool("export", json!({}))
        .await
        .expect_err("neva cannot run it without params.task");
    assert!(started.elapsed() < PROMPT, "took {:?}", started.elapsed());
    assert!(err.is_rpc(), "{err}");
    assert_eq!(err.method(), Some("tools/call"));
    let rpc = err.rpc_error().unwrap();
    assert_eq!(rpc.code, -32601);
    assert!(rpc.message.contains("task"), "{rpc}");
    assert!(err.task_id().is_none(), "no task was created");
    assert!(err.is_missing_capability(), "{err}");
    assert_eq!(
        err.to_string(),
        "tools/call: the server answered with an error: Tool required task augmented call \
         (code -32601); the server wants the 2025-11-25 `task` opt-in for this tool: \
         call list_tools() first so the client knows the tool wants a task"
    );
    // The plain call reports the same.
    let err = client.call_tool("export", json!({})).await.unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code), Some(-32601));
    assert!(err.is_missing_capability(), "{err}");
}

/// After `list_tools()` the client knows `export` wants the legacy opt-in
/// and sends `task: {}`: neva makes it a task, which the client drives to
/// its end (neva sends no `pollIntervalMs`, so the builder's interval is
/// used). The plain call does the same, and so does the `optional` tool,
/// which neva now runs as a task too.
pub async fn listed_required_tool_becomes_a_task(peer: &Peer) {
    let client = peer.client().await;
    client.list_tools().await.expect("tools/list");
    let state = client
        .task()
        .poll_interval(Duration::from_millis(50))
        .call_tool("export", json!({}))
        .await
        .expect("a task");
    assert_eq!(task_text(state).await, "exported 42 rows");
    let state = client
        .task()
        .with_ttl(Duration::from_secs(30))
        .poll_interval(Duration::from_millis(50))
        .call_tool("summary", json!({}))
        .await
        .expect("a task");
    assert_eq!(task_text(state).await, "3 tables, 42 rows");
    let plain = client.call_tool("export", json!({})).await.expect("plain");
    assert_eq!(plain.joined_text(), "exported 42 rows");
    // A tool without task support is called as before.
    echoes(&client, "hi").await;
}

/// A tool whose task support is `optional`, called before `list_tools()`
/// (so without the legacy opt-in): neva never makes it a task then, so the
/// answer is immediate (`Finished`, no id).
pub async fn optional_tool_answers_at_once(peer: &Peer) {
    let client = peer.client().await;
    let state = client
        .task()
        .call_tool("summary", json!({}))
        .await
        .expect("an immediate result");
    assert_eq!(state.id(), None);
    assert_eq!(finished_text(state), "3 tables, 42 rows");
    echoes(&client, "hello").await;
}

/// Unknown ids are `-32602`, reported as not found.
pub async fn unknown_id(peer: &Peer) {
    let client = peer.client().await;
    let id = TaskId::new("00000000-0000-4000-8000-000000000000");
    let err = client.get_task(&id).await.unwrap_err();
    assert!(err.is_task_not_found(), "{err}");
    let err = client
        .task()
        .resume(&TaskRef::new(id, None))
        .await
        .unwrap_err();
    assert!(err.is_task_not_found(), "{err}");
}

/// A task made the old way (the raw request carries `params.task`) can
/// still be driven by the typed API: resume it from its id and wait. neva
/// sends no `pollIntervalMs`, so the builder's interval is used.
pub async fn legacy_task_resumed(peer: &Peer) {
    let client = peer.client().await;
    let created = client
        .request(
            "tools/call",
            json!({ "name": "export", "arguments": {}, "task": { "ttl": 60000 } }),
        )
        .await
        .expect("neva makes a task for params.task");
    assert_eq!(created["resultType"], "task");
    assert!(created.get("pollIntervalMs").is_none());
    let id = TaskId::new(created["taskId"].as_str().unwrap());
    let state = client
        .task()
        .poll_interval(Duration::from_millis(100))
        .resume(&TaskRef::new(id, None))
        .await
        .expect("tasks/get");
    let finished = match state {
        TaskState::Finished(t) => t,
        other => other.await.expect("finish"),
    };
    assert_eq!(text(&finished), "exported 42 rows");
}

/// `echo`, a tool without task support, answers at once with its text.
async fn echoes(client: &mcp_tasks::Client, text: &str) {
    let echo = client
        .call_tool("echo", json!({ "arg0": text }))
        .await
        .expect("echo");
    assert_eq!(echo.joined_text(), text);
}

/// `listen()` on a call that never becomes a task: nothing to watch, no
/// stream left open.
pub async fn listen_without_task(peer: &Peer) {
    let client = peer.client().await;
    let state = client
        .task()
        .listen()
        .call_tool("summary", json!({}))
        .await
        .unwrap();
    assert!(state.is_finished());
    assert_eq!(client.stats().pending_requests, 0);
}

mod stdio {
    scenarios!(crate::support::Sdk::Neva, crate::support::Transport::Stdio;
        neva::discover,
        neva::required_tool_fails_clearly,
        neva::listed_required_tool_becomes_a_task,
        neva::optional_tool_answers_at_once,
        neva::unknown_id,
        neva::legacy_task_resumed,
        neva::listen_without_task,
    );
}
