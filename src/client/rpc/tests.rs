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
    async fn close(&mut self) {}
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

/// A server that floods progress for a call whose caller reads slowly
/// fills a bounded queue, never more; the reader goes on routing, so the
/// call's own answer still arrives.
#[tokio::test]
async fn a_progress_flood_is_bounded_and_does_not_block_the_reader() {
    let (conn, mut sink, mut stream) = open().await;
    let mut tracking = conn.track(Arc::new(|_| {}), Duration::from_secs(60));
    let token = tracking.token().clone();
    let request = {
        let conn = conn.clone();
        tokio::spawn(async move {
            // Not awaited until the flood is in: nothing reads the queue.
            conn.request(
                "tools/call",
                None,
                serde_json::json!({}),
                Duration::from_secs(60),
            )
            .await
        })
    };
    let sent = from_client(&mut stream).await;
    for n in 0..1_000 {
        let note = serde_json::json!({"jsonrpc": "2.0", "method": "notifications/progress",
            "params": {"progressToken": token, "progress": n}});
        sink.send(Outbound::new(note.to_string(), "test"))
            .await
            .unwrap();
    }
    let answer = serde_json::json!({"jsonrpc": "2.0", "id": sent["id"], "result": {"content": []}});
    sink.send(Outbound::new(answer.to_string(), "test"))
        .await
        .unwrap();
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
