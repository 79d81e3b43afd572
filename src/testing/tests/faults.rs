//! Wire-level tests of the faults: each one misbehaves exactly as documented.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::sleep;

use super::{Wire, ms, with_meta};
use crate::protocol::{CallToolResult, META_SUBSCRIPTION_ID};
use crate::testing::*;

fn job(script: TaskScript, faults: Faults) -> TestServer {
    TestServer::new()
        .tool(ScriptedTool::task("job", script))
        .faults(faults)
}

async fn start(wire: &mut Wire) -> String {
    let r = wire.call("tools/call", json!({"name": "job"}), true).await;
    r["result"]["taskId"].as_str().unwrap().to_owned()
}

async fn listen(wire: &mut Wire, id: &str) {
    let params = with_meta(json!({"notifications": {"taskIds": [id]}}), true);
    wire.send(
        json!({"jsonrpc": "2.0", "id": "L", "method": "subscriptions/listen", "params": params}),
    )
    .await;
    let ack = wire.recv().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged");
}

/// `(subscription id, task id, status, status message)` of a push.
type Push = (Value, Value, Value, Value);

/// Each push, through `pick`, until 500 ms pass without one.
async fn pushes<T>(wire: &mut Wire, mut pick: impl FnMut(Push) -> T) -> Vec<T> {
    let mut out = Vec::new();
    while let Some(m) = wire.recv_within(ms(500)).await {
        assert_eq!(m["method"], "notifications/tasks", "{m}");
        let p = &m["params"];
        out.push(pick((
            p["_meta"][META_SUBSCRIPTION_ID].clone(),
            p["taskId"].clone(),
            p["status"].clone(),
            p["statusMessage"].clone(),
        )));
    }
    out
}

/// A connection to `server` that has started the job and listens to its
/// task, and the task's id.
async fn started(server: &TestServer) -> (Wire, String) {
    let mut wire = Wire::open(server).await;
    let id = start(&mut wire).await;
    listen(&mut wire, &id).await;
    (wire, id)
}

/// One working step ("one") after 10 ms, then completion after `finish`.
fn one_step(finish: Duration) -> TaskScript {
    TaskScript::new()
        .working(ms(10), "one")
        .complete(finish, CallToolResult::text("done"))
}

/// Completion after 10 ms and nothing before.
fn done_at_once() -> TaskScript {
    TaskScript::new().complete(ms(10), CallToolResult::text("done"))
}

fn two_steps() -> TaskScript {
    TaskScript::new()
        .working(ms(10), "one")
        .working(ms(10), "two")
        .complete(ms(10), CallToolResult::text("done"))
}

#[tokio::test(start_paused = true)]
async fn duplicate_pushes_come_twice() {
    let server = job(two_steps(), Faults::new().duplicate_pushes());
    let (mut wire, _) = started(&server).await;
    assert_eq!(
        pushes(&mut wire, |p| (p.2, p.3)).await,
        [
            (json!("working"), json!("one")),
            (json!("working"), json!("one")),
            (json!("working"), json!("two")),
            (json!("working"), json!("two")),
            (json!("completed"), json!("two")),
            (json!("completed"), json!("two")),
        ]
    );
    assert_eq!(server.faults_fired(), 3);
    assert_eq!(server.pushes(), 3, "pushes() counts snapshots, not copies");
}

#[tokio::test(start_paused = true)]
async fn reordered_pushes_swap_in_pairs_and_the_final_one_overtakes() {
    let server = job(two_steps(), Faults::new().reorder_pushes());
    let (mut wire, _) = started(&server).await;
    let messages = pushes(&mut wire, |p| p.3).await;
    // "one" is held, "two" takes it along; the final push (whose message
    // is still "two") finds nothing held.
    assert_eq!(messages, [json!("two"), json!("one"), json!("two")]);

    // A held push goes out alone after 50 ms.
    let slow = job(one_step(ms(1000)), Faults::new().reorder_pushes());
    let (mut wire, _) = started(&slow).await;
    sleep(ms(10 + 49)).await;
    assert!(wire.recv_within(ms(0)).await.is_none(), "still held");
    let m = wire.recv_within(ms(2)).await.expect("released after 50 ms");
    assert_eq!(m["params"]["statusMessage"], "one");
}

#[tokio::test(start_paused = true)]
async fn a_held_push_overtaken_by_the_final_one() {
    let server = job(one_step(ms(10)), Faults::new().reorder_pushes());
    let (mut wire, _) = started(&server).await;
    assert_eq!(
        pushes(&mut wire, |p| p.2).await,
        [json!("completed"), json!("working")]
    );
    assert_eq!(server.faults_fired(), 1);
}

#[tokio::test(start_paused = true)]
async fn stray_pushes_lie_about_a_task_that_does_not_exist() {
    let server = job(done_at_once(), Faults::new().stray_pushes());
    let (mut wire, id) = started(&server).await;
    let got = pushes(&mut wire, |p| p).await;
    assert_eq!(got.len(), 3, "{got:?}");
    assert!(got.contains(&(json!("L"), json!(id), json!("completed"), json!(null))));
    assert!(got.contains(&(
        json!("no-such-subscription"),
        json!("task-0-no-such-task"),
        json!("failed"),
        json!("a stray push")
    )));
    assert!(got.contains(&(
        json!("L"),
        json!("task-0-no-such-task"),
        json!("failed"),
        json!("a stray push")
    )));
}

#[tokio::test(start_paused = true)]
async fn a_task_regresses_after_its_first_terminal_read_and_push() {
    let server = job(done_at_once(), Faults::new().regress_after_terminal());
    let (mut wire, id) = started(&server).await;
    assert_eq!(
        pushes(&mut wire, |p| p.2).await,
        [json!("completed"), json!("working")]
    );
    let mut statuses = Vec::new();
    for _ in 0..3 {
        let r = wire.call("tasks/get", json!({"taskId": id}), true).await;
        statuses.push(r["result"]["status"].clone());
    }
    assert_eq!(statuses, ["completed", "working", "working"]);
    assert_eq!(server.faults_fired(), 3);
}

#[tokio::test(start_paused = true)]
async fn never_answered_requests_are_recorded_and_their_work_is_done() {
    let server = job(TaskScript::new(), Faults::new().never_answer("tools/call"));
    let mut wire = Wire::open(&server).await;
    let id = wire
        .request("tools/call", json!({"name": "job"}), true)
        .await;
    assert!(wire.recv_within(ms(60_000)).await.is_none());
    assert_eq!(server.count("tools/call"), 1);
    assert_eq!(server.task_ids().len(), 1, "the task was created");
    assert_eq!(server.faults_fired(), 1);
    // Other methods are answered.
    let r = wire.call("server/discover", json!({}), false).await;
    assert!(r["result"].is_object());
    assert!(id > 0);
}

#[tokio::test(start_paused = true)]
async fn a_task_result_where_none_may_be() {
    let server = TestServer::new().faults(Faults::new().task_result_for("tools/list"));
    let mut wire = Wire::open(&server).await;
    let r = wire.call("tools/list", json!({}), false).await;
    assert_eq!(r["result"]["resultType"], "task");
    assert_eq!(r["result"]["taskId"], "task-0-bogus");
    assert_eq!(server.faults_fired(), 1);
    assert!(server.task_ids().is_empty(), "no task exists");
}
