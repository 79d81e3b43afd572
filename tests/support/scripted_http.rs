//! A loopback Streamable HTTP peer that answers each POST from a script
//! (a function of the JSON-RPC request) and records every request with its
//! headers: for tests of what the transport sends, whatever the server
//! says. A notification or response gets `202`, a `GET` `405`, a `DELETE`
//! `200`. Listens on 127.0.0.1 only.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::Value;

use crate::loopback::{Accepting, Body, Received, find_header, listen};

/// One scripted answer to a request.
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The JSON body (a JSON-RPC response).
    pub body: Value,
    /// An `Mcp-Session-Id` header to send with it.
    pub session: Option<&'static str>,
}

impl Answer {
    /// `200` with `{"jsonrpc":"2.0","id":…,"result":result}`.
    pub fn result(request: &Value, result: Value) -> Answer {
        Answer {
            status: 200,
            body: serde_json::json!({"jsonrpc": "2.0", "id": request["id"], "result": result}),
            session: None,
        }
    }

    /// `200` with a JSON-RPC error.
    pub fn error(request: &Value, code: i64, message: &str) -> Answer {
        Answer {
            status: 200,
            body: serde_json::json!({"jsonrpc": "2.0", "id": request["id"],
                "error": {"code": code, "message": message}}),
            session: None,
        }
    }

    /// The same answer, with an `Mcp-Session-Id` header.
    pub fn with_session(mut self, session: &'static str) -> Answer {
        self.session = Some(session);
        self
    }
}

/// One request as received.
#[derive(Debug, Clone)]
pub struct Hit {
    /// `GET`, `POST` or `DELETE`.
    pub verb: String,
    /// The body (`Null` when there is none).
    pub body: Value,
    headers: Vec<(String, String)>,
}

impl Hit {
    /// The JSON-RPC method of the body; empty for a response or no body.
    pub fn method(&self) -> &str {
        self.body["method"].as_str().unwrap_or_default()
    }

    /// A header's value, by its name in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }
}

type Script = dyn Fn(&Value) -> Answer + Send + Sync;

/// The peer; it stops when dropped.
pub struct ScriptedHttp {
    /// The MCP endpoint's URL.
    pub url: String,
    hits: Arc<Mutex<Vec<Hit>>>,
    _accept: Accepting,
}

impl ScriptedHttp {
    /// Starts a peer that answers each request with `script`.
    pub async fn start(script: impl Fn(&Value) -> Answer + Send + Sync + 'static) -> ScriptedHttp {
        let hits = Arc::new(Mutex::new(Vec::new()));
        let script: Arc<Script> = Arc::new(script);
        let (url, _accept) = listen({
            let hits = hits.clone();
            move |req| handle(hits.clone(), script.clone(), req)
        })
        .await;
        ScriptedHttp { url, hits, _accept }
    }

    /// The POSTs of one JSON-RPC method, in order.
    pub fn posts_of(&self, method: &str) -> Vec<Hit> {
        self.hits
            .lock()
            .unwrap()
            .iter()
            .filter(|h| h.verb == "POST" && h.method() == method)
            .cloned()
            .collect()
    }
}

async fn handle(
    hits: Arc<Mutex<Vec<Hit>>>,
    script: Arc<Script>,
    req: Request<Incoming>,
) -> Result<Response<Body>, Infallible> {
    let Received {
        verb,
        headers,
        body,
        ..
    } = Received::read(req).await;
    hits.lock().unwrap().push(Hit {
        verb: verb.clone(),
        body: body.clone(),
        headers,
    });
    let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
    let mut response = Response::builder();
    let status = match verb.as_str() {
        "POST" if body.get("id").is_some() && body.get("method").is_some() => {
            let answer = script(&body);
            let _ = tx.send(answer.body.to_string());
            response = response.header("content-type", "application/json");
            if let Some(session) = answer.session {
                response = response.header("mcp-session-id", session);
            }
            answer.status
        }
        "POST" => 202,
        "DELETE" => 200,
        _ => 405,
    };
    drop(tx);
    Ok(response.status(status).body(Body::new(rx)).unwrap())
}
