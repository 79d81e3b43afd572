//! The lifecycle every Tasks server in these tests supports, peer-agnostic.
//!
//! The peers share a tool vocabulary: `progress` (steps with status
//! messages), `fail` (ends `failed` with `-32001`), `tool_error` (completes
//! with `isError`), `confirm` (asks a form, `rounds` of them, under keys
//! `confirm` and `note`) and `forever` (runs until cancelled).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use mcp_tasks::protocol::{TaskId, TaskStatus};
use mcp_tasks::{InputMode, Outcome, TaskRef, TaskState};
use serde_json::json;

use crate::support::*;

/// The code of the peers' `fail` tool.
pub const BACKEND_DOWN: i64 = -32001;

pub async fn progress(peer: &Peer) {
    let client = peer.client().await;
    let mut state = client
        .task()
        .call_tool("progress", json!({ "steps": 4, "step_ms": 200 }))
        .await
        .expect("tools/call");
    let mut messages = Vec::new();
    let finished = loop {
        match state {
            TaskState::Pending(task) => {
                messages.extend(task.status_message().map(str::to_owned));
                state = task.next().await.expect("next change");
            }
            TaskState::Finished(task) => break task,
            TaskState::InputRequired(_) => panic!("progress asks for nothing"),
        }
    };
    messages.dedup();
    assert_eq!(messages.first().map(String::as_str), Some("starting"));
    let steps = messages.iter().filter(|m| m.starts_with("step ")).count();
    assert!(steps >= 2, "saw too few steps: {messages:?}");
    assert_eq!(finished.snapshot().status, TaskStatus::Completed);
    assert_eq!(text(&finished), "done after 4 steps");
    assert_eq!(
        finished.structured::<serde_json::Value>().unwrap(),
        json!({ "steps": 4 })
    );
    assert!(finished.id().is_some());
}

pub async fn progress_updates(peer: &Peer) {
    use futures_core::Stream;
    let client = peer.client().await;
    let task = start(&client, "progress", json!({ "steps": 3, "step_ms": 150 })).await;
    let mut updates = task.updates();
    let mut seen = Vec::new();
    while let Some(snapshot) =
        std::future::poll_fn(|cx| std::pin::Pin::new(&mut updates).poll_next(cx)).await
    {
        let snapshot = snapshot.expect("snapshot");
        seen.push(snapshot.status);
    }
    assert_eq!(seen.last(), Some(&TaskStatus::Completed), "{seen:?}");
    let finished = updates.into_task().try_into_finished();
    assert!(finished.is_ok());
}

pub async fn task_failed(peer: &Peer) {
    let client = peer.client().await;
    let finished = finish(&client, "fail", json!({})).await;
    let Outcome::Failed(error) = finished.outcome() else {
        panic!("expected a failure, got {:?}", finished.outcome());
    };
    assert_eq!(error.code, BACKEND_DOWN);
    assert_eq!(error.message, "the export backend is unavailable");
    assert_eq!(error.data, Some(json!({ "retryAfterMs": 1000 })));
    let err = finished.into_result().unwrap_err();
    assert!(err.is_rpc(), "{err}");
    assert_eq!(err.rpc_error().map(|e| e.code), Some(BACKEND_DOWN));
    assert!(err.task_id().is_some());
}

pub async fn tool_error(peer: &Peer) {
    let client = peer.client().await;
    let finished = finish(&client, "tool_error", json!({})).await;
    assert_eq!(finished.snapshot().status, TaskStatus::Completed);
    let result = finished.outcome().result().expect("completed");
    assert!(result.is_error);
    assert!(result.joined_text().contains("does not exist"));
    let plain = client.call_tool("tool_error", json!({})).await.unwrap();
    assert!(plain.is_error);
}

pub async fn input_by_handler(peer: &Peer) {
    let log = Arc::new(Mutex::new(Vec::new()));
    let client = peer.client_with(answering(log.clone())).await;
    let finished = finish(&client, "confirm", json!({ "rounds": 2 })).await;
    assert_eq!(
        text(&finished),
        "exported 42 rows (note: checked by interop)"
    );
    assert_eq!(
        *log.lock().unwrap(),
        ["Export 42 rows?", "A note for the audit log?"],
        "each request answered once, in order"
    );
}

pub async fn input_declined(peer: &Peer) {
    let client = peer.client_with(declining()).await;
    let result = client
        .call_tool("confirm", json!({}))
        .await
        .expect("plain call");
    assert_eq!(result.joined_text(), "not exported (\"decline\")");
}

pub async fn input_by_respond(peer: &Peer) {
    // 2026-07-28 keys each question by its `inputRequests` key.
    answer_by_hand(peer, |key, _| key.to_owned()).await;
}

/// The `confirm` tool's two forms answered by hand, in manual input mode.
/// `question` names each request (`confirm` or `note`), from its key or
/// from the request itself, for eras whose keys say nothing.
pub async fn answer_by_hand(
    peer: &Peer,
    question: impl Fn(&str, &mcp_tasks::protocol::InputRequest) -> String,
) {
    // The handler only makes the client declare elicitation; Manual mode
    // never calls it.
    let log = Arc::new(Mutex::new(Vec::new()));
    let client = peer.client_with(answering(log.clone())).await;
    let mut state = client
        .task()
        .input(InputMode::Manual)
        .call_tool("confirm", json!({ "rounds": 2 }))
        .await
        .unwrap();
    let mut answered = Vec::new();
    let finished = loop {
        state = match state {
            TaskState::Pending(task) => match task.finish().await {
                Ok(done) => break done,
                Err(e) => {
                    assert!(e.error().is_input_required(), "{e}");
                    e.into_task()
                }
            },
            TaskState::InputRequired(task) => {
                let requests = task.requests().clone();
                assert_eq!(requests.len(), 1, "one question at a time");
                let (key, request) = requests.into_iter().next().unwrap();
                let name = question(&key, &request);
                let content = match name.as_str() {
                    "confirm" => json!({ "approved": true }),
                    "note" => json!({ "note": "by hand" }),
                    other => panic!("unexpected question {other}"),
                };
                answered.push(name);
                let responses = [(
                    key,
                    mcp_tasks::protocol::ElicitResult::accept(content).into(),
                )]
                .into_iter()
                .collect::<mcp_tasks::protocol::InputResponses>();
                task.respond(responses).await.expect("answer")
            }
            TaskState::Finished(task) => break task,
        };
    };
    assert_eq!(answered, ["confirm", "note"]);
    assert!(
        log.lock().unwrap().is_empty(),
        "manual mode calls no handler"
    );
    assert_eq!(text(&finished), "exported 42 rows (note: by hand)");
}

pub async fn cancel(peer: &Peer) {
    let client = peer.client().await;
    let task = start(&client, "forever", json!({})).await;
    let finished = task.cancel_and_wait().await.expect("cancel and wait");
    assert_eq!(*finished.outcome(), Outcome::Cancelled);
    assert_eq!(finished.snapshot().status, TaskStatus::Cancelled);
}

pub async fn cancel_then_read(peer: &Peer) {
    let client = peer.client().await;
    let task = start(&client, "forever", json!({})).await;
    let id = task.id().clone();
    task.cancel().await.expect("tasks/cancel");
    assert_eq!(settled_status(&client, &id).await, TaskStatus::Cancelled);
    // Cancelling again is harmless.
    client.cancel_task(&id).await.expect("second cancel");
}

pub async fn client_ttl(peer: &Peer) {
    let client = peer.client().await;
    let started = Instant::now();
    let state = client
        .task()
        .with_ttl(ms(400))
        .call_tool("forever", json!({}))
        .await
        .unwrap();
    let id = state.id().cloned().expect("a task");
    let finished = state.await.expect("finish");
    assert_eq!(*finished.outcome(), Outcome::Expired);
    assert!(started.elapsed() >= ms(400));
    let e = finished.into_result().unwrap_err();
    assert!(e.to_string().contains("outlived its time to live"), "{e}");
    assert_eq!(
        settled_status(&client, &id).await,
        TaskStatus::Cancelled,
        "the server got the cancel"
    );
}

pub async fn unknown_id(peer: &Peer) {
    let client = peer.client().await;
    let id = TaskId::new("00000000-0000-4000-8000-000000000000");
    let err = client.get_task(&id).await.unwrap_err();
    assert!(err.is_task_not_found(), "{err}");
    let err = client.cancel_task(&id).await.unwrap_err();
    assert!(err.is_task_not_found(), "{err}");
    let err = client
        .task()
        .resume(&TaskRef::new(id.clone(), None))
        .await
        .unwrap_err();
    assert!(err.is_task_not_found(), "{err}");
    // The id is a secret: errors show only a prefix.
    assert!(!err.to_string().contains(id.expose()), "{err}");
}

pub async fn listen_falls_back(peer: &Peer) {
    let client = peer.client().await;
    let state = client
        .task()
        .listen()
        .call_tool("progress", json!({ "steps": 3, "step_ms": 100 }))
        .await
        .unwrap();
    let finished = state.await.expect("finish by polling");
    assert_eq!(text(&finished), "done after 3 steps");
    // Nothing left to watch: the listen stream is closed, no request left over.
    for _ in 0..40 {
        if client.stats().pending_requests == 0 {
            break;
        }
        tokio::time::sleep(ms(50)).await;
    }
    assert_eq!(client.stats().pending_requests, 0);
}

pub async fn resume(peer: &Peer) {
    let client = peer.client().await;
    let reference = start(&client, "progress", json!({ "steps": 2, "step_ms": 150 }))
        .await
        .reference();
    let saved = serde_json::to_string(&reference).unwrap();
    // A new client when the server outlives clients (HTTP); else the same one.
    let client = if peer.shared() {
        peer.client().await
    } else {
        client
    };
    let reference: TaskRef = serde_json::from_str(&saved).unwrap();
    let finished = client
        .task()
        .resume(&reference)
        .await
        .expect("tasks/get")
        .await
        .expect("finish");
    assert_eq!(text(&finished), "done after 2 steps");
}

pub async fn concurrent(peer: &Peer) {
    let client = peer.client().await;
    let arguments = (1..=4).map(|steps| json!({ "steps": steps, "step_ms": 100 }));
    let texts = finish_concurrently(&client, "progress", arguments).await;
    assert_eq!(
        texts,
        (1..=4)
            .map(|steps| format!("done after {steps} steps"))
            .collect::<Vec<_>>()
    );
}
