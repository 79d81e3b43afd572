//! Progress on a call: `on_progress` puts a `progressToken` in the call's
//! `_meta` on either era, every `notifications/progress` for it reaches the
//! callback in order, and each report restarts the request's timeout
//! within the builder's overall bound (paused time).

mod support;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks::protocol::Progress;
use mcp_tasks::{Client, Error};
use serde_json::{Value, json};
use support::*;
use tokio::time::Instant;

use support::hand_peer::{Peer, peer};

/// Sends a progress report for `token`.
async fn report(peer: &mut Peer, token: &Value, progress: Value) {
    let mut params = json!({"progressToken": token});
    params
        .as_object_mut()
        .unwrap()
        .extend(progress.as_object().unwrap().clone());
    peer.notify("notifications/progress", params).await;
}

/// A client speaking `version` with a 1 s request timeout, and its peer.
/// An initialize-era version is pinned, so the handshake has no probe.
async fn connect(version: &str) -> (Client, Peer) {
    let (ours, mut server) = peer();
    let connecting = tokio::spawn(
        Client::builder()
            .request_timeout(ms(1_000))
            .protocol_version(version)
            .connect(ours),
    );
    if version != "2026-07-28" {
        server.initialize(version).await;
    }
    (connecting.await.unwrap().unwrap(), server)
}

/// The reports a callback recorded.
type Seen = Arc<Mutex<Vec<Progress>>>;

/// Calls `long` with a progress callback that records each report.
fn call(
    client: &Client,
    timeout: Duration,
) -> (tokio::task::JoinHandle<Result<String, Error>>, Seen) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let client = client.clone();
    let handle = tokio::spawn(async move {
        let state = client
            .task()
            .timeout(timeout)
            .on_progress(move |p| record.lock().unwrap().push(p))
            .call_tool("long", json!({}))
            .await?;
        Ok(state.finish().await?.into_result()?.joined_text())
    });
    (handle, seen)
}

fn done() -> Value {
    json!({"content": [{"type": "text", "text": "done"}]})
}

async fn every_step_reaches_the_callback_in_order(version: &str) {
    let (client, mut server) = connect(version).await;
    let (call, seen) = call(&client, ms(60_000));
    let request = server.next().await;
    assert_eq!(request["method"], "tools/call");
    let token = request["params"]["_meta"]["progressToken"].clone();
    assert!(
        token.is_string() || token.is_number(),
        "the call asks for progress: {request}"
    );
    for step in 1..=5 {
        tokio::time::sleep(ms(200)).await;
        let report_json = json!({"progress": step, "total": 5, "message": format!("step {step}")});
        report(&mut server, &token, report_json).await;
    }
    // A report for another token is not this call's.
    report(&mut server, &json!("someone-else"), json!({"progress": 99})).await;
    server.answer(&request, done()).await;
    assert_eq!(call.await.unwrap().unwrap(), "done");
    let seen = seen.lock().unwrap().clone();
    let expected: Vec<_> = (1..=5)
        .map(|s| Progress::new(s as f64, Some(5.0), Some(format!("step {s}"))))
        .collect();
    assert_eq!(seen, expected);
}

#[tokio::test(start_paused = true)]
async fn a_2025_call_reports_every_step_in_order() {
    every_step_reaches_the_callback_in_order("2025-11-25").await;
}

#[tokio::test(start_paused = true)]
async fn a_2026_call_reports_every_step_in_order() {
    every_step_reaches_the_callback_in_order("2026-07-28").await;
}

#[tokio::test(start_paused = true)]
async fn the_modern_token_sits_beside_the_envelope_and_only_when_asked() {
    let (client, mut server) = connect("2026-07-28").await;
    let (call, _) = call(&client, ms(60_000));
    let request = server.next().await;
    let meta = &request["params"]["_meta"];
    assert!(meta["progressToken"].is_string(), "{request}");
    assert_eq!(
        meta["io.modelcontextprotocol/protocolVersion"],
        "2026-07-28"
    );
    server.answer(&request, done()).await;
    call.await.unwrap().unwrap();

    let plain = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("long", json!({})).await }
    });
    let request = server.next().await;
    assert!(request["params"]["_meta"].get("progressToken").is_none());
    server.answer(&request, done()).await;
    plain.await.unwrap().unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_2025_call_without_a_callback_sends_no_meta() {
    let (client, mut server) = connect("2025-06-18").await;
    let plain = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("long", json!({})).await }
    });
    let request = server.next().await;
    assert!(request["params"].get("_meta").is_none(), "{request}");
    server.answer(&request, done()).await;
    plain.await.unwrap().unwrap();
}

/// Reports sent just before the answer are delivered before the call
/// returns, never lost to the race between the two.
#[tokio::test(start_paused = true)]
async fn reports_right_before_the_answer_are_all_delivered() {
    let (client, mut server) = connect("2025-11-25").await;
    let (call, seen) = call(&client, ms(60_000));
    let request = server.next().await;
    let token = request["params"]["_meta"]["progressToken"].clone();
    for step in 1..=20 {
        report(&mut server, &token, json!({"progress": step})).await;
    }
    server.answer(&request, done()).await;
    call.await.unwrap().unwrap();
    assert_eq!(seen.lock().unwrap().len(), 20);
}

/// The request timeout is 1 s; the call takes 5 s and reports every 0.8 s:
/// each report restarts the timeout, so the call ends with its answer.
#[tokio::test(start_paused = true)]
async fn progress_restarts_the_request_timeout() {
    let (client, mut server) = connect("2025-11-25").await;
    let (call, seen) = call(&client, ms(60_000));
    let request = server.next().await;
    let token = request["params"]["_meta"]["progressToken"].clone();
    for step in 1..=6 {
        tokio::time::sleep(ms(800)).await;
        report(&mut server, &token, json!({"progress": step})).await;
    }
    tokio::time::sleep(ms(200)).await;
    server.answer(&request, done()).await;
    assert_eq!(call.await.unwrap().unwrap(), "done");
    assert_eq!(seen.lock().unwrap().len(), 6);
}

/// Reports restart the timeout, but never past the overall bound (3 s
/// here): a server that reports forever does not hold the call forever.
#[tokio::test(start_paused = true)]
async fn the_overall_bound_caps_a_call_that_reports_forever() {
    let (client, mut server) = connect("2025-11-25").await;
    let started = Instant::now();
    let (call, seen) = call(&client, ms(3_000));
    let request = server.next().await;
    let token = request["params"]["_meta"]["progressToken"].clone();
    let reporter = tokio::spawn(async move {
        for step in 1.. {
            tokio::time::sleep(ms(500)).await;
            report(&mut server, &token, json!({"progress": step})).await;
        }
        server
    });
    let err = call.await.unwrap().unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert!(
        err.is_outcome_unknown(),
        "a timed-out call may have run: {err}"
    );
    assert_eq!(started.elapsed(), ms(3_000));
    assert!(seen.lock().unwrap().len() >= 5);
    reporter.abort();
}

/// A report without a number is skipped: it restarts nothing, and the call
/// times out at its request timeout.
#[tokio::test(start_paused = true)]
async fn an_unreadable_report_does_not_restart_the_timeout() {
    let (client, mut server) = connect("2025-11-25").await;
    let started = Instant::now();
    let (call, seen) = call(&client, ms(60_000));
    let request = server.next().await;
    let token = request["params"]["_meta"]["progressToken"].clone();
    let reporter = tokio::spawn(async move {
        for _ in 0..10 {
            tokio::time::sleep(ms(300)).await;
            report(&mut server, &token, json!({"progress": "half"})).await;
        }
        server
    });
    let err = call.await.unwrap().unwrap_err();
    assert!(err.is_timeout(), "{err}");
    assert_eq!(started.elapsed(), ms(1_000));
    assert!(seen.lock().unwrap().is_empty());
    reporter.abort();
}

/// Two calls at once get their own tokens and their own reports.
#[tokio::test(start_paused = true)]
async fn concurrent_calls_get_their_own_reports() {
    let (client, mut server) = connect("2025-11-25").await;
    let (a, seen_a) = call(&client, ms(60_000));
    let first = server.next().await;
    let (b, seen_b) = call(&client, ms(60_000));
    let second = server.next().await;
    let (ta, tb) = (
        first["params"]["_meta"]["progressToken"].clone(),
        second["params"]["_meta"]["progressToken"].clone(),
    );
    assert_ne!(ta, tb);
    report(&mut server, &ta, json!({"progress": 1})).await;
    report(&mut server, &tb, json!({"progress": 2})).await;
    report(&mut server, &tb, json!({"progress": 3})).await;
    server.answer(&first, done()).await;
    server.answer(&second, done()).await;
    a.await.unwrap().unwrap();
    b.await.unwrap().unwrap();
    let progress =
        |v: &Seen| -> Vec<f64> { v.lock().unwrap().iter().map(|p| p.progress).collect() };
    assert_eq!(progress(&seen_a), vec![1.0]);
    assert_eq!(progress(&seen_b), vec![2.0, 3.0]);
}
