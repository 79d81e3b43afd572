//! Listen mode: subscriptions/listen + notifications/tasks, with fallback
//! to polling, one shared stream, and update streams.

mod support;

use std::future::poll_fn;
use std::pin::Pin;

use futures_core::Stream;
use mcp_tasks::protocol::TaskStatus;
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::{Client, Finished, Outcome, Task, TaskState, Updates};
use serde_json::json;
use support::*;

/// Starts `tool` (no arguments) with `listen()`.
async fn start_listening(client: &Client, tool: &str) -> TaskState {
    client
        .task()
        .listen()
        .call_tool(tool, json!({}))
        .await
        .unwrap()
}

/// Starts `tool` (no arguments) with `listen()` and waits for its end.
async fn listen_to_the_end(client: &Client, tool: &str) -> Task<Finished> {
    start_listening(client, tool).await.await.unwrap()
}

/// A task whose server asks for polls so rarely that only pushes can
/// finish a wait quickly.
fn pushed(server: TestServer) -> TestServer {
    server.tool(ScriptedTool::task(
        "export",
        TaskScript::new()
            .poll_interval(ms(600_000))
            .working(ms(100), "step 1")
            .working(ms(100), "step 2")
            .complete(ms(100), text("done")),
    ))
}

#[tokio::test(start_paused = true)]
async fn pushes_finish_the_wait_with_one_read_after_the_ack() {
    let server = pushed(TestServer::new());
    let client = client(&server).await;
    let started = tokio::time::Instant::now();
    let done = listen_to_the_end(&client, "export").await;
    assert_eq!(done.into_result().unwrap().joined_text(), "done");
    assert_eq!(
        started.elapsed(),
        ms(300),
        "finished on the terminal push, not a poll"
    );
    assert_eq!(server.count("subscriptions/listen"), 1);
    assert_eq!(server.count("tasks/get"), 1, "only the read after the ack");
    assert!(server.pushes() >= 3);
    let listen = &of(&server, "subscriptions/listen")[0];
    assert!(listen.declares_tasks());
    assert_eq!(
        listen.params["notifications"]["taskIds"]
            .as_array()
            .unwrap()
            .len(),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn the_read_after_the_ack_catches_an_earlier_change() {
    let server = polled_export(ms(600_000), ms(5), "early");
    let client = client(&server).await;
    let state = start_listening(&client, "export").await;
    // The task completes before anyone listens: no push will ever come.
    tokio::time::sleep(ms(50)).await;
    let done = state.await.unwrap();
    assert_eq!(done.into_result().unwrap().joined_text(), "early");
    assert_eq!(server.pushes(), 0);
    assert_eq!(server.count("tasks/get"), 1);
}

#[tokio::test(start_paused = true)]
async fn the_stream_is_closed_when_the_wait_ends() {
    let server = pushed(TestServer::new());
    let client = client(&server).await;
    let done = listen_to_the_end(&client, "export").await;
    assert!(done.outcome().is_completed());
    tokio::time::sleep(ms(10)).await;
    assert_eq!(server.open_subscriptions(), 0);
    let cancels = of(&server, "notifications/cancelled");
    assert_eq!(cancels.len(), 1);
    assert_eq!(
        cancels[0].params["requestId"],
        json!(of(&server, "subscriptions/listen")[0].id)
    );
}

#[tokio::test(start_paused = true)]
async fn the_stream_is_closed_on_timeout_and_on_drop() {
    let server = pushed(TestServer::new());
    let client = client(&server).await;
    let state = client
        .task()
        .listen()
        .timeout(ms(150))
        .call_tool("export", json!({}))
        .await
        .unwrap();
    let err = state.await.unwrap_err();
    assert!(err.error().is_deadline());
    // The handle keeps its registration: waiting again needs no new stream.
    let handle = err.into_task();
    assert_eq!(server.open_subscriptions(), 1);
    drop(handle);
    tokio::time::sleep(ms(10)).await;
    assert_eq!(server.open_subscriptions(), 0);
    assert_eq!(server.count("subscriptions/listen"), 1);
}

/// Runs a listening task that completes after 250 ms on a server polled
/// every 100 ms, and checks it finished by polling: 3 reads, 100 ms apart.
async fn finishes_by_polling(server: TestServer) -> TestServer {
    let server = server.tool(ScriptedTool::task(
        "export",
        TaskScript::new()
            .poll_interval(ms(100))
            .complete(ms(250), text("polled")),
    ));
    let client = client(&server).await;
    let done = listen_to_the_end(&client, "export").await;
    assert_eq!(done.into_result().unwrap().joined_text(), "polled");
    assert_eq!(server.count("subscriptions/listen"), 1);
    assert_eq!(server.count("tasks/get"), 3);
    assert_eq!(gaps(&server, "tasks/get"), [ms(100), ms(100)]);
    server
}

#[tokio::test(start_paused = true)]
async fn method_not_found_falls_back_to_polling() {
    finishes_by_polling(TestServer::new().listen_supported(false)).await;
}

#[tokio::test(start_paused = true)]
async fn an_ack_without_the_id_falls_back_to_polling() {
    // What real peers do: they acknowledge but drop taskIds.
    let server = finishes_by_polling(TestServer::new().accept_listen_task_ids(false)).await;
    tokio::time::sleep(ms(10)).await;
    assert_eq!(
        server.open_subscriptions(),
        0,
        "the useless stream was closed"
    );
}

#[tokio::test(start_paused = true)]
async fn a_stream_the_server_ends_falls_back_to_polling() {
    let server = polled_export(ms(100), ms(1000), "polled");
    let client = client(&server).await;
    let state = start_listening(&client, "export").await;
    let waiter = tokio::spawn(async move { state.await });
    tokio::time::sleep(ms(300)).await;
    assert_eq!(
        server.count("tasks/get"),
        1,
        "listening: only the read after the ack"
    );
    server.end_subscriptions();
    let done = waiter.await.unwrap().unwrap();
    assert_eq!(done.into_result().unwrap().joined_text(), "polled");
    assert!(
        server.count("tasks/get") >= 7,
        "polled after the stream ended"
    );
}

#[tokio::test(start_paused = true)]
async fn input_pushes_are_answered_by_handlers() {
    let server = TestServer::new().tool(ScriptedTool::task(
        "approve",
        TaskScript::new()
            .poll_interval(ms(600_000))
            .input(ms(100), requests(&["ok"]))
            .complete_with_inputs(ms(100)),
    ));
    let handlers = accept_forms();
    let client = client_with(&server, handlers).await;
    let started = tokio::time::Instant::now();
    let done = listen_to_the_end(&client, "approve").await;
    assert!(done.outcome().is_completed());
    assert_eq!(started.elapsed(), ms(200));
    assert_eq!(server.count("tasks/get"), 1);
    assert_eq!(server.count("tasks/update"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_thousand_listening_tasks_share_a_bounded_number_of_streams() {
    let server = TestServer::new().tool(ScriptedTool::task(
        "job",
        TaskScript::new()
            .poll_interval(ms(600_000))
            .working(ms(500), "half")
            .complete(ms(500), text("ok")),
    ));
    let client = client(&server).await;
    let mut waiters = Vec::new();
    for _ in 0..1000 {
        let state = start_listening(&client, "job").await;
        waiters.push(tokio::spawn(async move {
            state.await.map(|t| t.into_outcome())
        }));
    }
    let mut most_open = 0;
    for _ in 0..20 {
        tokio::time::sleep(ms(50)).await;
        most_open = most_open.max(server.open_subscriptions());
    }
    for w in waiters {
        assert!(matches!(w.await.unwrap().unwrap(), Outcome::Completed(_)));
    }
    assert!(
        most_open <= 2,
        "at most two streams open at once, saw {most_open}"
    );
    assert_eq!(
        server.count("subscriptions/listen"),
        1,
        "registrations are coalesced"
    );
    assert_eq!(
        server.count("tasks/get"),
        1000,
        "one read per task, after its ack"
    );
    tokio::time::sleep(ms(10)).await;
    assert_eq!(server.open_subscriptions(), 0);
}

async fn collect(mut updates: Updates) -> (Vec<(TaskStatus, Option<String>)>, Updates) {
    let mut seen = Vec::new();
    while let Some(s) = poll_fn(|cx| Pin::new(&mut updates).poll_next(cx)).await {
        let s = s.unwrap();
        seen.push((s.status, s.status_message));
    }
    (seen, updates)
}

#[tokio::test(start_paused = true)]
async fn updates_yield_every_status_message_in_order_then_end() {
    for listen in [false, true] {
        let server = export(
            TaskScript::new()
                .poll_interval(ms(50))
                .status_message("queued")
                .working(ms(120), "reading")
                .working(ms(120), "writing")
                .complete(ms(120), text("done")),
        );
        let client = client(&server).await;
        let builder = client.task();
        let state = if listen {
            builder
                .listen()
                .call_tool("export", json!({}))
                .await
                .unwrap()
        } else {
            builder.call_tool("export", json!({})).await.unwrap()
        };
        let TaskState::Pending(task) = state else {
            panic!()
        };
        let (seen, updates) = collect(task.updates()).await;
        let messages: Vec<_> = seen.iter().filter_map(|(_, m)| m.clone()).collect();
        assert_eq!(
            messages[..3],
            ["queued", "reading", "writing"],
            "listen={listen}"
        );
        assert_eq!(seen.last().unwrap().0, TaskStatus::Completed);
        assert!(updates.into_task().is_finished());
        if listen {
            assert_eq!(server.count("tasks/get"), 1);
        }
    }
}
