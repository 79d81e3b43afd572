//! The version header is what the client states on each message
//! (`Outbound::protocol_version`), on both eras; the transport never reads
//! it from a reply or a body, and a wrapper that passes messages on cannot
//! lose it.

use mcp_tasks::protocol::RequestId;
use mcp_tasks::transport::{Inbound, MessageSink, MessageStream, Outbound, Transport};
use scripted_http::{Answer, ScriptedHttp};
use serde_json::Value;

use super::*;

const VERSION_HEADER: &str = "mcp-protocol-version";

/// A server of the initialize era that settles on 2025-06-18 (not the
/// version the client offers first) and keeps session `s-9`.
fn initialize_era(request: &Value) -> Answer {
    match request["method"].as_str().unwrap_or_default() {
        "server/discover" => Answer::error(request, -32601, "Method not found"),
        "initialize" => Answer::result(
            request,
            json!({"protocolVersion": "2025-06-18", "capabilities": {"tools": {}},
                   "serverInfo": {"name": "scripted", "version": "1.0.0"}}),
        )
        .with_session("s-9"),
        "tools/list" => Answer::result(request, json!({"tools": []})),
        _ => Answer::error(request, -32601, "Method not found"),
    }
}

#[tokio::test]
async fn an_initialize_era_session_sends_the_version_the_server_chose() {
    bounded(async {
        let peer = ScriptedHttp::start(initialize_era).await;
        let client = Client::connect(Http::new(&peer.url))
            .await
            .expect("connect");
        assert_eq!(&*client.protocol_version(), "2025-06-18");
        client.list_tools().await.unwrap();
        let discover = &peer.posts_of("server/discover")[0];
        assert_eq!(discover.header(VERSION_HEADER), Some("2026-07-28"));
        // `initialize` carries its offer in its params, and no header.
        let initialize = &peer.posts_of("initialize")[0];
        assert_eq!(initialize.body["params"]["protocolVersion"], "2025-11-25");
        assert_eq!(initialize.header(VERSION_HEADER), None);
        for method in ["notifications/initialized", "tools/list"] {
            let hit = &peer.posts_of(method)[0];
            assert_eq!(hit.header(VERSION_HEADER), Some("2025-06-18"), "{method}");
            assert_eq!(hit.header("mcp-session-id"), Some("s-9"), "{method}");
        }
    })
    .await;
}

#[tokio::test]
async fn a_modern_session_sends_its_version_in_the_header_and_the_body() {
    bounded(async {
        let peer = ScriptedHttp::start(|request: &Value| {
            match request["method"].as_str().unwrap_or_default() {
                "server/discover" => Answer::result(
                    request,
                    json!({"supportedVersions": ["2026-07-28"], "capabilities": {"tools": {}}}),
                ),
                "tools/list" => Answer::result(request, json!({"tools": []})),
                _ => Answer::error(request, -32601, "Method not found"),
            }
        })
        .await;
        let client = Client::connect(Http::new(&peer.url))
            .await
            .expect("connect");
        client.list_tools().await.unwrap();
        for method in ["server/discover", "tools/list"] {
            let hit = &peer.posts_of(method)[0];
            assert_eq!(hit.header(VERSION_HEADER), Some("2026-07-28"), "{method}");
            assert_eq!(
                hit.body["params"]["_meta"][META_PROTOCOL_VERSION], "2026-07-28",
                "{method}"
            );
        }
        assert!(peer.posts_of("initialize").is_empty());
    })
    .await;
}

/// The transport alone: an `initialize` reply naming 2025-06-18 changes
/// nothing until a message states the version.
#[tokio::test]
async fn the_transport_sends_the_version_it_is_told_never_one_it_reads() {
    bounded(async {
        let peer = ScriptedHttp::start(initialize_era).await;
        let (mut sink, mut stream) = Http::new(&peer.url).connect().await.unwrap();
        let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "t", "version": "1"}}});
        sink.send(Outbound::request(
            initialize.to_string(),
            "initialize",
            RequestId::Number(1),
        ))
        .await
        .unwrap();
        let Some(Inbound::Message(reply)) = stream.recv().await.unwrap() else {
            panic!("the initialize reply");
        };
        assert!(reply.contains("2025-06-18"), "{reply}");
        let list = |id: i64| {
            let json = json!({"jsonrpc": "2.0", "id": id, "method": "tools/list"});
            Outbound::request(json.to_string(), "tools/list", RequestId::Number(id))
        };
        sink.send(list(2)).await.unwrap();
        stream.recv().await.unwrap();
        sink.send(list(3).in_version("2025-06-18")).await.unwrap();
        stream.recv().await.unwrap();
        // A message that states none goes in the last version stated.
        sink.send(list(4)).await.unwrap();
        stream.recv().await.unwrap();
        let lists = peer.posts_of("tools/list");
        // Not read from the reply: the newest version until a message
        // states one.
        assert_eq!(lists[0].header(VERSION_HEADER), Some("2026-07-28"));
        assert_eq!(lists[1].header(VERSION_HEADER), Some("2025-06-18"));
        assert_eq!(lists[2].header(VERSION_HEADER), Some("2025-06-18"));
        // The session id is an HTTP header, kept from the reply's headers.
        assert_eq!(lists[0].header("mcp-session-id"), Some("s-9"));
    })
    .await;
}

/// A user's pass-through wrapper around `Http` that forwards `send` and
/// `close` and nothing else: on an initialize-era server every request
/// after the handshake still goes in the version the server chose (it
/// went in the newest, and such servers refuse that with 400).
#[tokio::test]
async fn a_pass_through_wrapper_keeps_the_version_the_server_chose() {
    struct Wrapped(Http);
    struct Sink(<Http as Transport>::Sink);
    impl Transport for Wrapped {
        type Sink = Sink;
        type Stream = <Http as Transport>::Stream;
        async fn connect(self) -> std::io::Result<(Sink, Self::Stream)> {
            let (sink, stream) = self.0.connect().await?;
            Ok((Sink(sink), stream))
        }
    }
    impl MessageSink for Sink {
        async fn send(&mut self, message: Outbound) -> std::io::Result<()> {
            self.0.send(message).await
        }
        async fn close(&mut self) -> std::io::Result<mcp_tasks::transport::Closed> {
            self.0.close().await
        }
    }
    bounded(async {
        let peer = ScriptedHttp::start(initialize_era).await;
        let client = Client::connect(Wrapped(Http::new(&peer.url)))
            .await
            .expect("connect");
        assert_eq!(&*client.protocol_version(), "2025-06-18");
        client.list_tools().await.unwrap();
        for method in ["notifications/initialized", "tools/list"] {
            let hit = &peer.posts_of(method)[0];
            assert_eq!(hit.header(VERSION_HEADER), Some("2025-06-18"), "{method}");
        }
    })
    .await;
}
