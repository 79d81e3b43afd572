//! Error replies, lost replies, and requests that never left.

use super::*;

fn ping() -> TestServer {
    TestServer::new().tool(ScriptedTool::immediate(
        "ping",
        CallToolResult::text("pong"),
    ))
}

fn reply(status: u16, body: &str) -> Scripted {
    Scripted::Reply(status, "application/json", body.to_owned())
}

/// A loopback port nothing listens on (bound, then let go).
fn unused_port() -> u16 {
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

/// Asserts that a `ping` call answers "pong": the connection still works.
async fn assert_pongs(client: &Client) {
    assert_eq!(call_text(client, "ping").await, "pong");
}

/// Scripts `front` to hold the first `tools/list` without an answer.
fn hold_the_first_tools_list(front: &Front) {
    front.script(|s, n| (s.method == "tools/list" && n == 0).then_some(Scripted::Hold));
}

#[tokio::test]
async fn header_mismatch_is_surfaced_and_fixed_by_listing_tools() {
    bounded(async {
        let server = TestServer::new().tool(
            ScriptedTool::immediate("deploy", CallToolResult::text("ok")).input_schema(json!({
                "type": "object",
                "properties": {"region": {"type": "string", "x-mcp-header": "Region"}}
            })),
        );
        let front = Front::start(&server, Mode::Json).await;
        front.require_param("deploy", "Region", &["region"]);
        let client = connect(&front).await;
        // Called before tools/list: the client cannot know the header yet.
        let e = client
            .call_tool("deploy", json!({"region": "eu"}))
            .await
            .unwrap_err();
        assert!(e.is_header_mismatch() && e.is_rpc(), "{e}");
        assert_eq!(e.rpc_error().unwrap().code, -32020);
        assert!(e.to_string().contains("Mcp-Param-Region"), "{e}");
        client.list_tools().await.unwrap();
        client
            .call_tool("deploy", json!({"region": "eu"}))
            .await
            .unwrap();
        assert_eq!(
            front.seen_of("tools/call")[1].header("mcp-param-region"),
            Some("eu")
        );
    })
    .await;
}

#[tokio::test]
async fn json_rpc_error_bodies_are_read_on_any_status() {
    bounded(async {
        let front = Front::start(&ping(), Mode::Json).await;
        front.script(|s, _| match s.method.as_str() {
            "prompts/list" => Some(reply(
                404,
                r#"{"jsonrpc":"2.0","id":{id},"error":{"code":-32601,"message":"no prompts"}}"#,
            )),
            // An error the server could not tie to the request: no id.
            "resources/list" => Some(reply(
                400,
                r#"{"jsonrpc":"2.0","error":{"code":-32602,"message":"bad meta"}}"#,
            )),
            "completion/complete" => Some(reply(
                200,
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32603,"message":"boom"}}"#,
            )),
            _ => None,
        });
        let client = connect(&front).await;
        for (method, code) in [
            ("prompts/list", -32601),
            ("resources/list", -32602),
            ("completion/complete", -32603),
        ] {
            let e = client.request(method, json!({})).await.unwrap_err();
            assert_eq!(e.rpc_error().map(|r| r.code), Some(code), "{method}: {e}");
        }
        assert_eq!(client.stats().pending_requests, 0);
        // The connection is fine afterwards.
        assert_pongs(&client).await;
    })
    .await;
}

#[tokio::test]
async fn a_status_without_a_json_rpc_body_fails_that_request() {
    bounded(async {
        let front = Front::start(&ping(), Mode::Json).await;
        front.script(|s, n| match (s.method.as_str(), n) {
            ("tools/list", 0) => Some(Scripted::Reply(
                502,
                "text/html",
                "<h1>Bad Gateway</h1>".into(),
            )),
            ("tools/list", 1) => Some(Scripted::Reply(200, "application/json", "not json".into())),
            ("tools/call", 0) => Some(Scripted::Reply(503, "text/plain", String::new())),
            _ => None,
        });
        let client = connect(&front).await;
        let e = client.list_tools().await.unwrap_err();
        assert!(e.is_transport() && !e.is_outcome_unknown(), "{e}");
        assert!(e.to_string().contains("502"), "{e}");
        let e = client.list_tools().await.unwrap_err();
        assert!(e.to_string().contains("not a JSON-RPC message"), "{e}");
        // A lost tools/call reply: the tool may have run.
        let e = client.call_tool("ping", json!({})).await.unwrap_err();
        assert!(
            e.is_outcome_unknown() && e.to_string().contains("503"),
            "{e}"
        );
        assert_pongs(&client).await;
    })
    .await;
}

#[tokio::test]
async fn a_broken_tools_call_stream_is_outcome_unknown() {
    bounded(async {
        let front = Front::start(&ping(), Mode::Sse).await;
        front.script(|s, n| (s.method == "tools/call" && n == 0).then_some(Scripted::Break));
        let client = connect(&front).await;
        let e = client.call_tool("ping", json!({})).await.unwrap_err();
        assert!(e.is_outcome_unknown(), "{e}");
        assert!(e.to_string().contains("ended before the response"), "{e}");
        // Never retried on its own.
        assert_eq!(front.seen_of("tools/call").len(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_refused_connection_is_not_outcome_unknown() {
    bounded(async {
        let port = unused_port();
        let client = Client::builder()
            .protocol_version("2026-07-28")
            .connect(Http::new(format!("http://127.0.0.1:{port}/mcp")))
            .await
            .unwrap();
        let e = client.call_tool("ping", json!({})).await.unwrap_err();
        assert!(e.is_transport() && !e.is_outcome_unknown(), "{e}");
        assert!(e.is_connect(), "{e}");
        assert!(
            client.closed_reason().is_none(),
            "one failed POST does not close the client"
        );
    })
    .await;
}

/// Nothing listens at the URL: `connect` fails as a connection error that
/// says so, whatever version is pinned, before any era is guessed; the
/// `server/discover` probe's refusal is not taken for an initialize-era
/// server, and no `initialize` is tried.
#[tokio::test]
async fn connecting_where_nothing_listens_is_a_connection_error() {
    bounded(async {
        let port = unused_port();
        for pin in [None, Some("2025-11-25"), Some("2026-07-28")] {
            let http = Http::new(format!("http://127.0.0.1:{port}/mcp"));
            let connected = match pin {
                Some(v) => Client::builder().protocol_version(v).connect(http).await,
                None => Client::builder().connect(http).await,
            };
            let Err(e) = connected else {
                // A pinned 2026-07-28 client sends nothing to connect: its
                // first request says it.
                assert_eq!(pin, Some("2026-07-28"));
                continue;
            };
            let text = e.to_string();
            eprintln!("{pin:?}: {text}");
            assert!(e.is_transport() && e.is_connect(), "{pin:?}: {text}");
            let at = format!("could not connect to the server: 127.0.0.1:{port}: ");
            assert!(text.starts_with(&at), "{pin:?}: {text}");
            assert!(
                !text.contains("initialize") && !text.contains("server/discover"),
                "{pin:?}: no era was guessed: {text}"
            );
        }
    })
    .await;
}

#[tokio::test]
async fn a_timed_out_request_closes_its_stream_without_a_post() {
    bounded(async {
        let front = Front::start(&ping(), Mode::Sse).await;
        hold_the_first_tools_list(&front);
        let client = Client::builder()
            .request_timeout(ms(300))
            .connect(http(&front))
            .await
            .unwrap();
        let e = client.list_tools().await.unwrap_err();
        assert!(e.is_timeout(), "{e}");
        let mut waited = 0;
        while front.dropped_streams() == 0 && waited < 100 {
            tokio::time::sleep(ms(20)).await;
            waited += 1;
        }
        assert_eq!(
            front.dropped_streams(),
            1,
            "cancelling is closing the response"
        );
        assert!(front.seen_of("notifications/cancelled").is_empty());
        assert!(client.list_tools().await.is_ok());
    })
    .await;
}

#[tokio::test]
async fn the_transport_timeout_bounds_each_exchange() {
    bounded(async {
        let front = Front::start(&ping(), Mode::Sse).await;
        hold_the_first_tools_list(&front);
        let client = Client::connect(http(&front).timeout(ms(200)))
            .await
            .unwrap();
        let e = client.list_tools().await.unwrap_err();
        assert!(e.is_transport() && !e.is_timeout(), "{e}");
        assert!(
            e.to_string().contains("no complete reply within 200 ms"),
            "{e}"
        );
        assert!(client.list_tools().await.is_ok());
    })
    .await;
}

#[tokio::test]
async fn a_rejected_version_is_retried_once() {
    bounded(async {
        let front = Front::start(&ping(), Mode::Json).await;
        front.script(|s, n| {
            (s.method == "server/discover" && n == 0).then(|| {
                reply(400, r#"{"jsonrpc":"2.0","id":{id},"error":{"code":-32022,"message":"Unsupported protocol version","data":{"supported":["2026-07-28"],"requested":"2026-07-28"}}}"#)
            })
        });
        let client = connect(&front).await;
        client.discover().await.unwrap();
        let discovers = front.seen_of("server/discover");
        assert_eq!(discovers.len(), 2);
        assert_ne!(discovers[0].id, discovers[1].id);
        assert_eq!(discovers[1].header("mcp-protocol-version"), Some("2026-07-28"));
    })
    .await;
}

#[tokio::test]
async fn an_https_url_opens_a_tls_handshake() {
    use tokio::io::AsyncReadExt as _;
    bounded(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let hello = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut head = [0u8; 3];
            socket.read_exact(&mut head).await.unwrap();
            head // dropped with the socket: the handshake fails
        });
        let client = Client::builder()
            .protocol_version("2026-07-28")
            .connect(Http::new(format!("https://127.0.0.1:{port}/mcp")))
            .await
            .unwrap();
        let e = client.list_tools().await.unwrap_err();
        assert!(e.is_transport() && !e.is_timeout(), "{e}");
        // A TLS handshake record (0x16) of version 3.x: the ClientHello.
        let head = hello.await.unwrap();
        assert_eq!(head[..2], [0x16, 0x03], "{head:?}");
    })
    .await;
}
