//! The server's end of a memory connection, driven by hand: read what the
//! client sent, answer, refuse, notify; and a 2025-11-25 server's side of
//! the handshake.

use mcp_tasks::transport::{Transport, memory};
use serde_json::{Value, json};

use super::{ms, next_json, reply};

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
