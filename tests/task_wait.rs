//! Waiting on tasks: the poll schedule, deadlines, outcomes and request counts.

mod support;

use mcp_tasks::protocol::{RpcError, TaskStatus};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::{Outcome, TaskState};
use serde_json::json;
use support::*;

#[tokio::test(start_paused = true)]
async fn polls_are_spaced_by_poll_interval_ms_and_cost_one_get_each() {
    // Completes after 3 intervals: 1 call + 3 gets, nothing more.
    let server = polled_export(ms(300), ms(850), "42 rows");
    let client = client(&server).await;
    let state = client.task().call_tool("export", json!({})).await.unwrap();
    let TaskState::Pending(task) = state else {
        panic!("expected a pending task")
    };
    let done = task.finish().await.unwrap();
    assert_eq!(done.outcome().result().unwrap().joined_text(), "42 rows");
    assert_eq!(server.count("tools/call"), 1);
    assert_eq!(server.count("tasks/get"), 3);
    let call_at = of(&server, "tools/call")[0].at;
    assert_eq!(of(&server, "tasks/get")[0].at - call_at, ms(300));
    assert_eq!(gaps(&server, "tasks/get"), [ms(300), ms(300)]);
}

#[tokio::test(start_paused = true)]
async fn the_interval_follows_a_change_mid_task() {
    let server = export(
        TaskScript::new()
            .poll_interval(ms(100))
            .set_poll_interval(ms(150), ms(400))
            .complete(ms(600), text("done")),
    );
    let client = client(&server).await;
    let done = finish_call(&client, "export").await;
    assert!(done.outcome().is_completed());
    // 100, 100 (the second read sees 400), then 400s until the end.
    assert_eq!(gaps(&server, "tasks/get"), [ms(100), ms(400), ms(400)]);
}

#[tokio::test(start_paused = true)]
async fn without_a_poll_interval_polls_are_a_second_apart() {
    let server = export(TaskScript::new().complete(ms(2500), text("done")));
    let client = client(&server).await;
    let _done = finish_call(&client, "export").await;
    assert_eq!(gaps(&server, "tasks/get"), [ms(1000), ms(1000)]);
}

#[tokio::test(start_paused = true)]
async fn min_poll_interval_raises_a_shorter_server_interval() {
    let fast = polled_export(ms(1), ms(100), "done");
    let client = client(&fast).await;
    let _done = run_task(client.task().min_poll_interval(ms(40)), "export")
        .await
        .unwrap();
    assert_eq!(gaps(&fast, "tasks/get"), [ms(40), ms(40)]);
    assert_eq!(fast.count("tasks/get"), 3);
}

#[tokio::test(start_paused = true)]
async fn a_seed_that_is_not_working_is_read_at_once() {
    let server = export(
        TaskScript::new()
            .initial_status(TaskStatus::Completed)
            .complete(ms(0), text("instant")),
    );
    let client = client(&server).await;
    let state = client.task().call_tool("export", json!({})).await.unwrap();
    let TaskState::Finished(done) = state else {
        panic!("expected finished")
    };
    assert_eq!(done.outcome().result().unwrap().joined_text(), "instant");
    let gets = of(&server, "tasks/get");
    assert_eq!(gets.len(), 1);
    assert_eq!(
        gets[0].at,
        of(&server, "tools/call")[0].at,
        "no sleep before the read"
    );
}

#[tokio::test(start_paused = true)]
async fn a_timeout_returns_the_handle_and_a_later_finish_gets_the_result() {
    let server = polled_export(ms(100), ms(5000), "late");
    let client = client(&server).await;
    let state = start_export_within(&client, ms(1000)).await;
    let started = tokio::time::Instant::now();
    let err = state.finish().await.unwrap_err();
    assert!(err.error().is_deadline(), "{}", err.error());
    assert_eq!(
        started.elapsed(),
        ms(1000),
        "the wait never sleeps past its deadline"
    );
    let handle = err.into_task();
    assert_eq!(handle.status(), TaskStatus::Working);
    let saved = match &handle {
        TaskState::Pending(t) => t.reference(),
        other => panic!("expected pending, got {other:?}"),
    };
    drop(handle);
    let resumed = client
        .task()
        .timeout(ms(10_000))
        .resume(&saved)
        .await
        .unwrap();
    let done = resumed.finish().await.unwrap();
    assert_eq!(done.outcome().result().unwrap().joined_text(), "late");
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_handle_can_be_finished_again() {
    let server = polled_export(ms(100), ms(3000), "late");
    let client = client(&server).await;
    let state = start_export_within(&client, ms(1000)).await;
    let handle = state.finish().await.unwrap_err().into_task();
    let handle = handle.finish().await.unwrap_err().into_task();
    let done = handle.finish().await.unwrap();
    assert_eq!(done.outcome().result().unwrap().joined_text(), "late");
    assert_eq!(server.task_ids().len(), 1, "one task, never re-created");
}

#[tokio::test(start_paused = true)]
async fn failed_cancelled_and_tool_error_outcomes() {
    let server = TestServer::new()
        .tool(ScriptedTool::task(
            "fails",
            TaskScript::new().fail(ms(10), RpcError::new(-32603, "disk full")),
        ))
        .tool(ScriptedTool::task(
            "tool-error",
            TaskScript::new().complete(
                ms(10),
                mcp_tasks::protocol::CallToolResult::error("bad input"),
            ),
        ))
        .tool(ScriptedTool::task(
            "forever",
            TaskScript::new().working(ms(10), "busy"),
        ));
    let client = client(&server).await;

    let failed = finish_call(&client, "fails").await;
    assert_eq!(
        failed.outcome(),
        &Outcome::Failed(RpcError::new(-32603, "disk full"))
    );
    let e = failed.into_result().unwrap_err();
    assert!(e.is_rpc() && e.rpc_error().unwrap().code == -32603);
    assert!(e.to_string().contains("the task failed: disk full"), "{e}");

    let tool_error = finish_call(&client, "tool-error").await;
    assert!(tool_error.outcome().result().unwrap().is_error);
    assert!(
        tool_error.into_result().is_ok(),
        "a tool error is a completed call"
    );

    let TaskState::Pending(task) = client.task().call_tool("forever", json!({})).await.unwrap()
    else {
        panic!()
    };
    let cancelled = task.cancel_and_wait().await.unwrap();
    assert_eq!(cancelled.outcome(), &Outcome::Cancelled);
    let e = cancelled.into_result().unwrap_err();
    assert!(
        !e.is_rpc() && e.to_string().contains("the task was cancelled"),
        "{e}"
    );
}

#[tokio::test(start_paused = true)]
async fn with_ttl_cancels_and_reports_expired() {
    let server = export(
        TaskScript::new()
            .poll_interval(ms(100))
            .working(ms(10), "slow"),
    );
    let client = client(&server).await;
    let started = tokio::time::Instant::now();
    let done = run_task(client.task().with_ttl(ms(350)), "export")
        .await
        .unwrap();
    assert_eq!(done.outcome(), &Outcome::Expired);
    assert_eq!(started.elapsed(), ms(350));
    assert_eq!(server.count("tasks/cancel"), 1);
    assert_eq!(server.count("tasks/get"), 3);
}

#[tokio::test(start_paused = true)]
async fn server_ttl_expiry_is_task_not_found() {
    let server = export(
        TaskScript::new()
            .poll_interval(ms(100))
            .ttl(ms(250))
            .working(ms(10), "slow"),
    );
    let client = client(&server).await;
    let err = call_and_wait(&client, "export").await.unwrap_err();
    assert!(err.error().is_task_not_found(), "{}", err.error());
    assert!(matches!(err.into_task(), TaskState::Pending(_)));
}

#[tokio::test(start_paused = true)]
async fn no_read_after_a_terminal_snapshot_and_every_request_declares_tasks() {
    let server = polled_export(ms(50), ms(120), "ok");
    let client = client(&server).await;
    let done = finish_call(&client, "export").await;
    let id = done.id().unwrap().clone();
    tokio::time::sleep(ms(1000)).await;
    assert_eq!(server.count("tasks/get"), 3);
    for r in server.requests() {
        if r.method == "tools/call" || r.method.starts_with("tasks/") {
            assert!(r.declares_tasks(), "{} lacks the extension", r.method);
        }
        if r.method.starts_with("tasks/") {
            assert_eq!(r.task_id(), Some(id.expose()));
        }
    }
}

#[tokio::test(start_paused = true)]
async fn an_immediate_answer_is_finished_without_an_id() {
    let server = TestServer::new().tool(ScriptedTool::immediate("ping", text("pong")));
    let client = client(&server).await;
    let state = client.task().call_tool("ping", json!({})).await.unwrap();
    let TaskState::Finished(done) = state else {
        panic!("expected finished")
    };
    assert!(done.id().is_none());
    assert_eq!(done.into_result().unwrap().joined_text(), "pong");
}

#[tokio::test(start_paused = true)]
async fn next_returns_at_each_change_of_status_message() {
    let server = export(
        TaskScript::new()
            .poll_interval(ms(100))
            .status_message("queued")
            .working(ms(150), "step 1")
            .working(ms(300), "step 2")
            .complete(ms(300), text("done")),
    );
    let client = client(&server).await;
    let mut state = client.task().call_tool("export", json!({})).await.unwrap();
    let mut seen = vec![state.status_message().map(str::to_owned)];
    while let TaskState::Pending(task) = state {
        state = task.next().await.unwrap();
        seen.push(state.status_message().map(str::to_owned));
    }
    let seen: Vec<_> = seen.into_iter().flatten().collect();
    assert_eq!(seen[..3], ["queued", "step 1", "step 2"]);
    assert!(state.is_finished());
}

#[tokio::test(start_paused = true)]
async fn structured_content_decodes() {
    #[derive(serde::Deserialize, PartialEq, Debug)]
    struct Rows {
        rows: u32,
    }
    let result = text("done").with_structured(json!({"rows": 42}));
    let server = export(TaskScript::new().complete(ms(10), result));
    let client = client(&server).await;
    let done = finish_call(&client, "export").await;
    assert_eq!(done.structured::<Rows>().unwrap(), Rows { rows: 42 });
    assert!(done.structured::<Vec<u8>>().unwrap_err().is_protocol());
}

/// A task whose first read failed has no read on record, so the next wait
/// reads at once, in real time as under paused time. (A wait once spun
/// without reading until its deadline: it took "at once" anew on every
/// turn, always a little after the moment it compared it with. Paused
/// time, whose clock does not move, hid it.)
#[tokio::test]
async fn a_wait_after_a_failed_first_read_reads_at_once_in_real_time() {
    let (ours, mut server) = support::hand_peer::peer();
    let client = mcp_tasks::Client::builder()
        .request_timeout(ms(2_000))
        .protocol_version("2026-07-28")
        .connect(ours)
        .await
        .unwrap();
    let calling = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .task()
                .timeout(ms(3_000))
                .call_tool("t", json!({}))
                .await
        }
    });
    let call = server.next().await;
    assert_eq!(call["method"], "tools/call");
    // Not `working`: the client reads at once, and that read fails.
    server
        .answer(
            &call,
            json!({"resultType": "task", "taskId": "t-1", "status": "input_required"}),
        )
        .await;
    let first = server.next().await;
    assert_eq!(first["method"], "tasks/get");
    server.refuse(&first, -32603, "busy").await;
    let TaskState::Pending(task) = calling.await.unwrap().unwrap() else {
        panic!("a failed first read keeps the pending handle");
    };

    let waiting = tokio::spawn(task.finish());
    let read = tokio::time::timeout(ms(1_500), server.next())
        .await
        .expect("the wait reads the task at once");
    assert_eq!(read["method"], "tasks/get");
    server
        .answer(
            &read,
            json!({"resultType": "complete", "taskId": "t-1", "status": "completed",
                   "result": {"content": [{"type": "text", "text": "done"}]}}),
        )
        .await;
    let done = waiting.await.unwrap().expect("completed");
    assert!(done.outcome().is_completed());
}
