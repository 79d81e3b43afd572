//! Servers of the initialize era (2025-11-25 and earlier): the client
//! probes with `server/discover`, falls back to `initialize`, and then the
//! same API works: tools are listed and called, and the server's own
//! requests (ping, elicitation, sampling, roots) are answered by the same
//! input handlers, or refused with `-32601`, never left unanswered.

mod support;

use mcp_tasks::Client;
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{ElicitResult, ListRootsResult, Root};
use serde_json::{Value, json};
use support::*;
use tokio::time::Instant;

use support::hand_peer::peer;

#[tokio::test(start_paused = true)]
async fn a_2025_server_is_initialized_and_its_tools_listed_and_called() {
    let (transport, mut server) = peer();
    let connecting = tokio::spawn(
        Client::builder()
            .client_info("app", "1.0")
            .connect(transport),
    );
    let init = server.handshake("2025-11-25").await;
    assert_eq!(init["params"]["protocolVersion"], "2025-11-25");
    assert_eq!(init["params"]["clientInfo"]["name"], "app");
    assert!(init["params"]["capabilities"].is_object());
    let client = connecting.await.unwrap().unwrap();
    assert_eq!(&*client.protocol_version(), "2025-11-25");
    assert_eq!(client.server_id(), Some("everything"));
    let info = client.discover().await.unwrap();
    assert_eq!(info.instructions.as_deref(), Some("try the echo tool"));
    assert!(info.capabilities.tools.is_some());

    let list = tokio::spawn({
        let client = client.clone();
        async move { client.list_tools().await }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "tools/list");
    // This era's requests carry no per-request metadata.
    assert!(request["params"].get("_meta").is_none(), "{request}");
    server
        .answer(
            &request,
            json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
        )
        .await;
    let tools = list.await.unwrap().unwrap();
    assert_eq!(tools[0].name, "echo");

    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("echo", json!({"message": "hi"})).await }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "tools/call");
    assert_eq!(
        request["params"],
        json!({"name": "echo", "arguments": {"message": "hi"}})
    );
    server
        .answer(
            &request,
            json!({"content": [{"type": "text", "text": "Echo: hi"}]}),
        )
        .await;
    assert_eq!(call.await.unwrap().unwrap().joined_text(), "Echo: hi");
}

#[tokio::test(start_paused = true)]
async fn the_servers_counter_offer_of_an_older_version_is_accepted() {
    for version in ["2025-06-18", "2025-03-26", "2024-11-05"] {
        let (transport, mut server) = peer();
        let connecting = tokio::spawn(Client::builder().connect(transport));
        server.handshake(version).await;
        let client = connecting.await.unwrap().unwrap();
        assert_eq!(&*client.protocol_version(), version);
    }
}

#[tokio::test(start_paused = true)]
async fn a_version_the_client_does_not_speak_fails_connect_naming_both() {
    let (transport, mut server) = peer();
    let connecting = tokio::spawn(Client::builder().connect(transport));
    let probe = server.next().await;
    server
        .refuse(&probe, -32000, "Bad Request: Server not initialized")
        .await;
    let init = server.next().await;
    server
        .answer(&init, json!({"protocolVersion": "2023-01-01", "capabilities": {}, "serverInfo": {"name": "old", "version": "0"}}))
        .await;
    let e = connecting.await.unwrap().unwrap_err();
    let text = e.to_string();
    assert!(e.is_protocol(), "{text}");
    assert!(
        text.contains("2023-01-01") && text.contains("2025-11-25"),
        "{text}"
    );
}

#[tokio::test(start_paused = true)]
async fn a_probe_that_gets_no_answer_falls_back_within_its_bound() {
    let (transport, mut server) = peer();
    let started = Instant::now();
    let connecting = tokio::spawn(
        Client::builder()
            .probe_timeout(ms(2_000))
            .connect(transport),
    );
    let probe = server.next().await;
    assert_eq!(probe["method"], "server/discover");
    // Silence: the probe bound passes; the probe is withdrawn, then
    // initialize comes.
    let withdrawn = server.next().await;
    assert_eq!(withdrawn["method"], "notifications/cancelled");
    assert_eq!(withdrawn["params"]["requestId"], probe["id"]);
    let init = server.next().await;
    assert_eq!(init["method"], "initialize");
    assert_eq!(Instant::now() - started, ms(2_000));
    server
        .answer(&init, json!({"protocolVersion": "2025-11-25", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}))
        .await;
    let _initialized = server.next().await;
    assert!(connecting.await.unwrap().is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_server_that_answers_neither_fails_connect_within_its_bounds() {
    let (transport, mut server) = peer();
    let started = Instant::now();
    let connecting = tokio::spawn(
        Client::builder()
            .probe_timeout(ms(1_000))
            .request_timeout(ms(3_000))
            .connect(transport),
    );
    let _probe = server.next().await;
    let _withdrawn = server.next().await;
    let _init = server.next().await;
    let e = connecting.await.unwrap().unwrap_err();
    assert!(e.is_timeout(), "{e}");
    assert_eq!(e.method(), Some("initialize"));
    assert_eq!(Instant::now() - started, ms(4_000));
}

#[tokio::test(start_paused = true)]
async fn the_servers_requests_are_answered_by_the_input_handlers_or_refused() {
    let handlers = InputHandlers::new()
        .elicitation_form(|req| async move {
            assert_eq!(req.message, "Your name?");
            Ok(ElicitResult::accept(json!({"name": "Ada"})))
        })
        .roots(|_| async {
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///work".into(),
                    name: None,
                }],
            })
        });
    let (_client, mut server, init) = handshaken(handlers).await;
    // The declared capabilities follow the installed handlers.
    let caps = &init["params"]["capabilities"];
    assert!(
        caps.get("elicitation").is_some() && caps.get("roots").is_some(),
        "{caps}"
    );
    assert!(caps.get("sampling").is_none(), "{caps}");

    server
        .send(json!({"jsonrpc": "2.0", "id": "p1", "method": "ping"}))
        .await;
    let pong = server.next().await;
    assert_eq!(pong, json!({"jsonrpc": "2.0", "id": "p1", "result": {}}));

    server
        .send(json!({"jsonrpc": "2.0", "id": 10, "method": "elicitation/create", "params": {
            "message": "Your name?",
            "requestedSchema": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}
        }}))
        .await;
    let answer = server.next().await;
    assert_eq!(answer["id"], 10);
    assert_eq!(answer["result"]["action"], "accept");
    assert_eq!(answer["result"]["content"]["name"], "Ada");

    server
        .send(json!({"jsonrpc": "2.0", "id": 11, "method": "roots/list"}))
        .await;
    let answer = server.next().await;
    assert_eq!(answer["result"]["roots"][0]["uri"], "file:///work");

    // No sampling handler, and a method nobody knows: -32601, not silence.
    for (id, method) in [
        (12, "sampling/createMessage"),
        (13, "resources/subscribe_me"),
    ] {
        server
            .send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": {}}))
            .await;
        let answer = server.next().await;
        assert_eq!(answer["id"], id);
        assert_eq!(answer["error"]["code"], -32601, "{method}: {answer}");
    }
}

#[tokio::test(start_paused = true)]
async fn a_modern_server_is_probed_once_and_the_probe_answers_discover() {
    use mcp_tasks::testing::TestServer;
    let server = TestServer::new();
    let client = Client::connect(server.connect()).await.unwrap();
    assert_eq!(server.count("server/discover"), 1, "the probe");
    assert_eq!(server.count("initialize"), 0);
    let _ = client.discover().await.unwrap();
    let _ = client.supports_tasks().await.unwrap();
    assert_eq!(
        server.count("server/discover"),
        1,
        "the probe's answer is kept"
    );
    assert_eq!(&*client.protocol_version(), "2026-07-28");
}

#[tokio::test(start_paused = true)]
async fn a_pinned_version_skips_the_probe() {
    // A modern pin sends nothing at connect.
    let (transport, mut server) = peer();
    let client = Client::builder()
        .protocol_version("2026-07-28")
        .connect(transport)
        .await
        .unwrap();
    let list = tokio::spawn(async move { client.list_tools().await });
    assert_eq!(server.next().await["method"], "tools/list");
    drop(list);
    // An initialize-era pin goes straight to initialize, offering it.
    let (transport, mut server) = peer();
    let connecting = tokio::spawn(
        Client::builder()
            .protocol_version("2025-06-18")
            .connect(transport),
    );
    let init = server.next().await;
    assert_eq!(init["method"], "initialize");
    assert_eq!(init["params"]["protocolVersion"], "2025-06-18");
    server
        .answer(&init, json!({"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "s", "version": "1"}}))
        .await;
    let _ = server.next().await;
    assert!(connecting.await.unwrap().is_ok());
}

#[tokio::test(start_paused = true)]
async fn a_modern_error_to_the_probe_means_a_modern_server() {
    let (transport, mut server) = peer();
    let connecting = tokio::spawn(Client::builder().connect(transport));
    let probe = server.next().await;
    server
        .send(json!({"jsonrpc": "2.0", "id": probe["id"], "error": {"code": -32021, "message": "Missing required client capability"}}))
        .await;
    let client = connecting.await.unwrap().unwrap();
    let list = tokio::spawn(async move { client.list_tools().await });
    let next = server.next().await;
    assert_eq!(
        next["method"], "tools/list",
        "no initialize after a modern error"
    );
    drop(list);
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_server_requests_is_answered_or_refused_never_queued_without_bound() {
    use std::sync::Arc;
    use tokio::sync::Notify;
    let gate = Arc::new(Notify::new());
    let handlers = InputHandlers::new().elicitation_form({
        let gate = gate.clone();
        move |_req| {
            let gate = gate.clone();
            async move {
                gate.notified().await;
                Ok(ElicitResult::decline())
            }
        }
    });
    let (_client, mut server, _) = handshaken(handlers).await;
    const FLOOD: u64 = 300;
    for id in 0..FLOOD {
        server
            .send(
                json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
                "params": {"message": "?", "requestedSchema": {"type": "object"}}}),
            )
            .await;
    }
    // The handler is stuck: what does not fit the queue is refused at once.
    let mut refused = 0;
    let mut answered = 0;
    let mut seen = std::collections::BTreeSet::new();
    let collect = |v: &Value, refused: &mut u64, answered: &mut u64| {
        if v.get("error").is_some() {
            assert_eq!(v["error"]["code"], -32603, "{v}");
            *refused += 1;
        } else {
            assert_eq!(v["result"]["action"], "decline", "{v}");
            *answered += 1;
        }
    };
    while let Ok(v) = tokio::time::timeout(ms(100), server.next()).await {
        assert!(
            seen.insert(v["id"].as_u64().unwrap()),
            "answered twice: {v}"
        );
        collect(&v, &mut refused, &mut answered);
    }
    assert!(refused > 0 && refused < FLOOD, "{refused} refused");
    // A ping is answered at once, not queued behind the stuck handler.
    server
        .send(json!({"jsonrpc": "2.0", "id": "ping-1", "method": "ping"}))
        .await;
    let pong = server.next().await;
    assert_eq!(
        pong,
        json!({"jsonrpc": "2.0", "id": "ping-1", "result": {}})
    );
    // Let the handler go: every queued request is answered, none is lost.
    for _ in 0..FLOOD {
        gate.notify_one();
        tokio::task::yield_now().await;
    }
    while let Ok(v) = tokio::time::timeout(ms(100), server.next()).await {
        assert!(
            seen.insert(v["id"].as_u64().unwrap()),
            "answered twice: {v}"
        );
        collect(&v, &mut refused, &mut answered);
    }
    assert_eq!(refused + answered, FLOOD, "every request got an answer");
    assert!(
        answered <= 66,
        "at most the queue (64) and the one being served: {answered}"
    );
}

/// The raw escape hatch speaks the session's era: on an initialize-era
/// session its params go as given, without 2026-07-28's per-request
/// `_meta` (a caller's own `_meta` is kept).
#[tokio::test(start_paused = true)]
async fn the_raw_request_sends_no_2026_meta_on_this_era() {
    let (transport, mut server) = peer();
    let connecting = tokio::spawn(Client::builder().connect(transport));
    server.handshake("2025-11-25").await;
    let client = connecting.await.unwrap().unwrap();
    let raw = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .request("prompts/list", json!({"_meta": {"progressToken": 7}}))
                .await
        }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "prompts/list");
    assert_eq!(request["params"], json!({"_meta": {"progressToken": 7}}));
    server.answer(&request, json!({"prompts": []})).await;
    assert_eq!(raw.await.unwrap().unwrap(), json!({"prompts": []}));
}
