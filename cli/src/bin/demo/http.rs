//! The demo server over Streamable HTTP, on a loopback port.
//!
//! Each `POST /mcp` carries one JSON-RPC message; a request is answered
//! with its response as `application/json`, a notification with `202`.
//! The message is handed to the scripted server on an in-memory
//! connection of its own, which ends with the exchange: tasks belong to
//! the server, not to a connection, so any client may read any task, and
//! a client that goes away mid-request stops only that request (its
//! handler is dropped, as when a stdio client cancels it). There is no
//! `GET` stream and no `subscriptions/listen` (a client polls).
//!
//! `GET /counters` answers with the server's [`Counters`] as JSON: what
//! clients asked about each task. It names every task id, which is why
//! the demo listens on loopback addresses only.
//!
//! [`Counters`]: mcp_tasks::testing::Counters

use std::convert::Infallible;
use std::io::Write;
use std::net::SocketAddr;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{ALLOW, CONTENT_TYPE};
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use mcp_tasks::testing::TestServer;
use mcp_tasks::transport::{
    DEFAULT_MAX_MESSAGE_SIZE, Inbound, MessageSink, MessageStream, Outbound, Transport, memory,
};
use serde_json::{Value, json};
use tokio::net::{TcpListener, TcpStream};

/// The MCP endpoint.
const ENDPOINT: &str = "/mcp";
/// The counters.
const COUNTERS: &str = "/counters";

type Reply = Response<Full<Bytes>>;

/// Serves `server` on `addr` until the process ends; first prints
/// `listening on http://ADDR/mcp` (the port bound, when `addr` asks for
/// port 0) on stdout.
///
/// The listener has `SO_REUSEADDR` (tokio sets it on Unix), so a server
/// killed and started again on the same port binds it at once.
pub async fn serve(server: TestServer, addr: SocketAddr) -> Result<(), String> {
    if !addr.ip().is_loopback() {
        return Err(format!(
            "{addr} is not a loopback address: the demo server listens on 127.0.0.1 or ::1 only"
        ));
    }
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|e| format!("cannot listen on {addr}: {e}"))?;
    let bound = listener
        .local_addr()
        .map_err(|e| format!("cannot read the address bound: {e}"))?;
    let mut stdout = std::io::stdout();
    writeln!(stdout, "listening on http://{bound}{ENDPOINT}")
        .and_then(|()| stdout.flush())
        .map_err(|e| format!("cannot write to stdout: {e}"))?;
    loop {
        match listener.accept().await {
            Ok((stream, _)) => {
                tokio::spawn(serve_connection(server.clone(), stream));
            }
            Err(e) => {
                // Out of descriptors, say: let some connections end first.
                eprintln!("mcp-tasks-demo: cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Serves one keep-alive connection until the client closes it.
async fn serve_connection(server: TestServer, stream: TcpStream) {
    let service = service_fn(move |request| answer(server.clone(), request));
    // A connection that breaks ends only itself.
    let _ = hyper::server::conn::http1::Builder::new()
        .serve_connection(TokioIo::new(stream), service)
        .await;
}

async fn answer(server: TestServer, request: Request<Incoming>) -> Result<Reply, Infallible> {
    let reply = match (request.method(), request.uri().path()) {
        (&Method::POST, ENDPOINT) => post(&server, request.into_body()).await,
        (&Method::GET, COUNTERS) => match serde_json::to_string(&server.counters()) {
            Ok(json) => reply(StatusCode::OK, "application/json", json),
            Err(e) => reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                "text/plain",
                e.to_string(),
            ),
        },
        (_, ENDPOINT) => {
            let mut refused = reply(
                StatusCode::METHOD_NOT_ALLOWED,
                "text/plain",
                "POST only: this server offers no stream of its own".into(),
            );
            refused
                .headers_mut()
                .insert(ALLOW, hyper::header::HeaderValue::from_static("POST"));
            refused
        }
        _ => reply(
            StatusCode::NOT_FOUND,
            "text/plain",
            format!("not found: the endpoint is {ENDPOINT}, the counters are at {COUNTERS}"),
        ),
    };
    Ok(reply)
}

/// One JSON-RPC message, answered by the scripted server.
async fn post(server: &TestServer, body: Incoming) -> Reply {
    let bytes = match Limited::new(body, DEFAULT_MAX_MESSAGE_SIZE).collect().await {
        Ok(collected) => collected.to_bytes(),
        Err(e) => {
            return reply(
                StatusCode::BAD_REQUEST,
                "text/plain",
                format!("cannot read the body: {e}"),
            );
        }
    };
    let text = String::from_utf8_lossy(&bytes).into_owned();
    let Ok(Value::Object(message)) = serde_json::from_str::<Value>(&text) else {
        let error = json!({"jsonrpc": "2.0", "id": null,
            "error": {"code": -32700, "message": "not a JSON-RPC message"}});
        return reply(
            StatusCode::BAD_REQUEST,
            "application/json",
            error.to_string(),
        );
    };
    let method = message.get("method").and_then(Value::as_str);
    let is_request = method.is_some() && message.get("id").is_some_and(|id| !id.is_null());
    let Some(method) = method else {
        // A response: the demo server never asks the client anything.
        return reply(StatusCode::ACCEPTED, "text/plain", String::new());
    };
    match exchange(server, text, method, is_request).await {
        Some(response) => reply(StatusCode::OK, "application/json", response),
        None if !is_request => reply(StatusCode::ACCEPTED, "text/plain", String::new()),
        None => reply(
            StatusCode::INTERNAL_SERVER_ERROR,
            "text/plain",
            "the scripted server gave no response".into(),
        ),
    }
}

/// Hands one message to the scripted server on a connection of its own
/// and, for a request, returns its response.
async fn exchange(
    server: &TestServer,
    text: String,
    method: &str,
    request: bool,
) -> Option<String> {
    let (ours, theirs) = memory::pair();
    let serving = server.serve(theirs);
    let talk = async move {
        let (mut sink, mut stream) = ours.connect().await.ok()?;
        // The in-memory connection carries the JSON only.
        sink.send(Outbound::new(text, method)).await.ok()?;
        if !request {
            return None;
        }
        while let Ok(Some(inbound)) = stream.recv().await {
            if let Inbound::Message(text) = inbound
                && serde_json::from_str::<Value>(&text).is_ok_and(|m| m.get("method").is_none())
            {
                return Some(text);
            }
        }
        None
        // Our end closes here, and with it the server's connection.
    };
    let (response, _) = tokio::join!(talk, serving);
    response
}

fn reply(status: StatusCode, content_type: &'static str, body: String) -> Reply {
    let mut reply = Response::new(Full::new(Bytes::from(body)));
    *reply.status_mut() = status;
    reply.headers_mut().insert(
        CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    reply
}
