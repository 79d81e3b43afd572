//! The client against a 2025-11-25 Tasks server on the TypeScript SDK 1.32
//! (npm `@modelcontextprotocol/sdk`, `legacy-peer/server.mjs`): the
//! initialize era's experimental tasks, the SDK's own task store, message
//! queue and `tasks/*` handlers. The lifecycle scenarios run unchanged
//! (one excepted, see the list below); the rest are what this era has and
//! 2026-07-28 has not: `execution.taskSupport` per tool, `tasks/list`, a
//! server-chosen ttl after which the task is forgotten, sessions.

use std::sync::{Arc, Mutex};

use mcp_tasks::protocol::{ElicitRequest, InputRequest, TaskId, TaskStatus};
use mcp_tasks::{Outcome, TaskRef, TaskState};
use serde_json::json;

use crate::support::*;

/// The era and the tools, each with its task support.
pub async fn negotiates_the_initialize_era(peer: &Peer) {
    let client = peer.client().await;
    assert_eq!(&*client.protocol_version(), "2025-11-25");
    assert_eq!(client.server_id(), Some("legacy-peer"));
    let mut tools: Vec<(String, String)> = client
        .list_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| {
            let support = t.task_support().map(|s| s.as_str().to_owned());
            (t.name, support.unwrap_or_default())
        })
        .collect();
    tools.sort();
    let expected = [
        ("confirm", "required"),
        ("fail", "required"),
        ("forever", "required"),
        ("progress", "required"),
        ("quick", "forbidden"),
        ("summarize", "optional"),
        ("tool_error", "required"),
    ];
    let expected: Vec<(String, String)> = expected
        .iter()
        .map(|(n, s)| ((*n).to_owned(), (*s).to_owned()))
        .collect();
    assert_eq!(tools, expected);
}

/// `optional`: the client sends the `task` opt-in (the listing asked for
/// it), so the call is a task; without the opt-in (the raw request) the
/// SDK runs the same task itself and answers with its result.
pub async fn optional_tool(peer: &Peer) {
    let client = peer.client().await;
    let state = client
        .task()
        .call_tool("summarize", json!({ "rows": 7 }))
        .await
        .expect("tools/call");
    assert_eq!(task_text(state).await, "summary of 7 rows");
    let raw = client
        .request(
            "tools/call",
            json!({ "name": "summarize", "arguments": { "rows": 3 } }),
        )
        .await
        .expect("an inline answer");
    assert!(raw.get("task").is_none(), "{raw}");
    assert_eq!(raw["content"][0]["text"], "summary of 3 rows");
}

/// `forbidden`: never a task. The client does not send the opt-in; sent by
/// hand, the SDK refuses the call (`-32602`, "Invalid task creation
/// result", where the specification suggests `-32601`).
pub async fn forbidden_tool(peer: &Peer) {
    let client = peer.client().await;
    let state = client
        .task()
        .call_tool("quick", json!({ "text": "hi" }))
        .await
        .expect("tools/call");
    assert_eq!(state.id(), None, "no task: {state:?}");
    assert_eq!(finished_text(state), "quick: hi");
    let plain = client.call_tool("quick", json!({})).await.unwrap();
    assert_eq!(plain.joined_text(), "quick: ok");
    let err = client
        .request(
            "tools/call",
            json!({ "name": "quick", "arguments": {}, "task": {} }),
        )
        .await
        .unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code), Some(-32602), "{err}");
}

/// A tool error on this era: the SDK states the task `failed` and its
/// `tasks/result` is the `isError` result. The stated status decides: a
/// failed outcome (never a completion), with the tool's text as the
/// message and its result as the error's data; `call_tool` fails with
/// the task's error (`is_rpc()`, `rpc_error()`).
pub async fn tool_error(peer: &Peer) {
    let client = peer.client().await;
    let finished = finish(&client, "tool_error", json!({})).await;
    assert_eq!(finished.snapshot().status, TaskStatus::Failed);
    let Outcome::Failed(error) = finished.outcome() else {
        panic!("a failed task ended {:?}", finished.outcome());
    };
    assert!(error.message.contains("does not exist"), "{error:?}");
    assert_eq!(
        error.data.as_ref().map(|d| &d["isError"]),
        Some(&json!(true))
    );
    let plain = client.call_tool("tool_error", json!({})).await.unwrap_err();
    assert!(
        plain
            .rpc_error()
            .is_some_and(|e| e.message.contains("does not exist")),
        "{plain}"
    );
}

/// A `required` tool called without the opt-in (the raw request, which
/// the listing does not touch): the SDK turns its own `-32601` into an
/// `isError` result.
pub async fn required_tool_without_opt_in(peer: &Peer) {
    let client = peer.client().await;
    let raw = client
        .request("tools/call", json!({ "name": "progress", "arguments": {} }))
        .await
        .expect("a tool result");
    assert_eq!(raw["isError"], true, "{raw}");
    let text = raw["content"][0]["text"].as_str().unwrap_or_default();
    assert!(text.contains("requires task augmentation"), "{text}");
}

/// Unknown ids: `tasks/get` and `tasks/result` answer `-32602`.
pub async fn unknown_task(peer: &Peer) {
    let client = peer.client().await;
    let id = TaskId::new("0123456789abcdef0123456789abcdef");
    let err = client.get_task(&id).await.unwrap_err();
    assert!(err.is_task_not_found(), "{err}");
    let err = client
        .request("tasks/result", json!({ "taskId": id.expose() }))
        .await
        .unwrap_err();
    assert_eq!(err.rpc_error().map(|e| e.code), Some(-32602), "{err}");
}

/// `tasks/list` names every task the server keeps, with its status.
pub async fn list_tasks(peer: &Peer) {
    let client = peer.client().await;
    let finished = finish(&client, "progress", json!({ "steps": 1, "step_ms": 50 })).await;
    let done_id = finished.id().cloned().expect("a task");
    assert!(finished.outcome().is_completed());
    let running = start(&client, "forever", json!({})).await;
    let page = client.list_tasks(None).await.expect("tasks/list");
    assert_eq!(page.next_cursor, None);
    let status_of = |id: &TaskId| {
        page.tasks
            .iter()
            .find(|t| &t.task_id == id)
            .map(|t| t.info.status)
    };
    assert_eq!(status_of(&done_id), Some(TaskStatus::Completed), "{page:?}");
    assert_eq!(
        status_of(running.id()),
        Some(TaskStatus::Working),
        "{page:?}"
    );
    let ttl = page.tasks[0].info.ttl_ms;
    assert_eq!(ttl, Some(60_000), "the server's ttl");
    let finished = running.cancel_and_wait().await.expect("cancel");
    assert_eq!(*finished.outcome(), Outcome::Cancelled);
}

/// Two tasks asking for input at once: each question goes to its own
/// task's `tasks/result` stream and each answer back to its own request.
pub async fn concurrent_input(peer: &Peer) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let client = peer.client_with(answering(log.clone())).await;
    let arguments = [1, 2, 2].map(|rounds| json!({ "rounds": rounds }));
    let texts = finish_concurrently(&client, "confirm", arguments).await;
    assert_eq!(
        texts,
        [
            "exported 42 rows",
            "exported 42 rows (note: checked by interop)",
            "exported 42 rows (note: checked by interop)",
        ]
    );
    assert_eq!(log.lock().unwrap().len(), 5, "each question answered once");
}

/// `lifecycle::input_by_respond` on this era: the same two forms answered
/// by hand, but keyed by the JSON-RPC id of each `elicitation/create` (the
/// client's choice: 2025-11-25 has no `inputRequests` keys), so the form
/// is told by its message.
pub async fn input_by_respond(peer: &Peer) {
    crate::lifecycle::answer_by_hand(peer, |_, request| {
        let InputRequest::Elicitation(ElicitRequest::Form { message, .. }) = request else {
            panic!("expected a form, got {request:?}");
        };
        match message.as_str() {
            "Export 42 rows?" => "confirm",
            "A note for the audit log?" => "note",
            other => panic!("unexpected question {other:?}"),
        }
        .to_owned()
    })
    .await;
}

/// With `--ttl 300` the SDK's store forgets a task 300 ms after its
/// creation, finished or not: the running task's wait ends with "not
/// found", and so does every later read.
pub async fn ttl_expiry(peer: &Peer) {
    let client = peer.client().await;
    let state = client.task().call_tool("forever", json!({})).await.unwrap();
    let id = state.id().cloned().expect("a task");
    let TaskState::Pending(task) = state else {
        panic!("expected a running task");
    };
    assert_eq!(task.snapshot().ttl_ms, Some(300));
    let err = task.finish().await.expect_err("the task is forgotten");
    assert!(err.error().is_task_not_found(), "{err}");
    let err = client.get_task(&id).await.unwrap_err();
    assert!(err.is_task_not_found(), "{err}");
    let page = client.list_tasks(None).await.expect("tasks/list");
    assert!(page.tasks.iter().all(|t| t.task_id != id), "{page:?}");
}

/// With `--session-tasks` (the SDK store's own binding) a task saved in
/// one HTTP session is not found from another, while its own session still
/// reads it.
pub async fn resume_from_another_session(peer: &Peer) {
    let first = peer.client().await;
    let reference = start(&first, "progress", json!({ "steps": 2, "step_ms": 150 }))
        .await
        .reference();
    let second = peer.client().await;
    let err = second.task().resume(&reference).await.unwrap_err();
    assert!(err.is_task_not_found(), "{err}");
    let again: TaskRef = serde_json::from_str(&serde_json::to_string(&reference).unwrap()).unwrap();
    let finished = first
        .task()
        .resume(&again)
        .await
        .expect("its own session reads it")
        .await
        .expect("finish");
    assert_eq!(text(&finished), "done after 2 steps");
}

/// Every scenario that applies to the legacy peer, over one transport.
///
/// Not run here:
/// - `lifecycle::input_by_respond`, which answers by the `inputRequests`
///   keys a 2026-07-28 server chooses (`confirm`, `note`): a 2025-11-25
///   server sends real `elicitation/create` requests, which the client keys
///   by their JSON-RPC id. `legacy::input_by_respond` is the same scenario
///   telling the forms by their message.
macro_rules! legacy_scenarios {
    ($transport:expr) => {
        scenarios!(crate::support::LEGACY, $transport;
            legacy::negotiates_the_initialize_era,
            lifecycle::progress,
            lifecycle::progress_updates,
            lifecycle::task_failed,
            legacy::tool_error,
            lifecycle::input_by_handler,
            lifecycle::input_declined,
            legacy::input_by_respond,
            lifecycle::cancel,
            lifecycle::cancel_then_read,
            lifecycle::client_ttl,
            lifecycle::unknown_id,
            lifecycle::listen_falls_back,
            lifecycle::resume,
            lifecycle::concurrent,
            legacy::optional_tool,
            legacy::forbidden_tool,
            legacy::required_tool_without_opt_in,
            legacy::unknown_task,
            legacy::list_tasks,
            legacy::concurrent_input,
        );
    };
}

/// A test of one scenario against the legacy peer started with `options`.
macro_rules! with_options {
    ($transport:expr, $options:expr; $name:ident) => {
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            let sdk = crate::support::Sdk::Legacy($options);
            let peer = crate::support::Peer::start(sdk, $transport).await;
            crate::support::bounded(crate::legacy::$name(&peer)).await;
        }
    };
}

mod stdio {
    use crate::support::{LegacyOptions, Transport};

    legacy_scenarios!(Transport::Stdio);
    with_options!(Transport::Stdio, LegacyOptions { ttl_ms: Some(300), ..Default::default() }; ttl_expiry);
}

/// The SDK's `StreamableHTTPServerTransport` behind `node:http`, one
/// session per client (an `McpServer` each), the tasks shared.
mod http {
    use crate::support::{LegacyOptions, Transport};

    const HTTP: Transport = Transport::Http { json: false };
    legacy_scenarios!(HTTP);
    with_options!(HTTP, LegacyOptions { ttl_ms: Some(300), ..Default::default() }; ttl_expiry);
    with_options!(HTTP, LegacyOptions { session_tasks: true, ..Default::default() }; resume_from_another_session);
}
