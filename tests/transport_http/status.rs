//! Every HTTP reply to a POST resolves that POST at once: error statuses
//! with bodies that are not JSON-RPC (OAuth errors, HTML pages, nothing),
//! JSON-RPC errors whose id is not the request's, and `2xx` garbage. None
//! may leave the request waiting for its timeout.

use std::time::Instant;

use super::*;

/// Far longer than any of these replies take; a request that reaches it
/// has waited for nothing.
const TIMEOUT: Duration = Duration::from_secs(5);
/// What "at once" means here, with room for a slow machine.
const PROMPT: Duration = Duration::from_secs(2);

/// `Bearer` challenge of an OAuth-protected server (RFC 6750, RFC 9728).
const CHALLENGE: &str = r#"Bearer error="invalid_token", error_description="The access token expired", resource_metadata="http://127.0.0.1/.well-known/oauth-protected-resource""#;

fn ping() -> TestServer {
    TestServer::new().tool(ScriptedTool::immediate(
        "ping",
        CallToolResult::text("pong"),
    ))
}

async fn client_for(front: &Front) -> Client {
    Client::builder()
        .request_timeout(TIMEOUT)
        .connect(http(front))
        .await
        .expect("connect")
}

/// Runs one request and checks it failed promptly, and not by timing out.
async fn fails_fast<T: std::fmt::Debug>(
    what: &str,
    request: impl Future<Output = mcp_tasks::Result<T>>,
) -> mcp_tasks::Error {
    let start = Instant::now();
    let e = request.await.expect_err(what);
    let took = start.elapsed();
    assert!(!e.is_timeout(), "{what}: waited for the timeout: {e}");
    assert!(took < PROMPT, "{what}: took {took:?}: {e}");
    e
}

async fn still_works(client: &Client) {
    let r = client.call_tool("ping", json!({})).await.unwrap();
    assert_eq!(r.joined_text(), "pong");
    assert_eq!(client.stats().pending_requests, 0);
}

#[tokio::test]
async fn a_401_with_an_oauth_error_body_fails_at_once_with_its_challenge() {
    bounded(async {
        let front = Front::start(&ping(), Mode::Json).await;
        front.script(|s, n| {
            let oauth =
                r#"{"error":"invalid_token","error_description":"The access token expired"}"#;
            match (s.method.as_str(), n) {
                ("tools/list" | "tools/call", 0) => Some(Scripted::ReplyWith(
                    401,
                    "application/json",
                    oauth.into(),
                    vec![("www-authenticate", CHALLENGE)],
                )),
                ("tools/list", 1) => Some(Scripted::ReplyWith(
                    403,
                    "application/json",
                    r#"{"error":"insufficient_scope"}"#.into(),
                    vec![(
                        "www-authenticate",
                        r#"Bearer error="insufficient_scope", scope="tools""#,
                    )],
                )),
                _ => None,
            }
        });
        let client = client_for(&front).await;
        let e = fails_fast("tools/list 401", client.list_tools()).await;
        assert_eq!(e.http_status(), Some(401), "{e}");
        assert_eq!(e.www_authenticate(), Some(CHALLENGE));
        assert!(!e.is_transport() && !e.is_rpc(), "{e:?}");
        let text = e.to_string();
        assert!(
            text.contains("401") && text.contains("invalid_token"),
            "{text}"
        );
        assert_eq!(text.lines().count(), 1, "{text}");

        let e = fails_fast("tools/list 403", client.list_tools()).await;
        assert_eq!(e.http_status(), Some(403), "{e}");
        assert!(e.www_authenticate().unwrap().contains("insufficient_scope"));

        // Refused before it ran: the tool did not run, and the caller knows.
        let e = fails_fast("tools/call 401", client.call_tool("ping", json!({}))).await;
        assert_eq!(e.http_status(), Some(401), "{e}");
        assert!(!e.is_outcome_unknown(), "{e}");
        assert!(!e.to_string().contains("may or may not"), "{e}");
        still_works(&client).await;
    })
    .await;
}

#[tokio::test]
async fn a_502_with_a_string_error_field_fails_at_once() {
    bounded(async {
        let front = Front::start(&ping(), Mode::Json).await;
        front.script(|s, n| {
            (n == 0 && matches!(s.method.as_str(), "tools/list" | "tools/call")).then(|| {
                Scripted::Reply(
                    502,
                    "application/json",
                    r#"{"error":"upstream connect error or disconnect/reset before headers"}"#
                        .into(),
                )
            })
        });
        let client = client_for(&front).await;
        let e = fails_fast("tools/list 502", client.list_tools()).await;
        assert_eq!(e.http_status(), Some(502), "{e}");
        assert!(e.is_transport() && e.www_authenticate().is_none(), "{e}");
        assert!(e.to_string().contains("upstream connect error"), "{e}");
        // A gateway failure may come after the tool ran.
        let e = fails_fast("tools/call 502", client.call_tool("ping", json!({}))).await;
        assert!(
            e.is_outcome_unknown() && e.http_status() == Some(502),
            "{e}"
        );
        still_works(&client).await;
    })
    .await;
}

#[tokio::test]
async fn a_json_rpc_error_with_a_foreign_id_answers_its_post() {
    bounded(async {
        let front = Front::start(&ping(), Mode::Json).await;
        front.script(|s, n| match (s.method.as_str(), n) {
            // What some SDKs send when they cannot read the request.
            ("tools/call", 0) => Some(Scripted::Reply(
                400,
                "application/json",
                r#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32600,"message":"Bad Request: invalid session"}}"#.into(),
            )),
            ("tools/call", 1) => Some(Scripted::Reply(
                403,
                "application/json",
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Forbidden"}}"#.into(),
            )),
            ("tools/list", 0) => Some(Scripted::Reply(
                200,
                "application/json",
                r#"{"jsonrpc":"2.0","id":"server-error","error":{"code":-32603,"message":"boom"}}"#.into(),
            )),
            ("tools/list", 1) => Some(Scripted::Reply(
                500,
                "application/json",
                r#"{"jsonrpc":"2.0","id":987654,"error":{"code":-32603,"message":"crashed"}}"#.into(),
            )),
            _ => None,
        });
        let client = client_for(&front).await;
        let e = fails_fast("tools/call 400", client.call_tool("ping", json!({}))).await;
        let rpc = e.rpc_error().expect("the JSON-RPC error is kept");
        assert_eq!(
            (rpc.code, rpc.message.as_str()),
            (-32600, "Bad Request: invalid session")
        );
        assert!(!e.is_outcome_unknown(), "{e}");
        assert_eq!(e.http_status(), Some(400));

        let e = fails_fast("tools/call 403", client.call_tool("ping", json!({}))).await;
        assert_eq!(e.rpc_error().map(|r| r.code), Some(-32001), "{e}");
        assert!(!e.is_outcome_unknown() && e.http_status() == Some(403), "{e}");

        let e = fails_fast("tools/list 200", client.list_tools()).await;
        assert_eq!(e.rpc_error().map(|r| r.code), Some(-32603), "{e}");
        assert_eq!(e.http_status(), None, "a 2xx is no HTTP error");

        let e = fails_fast("tools/list 500", client.list_tools()).await;
        assert_eq!(e.rpc_error().map(|r| r.message.as_str()), Some("crashed"));
        assert_eq!(e.http_status(), Some(500));
        still_works(&client).await;
    })
    .await;
}

/// One odd reply: status, content type, body, and the status the error
/// must report (`None` for `2xx`).
type Odd = (u16, &'static str, &'static str, Option<u16>);

const ODD_REPLIES: &[Odd] = &[
    (
        200,
        "application/json",
        r#"{"error":"invalid_token"}"#,
        None,
    ),
    (200, "application/json", "[]", None),
    (
        200,
        "application/json",
        r#"[{"jsonrpc":"2.0","id":{id},"result":{"tools":[]}}]"#,
        None,
    ),
    // An array that serde would read as a struct, field by field.
    (200, "application/json", r#"[{id},null,{"tools":[]}]"#, None),
    (200, "application/json", "{}", None),
    (200, "application/json", "null", None),
    (200, "application/json", "this is not json", None),
    (200, "text/plain", "OK", None),
    (
        200,
        "application/json",
        r#"{"jsonrpc":"2.0","id":{id},"error":{"code":"bad"}}"#,
        None,
    ),
    (
        200,
        "application/json",
        r#"{"jsonrpc":"2.0","id":424242,"result":{}}"#,
        None,
    ),
    (202, "application/json", "", None),
    (204, "application/json", "", None),
    (
        500,
        "text/html",
        "<html><body><h1>500 Internal Server Error</h1></body></html>",
        Some(500),
    ),
    (404, "text/plain", "", Some(404)),
    (
        400,
        "application/json",
        r#"{"error":{"code":"bad"}}"#,
        Some(400),
    ),
    (405, "application/json", "[1,2,3]", Some(405)),
    (302, "text/plain", "", Some(302)),
    (429, "text/plain", "slow down", Some(429)),
    (
        401,
        "text/event-stream",
        "data: {\"error\":\"invalid_token\"}\n\n",
        Some(401),
    ),
    (503, "text/event-stream", ": nothing\n\n", Some(503)),
];

#[tokio::test]
async fn every_odd_reply_resolves_its_post_at_once() {
    bounded(async {
        let front = Front::start(&ping(), Mode::Json).await;
        front.script(|s, n| {
            let &(status, ctype, body, _) =
                ODD_REPLIES.get(n).filter(|_| s.method == "tools/list")?;
            Some(Scripted::Reply(status, ctype, body.into()))
        });
        let client = client_for(&front).await;
        for (status, ctype, body, reported) in ODD_REPLIES {
            let what = format!("{status} {ctype} {body:?}");
            let e = fails_fast(&what, client.list_tools()).await;
            assert_eq!(e.http_status(), *reported, "{what}: {e}");
            assert!(
                e.to_string().contains(&status.to_string()),
                "{what}: the status is in the message: {e}"
            );
        }
        assert_eq!(front.seen_of("tools/list").len(), ODD_REPLIES.len());
        still_works(&client).await;
    })
    .await;
}

#[tokio::test]
async fn a_4xx_refusal_of_tools_call_is_not_outcome_unknown() {
    const REFUSALS: &[(u16, &str, &str)] = &[
        (400, "text/plain", "Bad Request"),
        (401, "application/json", r#"{"error":"invalid_token"}"#),
        (403, "text/html", "<h1>Forbidden</h1>"),
        (404, "text/plain", ""),
        (413, "text/plain", "Payload Too Large"),
        (429, "application/json", r#"{"error":"rate_limited"}"#),
    ];
    bounded(async {
        let front = Front::start(&ping(), Mode::Json).await;
        front.script(|s, n| {
            let &(status, ctype, body) = REFUSALS.get(n).filter(|_| s.method == "tools/call")?;
            Some(Scripted::Reply(status, ctype, body.into()))
        });
        let client = client_for(&front).await;
        for (status, _, body) in REFUSALS {
            let what = format!("{status} {body:?}");
            let e = fails_fast(&what, client.call_tool("ping", json!({}))).await;
            assert!(!e.is_outcome_unknown(), "{what}: {e}");
            assert_eq!(e.http_status(), Some(*status), "{what}: {e}");
        }
        // Never retried on its own.
        assert_eq!(front.seen_of("tools/call").len(), REFUSALS.len());
        still_works(&client).await;
    })
    .await;
}

#[tokio::test]
async fn a_refused_task_read_ends_the_wait_at_once() {
    bounded(async {
        let server = TestServer::new().tool(ScriptedTool::task(
            "export",
            TaskScript::new()
                .poll_interval(ms(20))
                .working(ms(10), "exporting")
                .complete(ms(3_000), CallToolResult::text("exported")),
        ));
        let front = Front::start(&server, Mode::Json).await;
        front.script(|s, _| {
            (s.method == "tasks/get").then(|| {
                Scripted::ReplyWith(
                    401,
                    "application/json",
                    r#"{"error":"invalid_token"}"#.into(),
                    vec![("www-authenticate", CHALLENGE)],
                )
            })
        });
        let client = client_for(&front).await;
        let state = client.task().call_tool("export", json!({})).await.unwrap();
        assert!(matches!(state, TaskState::Pending(_)), "a task");
        let start = Instant::now();
        let Err(e) = state.finish().await else {
            panic!("the read is refused")
        };
        assert!(start.elapsed() < PROMPT, "{:?}", start.elapsed());
        assert_eq!(e.error().http_status(), Some(401), "{}", e.error());
        assert_eq!(e.error().www_authenticate(), Some(CHALLENGE));
        // One refused read, not one per backoff step.
        assert_eq!(front.seen_of("tasks/get").len(), 1);
    })
    .await;
}

/// An error page from a server or a gateway: the error makes a predicate
/// true (`is_refused` for a `3xx` or `4xx`, `is_transport` for a `5xx`),
/// says its status, and quotes a bounded start of the page (cut on a char
/// boundary, with a marker), never the whole page.
#[tokio::test]
async fn an_error_page_is_a_refusal_that_says_its_status_and_quotes_little() {
    let page = format!(
        "<!DOCTYPE html><html><head><title>404 Not Found</title></head><body>{}</body></html>",
        "<p>Ünïcödé nginx says the page is not here.</p>\n".repeat(200)
    );
    bounded(async {
        let front = Front::start(&ping(), Mode::Json).await;
        let body = page.clone();
        front.script(move |s, n| {
            let status = match (s.method.as_str(), n) {
                ("tools/list", 0) => 404,
                ("tools/list", 1) => 403,
                ("tools/list", 2) => 502,
                _ => return None,
            };
            Some(Scripted::Reply(status, "text/html", body.clone()))
        });
        let client = client_for(&front).await;
        for status in [404u16, 403, 502] {
            let e = fails_fast("an error page", client.list_tools()).await;
            assert_eq!(e.http_status(), Some(status), "{e}");
            assert_eq!(e.is_refused(), status < 500, "{status}: {e}");
            assert_eq!(e.is_transport(), status >= 500, "{status}: {e}");
            let text = e.to_string();
            assert!(text.contains(&format!("HTTP {status}")), "{text}");
            assert!(text.contains('…'), "the quote is marked as cut: {text}");
            let quoted = text.chars().count();
            assert!((100..=500).contains(&quoted), "{quoted} chars: {text}");
        }
        still_works(&client).await;
    })
    .await;
}
