//! The server's end of a memory connection, driven by hand: read what the
//! client sent, answer, refuse, notify; and a 2025-11-25 server's side of
//! the handshake. [`raw_peer`] and [`pinned_peer`] give a client already
//! connected to one, as the sink and stream to drive by hand.

use std::time::Duration;

use mcp_tasks::Client;
use mcp_tasks::input::InputHandlers;
use mcp_tasks::transport::{Inbound, MessageSink, MessageStream, Outbound, Transport, memory};
use serde_json::{Value, json};

use super::ms;

/// A client with `handlers`, connected over a fresh peer that answers
/// the handshake as a 2025-11-25 server: the client, the peer and the
/// `initialize` request the client sent.
pub async fn handshaken(handlers: InputHandlers) -> (Client, Peer, Value) {
    let (transport, mut server) = peer();
    let connecting = tokio::spawn(
        Client::builder()
            .input_handlers(handlers)
            .connect(transport),
    );
    let init = server.handshake("2025-11-25").await;
    let client = connecting.await.unwrap().expect("connect");
    (client, server, init)
}

/// The server's end of a connection.
pub struct Peer {
    pub sink: memory::MemorySink,
    pub stream: memory::MemoryStream,
}

/// A connection: the client's transport and the server's end.
pub fn peer() -> (memory::MemoryTransport, Peer) {
    let (ours, theirs) = memory::pair();
    let peer = async move {
        let (sink, stream) = theirs.connect().await.unwrap();
        Peer { sink, stream }
    };
    // The server's end connects at once; the memory pair needs no I/O.
    let waker = std::task::Waker::noop();
    let mut cx = std::task::Context::from_waker(waker);
    let mut peer = std::pin::pin!(peer);
    match std::future::Future::poll(peer.as_mut(), &mut cx) {
        std::task::Poll::Ready(p) => (ours, p),
        std::task::Poll::Pending => panic!("the memory pair should connect at once"),
    }
}

/// A client pinned to 2026-07-28 (no connect probe, so the first message
/// is the test's) with a request timeout of `timeout` (the default when
/// `None`), and the server's end of its connection to drive by hand.
pub async fn pinned_peer(
    timeout: Option<Duration>,
) -> (Client, memory::MemorySink, memory::MemoryStream) {
    let (ours, Peer { sink, stream }) = peer();
    let builder = Client::builder().protocol_version("2026-07-28");
    let client = match timeout {
        Some(timeout) => builder.request_timeout(timeout).connect(ours).await,
        None => builder.connect(ours).await,
    };
    (client.unwrap(), sink, stream)
}

/// [`pinned_peer`] with a 500 ms request timeout.
pub async fn raw_peer() -> (Client, memory::MemorySink, memory::MemoryStream) {
    pinned_peer(Some(ms(500))).await
}

/// The next message the client sent, as JSON.
pub async fn next_json(stream: &mut memory::MemoryStream) -> Value {
    match stream.recv().await.unwrap() {
        Some(Inbound::Message(m)) => serde_json::from_str(&m).unwrap(),
        other => panic!("expected a message, got {other:?}"),
    }
}

/// Sends `text` to the client as one message.
pub async fn reply(sink: &mut memory::MemorySink, text: String) {
    sink.send(Outbound::new(text, "test")).await.unwrap();
}

impl Peer {
    /// The next message the client sent (within a minute of tokio time).
    pub async fn next(&mut self) -> Value {
        tokio::time::timeout(ms(60_000), next_json(&mut self.stream))
            .await
            .expect("the client sent nothing within a minute")
    }

    pub async fn send(&mut self, message: Value) {
        reply(&mut self.sink, message.to_string()).await;
    }

    pub async fn notify(&mut self, method: &str, params: Value) {
        self.send(json!({"jsonrpc": "2.0", "method": method, "params": params}))
            .await;
    }

    pub async fn answer(&mut self, request: &Value, result: Value) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "result": result}))
            .await;
    }

    pub async fn refuse(&mut self, request: &Value, code: i64, message: &str) {
        self.send(json!({"jsonrpc": "2.0", "id": request["id"], "error": {"code": code, "message": message}}))
            .await;
    }

    /// Answers `initialize` with `version`, then checks the `initialized`
    /// notification. Returns the `initialize` request.
    pub async fn initialize(&mut self, version: &str) -> Value {
        let init = self.next().await;
        assert_eq!(init["method"], "initialize");
        self.answer(
            &init,
            json!({
                "protocolVersion": version,
                "capabilities": {"tools": {"listChanged": true}, "logging": {}},
                "serverInfo": {"name": "everything", "version": "2026.8.31"},
                "instructions": "try the echo tool"
            }),
        )
        .await;
        let initialized = self.next().await;
        assert_eq!(initialized["method"], "notifications/initialized");
        assert!(initialized.get("id").is_none());
        init
    }

    /// A 2025 server's side of the handshake: refuses the probe as the
    /// TypeScript SDK 1.x does over stdio, then [`Peer::initialize`].
    pub async fn handshake(&mut self, version: &str) -> Value {
        let probe = self.next().await;
        assert_eq!(probe["method"], "server/discover");
        self.refuse(&probe, -32601, "Method not found").await;
        self.initialize(version).await
    }

    /// A ping answered: the reader has routed everything sent before it.
    pub async fn sync(&mut self, id: &str) {
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
            .await;
        let pong = self.next().await;
        assert_eq!(pong["id"], id, "{pong}");
    }
}
