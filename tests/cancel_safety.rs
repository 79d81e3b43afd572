//! Dropping a wait half way loses nothing: the handle stays where it was,
//! and the next wait carries on.

mod support;

use std::future::poll_fn;
use std::pin::Pin;

use futures_core::Stream;
use mcp_tasks::TaskState;
use mcp_tasks::protocol::{RpcError, TaskStatus};
use mcp_tasks::testing::TaskScript;
use serde_json::json;
use support::*;

/// Works for a second, half way for another, then completes.
fn half_way() -> TaskScript {
    TaskScript::new()
        .poll_interval(ms(100))
        .working(ms(1_000), "half way")
        .complete(ms(1_000), text("done"))
}

async fn pending(client: &mcp_tasks::Client) -> mcp_tasks::Task<mcp_tasks::Pending> {
    match client.task().call_tool("export", json!({})).await.unwrap() {
        TaskState::Pending(task) => task,
        other => panic!("expected a pending task, got {other:?}"),
    }
}

#[tokio::test(start_paused = true)]
async fn an_updates_next_dropped_mid_wait_keeps_the_handle() {
    let server = export(half_way());
    let client = client(&server).await;
    let task = pending(&client).await;
    let id = task.id().clone();
    let mut updates = task.updates();
    assert_eq!(
        updates.next().await.unwrap().unwrap().status,
        TaskStatus::Working
    );
    // The next change comes at 1 s; give up on it after 250 ms, twice.
    for _ in 0..2 {
        let r = tokio::time::timeout(ms(250), updates.next()).await;
        assert!(r.is_err(), "nothing changed yet");
    }
    // The stream carries on where it was.
    let next = updates.next().await.unwrap().unwrap();
    assert_eq!(next.status_message.as_deref(), Some("half way"));
    // Dropped once more, then taken back: the handle, with its id.
    let _ = tokio::time::timeout(ms(50), updates.next()).await;
    let TaskState::Pending(task) = updates.into_task() else {
        panic!("still pending")
    };
    assert_eq!(task.id(), &id);
    assert_eq!(task.status_message(), Some("half way"));
    let done = task.finish().await.unwrap();
    assert!(done.outcome().is_completed());
    // Abandoned reads were cancelled, never answered twice; the schedule held.
    assert_eq!(server.count("tools/call"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_stream_poll_abandoned_mid_wait_gives_the_handle_back() {
    let server = export(half_way());
    let client = client(&server).await;
    let mut updates = pending(&client).await.updates();
    let first = poll_fn(|cx| Pin::new(&mut updates).poll_next(cx)).await;
    assert_eq!(first.unwrap().unwrap().status, TaskStatus::Working);
    // Polled once more, then abandoned while the wait is in flight.
    let abandoned =
        tokio::time::timeout(ms(300), poll_fn(|cx| Pin::new(&mut updates).poll_next(cx))).await;
    assert!(abandoned.is_err());
    let TaskState::Pending(task) = updates.into_task() else {
        panic!("still pending")
    };
    assert!(task.finish().await.unwrap().outcome().is_completed());
}

#[tokio::test(start_paused = true)]
async fn next_and_the_stream_can_be_mixed() {
    let server = export(half_way());
    let client = client(&server).await;
    let mut updates = pending(&client).await.updates();
    let _ = updates.next().await;
    let _ = tokio::time::timeout(ms(300), poll_fn(|cx| Pin::new(&mut updates).poll_next(cx))).await;
    let mut seen = Vec::new();
    while let Some(s) = updates.next().await {
        seen.push(s.unwrap().status);
    }
    assert_eq!(seen, [TaskStatus::Working, TaskStatus::Completed]);
    assert!(updates.into_task().is_finished());
}

#[tokio::test(start_paused = true)]
async fn an_unknown_task_through_the_raw_request_is_task_not_found() {
    // Any `tasks/*` method, also one this crate does not wrap.
    let (client, mut sink, mut stream) = raw_peer().await;
    let call = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .request("tasks/result", json!({"taskId": "gone"}))
                .await
        }
    });
    let sent = next_json(&mut stream).await;
    assert_eq!(sent["method"], "tasks/result");
    let error = RpcError::new(-32602, "unknown task");
    reply(
        &mut sink,
        json!({"jsonrpc": "2.0", "id": sent["id"], "error": error}).to_string(),
    )
    .await;
    let e = call.await.unwrap().unwrap_err();
    assert!(e.is_task_not_found(), "{e}");
    assert_eq!(e.method(), Some("tasks/result"));
    // A method outside tasks/* is not about a task.
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.request("prompts/get", json!({"name": "x"})).await }
    });
    let sent = next_json(&mut stream).await;
    reply(
        &mut sink,
        json!({"jsonrpc": "2.0", "id": sent["id"], "error": RpcError::new(-32602, "no prompt")})
            .to_string(),
    )
    .await;
    let e = call.await.unwrap().unwrap_err();
    assert!(!e.is_task_not_found(), "{e}");
    assert_eq!(e.method(), Some("prompts/get"));
}
