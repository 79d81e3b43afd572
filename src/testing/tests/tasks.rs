//! Wire-level tests of tasks: lifecycle, input, cancellation, expiry,
//! the extension check and listen streams.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::sleep;

use super::{Wire, accept, code, ms, requests, with_meta};
use crate::protocol::{
    CallToolResult, META_SUBSCRIPTION_ID, RpcError, TASKS_EXTENSION, TaskStatus,
};
use crate::testing::*;

fn server_with(script: TaskScript) -> TestServer {
    TestServer::new().tool(ScriptedTool::task("job", script))
}

/// Calls the task tool and returns the `CreateTaskResult` and the task id.
async fn start(wire: &mut Wire) -> (Value, String) {
    let r = wire.call("tools/call", json!({"name": "job"}), true).await;
    let created = r["result"].clone();
    assert_eq!(created["resultType"], "task", "{r}");
    let id = created["taskId"].as_str().unwrap().to_owned();
    (created, id)
}

/// Asks for a listen stream on task `id` and returns the request's id.
async fn listen(wire: &mut Wire, id: &str) -> i64 {
    let params = json!({"notifications": {"taskIds": [id]}});
    wire.request("subscriptions/listen", params, true).await
}

async fn get(wire: &mut Wire, id: &str) -> Value {
    let r = wire.call("tasks/get", json!({"taskId": id}), true).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    r["result"].clone()
}

async fn update(wire: &mut Wire, id: &str, responses: Value) -> Value {
    wire.call(
        "tasks/update",
        json!({"taskId": id, "inputResponses": responses}),
        true,
    )
    .await
}

async fn cancel(wire: &mut Wire, id: &str) -> Value {
    let r = wire.call("tasks/cancel", json!({"taskId": id}), true).await;
    assert_eq!(r["result"]["resultType"], "complete", "{r}");
    r
}

#[tokio::test(start_paused = true)]
async fn a_task_follows_its_steps() {
    let server = server_with(
        TaskScript::new()
            .poll_interval(ms(100))
            .status_message("queued")
            .working(ms(100), "halfway")
            .set_poll_interval(ms(100), ms(250))
            .complete(ms(100), CallToolResult::text("done")),
    );
    let mut wire = Wire::open(&server).await;
    let (created, id) = start(&mut wire).await;
    assert_eq!(created["status"], "working");
    assert_eq!(created["statusMessage"], "queued");
    assert_eq!(created.get("ttlMs"), Some(&Value::Null));
    assert_eq!(created["pollIntervalMs"], 100);
    assert_eq!(created["createdAt"], "2026-08-01T09:00:00.000Z");
    assert_eq!(created["lastUpdatedAt"], created["createdAt"]);
    assert!(id.starts_with("task-1-"), "{id}");
    assert_eq!(
        server.task_ids(),
        [crate::protocol::TaskId::new(id.as_str())]
    );

    let t = get(&mut wire, &id).await;
    assert_eq!(
        (t["status"].as_str(), t["statusMessage"].as_str()),
        (Some("working"), Some("queued"))
    );
    sleep(ms(150)).await;
    let t = get(&mut wire, &id).await;
    assert_eq!(t["statusMessage"], "halfway");
    assert_eq!(t["lastUpdatedAt"], "2026-08-01T09:00:00.100Z");
    assert_eq!(t["pollIntervalMs"], 100);
    sleep(ms(100)).await;
    assert_eq!(get(&mut wire, &id).await["pollIntervalMs"], 250);
    sleep(ms(100)).await;
    let t = get(&mut wire, &id).await;
    assert_eq!(t["status"], "completed");
    assert_eq!(t["result"]["content"][0]["text"], "done");
    assert_eq!(t["lastUpdatedAt"], "2026-08-01T09:00:00.300Z");
    sleep(Duration::from_secs(60)).await;
    assert_eq!(get(&mut wire, &id).await["status"], "completed");
    assert!(server.requests().iter().all(|r| r.declares_tasks()));
    assert_eq!(server.requests()[1].task_id(), Some(id.as_str()));
}

#[tokio::test(start_paused = true)]
async fn failure_and_a_misleading_seed_status() {
    let server = server_with(
        TaskScript::new()
            .initial_status(TaskStatus::InputRequired)
            .fail(ms(50), RpcError::new(-32603, "disk full")),
    );
    let mut wire = Wire::open(&server).await;
    let (created, id) = start(&mut wire).await;
    assert_eq!(created["status"], "input_required");
    assert!(created.get("pollIntervalMs").is_none());
    assert_eq!(get(&mut wire, &id).await["status"], "working");
    sleep(ms(50)).await;
    let t = get(&mut wire, &id).await;
    assert_eq!(t["status"], "failed");
    assert_eq!(t["error"], json!({"code": -32603, "message": "disk full"}));
    assert_eq!(t["statusMessage"], "disk full");
}

#[tokio::test(start_paused = true)]
async fn input_is_answered_through_tasks_update() {
    let server = server_with(
        TaskScript::new()
            .input(ms(100), requests(&["a", "b"]))
            .complete_with_inputs(ms(100)),
    );
    let mut wire = Wire::open(&server).await;
    let (_, id) = start(&mut wire).await;
    // Before the input step nothing is outstanding; answers are ignored.
    assert_eq!(
        update(&mut wire, &id, json!({"a": accept(0)})).await["result"]["resultType"],
        "complete"
    );
    sleep(ms(100)).await;
    let t = get(&mut wire, &id).await;
    assert_eq!(t["status"], "input_required");
    assert_eq!(t["inputRequests"]["a"]["method"], "elicitation/create");
    assert!(t["inputRequests"]["b"].is_object());

    // A partial answer (plus an unknown key) leaves the rest outstanding.
    let r = update(&mut wire, &id, json!({"a": accept(1), "zz": accept(9)})).await;
    assert_eq!(r["result"]["resultType"], "complete");
    let t = get(&mut wire, &id).await;
    assert_eq!(t["status"], "input_required");
    assert_eq!(t["inputRequests"].as_object().unwrap().len(), 1);
    assert!(t["inputRequests"]["b"].is_object());
    // Answering a key twice changes nothing.
    update(&mut wire, &id, json!({"a": accept(5)})).await;
    // Malformed updates are errors and change nothing.
    for bad in [json!([1]), json!(null)] {
        assert_eq!(code(&update(&mut wire, &id, bad).await), -32602);
    }
    assert_eq!(
        code(&update(&mut wire, &id, json!({"b": {"bogus": 1}})).await),
        -32602
    );
    assert_eq!(get(&mut wire, &id).await["status"], "input_required");

    update(&mut wire, &id, json!({"b": accept(2)})).await;
    assert_eq!(get(&mut wire, &id).await["status"], "working");
    sleep(ms(99)).await;
    assert_eq!(get(&mut wire, &id).await["status"], "working");
    sleep(ms(1)).await;
    let t = get(&mut wire, &id).await;
    assert_eq!(t["status"], "completed");
    assert_eq!(
        t["result"]["structuredContent"],
        json!({"inputResponses": {"a": accept(1), "b": accept(2)}})
    );
    // Updating a finished task is acknowledged and ignored.
    update(&mut wire, &id, json!({"b": accept(3)})).await;
    assert_eq!(get(&mut wire, &id).await["status"], "completed");
}

#[tokio::test(start_paused = true)]
async fn cancel_is_cooperative() {
    let done = || CallToolResult::text("done");
    // At once (the default).
    let server = server_with(TaskScript::new().complete(Duration::from_secs(10), done()));
    let mut wire = Wire::open(&server).await;
    let (_, id) = start(&mut wire).await;
    cancel(&mut wire, &id).await;
    let t = get(&mut wire, &id).await;
    assert_eq!(t["status"], "cancelled");
    assert!(t["statusMessage"].is_string());
    cancel(&mut wire, &id).await;
    sleep(Duration::from_secs(20)).await;
    assert_eq!(get(&mut wire, &id).await["status"], "cancelled");

    // After a delay.
    let server = server_with(
        TaskScript::new()
            .cancel_delay(ms(500))
            .complete(Duration::from_secs(10), done()),
    );
    let mut wire = Wire::open(&server).await;
    let (_, id) = start(&mut wire).await;
    cancel(&mut wire, &id).await;
    assert_eq!(get(&mut wire, &id).await["status"], "working");
    sleep(ms(500)).await;
    assert_eq!(get(&mut wire, &id).await["status"], "cancelled");

    // The work finishes before the delay runs out.
    let server = server_with(
        TaskScript::new()
            .cancel_delay(ms(500))
            .complete(ms(100), done()),
    );
    let mut wire = Wire::open(&server).await;
    let (_, id) = start(&mut wire).await;
    cancel(&mut wire, &id).await;
    sleep(ms(600)).await;
    assert_eq!(get(&mut wire, &id).await["status"], "completed");

    // Ignored.
    let server = server_with(TaskScript::new().ignore_cancel().complete(ms(100), done()));
    let mut wire = Wire::open(&server).await;
    let (_, id) = start(&mut wire).await;
    cancel(&mut wire, &id).await;
    assert_eq!(get(&mut wire, &id).await["status"], "working");
    sleep(ms(100)).await;
    assert_eq!(get(&mut wire, &id).await["status"], "completed");
    // Already terminal: acknowledged, nothing changes.
    cancel(&mut wire, &id).await;
    assert_eq!(get(&mut wire, &id).await["status"], "completed");
    assert_eq!(server.count("tasks/cancel"), 2);
}

#[tokio::test(start_paused = true)]
async fn expired_and_unknown_tasks_are_not_found() {
    let server = server_with(TaskScript::new().ttl(Duration::from_secs(1)));
    let mut wire = Wire::open(&server).await;
    let (created, id) = start(&mut wire).await;
    assert_eq!(created["ttlMs"], 1000);
    sleep(ms(999)).await;
    assert_eq!(get(&mut wire, &id).await["ttlMs"], 1000);
    sleep(ms(1)).await;
    for method in ["tasks/get", "tasks/cancel"] {
        let r = wire.call(method, json!({"taskId": id}), true).await;
        assert_eq!(code(&r), -32602);
        assert_eq!(r["error"]["message"], "task not found");
    }
    let r = update(&mut wire, &id, json!({})).await;
    assert_eq!(code(&r), -32602);
    let r = wire
        .call("tasks/get", json!({"taskId": "task-9-0"}), true)
        .await;
    assert_eq!(code(&r), -32602);
    let r = wire.call("tasks/get", json!({}), true).await;
    assert_eq!(code(&r), -32602);
    assert_eq!(server.task_ids().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn tasks_need_the_extension() {
    let server = server_with(TaskScript::new());
    let mut wire = Wire::open(&server).await;
    let r = wire.call("tools/call", json!({"name": "job"}), false).await;
    assert_eq!(code(&r), -32021);
    assert_eq!(
        r["error"]["data"],
        json!({"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}})
    );
    assert!(server.task_ids().is_empty());
    let (_, id) = start(&mut wire).await;
    for (method, params) in [
        ("tasks/get", json!({"taskId": id})),
        ("tasks/cancel", json!({"taskId": id})),
        ("tasks/update", json!({"taskId": id, "inputResponses": {}})),
        (
            "subscriptions/listen",
            json!({"notifications": {"taskIds": [id]}}),
        ),
    ] {
        assert_eq!(
            code(&wire.call(method, params, false).await),
            -32021,
            "{method}"
        );
    }
    // A listen request without taskIds does not need it.
    let listen = wire
        .request(
            "subscriptions/listen",
            json!({"notifications": {"toolsListChanged": true}}),
            false,
        )
        .await;
    let ack = wire.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(
        ack["params"]["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(ack["params"]["_meta"][META_SUBSCRIPTION_ID], listen);
}

#[tokio::test(start_paused = true)]
async fn listen_pushes_every_change_until_ended() {
    let server = server_with(
        TaskScript::new()
            .poll_interval(ms(100))
            .working(ms(100), "step one")
            .input(ms(100), requests(&["ok"]))
            .complete(ms(100), CallToolResult::text("done")),
    );
    let mut wire = Wire::open(&server).await;
    let (_, id) = start(&mut wire).await;
    let (_, other) = start(&mut wire).await;
    let params = with_meta(
        json!({"notifications": {"taskIds": [id, "task-77-x", id]}}),
        true,
    );
    wire.send(
        json!({"jsonrpc": "2.0", "id": "L1", "method": "subscriptions/listen", "params": params}),
    )
    .await;
    let ack = wire.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
    assert_eq!(ack["params"]["notifications"], json!({"taskIds": [id]}));
    assert_eq!(ack["params"]["_meta"][META_SUBSCRIPTION_ID], "L1");
    assert_eq!(server.open_subscriptions(), 1);

    let push = |m: &Value, status: &str| {
        assert_eq!(m["method"], "notifications/tasks", "{m}");
        assert_eq!(m["params"]["taskId"], json!(id));
        assert_eq!(m["params"]["status"], status, "{m}");
        assert_eq!(m["params"]["_meta"][META_SUBSCRIPTION_ID], "L1");
        assert_eq!(m["params"]["pollIntervalMs"], 100);
    };
    let m = wire.recv().await;
    push(&m, "working");
    assert_eq!(m["params"]["statusMessage"], "step one");
    let m = wire.recv().await;
    push(&m, "input_required");
    assert!(m["params"]["inputRequests"]["ok"].is_object());
    // Other requests are served while the stream is open.
    let r = update(&mut wire, &id, json!({"ok": accept(1)})).await;
    assert_eq!(r["result"]["resultType"], "complete");
    push(&wire.notes.remove(0), "working");
    let m = wire.recv().await;
    push(&m, "completed");
    assert_eq!(m["params"]["result"]["content"][0]["text"], "done");
    assert_eq!(server.pushes(), 4);
    // The other task was not subscribed.
    cancel(&mut wire, &other).await;
    assert!(wire.notes.is_empty());
    assert_eq!(server.pushes(), 4);

    server.end_subscriptions();
    let end = wire.recv().await;
    assert_eq!(end["id"], "L1");
    assert_eq!(
        end["result"],
        json!({"resultType": "complete", "_meta": {META_SUBSCRIPTION_ID: "L1"}})
    );
    assert_eq!(server.open_subscriptions(), 0);
}

#[tokio::test(start_paused = true)]
async fn the_client_ends_a_listen_stream() {
    let server = server_with(
        TaskScript::new()
            .working(ms(100), "one")
            .working(ms(100), "two"),
    );
    let mut wire = Wire::open(&server).await;
    let (_, id) = start(&mut wire).await;
    let stream = listen(&mut wire, &id).await;
    assert_eq!(
        wire.recv().await["method"],
        "notifications/subscriptions/acknowledged"
    );
    sleep(ms(100)).await;
    assert_eq!(wire.recv().await["params"]["statusMessage"], "one");
    wire.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": stream}}),
    )
    .await;
    assert_eq!(wire.recv_within(ms(500)).await, None);
    assert_eq!(server.open_subscriptions(), 0);
    assert_eq!(server.pushes(), 1);
    assert_eq!(get(&mut wire, &id).await["statusMessage"], "two");
    // Ending the (now empty) set of streams sends nothing.
    server.end_subscriptions();
    assert_eq!(wire.recv_within(ms(10)).await, None);
}

#[tokio::test(start_paused = true)]
async fn listen_can_be_refused_or_acknowledged_without_task_ids() {
    let script = TaskScript::new().working(ms(100), "one");
    let server = server_with(script.clone()).accept_listen_task_ids(false);
    let mut wire = Wire::open(&server).await;
    let (_, id) = start(&mut wire).await;
    listen(&mut wire, &id).await;
    let ack = wire.recv().await;
    assert_eq!(ack["params"]["notifications"], json!({}));
    assert_eq!(wire.recv_within(ms(500)).await, None);
    assert_eq!(server.pushes(), 0);
    assert_eq!(server.open_subscriptions(), 1);

    let server = server_with(script).listen_supported(false);
    let mut wire = Wire::open(&server).await;
    let (_, id) = start(&mut wire).await;
    let asked = listen(&mut wire, &id).await;
    let r = wire.response_to(asked).await;
    assert_eq!(code(&r), -32601);
}

#[tokio::test(start_paused = true)]
async fn tasks_outlive_their_connection() {
    let server = server_with(TaskScript::new().complete(ms(100), CallToolResult::text("done")));
    let mut first = Wire::open(&server).await;
    let (_, id) = start(&mut first).await;
    listen(&mut first, &id).await;
    first.recv().await;
    assert_eq!(server.open_subscriptions(), 1);
    drop(first);
    let mut second = Wire::open(&server).await;
    sleep(ms(100)).await;
    assert_eq!(server.open_subscriptions(), 0);
    assert_eq!(get(&mut second, &id).await["status"], "completed");
    assert_eq!(server.pushes(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn works_on_a_multi_threaded_runtime_in_real_time() {
    let server = server_with(
        TaskScript::new()
            .working(ms(5), "one")
            .input(ms(5), requests(&["k"]))
            .complete(ms(5), CallToolResult::text("done")),
    );
    let mut wire = Wire::open(&server).await;
    let (_, id) = start(&mut wire).await;
    listen(&mut wire, &id).await;
    let mut statuses: Vec<Value> = Vec::new();
    while statuses.last() != Some(&json!("completed")) {
        let m = wire.recv().await;
        if m["method"] != "notifications/tasks" {
            continue;
        }
        statuses.push(m["params"]["status"].clone());
        if m["params"]["status"] == "input_required" {
            let r = update(&mut wire, &id, json!({"k": accept(1)})).await;
            assert_eq!(r["result"]["resultType"], "complete");
            statuses.extend(wire.notes.drain(..).map(|n| n["params"]["status"].clone()));
        }
    }
    assert_eq!(statuses.last(), Some(&json!("completed")));
    assert!(statuses.contains(&json!("input_required")));
    assert_eq!(server.pushes(), 4);
    server.end_subscriptions();
    assert!(wire.recv().await["result"].is_object());
}
