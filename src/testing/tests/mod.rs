//! Wire-level tests of the test server: discovery, paging, metadata
//! checks, MRTR and request cancellation. Task tests are in `tasks.rs`, fault
//! tests in `faults.rs`, those of the counts and of tasks written from
//! their arguments in `counts.rs`, those of the hooked task store in
//! `store.rs`.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::timeout;

use super::*;
use crate::protocol::{
    CallToolResult, InputRequest, InputRequests, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION,
    META_SERVER_INFO, TASKS_EXTENSION,
};
use crate::transport::memory::{MemorySink, MemoryStream};
use crate::transport::{Inbound, MessageSink, MessageStream, Outbound};

/// Milliseconds.
fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

mod counts;
mod faults;
mod store;
mod tasks;

/// The client side of a connection, speaking raw JSON.
pub(super) struct Wire {
    sink: MemorySink,
    stream: MemoryStream,
    next_id: i64,
    /// Notifications received while waiting for a response.
    pub(super) notes: Vec<Value>,
}

impl Wire {
    pub(super) async fn open(server: &TestServer) -> Wire {
        let (sink, stream) = server.connect().connect().await.unwrap();
        Wire {
            sink,
            stream,
            next_id: 0,
            notes: Vec::new(),
        }
    }

    pub(super) async fn send_raw(&mut self, text: &str) {
        self.sink
            .send(Outbound::new(text.to_owned(), "test"))
            .await
            .unwrap();
    }

    pub(super) async fn send(&mut self, message: Value) {
        self.send_raw(&message.to_string()).await;
    }

    /// The next message, or `None` if nothing arrives within `wait` (tokio time).
    pub(super) async fn recv_within(&mut self, wait: Duration) -> Option<Value> {
        match timeout(wait, self.stream.recv()).await {
            Ok(Ok(Some(Inbound::Message(text)))) => Some(serde_json::from_str(&text).unwrap()),
            _ => None,
        }
    }

    pub(super) async fn recv(&mut self) -> Value {
        self.recv_within(Duration::from_secs(3600))
            .await
            .expect("a message")
    }

    /// Sends a request with full `_meta` and returns its id.
    pub(super) async fn request(&mut self, method: &str, params: Value, tasks: bool) -> i64 {
        self.next_id += 1;
        let id = self.next_id;
        let params = with_meta(params, tasks);
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        id
    }

    /// The response to request `id`; notifications before it go to `notes`.
    pub(super) async fn response_to(&mut self, id: i64) -> Value {
        loop {
            let message = self.recv().await;
            if message["id"] == json!(id) {
                return message;
            }
            assert!(message.get("id").is_none(), "unexpected {message}");
            self.notes.push(message);
        }
    }

    /// Sends a request and returns its response.
    pub(super) async fn call(&mut self, method: &str, params: Value, tasks: bool) -> Value {
        let id = self.request(method, params, tasks).await;
        self.response_to(id).await
    }
}

pub(super) fn meta(tasks: bool) -> Value {
    let caps = if tasks {
        json!({"extensions": {TASKS_EXTENSION: {}}})
    } else {
        json!({})
    };
    json!({
        META_PROTOCOL_VERSION: "2026-07-28",
        META_CLIENT_CAPABILITIES: caps,
        "io.modelcontextprotocol/clientInfo": {"name": "wire-test", "version": "0"},
    })
}

pub(super) fn with_meta(mut params: Value, tasks: bool) -> Value {
    params["_meta"] = meta(tasks);
    params
}

/// The error code of a response, panicking on a result.
pub(super) fn code(response: &Value) -> i64 {
    response["error"]["code"]
        .as_i64()
        .unwrap_or_else(|| panic!("expected an error, got {response}"))
}

pub(super) fn form(message: &str) -> InputRequest {
    InputRequest::form(message, json!({"type": "object", "properties": {}}))
}

pub(super) fn requests(keys: &[&str]) -> InputRequests {
    keys.iter().map(|k| ((*k).to_owned(), form(k))).collect()
}

pub(super) fn accept(value: i64) -> Value {
    json!({"action": "accept", "content": {"n": value}})
}

#[tokio::test(start_paused = true)]
async fn discover_answers_with_identity_and_capabilities() {
    let server = TestServer::new();
    let mut wire = Wire::open(&server).await;
    let r = wire.call("server/discover", json!({}), false).await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["supportedVersions"], json!(["2026-07-28"]));
    assert_eq!(
        result["capabilities"]["extensions"][TASKS_EXTENSION],
        json!({})
    );
    assert!(result["capabilities"]["tools"].is_object());
    assert_eq!(result["ttlMs"], 60_000);
    assert_eq!(result["cacheScope"], "public");
    let info = &result["_meta"][META_SERVER_INFO];
    assert_eq!(info["name"], "mcp-tasks-test-server");
    assert_eq!(info["version"], env!("CARGO_PKG_VERSION"));
    assert_eq!(server.count("server/discover"), 1);
    let recorded = &server.requests()[0];
    assert_eq!(recorded.id, Some(crate::protocol::RequestId::Number(1)));
    assert!(!recorded.declares_tasks());
}

#[tokio::test(start_paused = true)]
async fn metadata_is_checked_on_every_request() {
    let server = TestServer::new().supported_versions(["2026-07-28", "2025-11-25"]);
    let mut wire = Wire::open(&server).await;
    wire.send(json!({"jsonrpc": "2.0", "id": 1, "method": "server/discover"}))
        .await;
    assert_eq!(code(&wire.recv().await), -32602);
    wire.send(json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
        "params": {"_meta": {META_PROTOCOL_VERSION: "2026-07-28"}}}))
        .await;
    assert_eq!(code(&wire.recv().await), -32602);
    let mut params = with_meta(json!({}), false);
    params["_meta"][META_PROTOCOL_VERSION] = json!("2027-01-01");
    wire.send(json!({"jsonrpc": "2.0", "id": 3, "method": "tools/list", "params": params}))
        .await;
    let r = wire.recv().await;
    assert_eq!(code(&r), -32022);
    assert_eq!(r["error"]["data"]["requested"], "2027-01-01");
    assert_eq!(
        r["error"]["data"]["supported"],
        json!(["2026-07-28", "2025-11-25"])
    );
    // Unknown methods, legacy ones included, are -32601.
    for method in ["initialize", "tasks/result", "tasks/list", "ping"] {
        assert_eq!(code(&wire.call(method, json!({}), true).await), -32601);
    }
    // Every request is recorded, answered or not.
    assert_eq!(server.requests().len(), 7);
    assert_eq!(server.count("tools/list"), 2);
}

#[tokio::test(start_paused = true)]
async fn malformed_lines_are_skipped() {
    let server = TestServer::new();
    let mut wire = Wire::open(&server).await;
    wire.send_raw("this is not json").await;
    wire.send_raw(r#"{"jsonrpc":"2.0","id":9}"#).await;
    wire.send_raw(r#"{"jsonrpc":"2.0","id":9,"result":{}}"#)
        .await;
    let r = wire.call("server/discover", json!({}), false).await;
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(server.requests().len(), 1);
}

#[tokio::test(start_paused = true)]
async fn tools_list_pages_with_opaque_cursors() {
    let mut server = TestServer::new().page_size(2);
    for i in 0..5 {
        server = server.tool(
            ScriptedTool::immediate(format!("t{i}"), CallToolResult::text("x"))
                .description(format!("tool {i}"))
                .input_schema(json!({"type": "object", "properties": {"a": {"type": "string"}}})),
        );
    }
    let mut wire = Wire::open(&server).await;
    let mut names = Vec::new();
    let mut cursor = Value::Null;
    let mut pages = 0;
    loop {
        let params = if cursor.is_null() {
            json!({})
        } else {
            json!({"cursor": cursor})
        };
        let r = wire.call("tools/list", params, false).await;
        let result = &r["result"];
        assert_eq!(result["cacheScope"], "public");
        assert_eq!(result["ttlMs"], 60_000);
        pages += 1;
        for tool in result["tools"].as_array().unwrap() {
            names.push(tool["name"].as_str().unwrap().to_owned());
            assert_eq!(tool["inputSchema"]["type"], "object");
            assert!(tool["description"].as_str().unwrap().starts_with("tool "));
        }
        cursor = result.get("nextCursor").cloned().unwrap_or(Value::Null);
        if cursor.is_null() {
            break;
        }
    }
    assert_eq!(pages, 3);
    assert_eq!(names, ["t0", "t1", "t2", "t3", "t4"]);
    for bad in [json!("nope"), json!("99"), json!(3)] {
        let r = wire.call("tools/list", json!({"cursor": bad}), false).await;
        assert_eq!(code(&r), -32602);
    }
}

#[tokio::test(start_paused = true)]
async fn immediate_and_unknown_tools() {
    let server = TestServer::new().tool(ScriptedTool::immediate(
        "echo",
        CallToolResult::text("hi").with_structured(json!({"n": 1})),
    ));
    let mut wire = Wire::open(&server).await;
    let r = wire
        .call("tools/call", json!({"name": "echo", "arguments": {}}), true)
        .await;
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(r["result"]["content"][0]["text"], "hi");
    assert_eq!(r["result"]["structuredContent"], json!({"n": 1}));
    let r = wire.call("tools/call", json!({"name": "nope"}), true).await;
    assert_eq!(code(&r), -32602);
    let r = wire.call("tools/call", json!({}), true).await;
    assert_eq!(code(&r), -32602);
}

#[tokio::test(start_paused = true)]
async fn mrtr_needs_every_answer_and_the_same_state() {
    let server = TestServer::new().tool(ScriptedTool::input_required(
        "deploy",
        requests(&["a", "b"]),
        Some("opaque-1".into()),
        CallToolResult::text("deployed").with_structured(json!({"ignored": true})),
    ));
    let mut wire = Wire::open(&server).await;
    let r = wire
        .call("tools/call", json!({"name": "deploy"}), false)
        .await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "input_required");
    assert_eq!(result["requestState"], "opaque-1");
    assert_eq!(result["inputRequests"]["a"]["method"], "elicitation/create");
    assert!(result["inputRequests"]["b"].is_object());

    // A partial answer: asked again for the missing key, same state.
    let partial = json!({"name": "deploy", "inputResponses": {"a": accept(1), "zz": accept(0)},
        "requestState": "opaque-1"});
    let r = wire.call("tools/call", partial, false).await;
    assert_eq!(r["result"]["resultType"], "input_required");
    assert_eq!(r["result"]["requestState"], "opaque-1");
    let keys: Vec<_> = r["result"]["inputRequests"]
        .as_object()
        .unwrap()
        .keys()
        .cloned()
        .collect();
    assert_eq!(keys, ["b"]);

    // Altered or missing state: an error.
    let answers = json!({"a": accept(1), "b": accept(2)});
    for state in [json!("opaque-2"), Value::Null] {
        let mut params = json!({"name": "deploy", "inputResponses": answers});
        if !state.is_null() {
            params["requestState"] = state;
        }
        let r = wire.call("tools/call", params, false).await;
        assert_eq!(code(&r), -32602);
        assert_eq!(r["error"]["message"], "requestState was altered");
    }
    // Malformed inputResponses: an error.
    let r = wire
        .call(
            "tools/call",
            json!({"name": "deploy", "inputResponses": [1], "requestState": "opaque-1"}),
            false,
        )
        .await;
    assert_eq!(code(&r), -32602);

    // Everything answered with the state echoed: the result, with the answers.
    let params = json!({"name": "deploy", "inputResponses": answers, "requestState": "opaque-1"});
    let r = wire.call("tools/call", params, false).await;
    let result = &r["result"];
    assert_eq!(result["resultType"], "complete");
    assert_eq!(result["content"][0]["text"], "deployed");
    assert_eq!(
        result["structuredContent"],
        json!({"inputResponses": answers})
    );
}

#[tokio::test(start_paused = true)]
async fn mrtr_without_state_and_forever() {
    let server = TestServer::new()
        .tool(ScriptedTool::input_required(
            "ask",
            requests(&["q"]),
            None,
            CallToolResult::text("ok"),
        ))
        .tool(ScriptedTool::input_forever("loop", requests(&["q"])));
    let mut wire = Wire::open(&server).await;
    let r = wire.call("tools/call", json!({"name": "ask"}), false).await;
    assert!(r["result"].get("requestState").is_none());
    let r = wire
        .call(
            "tools/call",
            json!({"name": "ask", "inputResponses": {"q": {"action": "decline"}}}),
            false,
        )
        .await;
    assert_eq!(r["result"]["resultType"], "complete");
    assert_eq!(
        r["result"]["structuredContent"]["inputResponses"]["q"]["action"],
        "decline"
    );
    // A state the server never sent is an alteration too.
    let r = wire
        .call(
            "tools/call",
            json!({"name": "ask", "inputResponses": {"q": accept(1)}, "requestState": "x"}),
            false,
        )
        .await;
    assert_eq!(code(&r), -32602);
    for _ in 0..3 {
        let r = wire
            .call(
                "tools/call",
                json!({"name": "loop", "inputResponses": {"q": accept(1)}}),
                false,
            )
            .await;
        assert_eq!(r["result"]["resultType"], "input_required");
        assert!(r["result"]["inputRequests"]["q"].is_object());
    }
}

#[tokio::test(start_paused = true)]
async fn a_cancelled_request_gets_no_response() {
    let server = TestServer::new();
    let mut wire = Wire::open(&server).await;
    // Both messages are queued before the server runs, so the handler is
    // aborted before it answers.
    wire.request("server/discover", json!({}), false).await;
    wire.send(
        json!({"jsonrpc": "2.0", "method": "notifications/cancelled",
        "params": {"requestId": 1, "reason": "test"}}),
    )
    .await;
    let r = wire.call("server/discover", json!({}), false).await;
    assert_eq!(r["id"], 2);
    assert!(wire.notes.is_empty());
    assert_eq!(server.count("notifications/cancelled"), 1);
    assert!(server.requests()[1].is_notification());
}

#[tokio::test(start_paused = true)]
async fn serve_over_lines_ends_when_the_peer_closes() {
    let server =
        TestServer::new().tool(ScriptedTool::immediate("echo", CallToolResult::text("hi")));
    let (client, server_io) = tokio::io::duplex(4096);
    let (read, write) = tokio::io::split(server_io);
    let serving = tokio::spawn({
        let server = server.clone();
        async move { server.serve(LineTransport::new(read, write)).await }
    });
    let (client_read, mut client_write) = tokio::io::split(client);
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let request = json!({"jsonrpc": "2.0", "id": "c1", "method": "tools/call",
        "params": with_meta(json!({"name": "echo"}), false)});
    client_write
        .write_all(format!("{request}\n").as_bytes())
        .await
        .unwrap();
    let mut lines = tokio::io::BufReader::new(client_read).lines();
    let line = lines.next_line().await.unwrap().unwrap();
    let r: Value = serde_json::from_str(&line).unwrap();
    assert_eq!(r["id"], "c1");
    assert_eq!(r["result"]["content"][0]["text"], "hi");
    client_write.shutdown().await.unwrap();
    serving.await.unwrap().unwrap();
    assert_eq!(lines.next_line().await.unwrap(), None);
}

#[tokio::test(start_paused = true)]
async fn the_memory_connection_ends_with_the_client() {
    let server = TestServer::new();
    let wire = Wire::open(&server).await;
    let (sink, stream) = (wire.sink, wire.stream);
    drop(sink);
    let mut stream = stream;
    assert!(stream.recv().await.unwrap().is_none());
    let debug = format!("{server:?}");
    assert!(debug.starts_with("TestServer"), "{debug}");
}
