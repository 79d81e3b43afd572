//! A peer driven by hand: read what the client sent, answer or not.

use mcp_tasks::Client;
use mcp_tasks::transport::{Inbound, MessageSink, MessageStream, Outbound, Transport, memory};

use super::ms;

/// A client with a 500 ms request timeout, pinned to 2026-07-28, and the
/// server's end of its connection to drive by hand.
pub async fn raw_peer() -> (Client, memory::MemorySink, memory::MemoryStream) {
    let (ours, theirs) = memory::pair();
    // Pinned: no connect probe, so the first message is the test's.
    let client = Client::builder()
        .request_timeout(ms(500))
        .protocol_version("2026-07-28")
        .connect(ours)
        .await
        .unwrap();
    let (sink, stream) = theirs.connect().await.unwrap();
    (client, sink, stream)
}

/// The next message the client sent, as JSON.
pub async fn next_json(stream: &mut memory::MemoryStream) -> serde_json::Value {
    match stream.recv().await.unwrap() {
        Some(Inbound::Message(m)) => serde_json::from_str(&m).unwrap(),
        other => panic!("expected a message, got {other:?}"),
    }
}

/// Sends `text` to the client as one message.
pub async fn reply(sink: &mut memory::MemorySink, text: String) {
    sink.send(Outbound::new(text, "test")).await.unwrap();
}
