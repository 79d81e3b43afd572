//! The client against a 2026-07-28 Tasks server built on rmcp: the shared
//! lifecycle (see `lifecycle`), plus what only this peer offers: task-required
//! and task-optional tools, the server's own TTL, `-32021`.

use mcp_tasks::protocol::TaskStatus;
use mcp_tasks::{Outcome, TaskState};
use serde_json::json;

use crate::lifecycle::BACKEND_DOWN;
use crate::support::*;

pub async fn discover(peer: &Peer) {
    let client = peer.client().await;
    let found = client.discover().await.expect("server/discover");
    assert!(found.capabilities.supports_tasks(), "{found:?}");
    assert_eq!(client.server_id(), Some("rmcp-peer"));
    assert_eq!(
        tool_names(&client).await,
        [
            "confirm",
            "fail",
            "forever",
            "progress",
            "short_ttl",
            "stats",
            "task_optional",
            "task_required",
            "tool_error"
        ]
    );
}

pub async fn task_required(peer: &Peer) {
    let client = peer.client().await;
    let state = client
        .task()
        .call_tool("task_required", json!({}))
        .await
        .unwrap();
    assert!(matches!(state, TaskState::Pending(_)), "{state:?}");
    let finished = state.await.expect("finish");
    assert_eq!(text(&finished), "required task done");
    // The plain call drives the task too.
    let result = client
        .call_tool("task_required", json!({}))
        .await
        .expect("plain call");
    assert_eq!(result.joined_text(), "required task done");
}

pub async fn task_optional_inline(peer: &Peer) {
    let client = peer.client().await;
    let state = client
        .task()
        .call_tool("task_optional", json!({ "work_ms": 10 }))
        .await
        .unwrap();
    assert_eq!(state.id(), None);
    assert_eq!(finished_text(state), "worked 10 ms inline");
}

pub async fn task_optional_task(peer: &Peer) {
    let client = peer.client().await;
    let state = client
        .task()
        .call_tool("task_optional", json!({ "work_ms": 300 }))
        .await
        .unwrap();
    assert_eq!(task_text(state).await, "worked 300 ms in a task");
}

pub async fn rpc_error_at_once(peer: &Peer) {
    let client = peer.client().await;
    let err = client
        .task()
        .call_tool("fail", json!({ "now": true }))
        .await
        .unwrap_err();
    assert!(err.is_rpc(), "{err}");
    assert_eq!(err.rpc_error().map(|e| e.code), Some(BACKEND_DOWN));
    assert_eq!(err.method(), Some("tools/call"));
    assert!(err.task_id().is_none());
    let shown = err.to_string();
    assert!(
        shown.contains("tools/call") && shown.contains("backend is unavailable"),
        "{shown}"
    );
}

pub async fn input_not_declared(peer: &Peer) {
    let client = peer.client().await;
    let err = client
        .task()
        .call_tool("confirm", json!({}))
        .await
        .unwrap_err();
    assert!(err.is_missing_capability(), "{err}");
    let data = &err.rpc_error().unwrap().data;
    assert!(
        data.as_ref().unwrap()["requiredCapabilities"]
            .get("elicitation")
            .is_some(),
        "{data:?}"
    );
}

pub async fn server_ttl(peer: &Peer) {
    let client = peer.client().await;
    let state = client
        .task()
        .call_tool("short_ttl", json!({}))
        .await
        .unwrap();
    let id = state.id().cloned().expect("a task");
    let TaskState::Pending(task) = state else {
        panic!("expected a running task");
    };
    assert_eq!(task.snapshot().ttl_ms, Some(300));
    let finished = task.finish().await.expect("finish");
    let Outcome::Failed(error) = finished.outcome() else {
        panic!(
            "expected the server to fail it, got {:?}",
            finished.outcome()
        );
    };
    assert!(error.message.contains("expired"), "{error:?}");
    // rmcp keeps a finished task for one more TTL, then drops it.
    let mut gone = None;
    for _ in 0..40 {
        match client.get_task(&id).await {
            Ok(t) => assert_eq!(t.status(), TaskStatus::Failed),
            Err(e) => {
                gone = Some(e);
                break;
            }
        }
        tokio::time::sleep(ms(50)).await;
    }
    let err = gone.expect("the server forgets an expired task");
    assert!(err.is_task_not_found(), "{err}");
    assert_eq!(err.method(), Some("tasks/get"));
}

pub async fn extension_not_declared(peer: &Peer) {
    let client = peer.client().await;
    let err = refused_without_extension(&client, "task_required").await;
    let data = err.rpc_error().unwrap().data.clone().unwrap();
    assert!(
        data["requiredCapabilities"]["extensions"]
            .get("io.modelcontextprotocol/tasks")
            .is_some(),
        "{data}"
    );
    // The task-optional tool just answers a non-declaring client.
    let ok = client
        .request(
            "tools/call",
            json!({ "name": "task_optional", "arguments": { "work_ms": 300 }, "_meta": no_capabilities() }),
        )
        .await
        .expect("an immediate result");
    assert_eq!(ok["resultType"], "complete");
}

/// What the peer counted: `tasks/get` requests and listen subscriptions.
async fn stats(client: &mcp_tasks::Client) -> (u64, u64) {
    let result = client.call_tool("stats", json!({})).await.expect("stats");
    let s = result.structured_content.expect("structured stats");
    (s["gets"].as_u64().unwrap(), s["listens"].as_u64().unwrap())
}

/// `listen()` really opens a subscription, which rmcp acknowledges without
/// the task ids; the client then polls at the server's interval.
pub async fn listen_acknowledged_without_ids(peer: &Peer) {
    let client = peer.client().await;
    let finished = client
        .task()
        .listen()
        .call_tool("progress", json!({ "steps": 2, "step_ms": 100 }))
        .await
        .unwrap()
        .await
        .expect("finish");
    assert!(finished.outcome().is_completed());
    let (gets, listens) = stats(&client).await;
    assert_eq!(listens, 1, "one subscription was opened");
    assert!(gets >= 1, "and the task was polled");
}

/// Polls follow the server's `pollIntervalMs` (50 ms), and the client's
/// floor when it is higher: no spinning against a real server.
pub async fn poll_pacing(peer: &Peer) {
    let client = peer.client().await;
    let run = |floor: u64| {
        let client = client.clone();
        async move {
            let (before, _) = stats(&client).await;
            let finished = client
                .task()
                .min_poll_interval(ms(floor))
                .call_tool("progress", json!({ "steps": 4, "step_ms": 100 }))
                .await
                .unwrap()
                .await
                .expect("finish");
            assert!(finished.outcome().is_completed());
            let (after, _) = stats(&client).await;
            after - before
        }
    };
    // 400 ms of work: about 8 reads at 50 ms, about 2 at a 200 ms floor.
    let at_server_pace = run(10).await;
    assert!(
        (3..=14).contains(&at_server_pace),
        "{at_server_pace} reads at 50 ms"
    );
    let at_floor = run(200).await;
    assert!((1..=5).contains(&at_floor), "{at_floor} reads at 200 ms");
    assert!(at_floor < at_server_pace);
}

/// The peer's `progress` with `push: true` sends `notifications/tasks` (full
/// snapshots, the terminal one included) on the `tools/call` request's
/// stream, with no `subscriptionId`, and acknowledges the listen without
/// the task ids. The same task run twice, once polled and once with
/// `listen()` and pushes on: a client that applies those pushes by
/// `taskId` reads the task strictly fewer times than one that polls.
pub async fn pushes_save_reads(peer: &Peer) {
    let client = peer.client().await;
    let run = |listen: bool| {
        let client = client.clone();
        async move {
            let (before, _) = stats(&client).await;
            let args = json!({ "steps": 4, "step_ms": 100, "push": listen });
            let builder = client.task();
            let state = if listen {
                builder.listen().call_tool("progress", args).await
            } else {
                builder.call_tool("progress", args).await
            };
            let finished = state.expect("tools/call").await.expect("finish");
            assert_eq!(text(&finished), "done after 4 steps");
            let (after, _) = stats(&client).await;
            after - before
        }
    };
    let polled = run(false).await;
    let pushed = run(true).await;
    let (_, listens) = stats(&client).await;
    println!("pushes_save_reads: {pushed} tasks/get with pushes, {polled} by polling");
    assert_eq!(listens, 1, "the second run listened");
    assert!(
        pushed < polled,
        "{pushed} reads with pushes, {polled} by polling"
    );
}

/// Every scenario that applies to the rmcp peer, over one transport.
macro_rules! rmcp_scenarios {
    ($transport:expr) => {
        scenarios!(crate::support::Sdk::Rmcp, $transport;
            rmcp::discover,
            lifecycle::progress,
            lifecycle::progress_updates,
            rmcp::task_required,
            rmcp::task_optional_inline,
            rmcp::task_optional_task,
            lifecycle::task_failed,
            rmcp::rpc_error_at_once,
            lifecycle::tool_error,
            lifecycle::input_by_handler,
            lifecycle::input_declined,
            lifecycle::input_by_respond,
            rmcp::input_not_declared,
            lifecycle::cancel,
            lifecycle::cancel_then_read,
            lifecycle::client_ttl,
            rmcp::server_ttl,
            lifecycle::unknown_id,
            rmcp::extension_not_declared,
            lifecycle::listen_falls_back,
            rmcp::listen_acknowledged_without_ids,
            rmcp::poll_pacing,
            lifecycle::resume,
            lifecycle::concurrent,
        );
    };
}

mod stdio {
    rmcp_scenarios!(crate::support::Transport::Stdio);

    // Over stdio only: over HTTP the `tools/call` stream the pushes would
    // travel on has closed by the time they are sent.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn pushes_save_reads() {
        let peer = crate::support::Peer::start(
            crate::support::Sdk::Rmcp,
            crate::support::Transport::Stdio,
        )
        .await;
        crate::support::bounded(crate::rmcp::pushes_save_reads(&peer)).await;
    }
}

mod http_sse {
    rmcp_scenarios!(crate::support::Transport::Http { json: false });
}

mod http_json {
    rmcp_scenarios!(crate::support::Transport::Http { json: true });
}
