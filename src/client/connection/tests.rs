//! The connection, driven over in-memory and recording transports.

use super::*;
use crate::protocol::RpcError;
use crate::transport::{OutboundKind, memory};

async fn open() -> (Connection, memory::MemorySink, memory::MemoryStream) {
    let (ours, theirs) = memory::pair();
    let conn = Connection::open(ours).await.unwrap();
    let (sink, stream) = theirs.connect().await.unwrap();
    (conn, sink, stream)
}

async fn from_client(stream: &mut memory::MemoryStream) -> serde_json::Value {
    match stream.recv().await.unwrap() {
        Some(Inbound::Message(text)) => serde_json::from_str(&text).unwrap(),
        other => panic!("expected a message, got {other:?}"),
    }
}

#[tokio::test]
async fn a_request_from_the_server_is_handed_over_and_answered_under_its_id() {
    let (conn, mut sink, mut stream) = open().await;
    let mut requests = conn.server_requests();
    let ask =
        r#"{"jsonrpc":"2.0","id":"s-1","method":"elicitation/create","params":{"message":"ok?"}}"#;
    sink.send(Outbound::new(ask.into(), "test")).await.unwrap();
    let request = requests.recv().await.unwrap();
    assert_eq!(request.method, "elicitation/create");
    assert_eq!(request.params.unwrap().get(), r#"{"message":"ok?"}"#);
    assert_eq!(request.responder.id(), &RequestId::String("s-1".into()));
    request
        .responder
        .result(&serde_json::json!({"action": "accept"}))
        .await
        .unwrap();
    let answer = from_client(&mut stream).await;
    assert_eq!(
        answer,
        serde_json::json!({"jsonrpc": "2.0", "id": "s-1", "result": {"action": "accept"}})
    );
    // An error answer, too.
    let ask = r#"{"jsonrpc":"2.0","id":7,"method":"roots/list"}"#;
    sink.send(Outbound::new(ask.into(), "test")).await.unwrap();
    let request = requests.recv().await.unwrap();
    request
        .responder
        .error(RpcError::new(-32601, "no roots"))
        .await
        .unwrap();
    let answer = from_client(&mut stream).await;
    assert_eq!(answer["id"], 7);
    assert_eq!(answer["error"]["code"], -32601);
}

/// A transport whose sink hands the client's messages over whole, kind
/// included.
struct Recording {
    outbound: mpsc::UnboundedSender<Outbound>,
    inbound: mpsc::UnboundedReceiver<Inbound>,
}
struct RecordingSink(mpsc::UnboundedSender<Outbound>);
struct RecordingStream(mpsc::UnboundedReceiver<Inbound>);
impl MessageSink for RecordingSink {
    async fn send(&mut self, message: Outbound) -> std::io::Result<()> {
        let _ = self.0.send(message);
        Ok(())
    }
    async fn close(&mut self) -> std::io::Result<crate::transport::Closed> {
        Ok(crate::transport::Closed::gracefully())
    }
}
impl MessageStream for RecordingStream {
    async fn recv(&mut self) -> std::io::Result<Option<Inbound>> {
        Ok(self.0.recv().await)
    }
}
impl Transport for Recording {
    type Sink = RecordingSink;
    type Stream = RecordingStream;
    async fn connect(self) -> std::io::Result<(RecordingSink, RecordingStream)> {
        Ok((RecordingSink(self.outbound), RecordingStream(self.inbound)))
    }
}

#[tokio::test]
async fn every_message_says_what_kind_it_is() {
    let (out_tx, mut out_rx) = mpsc::unbounded_channel();
    let (in_tx, in_rx) = mpsc::unbounded_channel();
    let conn = Connection::open(Recording {
        outbound: out_tx,
        inbound: in_rx,
    })
    .await
    .unwrap();
    let mut requests = conn.server_requests();
    // A request, abandoned: its notifications/cancelled follows.
    let _ = conn
        .request(
            "tools/list",
            None,
            serde_json::json!({}),
            Duration::from_millis(1),
        )
        .await;
    let request = out_rx.recv().await.unwrap();
    assert_eq!(
        (request.kind, request.method.as_str()),
        (OutboundKind::Request, "tools/list")
    );
    assert!(request.id.is_some());
    let cancel = out_rx.recv().await.unwrap();
    assert_eq!(cancel.kind, OutboundKind::Notification);
    assert_eq!(cancel.method, "notifications/cancelled");
    // A response to the server's request.
    let ask = r#"{"jsonrpc":"2.0","id":"s-9","method":"roots/list"}"#;
    in_tx.send(Inbound::Message(ask.into())).unwrap();
    let responder = requests.recv().await.unwrap().responder;
    responder
        .result(&serde_json::json!({"roots": []}))
        .await
        .unwrap();
    let response = out_rx.recv().await.unwrap();
    assert_eq!(response.kind, OutboundKind::Response);
    assert_eq!(response.id, Some(RequestId::String("s-9".into())));
    assert!(response.method.is_empty());
    // A ping is answered by the reader itself, as a response too.
    let ping = r#"{"jsonrpc":"2.0","id":"s-10","method":"ping"}"#;
    in_tx.send(Inbound::Message(ping.into())).unwrap();
    let pong = out_rx.recv().await.unwrap();
    assert_eq!(pong.kind, OutboundKind::Response);
    assert_eq!(pong.id, Some(RequestId::String("s-10".into())));
    assert!(
        requests.try_recv().is_err(),
        "a ping is not handed to a handler"
    );
}

#[tokio::test]
async fn progress_is_routed_by_its_token_until_the_watch_is_dropped() {
    let (conn, mut sink, _stream) = open().await;
    let mut watch = conn.progress(RequestId::String("tok".into()));
    let note = |token: &str, n: u32| {
        format!(
            r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"{token}","progress":{n}}}}}"#
        )
    };
    sink.send(Outbound::new(note("other", 1), "test"))
        .await
        .unwrap();
    sink.send(Outbound::new(note("tok", 2), "test"))
        .await
        .unwrap();
    let params = watch.next().await.unwrap().unwrap();
    assert!(params.get().contains(r#""progress":2"#), "{}", params.get());
    drop(watch);
    assert!(conn.shared.tables.lock().unwrap().progress.is_empty());
}

/// Sends a `tools/call` from a task of its own, answered within `timeout`.
fn spawn_call(
    conn: &Connection,
    timeout: Duration,
) -> tokio::task::JoinHandle<Result<Box<RawValue>, Error>> {
    let conn = conn.clone();
    tokio::spawn(async move {
        conn.request("tools/call", None, serde_json::json!({}), timeout)
            .await
    })
}

async fn send_text(sink: &mut memory::MemorySink, text: String) {
    sink.send(Outbound::new(text, "test")).await.unwrap();
}

#[tokio::test(start_paused = true)]
async fn a_server_cancellation_ends_a_pending_request_at_once() {
    let (conn, mut sink, mut stream) = open().await;
    let call = spawn_call(&conn, Duration::from_secs(30));
    let request = from_client(&mut stream).await;
    let started = tokio::time::Instant::now();
    let cancel = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": request["id"], "reason": "server shutting down"}});
    send_text(&mut sink, cancel.to_string()).await;
    let e = call.await.unwrap().unwrap_err();
    assert_eq!(tokio::time::Instant::now(), started, "not after a timeout");
    assert!(e.is_server_cancelled() && e.is_outcome_unknown(), "{e}");
    assert!(e.to_string().contains("server shutting down"), "{e}");
    assert_eq!(conn.pending_len(), 0);
    // It is not withdrawn in turn: the server knows.
    let next = tokio::time::timeout(Duration::from_secs(1), from_client(&mut stream)).await;
    assert!(next.is_err(), "{next:?}");
}

#[tokio::test]
async fn a_server_cancellation_of_its_own_request_reaches_whoever_answers_it() {
    let (conn, mut sink, _stream) = open().await;
    let mut requests = conn.server_requests();
    // The same id as a request of the client's: the server's own goes first.
    let pending = tokio::spawn({
        let conn = conn.clone();
        async move {
            conn.request(
                "tools/list",
                None,
                serde_json::json!({}),
                Duration::from_secs(30),
            )
            .await
        }
    });
    tokio::task::yield_now().await;
    let ask = r#"{"jsonrpc":"2.0","id":1,"method":"roots/list"}"#;
    send_text(&mut sink, ask.into()).await;
    let request = requests.recv().await.unwrap();
    assert_eq!(conn.shared.serving.lock().unwrap().len(), 1);
    let cancel = r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"no longer needed"}}"#;
    send_text(&mut sink, cancel.into()).await;
    assert_eq!(
        request.cancelled.wait().await.as_deref(),
        Some("no longer needed")
    );
    assert_eq!(conn.pending_len(), 1, "the client's request waits on");
    pending.abort();
    // Answered (or dropped), a request leaves the table.
    let ask = r#"{"jsonrpc":"2.0","id":2,"method":"roots/list"}"#;
    send_text(&mut sink, ask.into()).await;
    let request = requests.recv().await.unwrap();
    assert_eq!(conn.shared.serving.lock().unwrap().len(), 1);
    request
        .responder
        .result(&serde_json::json!({"roots": []}))
        .await
        .unwrap();
    assert_eq!(conn.shared.serving.lock().unwrap().len(), 0);
}

#[tokio::test]
async fn unclaimed_notifications_are_handed_over_and_a_flood_is_dropped_and_counted() {
    let (conn, mut sink, _stream) = open().await;
    // Before anyone takes them they are ignored.
    let log = r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#;
    send_text(&mut sink, log.into()).await;
    // A reply nobody waits for: once it is counted, the reader has routed
    // everything before it.
    let stray = r#"{"jsonrpc":"2.0","id":12345,"result":{}}"#;
    send_text(&mut sink, stray.into()).await;
    while conn.discarded() < 1 {
        tokio::task::yield_now().await;
    }
    let mut notifications = conn.notifications();
    const FLOOD: usize = NOTIFICATION_CAPACITY + 36;
    for _ in 0..FLOOD {
        send_text(&mut sink, log.into()).await;
    }
    // Progress and task pushes keep their own routes; a cancellation for
    // nothing is not handed over either.
    let progress = r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}"#;
    send_text(&mut sink, progress.into()).await;
    let cancel =
        r#"{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}"#;
    send_text(&mut sink, cancel.into()).await;
    send_text(&mut sink, stray.into()).await;
    while conn.discarded() < 2 {
        tokio::task::yield_now().await;
    }
    let mut received = 0;
    while let Ok(n) = notifications.try_recv() {
        assert_eq!(n.method, "notifications/message");
        received += 1;
    }
    assert_eq!(received, NOTIFICATION_CAPACITY);
    assert_eq!(
        conn.notifications_dropped(),
        (FLOOD - NOTIFICATION_CAPACITY) as u64
    );
}

/// A server that floods progress for a call whose caller reads slowly
/// fills a bounded queue, never more; the reader goes on routing, so the
/// call's own answer still arrives.
#[tokio::test]
async fn a_progress_flood_is_bounded_and_does_not_block_the_reader() {
    let (conn, mut sink, mut stream) = open().await;
    let mut tracking = conn.track(Arc::new(|_| {}), Duration::from_secs(60));
    let token = tracking.token().clone();
    // Not awaited until the flood is in: nothing reads the queue.
    let request = spawn_call(&conn, Duration::from_secs(60));
    let sent = from_client(&mut stream).await;
    for n in 0..1_000 {
        let note = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": n}});
        send_text(&mut sink, note.to_string()).await;
    }
    let answer = serde_json::json!({"jsonrpc": "2.0", "id": sent["id"], "result": {"content": []}});
    send_text(&mut sink, answer.to_string()).await;
    request.await.unwrap().unwrap();
    let mut queued = 0;
    while tracking.queued_report() {
        queued += 1;
    }
    assert_eq!(
        queued, SUBSCRIPTION_CAPACITY,
        "the queue holds its capacity, no more"
    );
}

/// Both directions number their requests from small integers: a late
/// cancellation of a request of the server's that the client has answered
/// already does not end the client's own request under the same id.
#[tokio::test(start_paused = true)]
async fn a_late_cancel_of_an_answered_server_request_spares_the_client_s_request() {
    let (conn, mut sink, mut stream) = open().await;
    let mut requests = conn.server_requests();
    let call = spawn_call(&conn, Duration::from_secs(30));
    let sent = from_client(&mut stream).await;
    let id = sent["id"].clone();
    // The server's own request under the same id, answered.
    let ask = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": "roots/list"});
    send_text(&mut sink, ask.to_string()).await;
    let request = requests.recv().await.unwrap();
    request
        .responder
        .result(&serde_json::json!({"roots": []}))
        .await
        .unwrap();
    let _answer = from_client(&mut stream).await;
    // Its cancellation comes late.
    let late = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": id, "reason": "timed out"}});
    send_text(&mut sink, late.to_string()).await;
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert!(!call.is_finished(), "the client's request lives on");
    let reply = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": {"content": []}});
    send_text(&mut sink, reply.to_string()).await;
    call.await.unwrap().unwrap();
}

/// A server that sends requests and never reads: the writer is stuck on
/// the full transport, and the reader still reads on, so the reply that
/// follows the flood reaches its request. The answers the reader gives
/// (`ping` results and refusals alike) wait up to their bound; past it
/// each is counted, and once the server reads, every other is there,
/// exactly once.
#[tokio::test(start_paused = true)]
async fn the_reader_never_waits_for_a_writer_the_server_does_not_drain() {
    const FLOOD: u64 = 60_000;
    let (conn, mut sink, mut stream) = open().await;
    let request = spawn_call(&conn, Duration::from_secs(30));
    let sent = from_client(&mut stream).await;
    for id in 0..FLOOD {
        // Nothing takes the server's requests: all but `ping` are refused.
        let method = if id % 4 == 3 { "roots/list" } else { "ping" };
        let ask = serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method});
        send_text(&mut sink, ask.to_string()).await;
    }
    let answer = serde_json::json!({"jsonrpc": "2.0", "id": sent["id"], "result": {}});
    send_text(&mut sink, answer.to_string()).await;
    request.await.unwrap().expect("the reply after the flood");
    let dropped = conn.dropped_answers();
    assert!(dropped > 0, "past its bound, the queue of answers drops");
    // The server reads at last: every answer not counted comes, once.
    let mut seen = std::collections::HashSet::new();
    while (seen.len() as u64) < FLOOD - dropped {
        let answer = from_client(&mut stream).await;
        let id = answer["id"].as_u64().unwrap();
        if id % 4 == 3 {
            assert_eq!(answer["error"]["code"], -32601, "{answer}");
        } else {
            assert_eq!(answer["result"], serde_json::json!({}), "{answer}");
        }
        assert!(seen.insert(id), "answered twice: {id}");
    }
    drop(conn);
    assert!(matches!(stream.recv().await, Ok(None)), "nothing more came");
}
