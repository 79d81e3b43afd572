//! Cancelling, resuming from a saved reference, and unknown tasks.

mod support;

use mcp_tasks::protocol::TaskId;
use mcp_tasks::testing::{TaskScript, TestServer};
use mcp_tasks::{Client, Outcome, TaskRef, TaskState};
use serde_json::json;
use support::*;

fn slow() -> TestServer {
    export(
        TaskScript::new()
            .poll_interval(ms(100))
            .working(ms(10), "exporting")
            .complete(ms(2000), text("exported")),
    )
}

#[tokio::test(start_paused = true)]
async fn an_unknown_task_is_task_not_found() {
    let server = slow();
    let client = client(&server).await;
    let e = client
        .get_task(&TaskId::new("no-such-task"))
        .await
        .unwrap_err();
    assert!(
        e.is_task_not_found() && e.method() == Some("tasks/get"),
        "{e}"
    );
    let r = TaskRef::new(TaskId::new("no-such-task"), None);
    let e = client.task().resume(&r).await.unwrap_err();
    assert!(e.is_task_not_found(), "{e}");
    // cancel and update say the same.
    assert!(
        client
            .cancel_task(&TaskId::new("nope"))
            .await
            .unwrap_err()
            .is_task_not_found()
    );
}

#[tokio::test(start_paused = true)]
async fn resume_after_dropping_the_client() {
    let server = slow();
    let saved: String = {
        let client = client(&server).await;
        let TaskState::Pending(task) = client.task().call_tool("export", json!({})).await.unwrap()
        else {
            panic!()
        };
        serde_json::to_string(&task.reference()).unwrap()
    };
    tokio::time::sleep(ms(50)).await;
    let reference: TaskRef = serde_json::from_str(&saved).unwrap();
    let client = client(&server).await;
    let state = client.task().resume(&reference).await.unwrap();
    assert_eq!(server.count("tasks/get"), 1, "resume is one read");
    assert_eq!(state.status_message(), Some("exporting"));
    let done = state.await.unwrap();
    assert_eq!(done.into_result().unwrap().joined_text(), "exported");
}

#[tokio::test(start_paused = true)]
async fn resuming_against_another_server_is_refused() {
    let server = slow();
    let a = Client::builder()
        .server_id("exports-eu")
        .connect(server.connect())
        .await
        .unwrap();
    let TaskState::Pending(task) = a.task().call_tool("export", json!({})).await.unwrap() else {
        panic!()
    };
    let reference = task.reference();
    assert_eq!(reference.server(), Some("exports-eu"));
    let b = Client::builder()
        .server_id("exports-us")
        .connect(server.connect())
        .await
        .unwrap();
    let e = b.task().resume(&reference).await.unwrap_err();
    assert!(
        e.is_builder() && e.to_string().contains("exports-eu"),
        "{e}"
    );
    assert_eq!(server.count("tasks/get"), 0);
}

#[tokio::test(start_paused = true)]
async fn cancel_is_cooperative_and_idempotent() {
    let server = slow();
    let client = client(&server).await;
    let TaskState::Pending(task) = client.task().call_tool("export", json!({})).await.unwrap()
    else {
        panic!()
    };
    let id = task.id().clone();
    task.cancel().await.unwrap();
    assert_eq!(server.count("tasks/cancel"), 1);
    // Cancelling an ended task acknowledges and changes nothing.
    client.cancel_task(&id).await.unwrap();
    tokio::time::sleep(ms(1)).await;
    let snapshot = client.get_task(&id).await.unwrap();
    assert_eq!(
        snapshot.status(),
        mcp_tasks::protocol::TaskStatus::Cancelled
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_and_wait_sees_a_completion_that_won_the_race() {
    let server = export(
        TaskScript::new()
            .poll_interval(ms(100))
            .ignore_cancel()
            .complete(ms(250), text("finished anyway")),
    );
    let client = client(&server).await;
    let TaskState::Pending(task) = client.task().call_tool("export", json!({})).await.unwrap()
    else {
        panic!()
    };
    let done = task.cancel_and_wait().await.unwrap();
    assert!(matches!(done.outcome(), Outcome::Completed(_)));
}

#[tokio::test(start_paused = true)]
async fn cancel_on_drop_sends_tasks_cancel() {
    let server = slow();
    let client = client(&server).await;
    let state = client
        .task()
        .cancel_on_drop()
        .call_tool("export", json!({}))
        .await
        .unwrap();
    drop(state);
    tokio::time::sleep(ms(10)).await;
    assert_eq!(server.count("tasks/cancel"), 1);

    // Without it, dropping only stops local waiting.
    let state = client.task().call_tool("export", json!({})).await.unwrap();
    drop(state);
    tokio::time::sleep(ms(10)).await;
    assert_eq!(server.count("tasks/cancel"), 1);

    // A finished handle never cancels.
    let done = run_task(client.task().cancel_on_drop(), "export")
        .await
        .unwrap();
    drop(done);
    tokio::time::sleep(ms(10)).await;
    assert_eq!(server.count("tasks/cancel"), 1);
}

#[tokio::test(start_paused = true)]
async fn handles_can_be_parked_in_spawned_tasks() {
    let server = slow();
    let client = client(&server).await;
    let mut joins = Vec::new();
    for _ in 0..5 {
        let state = client.task().call_tool("export", json!({})).await.unwrap();
        joins.push(tokio::spawn(async move {
            state.await.map(|t| t.into_outcome())
        }));
    }
    for j in joins {
        assert!(j.await.unwrap().unwrap().is_completed());
    }
    assert_eq!(server.task_ids().len(), 5);
}
