//! Faults of a server that speaks the protocol but misbehaves: it hangs,
//! answers with a task where none may be, lets a task go back after it
//! ended, and pushes duplicates, stale snapshots and lies. Each test checks
//! that the fault really happened (`faults_fired`) and that the client ends
//! with a clear outcome or error, in bounded (paused) time.

mod support;

use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures_core::Stream;
use mcp_tasks::protocol::{ElicitResult, TaskStatus};
use mcp_tasks::testing::{Faults, ScriptedTool, TaskScript, TestServer};
use mcp_tasks::{Client, Pending, Task, TaskState, Updates};
use serde_json::json;
use support::*;
use tokio::time::Instant;

fn faulty(script: TaskScript, faults: Faults) -> TestServer {
    export(script)
        .tool(ScriptedTool::immediate("ping", text("pong")))
        .faults(faults)
}

async fn client_timing_out_after(server: &TestServer, timeout: Duration) -> Client {
    Client::builder()
        .request_timeout(timeout)
        .connect(server.connect())
        .await
        .unwrap()
}

async fn snapshots(mut updates: Updates) -> Vec<(TaskStatus, Option<String>)> {
    let mut out = Vec::new();
    while let Some(s) = poll_fn(|cx| Pin::new(&mut updates).poll_next(cx)).await {
        let s = s.unwrap();
        out.push((s.status, s.status_message));
    }
    out
}

#[tokio::test(start_paused = true)]
async fn a_tasks_get_that_is_never_answered_is_retried_until_the_deadline() {
    let server = faulty(
        TaskScript::new()
            .poll_interval(ms(100))
            .complete(ms(60_000), text("late")),
        Faults::new().never_answer("tasks/get"),
    );
    let client = client_timing_out_after(&server, ms(1000)).await;
    let started = Instant::now();
    let err = run_task(client.task().timeout(ms(5000)), "export")
        .await
        .unwrap_err();
    assert!(err.error().is_deadline(), "{}", err.error());
    assert_eq!(started.elapsed(), ms(5000), "the deadline bounds the wait");
    // Reads at 0.1, 1.2, 2.3, 3.4 and 4.5 s; the last one is cut to the
    // 0.5 s left before the deadline.
    assert_eq!(server.count("tasks/get"), 5);
    assert_eq!(server.faults_fired(), 5);
    // Let the last cancellation, sent as the wait ended, reach the server.
    tokio::time::sleep(ms(1)).await;
    assert_eq!(
        server.count("notifications/cancelled"),
        5,
        "each read that timed out was cancelled on the wire"
    );
    assert_eq!(client.stats().pending_requests, 0);
    assert!(matches!(err.into_task(), TaskState::Pending(_)));
}

#[tokio::test(start_paused = true)]
async fn a_tools_call_that_is_never_answered_is_outcome_unknown_and_not_retried() {
    let server = faulty(TaskScript::new(), Faults::new().never_answer("tools/call"));
    let client = client_timing_out_after(&server, ms(2000)).await;
    let e = client.call_tool("export", json!({})).await.unwrap_err();
    assert!(e.is_timeout(), "{e}");
    assert!(
        e.is_outcome_unknown(),
        "the call reached the server and may have run: {e}"
    );
    assert_eq!(server.count("tools/call"), 1, "never retried");
    assert_eq!(
        server.task_ids().len(),
        1,
        "the server did start the work the client cannot see"
    );
    tokio::time::sleep(ms(1)).await;
    assert_eq!(server.count("notifications/cancelled"), 1);
    assert_eq!(client.stats().pending_requests, 0);
    // The connection still serves other methods.
    assert_eq!(client.list_tools().await.unwrap().len(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_task_result_to_a_method_that_cannot_be_a_task_is_rejected() {
    let server = faulty(
        TaskScript::new().complete(ms(10), text("done")),
        Faults::new()
            .task_result_for("tools/list")
            .task_result_for("server/discover")
            .task_result_for("tasks/cancel")
            .task_result_for("tasks/update")
            .task_result_for("prompts/list"),
    );
    let client = client(&server).await;
    let e = client.list_tools().await.unwrap_err();
    assert!(e.is_protocol() && e.method() == Some("tools/list"), "{e}");
    let e = client.discover().await.unwrap_err();
    assert!(
        e.is_protocol() && e.method() == Some("server/discover"),
        "{e}"
    );
    let id = mcp_tasks::protocol::TaskId::new("task-1-any");
    let e = client.cancel_task(&id).await.unwrap_err();
    assert!(e.is_protocol() && e.task_id() == Some(&id), "{e}");
    let answers = [("k".to_owned(), ElicitResult::decline().into())].into();
    let e = client.update_task(&id, &answers).await.unwrap_err();
    assert!(e.is_protocol(), "{e}");
    // The escape hatch: a request that did not declare the Tasks extension.
    let e = client.request("prompts/list", json!({})).await.unwrap_err();
    assert!(e.is_protocol(), "{e}");
    // Six: the connect probe met the server/discover fault too (it answered
    // the method, so the server is taken as modern; nothing is cached).
    assert_eq!(server.faults_fired(), 6);
    assert!(server.task_ids().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_task_that_goes_back_after_it_ended_keeps_its_first_end() {
    // Polling: the first read of the ended task is final; nothing reads again.
    let script = || {
        TaskScript::new()
            .poll_interval(ms(100))
            .working(ms(50), "half")
            .complete(ms(100), text("done"))
    };
    let server = faulty(script(), Faults::new().regress_after_terminal());
    let client = client(&server).await;
    let TaskState::Pending(task) = client.task().call_tool("export", json!({})).await.unwrap()
    else {
        panic!("expected a pending task")
    };
    let id = task.id().clone();
    let seen = snapshots(task.updates()).await;
    assert_eq!(seen.last().unwrap().0, TaskStatus::Completed, "{seen:?}");
    tokio::time::sleep(ms(1000)).await;
    let reads = server.count("tasks/get");
    // The server regresses from the second read on: a fresh handle sees it,
    // the finished one never does.
    let again = client
        .task()
        .resume(&mcp_tasks::TaskRef::new(id, None))
        .await
        .unwrap();
    assert_eq!(again.status(), TaskStatus::Working);
    assert_eq!(server.count("tasks/get"), reads + 1);
    assert!(server.faults_fired() >= 1);

    // Pushes: the final push is followed by one saying `working`.
    let server = faulty(
        script().poll_interval(ms(600_000)),
        Faults::new().regress_after_terminal(),
    );
    let client = support::client(&server).await;
    let task = listening_export(&client, None).await;
    let seen = snapshots(task.updates()).await;
    assert_eq!(
        seen,
        [
            (TaskStatus::Working, None),
            (TaskStatus::Working, Some("half".into())),
            (TaskStatus::Completed, Some("half".into())),
        ]
    );
    tokio::time::sleep(ms(100)).await;
    assert_eq!(server.faults_fired(), 1, "the regressed push was sent");
    assert_eq!(server.count("tasks/get"), 1, "only the read after the ack");
}

/// Starts `export` listening, its waits bounded by `timeout` (`None`:
/// the default); the pending handle.
async fn listening_export(client: &Client, timeout: Option<Duration>) -> Task<Pending> {
    let TaskState::Pending(task) = client
        .task()
        .listen()
        .maybe_timeout(timeout)
        .call_tool("export", json!({}))
        .await
        .unwrap()
    else {
        panic!("expected a pending task")
    };
    task
}

#[tokio::test(start_paused = true)]
async fn duplicate_stale_and_stray_pushes_answer_each_key_once_and_lie_to_no_one() {
    let server = faulty(
        TaskScript::new()
            .poll_interval(ms(600_000))
            .working(ms(10), "preparing")
            .input(ms(10), requests(&["first"]))
            .working(ms(10), "exporting")
            .input(ms(10), requests(&["second"]))
            .working(ms(10), "finishing")
            .complete_with_inputs(ms(10)),
        Faults::new()
            .duplicate_pushes()
            .reorder_pushes()
            .stray_pushes(),
    );
    let calls = Arc::new(AtomicUsize::new(0));
    let client = client_with(&server, counting_forms(calls.clone())).await;
    let done = run_task(client.task().listen().timeout(ms(10_000)), "export")
        .await
        .unwrap();
    // Completed (stray pushes said `failed`), with both answers.
    let result = done.into_result().unwrap();
    let inputs = &result.structured_content.unwrap()["inputResponses"];
    assert_eq!(inputs["first"]["action"], "accept");
    assert_eq!(inputs["second"]["action"], "accept");
    assert_eq!(calls.load(Ordering::SeqCst), 2, "each key answered once");
    assert_eq!(server.count("tasks/update"), 2);
    assert!(server.faults_fired() >= 6, "{}", server.faults_fired());
    assert_eq!(server.count("tasks/get"), 1, "pushes did the work");
}

/// Forty status changes in 40 ms, then the end a second later.
fn chatty() -> TaskScript {
    let mut script = TaskScript::new()
        .poll_interval(ms(200))
        .working(ms(100), "step 0");
    for i in 1..=40 {
        script = script.working(ms(1), format!("step {i}"));
    }
    script.complete(ms(1000), text("done"))
}

fn step(message: &Option<String>) -> u32 {
    message
        .as_deref()
        .and_then(|m| m.strip_prefix("step "))
        .map_or(u32::MAX, |n| n.parse().unwrap())
}

#[tokio::test(start_paused = true)]
async fn a_slow_consumer_lags_and_resyncs_with_one_read_never_going_back() {
    let server = faulty(chatty().poll_interval(ms(600_000)), Faults::new());
    let client = client(&server).await;
    let task = listening_export(&client, None).await;
    // Listen, then stop consuming while forty pushes arrive.
    let TaskState::Pending(task) = task.next().await.unwrap() else {
        panic!("still working")
    };
    assert_eq!(task.status_message(), Some("step 0"));
    assert_eq!(server.count("tasks/get"), 1, "the read after the ack");
    tokio::time::sleep(ms(500)).await;
    assert!(server.pushes() >= 41);

    let seen = snapshots(task.updates()).await;
    assert_eq!(
        server.count("tasks/get"),
        2,
        "one read to catch up, however many pushes were dropped"
    );
    let steps: Vec<u32> = seen.iter().map(|(_, m)| step(m)).collect();
    assert!(
        steps.windows(2).all(|w| w[0] <= w[1]),
        "snapshots went back in time: {seen:?}"
    );
    assert_eq!(
        seen.last().unwrap(),
        &(TaskStatus::Completed, Some("step 40".into()))
    );
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_ends_while_the_consumer_lags_falls_back_to_polling() {
    let server = faulty(chatty(), Faults::new());
    let client = client(&server).await;
    let task = listening_export(&client, Some(ms(10_000))).await;
    let TaskState::Pending(task) = task.next().await.unwrap() else {
        panic!("still working")
    };
    tokio::time::sleep(ms(300)).await;
    // The server ends the stream while the handle's queue is full.
    server.end_subscriptions();
    let started = Instant::now();
    let done = task.finish().await.unwrap();
    assert!(done.outcome().is_completed());
    // Completed at 1.14 s after creation; polled every 200 ms once the
    // stream was gone.
    assert!(
        started.elapsed() < ms(1200),
        "finished late: {:?}",
        started.elapsed()
    );
}

#[tokio::test(start_paused = true)]
async fn a_listen_that_is_never_acknowledged_falls_back_to_polling() {
    let server = faulty(
        TaskScript::new()
            .poll_interval(ms(300))
            .complete(ms(2000), text("done")),
        Faults::new().never_answer("subscriptions/listen"),
    );
    let client = client_timing_out_after(&server, ms(1000)).await;
    let done = run_task(client.task().listen(), "export").await.unwrap();
    assert!(done.outcome().is_completed());
    assert_eq!(server.count("subscriptions/listen"), 1);
    assert_eq!(server.faults_fired(), 1);
    // Polled on schedule meanwhile: 300, 600, …, 2100 ms.
    assert_eq!(server.count("tasks/get"), 7);
    let listen = &of(&server, "subscriptions/listen")[0];
    let cancels = of(&server, "notifications/cancelled");
    assert_eq!(
        cancels.len(),
        1,
        "the unacknowledged stream is given up on the wire"
    );
    assert_eq!(cancels[0].params["requestId"], json!(listen.id));
    assert_eq!(client.stats().pending_requests, 0);
}

#[tokio::test(start_paused = true)]
async fn a_creation_result_that_says_completed_is_read_even_if_the_first_read_fails() {
    // The creation result says `completed` but cannot carry the result; the
    // read that would fetch it is lost. The task must not be lost with it.
    let server = export(
        TaskScript::new()
            .initial_status(TaskStatus::Completed)
            .poll_interval(ms(100))
            .complete(ms(0), text("instant")),
    );
    let client = Client::connect(Lossy(server.connect(), "tasks/get"))
        .await
        .unwrap();
    let state = client.task().call_tool("export", json!({})).await.unwrap();
    let TaskState::Pending(task) = state else {
        panic!("the handle comes back pending, got {state:?}")
    };
    assert_eq!(task.snapshot().status, TaskStatus::Completed);
    let started = Instant::now();
    let done = task.finish().await.unwrap();
    assert_eq!(done.into_result().unwrap().joined_text(), "instant");
    assert_eq!(
        started.elapsed(),
        ms(0),
        "read at once, not after an interval"
    );
    assert_eq!(server.count("tasks/get"), 1, "the lost read never arrived");
}
