//! The rmcp peer over Streamable HTTP, checked with hand-written HTTP/1.0
//! requests on loopback: the server half of HTTP interop, and the wire
//! facts a client transport must meet (SSE or JSON replies, `Mcp-Name` on
//! `tasks/*`).

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::support::{HttpServer, Sdk, bounded};

fn meta() -> Value {
    json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": { "io.modelcontextprotocol/tasks": {} }
        },
        "io.modelcontextprotocol/clientInfo": { "name": "interop", "version": "0" }
    })
}

/// The status, the content type and the one JSON-RPC message of a reply.
struct Reply {
    status: u16,
    content_type: String,
    message: Value,
}

/// POSTs one request with the standard headers (and `Mcp-Name` if given).
async fn post(url: &str, id: u64, method: &str, name: Option<&str>, mut params: Value) -> Reply {
    params["_meta"] = meta();
    let body =
        json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params }).to_string();
    let authority = url
        .strip_prefix("http://")
        .and_then(|rest| rest.split('/').next())
        .expect("an http URL");
    let mut request = format!(
        "POST /mcp HTTP/1.0\r\nHost: {authority}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2026-07-28\r\n\
         Mcp-Method: {method}\r\nContent-Length: {}\r\n",
        body.len()
    );
    if let Some(name) = name {
        request.push_str(&format!("Mcp-Name: {name}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = tokio::net::TcpStream::connect(authority)
        .await
        .expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut raw = String::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_string(&mut raw))
        .await
        .expect("a reply within 10 s")
        .expect("read");
    let (head, body) = raw.split_once("\r\n\r\n").expect("headers end");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status");
    let content_type = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-type:")
                .map(|v| v.trim().to_owned())
        })
        .unwrap_or_default();
    let json = if content_type.starts_with("text/event-stream") {
        body.lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .find(|d| !d.is_empty())
            .expect("an SSE data line")
            .to_owned()
    } else {
        body.to_owned()
    };
    Reply {
        status,
        content_type,
        message: serde_json::from_str(&json).expect("a JSON-RPC message"),
    }
}

async fn lifecycle(json_replies: bool) {
    let server = HttpServer::start(Sdk::Rmcp, json_replies).await;
    let url = &server.url;
    let expected = if json_replies {
        "application/json"
    } else {
        "text/event-stream"
    };

    let discover = post(url, 1, "server/discover", None, json!({})).await;
    assert_eq!(discover.status, 200);
    assert!(
        discover.content_type.starts_with(expected),
        "{}",
        discover.content_type
    );
    assert_eq!(
        discover.message["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["name"],
        "rmcp-peer"
    );

    let call = post(
        url,
        2,
        "tools/call",
        Some("progress"),
        json!({ "name": "progress", "arguments": { "steps": 2, "step_ms": 50 } }),
    )
    .await;
    assert_eq!(
        call.message["result"]["resultType"], "task",
        "{}",
        call.message
    );
    let id = call.message["result"]["taskId"]
        .as_str()
        .unwrap()
        .to_owned();

    // tasks/* without Mcp-Name: 400 and -32020.
    let bare = post(url, 3, "tasks/get", None, json!({ "taskId": id })).await;
    assert_eq!(bare.status, 400);
    assert_eq!(bare.message["error"]["code"], -32020);

    // With it, the task is found on the next, independent request.
    let mut status = String::new();
    for n in 0..100 {
        let got = post(url, 10 + n, "tasks/get", Some(&id), json!({ "taskId": id })).await;
        assert_eq!(got.status, 200, "{}", got.message);
        status = got.message["result"]["status"].as_str().unwrap().to_owned();
        if status == "completed" {
            assert_eq!(
                got.message["result"]["result"]["content"][0]["text"],
                "done after 2 steps"
            );
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(status, "completed");
}

#[tokio::test]
async fn sse_replies() {
    bounded(lifecycle(false)).await;
}

#[tokio::test]
async fn json_replies() {
    bounded(lifecycle(true)).await;
}
