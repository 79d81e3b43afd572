//! Servers that are legal but extreme, or quirky in ways real peers are:
//! huge or fractional poll intervals, a connection that dies mid-wait, a
//! status from a later revision, pushes on the wrong stream, garbage where
//! a reply should be, and slow intervals after a write. Each test drives
//! the client the way a user would and checks what the user would notice:
//! when the wait ends, how, and with which handle.

mod support;

use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use mcp_tasks::protocol::{ElicitResult, TaskStatus};
use mcp_tasks::testing::TaskScript;
use mcp_tasks::transport::{Inbound, MessageStream, memory};
use mcp_tasks::{Client, TaskState, Updates};
use serde_json::{Value, json};
use support::*;
use tokio::time::Instant;

/// The next request the client sent (skipping notifications), within a
/// minute of paused time.
async fn next_request(stream: &mut memory::MemoryStream) -> Value {
    let next = async {
        loop {
            let v = next_json(stream).await;
            if v.get("id").is_some() {
                return v;
            }
        }
    };
    tokio::time::timeout(ms(60_000), next)
        .await
        .expect("the client sent no request within a minute")
}

fn result(request: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string()
}

fn created(id: &str, status: &str, interval: Value) -> Value {
    json!({"resultType": "task", "taskId": id, "status": status, "ttlMs": null, "pollIntervalMs": interval})
}

fn snapshot(id: &str, status: &str, interval: Value) -> Value {
    json!({"resultType": "complete", "taskId": id, "status": status, "ttlMs": null, "pollIntervalMs": interval})
}

fn completed(id: &str) -> Value {
    json!({"resultType": "complete", "taskId": id, "status": "completed", "ttlMs": null,
           "result": {"content": [{"type": "text", "text": "done"}]}})
}

/// Reads the task `t-1` (`tasks/get`) in the background.
fn read_t1(
    client: &Client,
) -> tokio::task::JoinHandle<mcp_tasks::Result<mcp_tasks::protocol::DetailedTask>> {
    let client = client.clone();
    tokio::spawn(async move {
        client
            .get_task(&mcp_tasks::protocol::TaskId::new("t-1"))
            .await
    })
}

/// A client on a hand-driven server, and the server's two ends.
struct Raw {
    client: Client,
    sink: memory::MemorySink,
    stream: memory::MemoryStream,
}

/// A call to `export` on a hand-driven server (listening when `listen`,
/// with a 100 s bound), its `tools/call` answered with `creation`: the
/// connection, and the call going on.
async fn call_answered(
    creation: Value,
    listen: bool,
) -> (Raw, tokio::task::JoinHandle<mcp_tasks::Result<TaskState>>) {
    let (client, mut sink, mut stream) = raw_peer().await;
    let call = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .task()
                .listen_if(listen)
                .timeout(ms(100_000))
                .call_tool("export", json!({}))
                .await
        }
    });
    let request = next_request(&mut stream).await;
    reply(&mut sink, result(&request, creation)).await;
    let raw = Raw {
        client,
        sink,
        stream,
    };
    (raw, call)
}

/// Starts a task on a hand-driven server: [`call_answered`] with a
/// `working` creation result for `id` suggesting `interval`. Returns the
/// connection, the pending handle and when the creation result was sent.
async fn start_task(
    id: &str,
    interval: Value,
    listen: bool,
) -> (Raw, mcp_tasks::Task<mcp_tasks::Pending>, Instant) {
    let (raw, call) = call_answered(created(id, "working", interval), listen).await;
    let created_at = Instant::now();
    let TaskState::Pending(task) = call.await.unwrap().unwrap() else {
        panic!("expected a pending task")
    };
    (raw, task, created_at)
}

async fn statuses(mut updates: Updates) -> Vec<TaskStatus> {
    let mut out = Vec::new();
    while let Some(s) = poll_fn(|cx| Pin::new(&mut updates).poll_next(cx)).await {
        out.push(s.unwrap().status);
    }
    out
}

// ---- 1. The poll interval has a ceiling --------------------------------

#[tokio::test(start_paused = true)]
async fn a_huge_poll_interval_is_capped_so_the_end_is_seen() {
    // 10^12 ms is 31 years: without a ceiling no read would ever come.
    let server = polled_export(Duration::from_millis(1_000_000_000_000), ms(45_000), "done");
    let client = client(&server).await;
    let task = start_pending(client.task(), "export").await;
    let done = client_wait(task, ms(120_000)).await.unwrap();
    assert!(done.outcome().is_completed());
    // Read at the default ceiling (30 s): at 30 s (working), at 60 s (done).
    let call_at = of(&server, "tools/call")[0].at;
    assert_eq!(of(&server, "tasks/get")[0].at - call_at, ms(30_000));
    assert_eq!(gaps(&server, "tasks/get"), [ms(30_000)]);
}

async fn client_wait(
    task: mcp_tasks::Task<mcp_tasks::Pending>,
    bound: Duration,
) -> Result<mcp_tasks::Task<mcp_tasks::Finished>, mcp_tasks::TaskError<TaskState>> {
    // The builder's timeout is 60 s; re-wait until `bound` has passed.
    let until = Instant::now() + bound;
    let mut state = TaskState::Pending(task);
    loop {
        let r = match state {
            TaskState::Pending(t) => t.finish().await,
            TaskState::InputRequired(t) => t.finish().await,
            TaskState::Finished(t) => return Ok(t),
        };
        match r {
            Err(e) if e.error().is_deadline() && Instant::now() < until => state = e.into_task(),
            other => return other,
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_wait_resumed_after_its_deadline_reads_at_once_when_the_last_read_is_stale() {
    let server = polled_export(Duration::from_millis(u64::MAX), ms(5_000), "done");
    let client = client(&server).await;
    let started = Instant::now();
    let state = start_export_within(&client, ms(10_000)).await;
    let TaskState::Pending(task) = state else {
        panic!("expected a pending task")
    };
    let err = task.finish().await.unwrap_err();
    assert!(err.error().is_deadline(), "{err}");
    assert_eq!(server.count("tasks/get"), 0, "not due before the ceiling");
    // The caller comes back later: the last read (the creation) is older
    // than the ceiling, so the next wait reads at once.
    tokio::time::sleep(ms(25_000)).await;
    let TaskState::Pending(task) = err.into_task() else {
        panic!("still pending")
    };
    let resumed_at = Instant::now();
    let done = task.finish().await.unwrap();
    assert!(done.outcome().is_completed());
    assert_eq!(of(&server, "tasks/get")[0].at, resumed_at);
    assert_eq!(resumed_at - started, ms(35_000));
}

#[tokio::test(start_paused = true)]
async fn the_ceiling_is_a_builder_setting() {
    let server = polled_export(ms(600_000), ms(12_000), "done");
    let client = client(&server).await;
    let done = run_task(client.task().max_poll_interval(ms(5_000)), "export")
        .await
        .unwrap();
    assert!(done.outcome().is_completed());
    assert_eq!(gaps(&server, "tasks/get"), [ms(5_000), ms(5_000)]);
}

#[tokio::test(start_paused = true)]
async fn fractional_and_float_intervals_round_up_to_whole_milliseconds() {
    for (sent, expected) in [
        (json!(250.2), ms(251)),
        (json!(1.5e3), ms(1_500)),
        (json!(1e12), ms(30_000)),
    ] {
        let (mut raw, task, created_at) = start_task("t-1", sent.clone(), false).await;
        let wait = tokio::spawn(task.finish());
        let read = next_request(&mut raw.stream).await;
        assert_eq!(read["method"], "tasks/get");
        assert_eq!(
            Instant::now() - created_at,
            expected,
            "pollIntervalMs {sent}"
        );
        reply(&mut raw.sink, result(&read, completed("t-1"))).await;
        assert!(wait.await.unwrap().unwrap().outcome().is_completed());
    }
}

// ---- 2. A dead server is noticed at once -------------------------------

#[tokio::test(start_paused = true)]
async fn a_closed_connection_wakes_a_waiting_task_at_once() {
    let (raw, task, _) = start_task("t-dead", json!(20_000), false).await;
    let started = Instant::now();
    let wait = tokio::spawn(task.finish());
    tokio::time::sleep(ms(1_000)).await;
    // The server goes away: its ends of the connection are dropped.
    drop((raw.sink, raw.stream));
    let err = wait.await.unwrap().unwrap_err();
    assert_eq!(
        Instant::now() - started,
        ms(1_000),
        "woken when the connection closed"
    );
    assert!(err.error().is_transport(), "{err}");
    assert!(!err.error().is_deadline());
    assert!(raw.client.closed_reason().is_some());
    // The handle comes back, with its id.
    let task = err.into_task();
    assert_eq!(task.id().unwrap().expose(), "t-dead");
}

// ---- 3. An unknown status keeps the task --------------------------------

#[tokio::test(start_paused = true)]
async fn an_unknown_status_in_a_creation_result_keeps_the_task() {
    let (
        Raw {
            client: _client,
            mut sink,
            mut stream,
        },
        call,
    ) = call_answered(created("t-new", "paused", json!(100)), false).await;
    // Not `working`: read at once. Still paused.
    let read = next_request(&mut stream).await;
    assert_eq!(read["method"], "tasks/get");
    reply(
        &mut sink,
        result(&read, snapshot("t-new", "paused", json!(100))),
    )
    .await;
    let state = call.await.unwrap().expect("the task is not lost");
    let TaskState::Pending(task) = state else {
        panic!("an unknown status is pending, got {state:?}")
    };
    assert_eq!(task.id().expose(), "t-new");
    assert_eq!(task.snapshot().status, TaskStatus::Unknown);
    assert_eq!(task.snapshot().unknown_status.as_deref(), Some("paused"));
    // Polling goes on, and a known status later applies as usual.
    let wait = tokio::spawn(task.finish());
    let read = next_request(&mut stream).await;
    reply(
        &mut sink,
        result(&read, snapshot("t-new", "paused", json!(100))),
    )
    .await;
    let read = next_request(&mut stream).await;
    reply(&mut sink, result(&read, completed("t-new"))).await;
    let done = wait.await.unwrap().unwrap();
    assert!(done.outcome().is_completed());
    assert_eq!(done.snapshot().unknown_status, None);
}

/// A creation result that names its task but does not read: the error
/// carries the task's id, so that the task can still be resumed or
/// cancelled rather than left running unknown.
#[tokio::test(start_paused = true)]
async fn a_malformed_creation_result_keeps_the_task_id_in_its_error() {
    let creation = json!({"resultType": "task", "taskId": "t-bad", "status": 7});
    let (_raw, call) = call_answered(creation, false).await;
    let e = call.await.unwrap().unwrap_err();
    assert!(e.is_protocol(), "{e}");
    assert_eq!(e.task_id().map(|id| id.expose()), Some("t-bad"), "{e}");
}

#[tokio::test(start_paused = true)]
async fn decode_errors_say_what_was_wrong_not_invalid_json() {
    let (client, mut sink, mut stream) = raw_peer().await;
    let read = read_t1(&client);
    let request = next_request(&mut stream).await;
    reply(
        &mut sink,
        result(
            &request,
            json!({"taskId": "t-1", "status": 7, "ttlMs": null}),
        ),
    )
    .await;
    let e = read.await.unwrap().unwrap_err();
    let text = e.to_string();
    assert!(e.is_protocol(), "{text}");
    assert!(!text.contains("invalid JSON"), "{text}");
    assert!(
        text.contains("invalid type: integer `7`, expected a string"),
        "{text}"
    );
}

// ---- 4. Pushes are correlated by task id, whatever the stream ----------

/// A listening client's side channel, served: `subscriptions/listen` is
/// acknowledged, `tasks/get` answered with `now`. `true` for a `tasks/get`.
async fn serve_listen_or_get(
    sink: &mut mcp_tasks::transport::memory::MemorySink,
    message: std::io::Result<Option<Inbound>>,
    now: Value,
) -> bool {
    let Ok(Some(Inbound::Message(text))) = message else {
        panic!("the client went away")
    };
    let request: Value = serde_json::from_str(&text).unwrap();
    match request["method"].as_str() {
        Some("subscriptions/listen") => {
            let ack = json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                "params": {"notifications": {}, "_meta": {"io.modelcontextprotocol/subscriptionId": request["id"]}}});
            reply(sink, ack.to_string()).await;
            false
        }
        Some("tasks/get") => {
            reply(sink, result(&request, now)).await;
            true
        }
        _ => false,
    }
}

/// Waits for the task `id` started on `raw` while serving it: sends each
/// of `pushes` at its time from now, and answers the side channel
/// ([`serve_listen_or_get`]) with the task as it stands: `working` at
/// `interval` until the last push is out, `completed` after. Returns the
/// finished task and the number of `tasks/get` the client sent.
async fn wait_serving(
    mut raw: Raw,
    task: mcp_tasks::Task<mcp_tasks::Pending>,
    id: &str,
    interval: Value,
    pushes: Vec<(Duration, String)>,
) -> (mcp_tasks::Task<mcp_tasks::Finished>, usize) {
    let mut wait = tokio::spawn(task.finish());
    let started = Instant::now();
    let mut pushes = pushes.into_iter().peekable();
    let mut gets = 0;
    loop {
        let due = pushes.peek().map(|(at, _)| started + *at);
        tokio::select! {
            done = &mut wait => return (done.unwrap().unwrap(), gets),
            message = raw.stream.recv() => {
                let now = match due {
                    None => completed(id),
                    Some(_) => snapshot(id, "working", interval.clone()),
                };
                if serve_listen_or_get(&mut raw.sink, message, now).await {
                    gets += 1;
                }
            }
            () = tokio::time::sleep_until(due.unwrap_or(started)), if due.is_some() => {
                let (_, push) = pushes.next().unwrap();
                reply(&mut raw.sink, push).await;
            }
        }
    }
}

/// Drives a task (listening when `listen`) against a hand-driven server
/// that acknowledges `subscriptions/listen` without echoing the task ids
/// and pushes snapshots without a subscription id, as rmcp does. Returns
/// the number of `tasks/get` the client sent.
async fn untagged_pushes_run(listen: bool) -> usize {
    let (raw, task, _) = start_task("t-push", json!(300), listen).await;
    let push = |body: Value| {
        json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": body}).to_string()
    };
    // A push every 200 ms, the end (pushed) at 1 s.
    let mut pushes = Vec::new();
    for step in 1..5 {
        let mut body = snapshot("t-push", "working", json!(300));
        body["statusMessage"] = json!(format!("step {step}"));
        pushes.push((ms(200 * step), push(body)));
    }
    pushes.push((ms(1_000), push(completed("t-push"))));
    let (done, gets) = wait_serving(raw, task, "t-push", json!(300), pushes).await;
    assert!(done.outcome().is_completed());
    gets
}

#[tokio::test(start_paused = true)]
async fn pushes_without_a_subscription_id_save_reads() {
    let polling = untagged_pushes_run(false).await;
    let listening = untagged_pushes_run(true).await;
    // Polling at 300 ms: reads at 0.3, 0.6, 0.9 and 1.2 s (the end came at
    // 1 s). The pushes (every 200 ms, the last one terminal) keep the
    // listening task current: no read at all.
    assert_eq!(polling, 4, "polling");
    assert_eq!(listening, 0, "pushes applied by task id");
}

// ---- 6. Lost replies are counted and named -------------------------------

#[tokio::test(start_paused = true)]
async fn garbage_where_a_reply_should_be_is_counted_and_named_in_the_timeout() {
    let (client, mut sink, mut stream) = raw_peer().await;
    let read = read_t1(&client);
    let request = next_request(&mut stream).await;
    // A reply under an id never sent, and a line that is not JSON-RPC.
    reply(&mut sink, result(&json!({"id": 9999}), completed("t-1"))).await;
    reply(&mut sink, "{\"jsonrpc\": \"2.0\", \"id\": ".to_owned()).await;
    let e = read.await.unwrap().unwrap_err();
    assert!(e.is_timeout(), "{e}");
    let text = e.to_string();
    assert!(
        text.contains("2 messages from the server were skipped"),
        "{text}"
    );
    assert_eq!(client.stats().discarded_messages, 2);
    assert_eq!(client.stats().pending_requests, 0);
    drop(request);
    // A clean timeout says nothing of the kind.
    let read = read_t1(&client);
    let _ = next_request(&mut stream).await;
    let e = read.await.unwrap().unwrap_err();
    assert!(e.is_timeout() && !e.to_string().contains("skipped"), "{e}");
}

#[tokio::test]
async fn a_line_that_is_not_utf8_is_counted() {
    use mcp_tasks::transport::LineTransport;
    use tokio::io::AsyncWriteExt;
    let (client_end, mut server_end) = tokio::io::duplex(4096);
    let (read_half, write_half) = tokio::io::split(client_end);
    let client = Client::builder()
        .request_timeout(ms(200))
        .protocol_version("2026-07-28")
        .connect(LineTransport::new(read_half, write_half))
        .await
        .unwrap();
    server_end.write_all(b"\xff\xfe not text\n").await.unwrap();
    server_end.flush().await.unwrap();
    let deadline = Instant::now() + ms(2_000);
    while client.stats().discarded_messages == 0 && Instant::now() < deadline {
        tokio::time::sleep(ms(5)).await;
    }
    assert_eq!(client.stats().discarded_messages, 1);
    assert!(client.closed_reason().is_none(), "the connection lives on");
}

// ---- 9. updates() shows input_required ------------------------------------

#[tokio::test(start_paused = true)]
async fn updates_yield_the_input_required_snapshot_and_the_working_after_it() {
    let server = export(
        TaskScript::new()
            .poll_interval(ms(100))
            .working(ms(50), "preparing")
            .input(ms(100), requests(&["confirm"]))
            .working(ms(10), "exporting")
            .complete_with_inputs(ms(300)),
    );
    let client = client_with(&server, accept_forms()).await;
    let task = start_pending(client.task(), "export").await;
    let seen = statuses(task.updates()).await;
    use TaskStatus::*;
    let mut dedup = seen.clone();
    dedup.dedup();
    assert_eq!(
        dedup,
        [Working, InputRequired, Working, Completed],
        "{seen:?}"
    );
    assert_eq!(server.count("tasks/update"), 1);
}

// ---- 12. A write is followed by a read soon ------------------------------

#[tokio::test(start_paused = true)]
async fn cancel_and_wait_against_a_slow_interval_ends_soon_after_the_ack() {
    let server = polled_export(ms(5_000), ms(600_000), "never");
    let client = client(&server).await;
    let task = start_pending(client.task(), "export").await;
    let started = Instant::now();
    let done = task.cancel_and_wait().await.unwrap();
    assert!(matches!(done.outcome(), mcp_tasks::Outcome::Cancelled));
    // One read at the floor (50 ms) after the acknowledgement, not 5 s.
    assert_eq!(Instant::now() - started, ms(50));
    assert_eq!(server.count("tasks/get"), 1);
}

#[tokio::test(start_paused = true)]
async fn an_answer_is_followed_by_one_read_soon_then_the_interval() {
    let server = export(
        TaskScript::new()
            .poll_interval(ms(5_000))
            .input(ms(10), requests(&["confirm"]))
            .working(ms(0), "exporting")
            .complete_with_inputs(ms(12_000)),
    );
    let client = client_with(&server, accept_forms()).await;
    let task = start_pending(client.task(), "export").await;
    let done = task.finish().await.unwrap();
    assert!(done.outcome().is_completed());
    let update_at = of(&server, "tasks/update")[0].at;
    let reads: Vec<_> = of(&server, "tasks/get").iter().map(|r| r.at).collect();
    // The read that saw the question (5 s), the answer, one read 50 ms
    // later that sees `working`, then reads 5 s apart until the end.
    assert_eq!(reads[0], update_at);
    assert_eq!(reads[1] - update_at, ms(50));
    assert_eq!(
        gaps(&server, "tasks/get")[1..],
        [ms(5_000), ms(5_000), ms(5_000)]
    );
}

#[tokio::test(start_paused = true)]
async fn respond_by_hand_is_followed_by_a_read_soon() {
    let server = export(
        TaskScript::new()
            .poll_interval(ms(5_000))
            .input(ms(10), requests(&["confirm"]))
            .complete_with_inputs(ms(100)),
    );
    let client = client(&server).await;
    let task = start_pending(client.task().input(mcp_tasks::InputMode::Manual), "export").await;
    let err = task.finish().await.unwrap_err();
    let TaskState::InputRequired(task) = err.into_task() else {
        panic!("expected input_required")
    };
    let answered_at = Instant::now();
    let answer =
        mcp_tasks::protocol::InputResponse::Elicit(ElicitResult::accept(json!({"ok": true})));
    let TaskState::Pending(task) = task.respond_one("confirm", answer).await.unwrap() else {
        panic!("every key answered")
    };
    let done = task.finish().await.unwrap();
    assert!(done.outcome().is_completed());
    // 50 ms (working, the answer applied) and 5 s later (completed): not 5 s + 5 s.
    assert_eq!(Instant::now() - answered_at, ms(5_050));
    let last_two: Vec<_> = of(&server, "tasks/get")
        .iter()
        .rev()
        .take(2)
        .map(|r| r.at - answered_at)
        .collect();
    assert_eq!(last_two, [ms(5_050), ms(50)]);
}

/// A 2025-11-25 `notifications/tasks/status` (no payload) from a
/// 2026-07-28 server, as some servers send on either era: a listening
/// handle reads the task at once instead of at its 10 s interval.
#[tokio::test(start_paused = true)]
async fn a_2025_status_notification_makes_a_listening_task_read_at_once() {
    let (raw, task, _) = start_task("t-status", json!(10_000), true).await;
    let started = Instant::now();
    let status = json!({"jsonrpc": "2.0", "method": "notifications/tasks/status",
        "params": {"taskId": "t-status", "status": "completed"}});
    let pushes = vec![(ms(1_000), status.to_string())];
    let (finished, _) = wait_serving(raw, task, "t-status", json!(10_000), pushes).await;
    assert!(finished.outcome().is_completed());
    assert!(started.elapsed() < ms(2_000), "{:?}", started.elapsed());
}
