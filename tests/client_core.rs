//! The client core over the memory transport: discover, paging, plain calls,
//! MRTR, version renegotiation, timeouts and a failing connection.

mod support;

use mcp_tasks::Client;
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{
    ElicitResult, InputRequest, ListRootsResult, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION,
    TASKS_EXTENSION,
};
use mcp_tasks::testing::{ScriptedTool, TestServer};
use serde_json::json;
use support::*;

#[tokio::test(start_paused = true)]
async fn discover_is_sent_once_and_cached() {
    let server = TestServer::new();
    let client = client(&server).await;
    let d = client.discover().await.unwrap();
    assert!(d.supported_versions.iter().any(|v| v == "2026-07-28"));
    assert!(client.supports_tasks().await.unwrap());
    assert_eq!(server.count("server/discover"), 1);
    assert_eq!(client.server_id(), Some("mcp-tasks-test-server"));
}

#[tokio::test(start_paused = true)]
async fn list_tools_follows_every_page() {
    let mut server = TestServer::new().page_size(2);
    for i in 0..5 {
        server = server.tool(ScriptedTool::immediate(format!("t{i}"), text("x")));
    }
    let client = client(&server).await;
    let tools = client.list_tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name.as_str()).collect();
    assert_eq!(names, ["t0", "t1", "t2", "t3", "t4"]);
    let pages = of(&server, "tools/list");
    assert_eq!(pages.len(), 3);
    assert!(pages[0].params.get("cursor").is_none());
    assert!(pages[1].params["cursor"].is_string());
}

#[tokio::test(start_paused = true)]
async fn plain_call_returns_the_result_and_sends_full_meta() {
    let server = TestServer::new().tool(ScriptedTool::immediate("ping", text("pong")));
    let client = Client::builder()
        .client_info("tests", "9.9")
        .connect(server.connect())
        .await
        .unwrap();
    let r = client.call_tool("ping", json!({"n": 1})).await.unwrap();
    assert_eq!(r.joined_text(), "pong");
    let call = &of(&server, "tools/call")[0];
    let meta = &call.params["_meta"];
    assert_eq!(meta[META_PROTOCOL_VERSION], "2026-07-28");
    assert_eq!(meta["io.modelcontextprotocol/clientInfo"]["name"], "tests");
    assert!(meta[META_CLIENT_CAPABILITIES]["extensions"][TASKS_EXTENSION].is_object());
    assert_eq!(call.params["arguments"], json!({"n": 1}));
}

#[tokio::test(start_paused = true)]
async fn non_object_arguments_are_a_builder_error() {
    let server = TestServer::new().tool(ScriptedTool::immediate("ping", text("pong")));
    let client = client(&server).await;
    let e = client.call_tool("ping", json!([1, 2])).await.unwrap_err();
    assert!(e.is_builder(), "{e}");
    assert_eq!(server.count("tools/call"), 0);
}

#[tokio::test(start_paused = true)]
async fn mrtr_round_trip_echoes_request_state() {
    let state = "opaque-\u{1F512}-state with spaces";
    let server = TestServer::new().tool(ScriptedTool::input_required(
        "deploy",
        requests(&["confirm"]),
        Some(state.to_owned()),
        text("deployed"),
    ));
    let handlers = InputHandlers::new().elicitation_form(|req| async move {
        assert_eq!(req.message, "Confirm the export?");
        Ok(ElicitResult::accept(json!({"ok": true})))
    });
    let client = client_with(&server, handlers).await;
    let r = client
        .call_tool("deploy", json!({"env": "prod"}))
        .await
        .unwrap();
    assert_eq!(r.joined_text(), "deployed");
    let calls = of(&server, "tools/call");
    assert_eq!(calls.len(), 2);
    assert_ne!(calls[0].id, calls[1].id, "a retry is a new request");
    assert_eq!(calls[1].params["requestState"], state);
    assert_eq!(calls[1].params["arguments"], json!({"env": "prod"}));
    assert_eq!(
        calls[1].params["inputResponses"]["confirm"]["action"],
        "accept"
    );
    assert!(calls[0].params.get("requestState").is_none());
    // The handler made the client declare form elicitation.
    assert!(calls[0].params["_meta"][META_CLIENT_CAPABILITIES]["elicitation"]["form"].is_object());
}

#[tokio::test(start_paused = true)]
async fn mrtr_without_a_handler_says_which_input() {
    let server = TestServer::new().tool(ScriptedTool::input_required(
        "deploy",
        requests(&["confirm"]),
        None,
        text("deployed"),
    ));
    let client = client(&server).await;
    let e = client.call_tool("deploy", json!({})).await.unwrap_err();
    assert!(e.is_input_required(), "{e}");
    assert!(e.to_string().contains("confirm"));
    assert_eq!(server.count("tools/call"), 1);
}

#[tokio::test(start_paused = true)]
async fn mrtr_rounds_are_bounded() {
    let server = TestServer::new().tool(ScriptedTool::input_forever("loop", requests(&["k"])));
    let handlers = accept_forms();
    let client = Client::builder()
        .input_handlers(handlers)
        .max_input_rounds(3)
        .connect(server.connect())
        .await
        .unwrap();
    let e = client.call_tool("loop", json!({})).await.unwrap_err();
    assert!(e.is_protocol(), "{e}");
    assert_eq!(server.count("tools/call"), 4);
}

#[tokio::test(start_paused = true)]
async fn unsupported_version_is_renegotiated_once() {
    let server = TestServer::new().tool(ScriptedTool::immediate("ping", text("pong")));
    let client = Client::builder()
        .protocol_version("2027-01-01")
        .connect(server.connect())
        .await
        .unwrap();
    let r = client.call_tool("ping", json!({})).await.unwrap();
    assert_eq!(r.joined_text(), "pong");
    let calls = of(&server, "tools/call");
    assert_eq!(calls.len(), 2);
    assert_eq!(
        calls[0].params["_meta"][META_PROTOCOL_VERSION],
        "2027-01-01"
    );
    assert_eq!(
        calls[1].params["_meta"][META_PROTOCOL_VERSION],
        "2026-07-28"
    );
    assert_eq!(&*client.protocol_version(), "2026-07-28");
}

#[tokio::test(start_paused = true)]
async fn no_common_version_is_a_clear_error() {
    // Found by the connect probe: connect fails, naming the versions.
    let server = TestServer::new().supported_versions(["2030-01-01"]);
    let e = Client::connect(server.connect()).await.unwrap_err();
    assert!(e.is_unsupported_version(), "{e}");
    assert_eq!(e.method(), Some("server/discover"));
    assert_eq!(server.count("server/discover"), 1);
    assert_eq!(server.count("initialize"), 0, "a modern error: no fallback");
    // Pinned, the same error comes from the first request instead.
    let client = Client::builder()
        .protocol_version("2026-07-28")
        .connect(server.connect())
        .await
        .unwrap();
    let e = client.discover().await.unwrap_err();
    assert!(e.is_unsupported_version(), "{e}");
}

#[tokio::test(start_paused = true)]
async fn a_request_times_out_and_is_cancelled_on_the_wire() {
    let (client, _sink, mut stream) = raw_peer().await;
    let e = client.discover().await.unwrap_err();
    assert!(e.is_timeout(), "{e}");
    assert_eq!(e.method(), Some("server/discover"));
    assert_eq!(
        client.stats().pending_requests,
        0,
        "a timed-out request leaves the table"
    );
    let sent = next_json(&mut stream).await;
    let cancelled = next_json(&mut stream).await;
    assert_eq!(cancelled["method"], "notifications/cancelled");
    assert_eq!(cancelled["params"]["requestId"], sent["id"]);
}

#[tokio::test(start_paused = true)]
async fn server_exit_fails_every_pending_request() {
    let (client, sink, mut stream) = raw_peer().await;
    let a = tokio::spawn({
        let c = client.clone();
        async move { c.list_tools().await }
    });
    let b = tokio::spawn({
        let c = client.clone();
        async move { c.discover().await.map(|_| ()) }
    });
    next_json(&mut stream).await;
    next_json(&mut stream).await;
    drop((sink, stream));
    let (a, b) = (a.await.unwrap().unwrap_err(), b.await.unwrap().unwrap_err());
    assert!(a.is_transport() && b.is_transport(), "{a} / {b}");
    assert_eq!(client.stats().pending_requests, 0);
    assert!(client.closed_reason().is_some());
    // Later requests fail at once.
    assert!(client.list_tools().await.unwrap_err().is_transport());
}

/// Servers echo the id in their errors ("unknown task: <id>", as rmcp and
/// neva do); showing the error must still not show the id.
#[tokio::test(start_paused = true)]
async fn a_task_id_echoed_in_a_server_error_is_not_shown() {
    let (client, mut sink, mut stream) = raw_peer().await;
    let id = mcp_tasks::protocol::TaskId::new("7d4f3b2a-0c1e-4f5a-9b8c-secret");
    let get = tokio::spawn({
        let (c, id) = (client.clone(), id.clone());
        async move { c.get_task(&id).await }
    });
    let sent = next_json(&mut stream).await;
    let echo = format!(
        "unknown task: {}",
        sent["params"]["taskId"].as_str().unwrap()
    );
    reply(
        &mut sink,
        json!({"jsonrpc": "2.0", "id": sent["id"], "error": {"code": -32602, "message": echo}})
            .to_string(),
    )
    .await;
    let e = get.await.unwrap().unwrap_err();
    assert!(e.is_task_not_found(), "{e}");
    for shown in [e.to_string(), format!("{e:?}")] {
        assert!(
            !shown.contains("secret") && shown.contains(&id.redacted()),
            "{shown}"
        );
    }
    assert_eq!(
        e.rpc_error().unwrap().message,
        echo,
        "the raw error is kept"
    );
}

#[tokio::test(start_paused = true)]
async fn a_lost_tools_call_reply_is_outcome_unknown() {
    let (client, sink, mut stream) = raw_peer().await;
    let call = tokio::spawn({
        let c = client.clone();
        async move { c.call_tool("deploy", json!({})).await }
    });
    next_json(&mut stream).await;
    drop((sink, stream));
    let e = call.await.unwrap().unwrap_err();
    assert!(e.is_outcome_unknown() && e.is_transport(), "{e}");
}

#[tokio::test(start_paused = true)]
async fn malformed_lines_are_skipped() {
    let (client, mut sink, mut stream) = raw_peer().await;
    let pending = tokio::spawn({
        let c = client.clone();
        async move { c.request("x/echo", json!({})).await }
    });
    let sent = next_json(&mut stream).await;
    reply(&mut sink, "this is not json".into()).await;
    reply(
        &mut sink,
        r#"{"jsonrpc":"2.0","id":9999,"result":{}}"#.into(),
    )
    .await;
    reply(
        &mut sink,
        r#"{"jsonrpc":"2.0","method":"notifications/tasks","params":{"taskId":"x"}}"#.into(),
    )
    .await;
    reply(
        &mut sink,
        json!({"jsonrpc": "2.0", "id": sent["id"], "result": {"ok": true}}).to_string(),
    )
    .await;
    let v = pending.await.unwrap().unwrap();
    assert_eq!(v["ok"], true);
}

#[tokio::test(start_paused = true)]
async fn raw_request_lets_the_caller_replace_capabilities() {
    let server = TestServer::new().tool(ScriptedTool::task(
        "export",
        mcp_tasks::testing::TaskScript::new().complete(ms(10), text("done")),
    ));
    let client = client(&server).await;
    let e = client
        .request(
            "tools/call",
            json!({"name": "export", "_meta": {META_CLIENT_CAPABILITIES: {}}}),
        )
        .await
        .unwrap_err();
    assert!(e.is_missing_capability(), "{e}");
    let data = &e.rpc_error().unwrap().data;
    assert!(
        data.as_ref().unwrap()["requiredCapabilities"]["extensions"][TASKS_EXTENSION].is_object()
    );
}

#[tokio::test]
async fn an_oversized_line_closes_the_connection_with_a_clear_error() {
    use tokio::io::AsyncWriteExt;
    let (client_io, mut server_io) = tokio::io::duplex(1 << 16);
    let (r, w) = tokio::io::split(client_io);
    let transport = mcp_tasks::transport::LineTransport::new(r, w).max_message_size(1024);
    let client = Client::builder()
        .protocol_version("2026-07-28")
        .connect(transport)
        .await
        .unwrap();
    let pending = tokio::spawn({
        let c = client.clone();
        async move { c.discover().await.map(|_| ()) }
    });
    let big = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{{\"x\":\"{}\"}}}}\n",
        "a".repeat(4096)
    );
    server_io.write_all(big.as_bytes()).await.unwrap();
    let e = pending.await.unwrap().unwrap_err();
    assert!(e.is_transport(), "{e}");
    assert!(
        client
            .closed_reason()
            .unwrap()
            .contains("larger than 1024 bytes")
    );
}

#[test]
fn input_request_constructors_name_their_method() {
    assert_eq!(InputRequest::url("m", "u").method(), "elicitation/create");
}

#[tokio::test(start_paused = true)]
async fn a_lost_reply_fails_one_request_and_the_connection_lives_on() {
    let server = TestServer::new().tool(ScriptedTool::immediate("ping", text("pong")));
    let client = Client::connect(Lossy(server.connect(), "tools/call"))
        .await
        .unwrap();
    let e = client.call_tool("ping", json!({})).await.unwrap_err();
    assert!(e.is_outcome_unknown(), "{e}");
    assert!(client.closed_reason().is_none());
    assert_eq!(call_text(&client, "ping").await, "pong");
}

#[tokio::test(start_paused = true)]
async fn a_lost_tasks_get_reply_is_retried_within_the_wait() {
    use mcp_tasks::testing::TaskScript;
    let server = TestServer::new().tool(ScriptedTool::task(
        "export",
        TaskScript::new()
            .poll_interval(ms(500))
            .complete(ms(700), text("done")),
    ));
    let client = Client::connect(Lossy(server.connect(), "tasks/get"))
        .await
        .unwrap();
    let started = tokio::time::Instant::now();
    let done = finish_call(&client, "export").await;
    assert_eq!(done.into_result().unwrap().joined_text(), "done");
    // 500: lost; 600: retried (working); 1100: completed.
    assert_eq!(started.elapsed(), ms(1100));
    assert_eq!(
        server.count("tasks/get"),
        2,
        "the lost read never reached the server"
    );
}

/// Installs the handlers `want` names: form, URL, sampling, roots.
fn handlers_for(want: [bool; 4]) -> InputHandlers {
    let mut handlers = InputHandlers::new();
    if want[0] {
        handlers = handlers.elicitation_form(|_| async { Ok(ElicitResult::decline()) });
    }
    if want[1] {
        handlers = handlers.elicitation_url(|_| async { Ok(ElicitResult::decline()) });
    }
    if want[2] {
        handlers = handlers.sampling(|_| async { Err("no model here".into()) });
    }
    if want[3] {
        handlers = handlers.roots(|_| async { Ok(ListRootsResult { roots: Vec::new() }) });
    }
    handlers
}

/// Which of form, URL, sampling and roots `capabilities` declares.
fn declared(capabilities: &serde_json::Value) -> [bool; 4] {
    [
        capabilities["elicitation"]["form"].is_object(),
        capabilities["elicitation"]["url"].is_object(),
        capabilities["sampling"].is_object(),
        capabilities["roots"].is_object(),
    ]
}

/// The class: for every set of installed handlers, the client declares
/// exactly what they answer, in each 2026-07-28 request's `_meta` and in
/// a 2025-11-25 `initialize` alike.
#[tokio::test(start_paused = true)]
async fn the_declared_capabilities_are_exactly_the_installed_handlers_on_both_eras() {
    for set in 0..16u8 {
        let want = [0, 1, 2, 3].map(|bit| set & (1 << bit) != 0);
        let server = TestServer::new();
        let client = client_with(&server, handlers_for(want)).await;
        client.list_tools().await.unwrap();
        let listed = &of(&server, "tools/list")[0];
        let meta = &listed.params["_meta"][META_CLIENT_CAPABILITIES];
        assert_eq!(declared(meta), want, "2026-07-28: {meta}");

        let (transport, mut peer) = support::hand_peer::peer();
        let connecting = tokio::spawn(
            Client::builder()
                .input_handlers(handlers_for(want))
                .connect(transport),
        );
        let init = peer.handshake("2025-11-25").await;
        let caps = &init["params"]["capabilities"];
        assert_eq!(declared(caps), want, "2025-11-25: {caps}");
        connecting.await.unwrap().unwrap();
    }
}

#[allow(dead_code, reason = "only the examples' handlers are checked here")]
#[path = "../examples/support/drive.rs"]
mod drive;

/// The `http` and `stdio` examples install a handler for all they can
/// answer, so a server shows them every tool that needs one.
#[test]
fn the_examples_declare_forms_sampling_and_roots() {
    let caps = serde_json::to_value(drive::terminal().capabilities()).unwrap();
    assert_eq!(declared(&caps), [true, false, true, true], "{caps}");
}
