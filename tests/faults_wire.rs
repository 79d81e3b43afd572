//! Faults on the wire, from a peer driven by hand: replies nobody asked
//! for, notifications for streams that do not exist, requests a server must
//! never send (refused with `-32601`), and messages that are JSON but not
//! JSON-RPC.
//!
//! Every case ends with the connection still serving: the faulty message
//! is skipped, and the request in flight gets its own reply.

mod support;

use mcp_tasks::Client;
use mcp_tasks::transport::MessageStream;
use serde_json::{Value, json};
use support::*;

/// Sends a request from the client and returns its future and the
/// request as the peer saw it.
macro_rules! in_flight {
    ($client:expr, $stream:expr) => {{
        let c = $client.clone();
        let call = tokio::spawn(async move { c.request("x/echo", json!({})).await });
        let sent = next_json(&mut $stream).await;
        (call, sent)
    }};
}

fn answer(request: &Value, result: Value) -> String {
    json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string()
}

#[tokio::test(start_paused = true)]
async fn replies_for_unknown_ids_are_ignored() {
    let (client, mut sink, mut stream) = raw_peer().await;
    let (call, sent) = in_flight!(client, stream);
    for stray in [
        json!({"jsonrpc": "2.0", "id": 9999, "result": {"stray": true}}),
        json!({"jsonrpc": "2.0", "id": "1", "result": {"stray": true}}),
        json!({"jsonrpc": "2.0", "id": 8888, "error": {"code": -32603, "message": "stray"}}),
        json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "parse error"}}),
    ] {
        reply(&mut sink, stray.to_string()).await;
    }
    assert_eq!(
        client.stats().pending_requests,
        1,
        "the real request still waits"
    );
    reply(&mut sink, answer(&sent, json!({"mine": true}))).await;
    let v = call.await.unwrap().unwrap();
    assert_eq!(v, json!({"mine": true}));
    assert_eq!(client.stats().pending_requests, 0);
    assert!(client.closed_reason().is_none());
}

#[tokio::test(start_paused = true)]
async fn a_reply_after_the_timeout_is_dropped_and_confuses_nothing() {
    let (client, mut sink, mut stream) = raw_peer().await;
    let (late, sent) = in_flight!(client, stream);
    let e = late.await.unwrap().unwrap_err();
    assert!(e.is_timeout(), "{e}");
    let cancelled = next_json(&mut stream).await;
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], sent["id"]);

    let (call, next) = in_flight!(client, stream);
    assert_ne!(next["id"], sent["id"], "ids are never reused");
    reply(&mut sink, answer(&sent, json!({"late": true}))).await;
    reply(&mut sink, answer(&next, json!({"fresh": true}))).await;
    assert_eq!(call.await.unwrap().unwrap(), json!({"fresh": true}));
    assert_eq!(client.stats().pending_requests, 0);
}

#[tokio::test(start_paused = true)]
async fn notifications_for_no_stream_are_ignored_and_requests_refused() {
    let (client, mut sink, mut stream) = raw_peer().await;
    let (call, sent) = in_flight!(client, stream);
    for stray in [
        // A push for a subscription that was never opened.
        json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": {
            "_meta": {"io.modelcontextprotocol/subscriptionId": 77},
            "taskId": "t-1", "status": "completed", "result": {"content": []}}}),
        // One with no subscription id at all, and one without params.
        json!({"jsonrpc": "2.0", "method": "notifications/tasks", "params": {"taskId": "t-1", "status": "working"}}),
        json!({"jsonrpc": "2.0", "method": "notifications/tasks"}),
        // An acknowledgement and a server-side cancel for streams that do not exist.
        json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged", "params": {
            "notifications": {"taskIds": ["t-1"]}, "_meta": {"io.modelcontextprotocol/subscriptionId": 5}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 42}}),
        // 2026-07-28 has no requests from the server: refused, not
        // left waiting.
        json!({"jsonrpc": "2.0", "id": 1, "method": "sampling/createMessage", "params": {
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}], "maxTokens": 5}}),
        json!({"jsonrpc": "2.0", "id": "r", "method": "roots/list"}),
    ] {
        reply(&mut sink, stray.to_string()).await;
    }
    reply(&mut sink, answer(&sent, json!({"mine": true}))).await;
    assert_eq!(call.await.unwrap().unwrap(), json!({"mine": true}));
    // Each request got `-32601`, and nothing else went back to the peer.
    for id in [json!(1), json!("r")] {
        let refused = next_json(&mut stream).await;
        assert_eq!(refused["id"], id, "{refused}");
        assert_eq!(refused["error"]["code"], -32601, "{refused}");
    }
    drop(client);
    let after = tokio::time::timeout(ms(100), stream.recv()).await;
    assert!(
        matches!(after, Ok(Ok(None)) | Err(_)),
        "the client sent {after:?}"
    );
}

#[tokio::test(start_paused = true)]
async fn json_that_is_not_json_rpc_is_skipped() {
    let (client, mut sink, mut stream) = raw_peer().await;
    let (call, sent) = in_flight!(client, stream);
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let strays: Vec<String> = vec![
        "".into(),
        "null".into(),
        "[]".into(),
        "[1,2]".into(),
        "\"a string\"".into(),
        "{}".into(),
        r#"{"jsonrpc":"2.0"}"#.into(),
        r#"{"jsonrpc":"2.0","id":7}"#.into(),
        r#"{"jsonrpc":"2.0","id":{"nested":1},"result":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":1.5,"result":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":true,"result":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":9,"error":{"code":"not a number","message":1}}"#.into(),
        r#"{"jsonrpc":"2.0","method":17}"#.into(),
        r#"{"jsonrpc":"2.0","id":9,"result":1e999}"#.into(),
        r#"{"jsonrpc":"2.0","id":18446744073709551616,"result":{}}"#.into(),
        r#"{"jsonrpc":"2.0","id":9,"result":"\ud800"}"#.into(),
        "\u{feff}{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}".into(),
        r#"{"jsonrpc":"2.0","id":9,"result":{}"#.into(),
        deep,
    ];
    for stray in strays {
        reply(&mut sink, stray).await;
    }
    reply(&mut sink, answer(&sent, json!({"mine": true}))).await;
    assert_eq!(call.await.unwrap().unwrap(), json!({"mine": true}));
    assert!(client.closed_reason().is_none());
}

#[tokio::test(start_paused = true)]
async fn a_reply_that_does_not_fit_its_method_is_a_protocol_error() {
    let (client, mut sink, mut stream) = raw_peer().await;
    let cases = [
        // tools/call: content must be an array; an unknown resultType; a
        // task without an id.
        json!({"resultType": "complete", "content": "nope"}),
        json!({"resultType": "eventually"}),
        json!({"resultType": "task", "status": "working", "ttlMs": null}),
        json!({"resultType": "input_required"}),
        json!([1, 2, 3]),
    ];
    for body in cases {
        let call = tokio::spawn({
            let c = client.clone();
            async move { c.call_tool("t", json!({})).await }
        });
        let sent = next_json(&mut stream).await;
        reply(&mut sink, answer(&sent, body.clone())).await;
        let e = call.await.unwrap().unwrap_err();
        assert!(e.is_protocol(), "{body}: {e}");
        assert_eq!(e.method(), Some("tools/call"));
    }
    // tasks/get: a snapshot of another task, or one that breaks its status.
    let id = mcp_tasks::protocol::TaskId::new("task-a");
    for body in [
        json!({"taskId": "task-b", "status": "working", "ttlMs": null}),
        // (A `failed` task without `error` is a failure, not a protocol
        // error: the stated status decides; see tests/ended_tasks.rs.)
        json!({"taskId": "task-a", "status": "completed", "ttlMs": null}),
        json!({"taskId": "", "status": "working", "ttlMs": null}),
        json!({"resultType": "input_required", "taskId": "task-a", "status": "working"}),
    ] {
        let read = tokio::spawn({
            let (c, id) = (client.clone(), id.clone());
            async move { c.get_task(&id).await }
        });
        let sent = next_json(&mut stream).await;
        reply(&mut sink, answer(&sent, body.clone())).await;
        let e = read.await.unwrap().unwrap_err();
        assert!(e.is_protocol(), "{body}: {e}");
        assert_eq!(e.task_id(), Some(&id));
    }
    assert_eq!(client.stats().pending_requests, 0);
}

#[tokio::test]
async fn replies_are_size_limited_by_default() {
    use tokio::io::AsyncWriteExt;
    let (client_io, mut server_io) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(client_io);
    // No max_message_size: the 16 MiB default applies.
    let client = Client::builder()
        .protocol_version("2026-07-28")
        .connect(mcp_tasks::transport::LineTransport::new(r, w))
        .await
        .unwrap();
    let pending = tokio::spawn({
        let c = client.clone();
        async move { c.discover().await.map(|_| ()) }
    });
    let limit = mcp_tasks::transport::DEFAULT_MAX_MESSAGE_SIZE;
    let writer = tokio::spawn(async move {
        let chunk = vec![b'x'; 1 << 16];
        let mut written = 0;
        server_io
            .write_all(br#"{"jsonrpc":"2.0","id":1,"result":{"x":""#)
            .await?;
        // Stops when the client closes its end, well before this bound.
        while written < 2 * limit {
            server_io.write_all(&chunk).await?;
            written += chunk.len();
        }
        Ok::<_, std::io::Error>(written)
    });
    let e = pending.await.unwrap().unwrap_err();
    assert!(e.is_transport(), "{e}");
    let reason = client.closed_reason().unwrap();
    assert!(
        reason.contains(&format!("larger than {limit} bytes")),
        "{reason}"
    );
    drop(client);
    let written = writer.await.unwrap().unwrap_or(0);
    assert!(
        written <= limit + (1 << 17),
        "read {written} bytes past the limit"
    );
}
