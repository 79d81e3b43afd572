//! What goes on the wire: headers, reply framing, connection reuse.

use super::*;

fn tools() -> TestServer {
    TestServer::new()
        .tool(ScriptedTool::immediate(
            "ping",
            CallToolResult::text("pong"),
        ))
        .tool(
            ScriptedTool::immediate("deploy", CallToolResult::text("deployed")).input_schema(
                json!({
                    "type": "object",
                    "properties": {
                        "region": {"type": "string", "x-mcp-header": "Region"},
                        "opts": {"type": "object", "properties": {
                            "priority": {"type": "integer", "x-mcp-header": "Priority"},
                            "dry": {"type": "boolean", "x-mcp-header": "Dry"}
                        }},
                        "note": {"type": "string"}
                    }
                }),
            ),
        )
        .tool(
            ScriptedTool::immediate("bad", CallToolResult::text("never")).input_schema(json!({
                "type": "object",
                "properties": {"score": {"type": "number", "x-mcp-header": "Score"}}
            })),
        )
        .tool(ScriptedTool::immediate(
            "résumé",
            CallToolResult::text("cv"),
        ))
}

/// The checks every POST of a correct client passes.
fn standard(s: &Seen) {
    assert_eq!(
        s.header("accept"),
        Some("application/json, text/event-stream")
    );
    assert_eq!(s.header("content-type"), Some("application/json"));
    assert_eq!(
        s.header("mcp-protocol-version"),
        s.body["params"]["_meta"][META_PROTOCOL_VERSION].as_str()
    );
    assert_eq!(s.header("mcp-method"), Some(s.method.as_str()));
    assert_eq!(s.header("x-team"), Some("data-platform"));
    assert_eq!(s.header("authorization"), Some("Bearer tok-123"));
}

async fn plain_calls(mode: Mode) {
    let server = tools();
    let front = Front::start(&server, mode).await;
    let client = connect(&front).await;
    assert!(client.supports_tasks().await.unwrap());
    let names = tool_names(&client).await;
    assert_eq!(
        names,
        ["ping", "deploy", "résumé"],
        "the tool with an invalid x-mcp-header is dropped"
    );
    for _ in 0..3 {
        let r = client.call_tool("ping", json!({})).await.unwrap();
        assert_eq!(r.joined_text(), "pong");
    }
    assert_eq!(rejected(&front), []);
    let seen = front.seen();
    assert_eq!(seen.len(), 5);
    seen.iter().for_each(standard);
    assert_eq!(
        front.seen_of("tools/call")[0].header("mcp-name"),
        Some("ping")
    );
    assert_eq!(front.seen_of("tools/list")[0].header("mcp-name"), None);
    // One POST per message over one kept-alive connection, SSE replies too.
    assert_eq!(front.connections(), 1);
}

#[tokio::test]
async fn json_replies_with_the_standard_headers() {
    bounded(plain_calls(Mode::Json)).await;
}

#[tokio::test]
async fn sse_replies_with_notifications_and_keep_alives() {
    bounded(plain_calls(Mode::Sse)).await;
}

#[tokio::test]
async fn annotated_arguments_are_mirrored_in_headers() {
    bounded(async {
        let server = tools();
        let front = Front::start(&server, Mode::Json).await;
        front.require_param("deploy", "Region", &["region"]);
        front.require_param("deploy", "Priority", &["opts", "priority"]);
        front.require_param("deploy", "Dry", &["opts", "dry"]);
        let client = connect(&front).await;
        client.list_tools().await.unwrap();
        let args =
            json!({"region": " eu-west ", "opts": {"priority": 7, "dry": null}, "note": "x"});
        client.call_tool("deploy", args).await.unwrap();
        assert_eq!(rejected(&front), []);
        let call = &front.seen_of("tools/call")[0];
        let region = call.header("mcp-param-region").unwrap();
        assert!(
            region.starts_with("=?base64?"),
            "padded values are encoded: {region}"
        );
        assert_eq!(decode(region).as_deref(), Some(" eu-west "));
        assert_eq!(call.header("mcp-param-priority"), Some("7"));
        assert_eq!(
            call.header("mcp-param-dry"),
            None,
            "null arguments send no header"
        );
        assert_eq!(
            call.header("mcp-param-note"),
            None,
            "unannotated arguments send no header"
        );
    })
    .await;
}

#[tokio::test]
async fn a_non_ascii_name_uses_the_base64_form() {
    bounded(async {
        let server = tools();
        let front = Front::start(&server, Mode::Sse).await;
        let client = connect(&front).await;
        let r = client.call_tool("résumé", json!({})).await.unwrap();
        assert_eq!(r.joined_text(), "cv");
        assert_eq!(rejected(&front), []);
        let name = front.seen_of("tools/call")[0]
            .header("mcp-name")
            .unwrap()
            .to_owned();
        assert_eq!(name, "=?base64?csOpc3Vtw6k=?=");
        assert_eq!(decode(&name).as_deref(), Some("résumé"));
    })
    .await;
}

#[tokio::test]
async fn the_escape_hatch_gets_routing_headers_too() {
    bounded(async {
        let server = tools();
        let front = Front::start(&server, Mode::Json).await;
        front.script(|s, _| {
            let ok =
                r#"{"jsonrpc":"2.0","id":{id},"result":{"resultType":"complete","contents":[]}}"#;
            (s.method == "resources/read")
                .then(|| Scripted::Reply(200, "application/json", ok.into()))
        });
        let client = connect(&front).await;
        let uri = "file:///tmp/a%20b.txt";
        client
            .request("resources/read", json!({"uri": uri}))
            .await
            .unwrap();
        assert_eq!(rejected(&front), []);
        assert_eq!(
            front.seen_of("resources/read")[0].header("mcp-name"),
            Some(uri)
        );
    })
    .await;
}

#[tokio::test]
async fn oversized_replies_fail_their_request_only() {
    bounded(async {
        let big = "x".repeat(4096);
        let server = TestServer::new()
            .tool(ScriptedTool::immediate("big", CallToolResult::text(big)))
            .tool(ScriptedTool::immediate(
                "ping",
                CallToolResult::text("pong"),
            ));
        for mode in [Mode::Json, Mode::Sse] {
            let front = Front::start(&server, mode).await;
            let client = Client::connect(http(&front).max_message_size(1024))
                .await
                .unwrap();
            let e = client.call_tool("big", json!({})).await.unwrap_err();
            assert!(e.is_outcome_unknown(), "{e}");
            assert!(e.to_string().contains("1 KiB"), "{e}");
            assert_eq!(call_text(&client, "ping").await, "pong");
        }
    })
    .await;
}

#[test]
fn the_bearer_token_stays_out_of_debug_output() {
    let text = format!(
        "{:?}",
        Http::new("http://127.0.0.1:1/mcp").bearer_token("tok-123")
    );
    assert!(!text.contains("tok-123"), "{text}");
}
