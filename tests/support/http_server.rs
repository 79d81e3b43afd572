//! A strict Streamable HTTP front for the scripted `TestServer`.
//!
//! Each POST is checked the way a strict server checks it (standard headers
//! present, equal to the body after base64 decoding, none sent twice,
//! `Mcp-Param-*` for annotated arguments), then handed to a `TestServer`
//! over its in-memory transport. Replies go back as JSON or SSE, per test,
//! and a test may script odd replies (error statuses, broken or held
//! streams, connection resets) for chosen requests. Everything listens on
//! 127.0.0.1 only.
//!
//! Shared by the `transport_http` and `faults_http` test binaries, each of
//! which uses a different part of it.
#![allow(
    dead_code,
    reason = "two test binaries use different parts of the server"
)]

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use base64::Engine as _;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use mcp_tasks::protocol::{META_PROTOCOL_VERSION, META_SUBSCRIPTION_ID};
use mcp_tasks::testing::TestServer;
use mcp_tasks::transport::{Inbound, MessageSink, MessageStream, Outbound, Transport};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio::sync::{Notify, mpsc};
use tokio::task::JoinHandle;

use crate::loopback::{self, Body, Received, find_header};

/// How replies are framed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Json,
    Sse,
}

/// A reply scripted by a test instead of the server's own.
#[derive(Debug, Clone)]
pub enum Scripted {
    /// This status, content type and body; `{id}` in the body becomes the request's id.
    Reply(u16, &'static str, String),
    /// The same, with these extra headers (`WWW-Authenticate`, say).
    ReplyWith(u16, &'static str, String, Vec<(&'static str, &'static str)>),
    /// This status with an empty body and these headers, made at run time
    /// (a `Retry-After` date, say).
    Headed(u16, Vec<(&'static str, String)>),
    /// An SSE stream that sends a keep-alive and then ends without a response.
    Break,
    /// An SSE stream that sends keep-alives and never answers.
    Hold,
    /// Resets the connection (TCP RST) without relaying: the server never
    /// sees the request.
    Reset,
    /// Relays the request, so the server does the work, waits for its
    /// reply, then resets the connection instead of sending it.
    ResetAfterRelay,
}

impl Scripted {
    /// This status with an empty body.
    pub fn status(code: u16) -> Scripted {
        Scripted::Reply(code, "text/plain", String::new())
    }

    /// This status with `Retry-After: {value}`.
    pub fn retry_after(code: u16, value: impl Into<String>) -> Scripted {
        Scripted::Headed(code, vec![("retry-after", value.into())])
    }
}

/// One POST as received.
#[derive(Debug, Clone)]
pub struct Seen {
    pub method: String,
    pub id: Value,
    pub body: Value,
    pub headers: Vec<(String, String)>,
    /// Why the front refused it with `-32020`, if it did.
    pub rejected: Option<String>,
    /// When it came (tokio's clock, which tests may pause).
    pub at: tokio::time::Instant,
}

impl Seen {
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }
}

type Script = Box<dyn Fn(&Seen, usize) -> Option<Scripted> + Send + Sync>;
/// `Mcp-Param-{header}` and the argument path it mirrors.
type ParamRule = (String, Vec<String>);

struct State {
    mode: Mode,
    keep_alive: Duration,
    seen: Mutex<Vec<Seen>>,
    script: Mutex<Option<Script>>,
    /// Tool name → (header name, argument path) the front requires.
    params: Mutex<HashMap<String, Vec<ParamRule>>>,
    connections: AtomicUsize,
    /// Whether each connection carries one exchange and is then closed.
    one_exchange_per_connection: AtomicBool,
    /// Response streams the client closed before they ended.
    dropped: AtomicUsize,
    bridge: Bridge,
}

/// A running front. Dropping it stops the listener.
pub struct Front {
    pub url: String,
    state: Arc<State>,
    tasks: Vec<JoinHandle<()>>,
}

impl Drop for Front {
    fn drop(&mut self) {
        for t in &self.tasks {
            t.abort();
        }
    }
}

impl Front {
    pub async fn start(server: &TestServer, mode: Mode) -> Front {
        let (bridge, bridge_tasks) = Bridge::open(server).await;
        let state = Arc::new(State {
            mode,
            keep_alive: Duration::from_millis(20),
            seen: Mutex::new(Vec::new()),
            script: Mutex::new(None),
            params: Mutex::new(HashMap::new()),
            connections: AtomicUsize::new(0),
            one_exchange_per_connection: AtomicBool::new(false),
            dropped: AtomicUsize::new(0),
            bridge,
        });
        let st = state.clone();
        let (addr, accept) = loopback::accept(move |stream| {
            st.connections.fetch_add(1, Ordering::SeqCst);
            serve_connection(st.clone(), stream)
        })
        .await;
        let mut tasks = bridge_tasks;
        tasks.push(accept);
        Front {
            url: format!("http://{addr}/mcp"),
            state,
            tasks,
        }
    }

    /// Closes each connection after one exchange, so that a scripted reset
    /// hits exactly one request. Applies to connections accepted from now on.
    pub fn one_exchange_per_connection(&self) {
        self.state
            .one_exchange_per_connection
            .store(true, Ordering::SeqCst);
    }

    /// Scripts replies: called for every POST with its method's count so far (0-based).
    pub fn script(&self, f: impl Fn(&Seen, usize) -> Option<Scripted> + Send + Sync + 'static) {
        *self.state.script.lock().unwrap() = Some(Box::new(f));
    }

    /// Requires `Mcp-Param-{header}` on calls of `tool`, mirroring the argument at `path`.
    pub fn require_param(&self, tool: &str, header: &str, path: &[&str]) {
        self.state
            .params
            .lock()
            .unwrap()
            .entry(tool.into())
            .or_default()
            .push((header.into(), path.iter().map(|s| s.to_string()).collect()));
    }

    pub fn seen(&self) -> Vec<Seen> {
        self.state.seen.lock().unwrap().clone()
    }

    pub fn seen_of(&self, method: &str) -> Vec<Seen> {
        self.seen()
            .into_iter()
            .filter(|s| s.method == method)
            .collect()
    }

    pub fn connections(&self) -> usize {
        self.state.connections.load(Ordering::SeqCst)
    }

    pub fn dropped_streams(&self) -> usize {
        self.state.dropped.load(Ordering::SeqCst)
    }

    /// Acts as a gateway that rewrites task ids: the client sees
    /// `rewrite(server_id)` wherever the server wrote an id, and the
    /// server gets its own id back wherever the client sends the handle.
    /// The checks of the headers apply to what the client sent.
    pub fn rewrite_task_ids(&self, rewrite: impl Fn(&str) -> String + Send + Sync + 'static) {
        self.state.bridge.gateway.lock().unwrap().rewrite = Some(Box::new(rewrite));
    }

    /// The handles the gateway gave out, in the order it gave them.
    pub fn handles(&self) -> Vec<String> {
        self.state.bridge.gateway.lock().unwrap().given.clone()
    }
}

/// How a gateway turns a server's task id into its handle.
type Rewrite = Box<dyn Fn(&str) -> String + Send + Sync>;

/// The id rewriting of [`Front::rewrite_task_ids`].
#[derive(Default)]
struct Gateway {
    rewrite: Option<Rewrite>,
    /// Server id → handle.
    outward: HashMap<String, String>,
    /// Handle → server id.
    inward: HashMap<String, String>,
    given: Vec<String>,
}

impl Gateway {
    /// The client's message as the server must see it.
    fn for_server(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                if let Some(inner) = self.inward.get(s.as_str()) {
                    *s = inner.clone();
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.for_server(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.for_server(v)),
            _ => {}
        }
    }

    /// The server's message as the client sees it: every `taskId` gets a
    /// handle, and every mention of a server id is replaced by its handle.
    fn for_client(&mut self, value: &mut Value) {
        if self.rewrite.is_none() {
            return;
        }
        self.learn(value);
        self.replace(value);
    }

    fn learn(&mut self, value: &Value) {
        match value {
            Value::Array(items) => items.iter().for_each(|v| self.learn(v)),
            Value::Object(map) => {
                if let Some(Value::String(id)) = map.get("taskId")
                    && !self.outward.contains_key(id)
                {
                    let handle = (self.rewrite.as_ref().unwrap())(id);
                    self.outward.insert(id.clone(), handle.clone());
                    self.inward.insert(handle.clone(), id.clone());
                    self.given.push(handle);
                }
                map.values().for_each(|v| self.learn(v));
            }
            _ => {}
        }
    }

    fn replace(&self, value: &mut Value) {
        match value {
            Value::String(s) => {
                for (inner, handle) in &self.outward {
                    if s.contains(inner.as_str()) {
                        *s = s.replace(inner.as_str(), handle);
                    }
                }
            }
            Value::Array(items) => items.iter_mut().for_each(|v| self.replace(v)),
            Value::Object(map) => map.values_mut().for_each(|v| self.replace(v)),
            _ => {}
        }
    }
}

/// Serves one connection until the client closes it, or until a scripted
/// reset ends it with a TCP RST.
async fn serve_connection(st: Arc<State>, stream: TcpStream) {
    // A second descriptor of the socket, kept to reset it: the first one
    // belongs to hyper.
    let Ok(stream) = stream.into_std() else {
        return;
    };
    let Ok(spare) = stream.try_clone() else {
        return;
    };
    let Ok(stream) = TcpStream::from_std(stream) else {
        return;
    };
    let reset = Arc::new(Notify::new());
    let keep_alive = !st.one_exchange_per_connection.load(Ordering::SeqCst);
    let service = service_fn({
        let reset = reset.clone();
        move |req| handle(st.clone(), req, reset.clone())
    });
    let connection = hyper::server::conn::http1::Builder::new()
        .keep_alive(keep_alive)
        .serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = connection => {}
        () = reset.notified() => {
            // SO_LINGER 0: the last close of the socket sends a reset, not
            // an orderly FIN. Both descriptors are closed on the way out.
            if let Ok(spare) = TcpStream::from_std(spare) {
                let _ = spare.set_zero_linger();
            }
        }
    }
}

/// Decodes the `=?base64?…?=` form; other values as they are.
pub fn decode(value: &str) -> Option<String> {
    match value
        .strip_prefix("=?base64?")
        .and_then(|v| v.strip_suffix("?="))
    {
        Some(b64) => {
            String::from_utf8(base64::engine::general_purpose::STANDARD.decode(b64).ok()?).ok()
        }
        None => Some(value.to_owned()),
    }
}

fn scalar(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Bool(_) | Value::Number(_) => Some(v.to_string()),
        _ => None,
    }
}

/// The checks of a strict server. `Err` is the `-32020` message.
fn validate(st: &State, seen: &Seen) -> Result<(), String> {
    let mut names: Vec<String> = seen.headers.iter().map(|(n, _)| n.to_lowercase()).collect();
    names.sort();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(format!("the header {} was sent twice", w[0]));
    }
    let accept = seen.header("accept").unwrap_or_default();
    if !(accept.contains("application/json") && accept.contains("text/event-stream")) {
        return Err(format!("Accept must list both reply types, got {accept:?}"));
    }
    if seen.header("content-type") != Some("application/json") {
        return Err("Content-Type must be application/json".into());
    }
    let params = &seen.body["params"];
    let version = params["_meta"][META_PROTOCOL_VERSION].as_str();
    if seen.header("mcp-protocol-version") != version {
        return Err(format!(
            "MCP-Protocol-Version {:?} vs body {version:?}",
            seen.header("mcp-protocol-version")
        ));
    }
    if seen.header("mcp-method") != Some(seen.method.as_str()) {
        return Err(format!(
            "Mcp-Method {:?} vs body {:?}",
            seen.header("mcp-method"),
            seen.method
        ));
    }
    let name_field = match seen.method.as_str() {
        "tools/call" | "prompts/get" => Some("name"),
        "resources/read" => Some("uri"),
        "tasks/get" | "tasks/update" | "tasks/cancel" => Some("taskId"),
        _ => None,
    };
    if let Some(field) = name_field {
        let header = seen.header("mcp-name").ok_or("Mcp-Name is missing")?;
        let decoded = decode(header).ok_or("Mcp-Name is not valid base64")?;
        if Some(decoded.clone()) != scalar(&params[field]) {
            return Err(format!(
                "Mcp-Name {decoded:?} vs body {field} {}",
                params[field]
            ));
        }
    } else if seen.header("mcp-name").is_some() {
        return Err(format!("Mcp-Name on {}", seen.method));
    }
    if seen.method == "tools/call" {
        let tool = params["name"].as_str().unwrap_or_default();
        let required = st
            .params
            .lock()
            .unwrap()
            .get(tool)
            .cloned()
            .unwrap_or_default();
        for (header, path) in required {
            let value = path
                .iter()
                .fold(&params["arguments"], |v, k| &v[k.as_str()]);
            let sent = seen.header(&format!("mcp-param-{header}"));
            match (scalar(value), sent) {
                (None, None) => {}
                (Some(v), Some(h)) if decode(h).as_deref() == Some(v.as_str()) => {}
                (v, h) => return Err(format!("Mcp-Param-{header} {h:?} vs body {v:?}")),
            }
        }
    }
    Ok(())
}

/// Has the connection reset, and never answers.
async fn reset_connection(reset: &Notify) -> Result<Response<Body>, Infallible> {
    reset.notify_one();
    std::future::pending().await
}

/// Relays a request to the scripted server and returns its response, or
/// `None` if the server went away first.
async fn relay(st: &State, body: Value) -> Option<String> {
    let mut rx = st.bridge.request(body, false);
    while let Some(text) = rx.recv().await {
        if serde_json::from_str::<Value>(&text).is_ok_and(|v| v.get("method").is_none()) {
            return Some(text);
        }
    }
    None
}

async fn handle(
    st: Arc<State>,
    req: Request<Incoming>,
    reset: Arc<Notify>,
) -> Result<Response<Body>, Infallible> {
    let Received {
        verb,
        headers,
        bytes,
        ..
    } = Received::read(req).await;
    if verb != "POST" {
        return Ok(reply(405, "text/plain", "POST only".into()));
    }
    let Ok(body) = serde_json::from_slice::<Value>(&bytes) else {
        return Ok(reply(
            400,
            "application/json",
            json!({"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"parse error"}})
                .to_string(),
        ));
    };
    let mut seen = Seen {
        method: body["method"].as_str().unwrap_or_default().to_owned(),
        id: body.get("id").cloned().unwrap_or(Value::Null),
        body: body.clone(),
        headers,
        rejected: None,
        at: tokio::time::Instant::now(),
    };
    seen.rejected = validate(&st, &seen).err();
    let nth = st
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|s| s.method == seen.method)
        .count();
    st.seen.lock().unwrap().push(seen.clone());
    if let Some(why) = &seen.rejected {
        let error = json!({"jsonrpc":"2.0","id":seen.id,"error":{"code":-32020,"message":format!("Header mismatch: {why}")}});
        return Ok(reply(400, "application/json", error.to_string()));
    }
    let canned = st
        .script
        .lock()
        .unwrap()
        .as_ref()
        .and_then(|f| f(&seen, nth));
    match canned {
        Some(Scripted::Reply(status, ctype, text)) => {
            return Ok(reply(
                status,
                ctype,
                text.replace("{id}", &seen.id.to_string()),
            ));
        }
        Some(Scripted::ReplyWith(status, ctype, text, headers)) => {
            let mut response = reply(status, ctype, text.replace("{id}", &seen.id.to_string()));
            for (name, value) in headers {
                response.headers_mut().append(
                    hyper::header::HeaderName::from_static(name),
                    hyper::header::HeaderValue::from_static(value),
                );
            }
            return Ok(response);
        }
        Some(Scripted::Headed(status, headers)) => {
            let mut response = reply(status, "text/plain", String::new());
            for (name, value) in headers {
                response.headers_mut().append(
                    hyper::header::HeaderName::from_static(name),
                    hyper::header::HeaderValue::from_str(&value).unwrap(),
                );
            }
            return Ok(response);
        }
        Some(Scripted::Break) => return Ok(sse(&st, false, None)),
        Some(Scripted::Hold) => return Ok(sse(&st, true, None)),
        Some(Scripted::Reset) => return reset_connection(&reset).await,
        Some(Scripted::ResetAfterRelay) => {
            let _ = relay(&st, body).await;
            return reset_connection(&reset).await;
        }
        None => {}
    }
    if seen.id.is_null() {
        st.bridge.notify(body);
        return Ok(reply(202, "text/plain", String::new()));
    }
    let listen = seen.method == "subscriptions/listen";
    if st.mode == Mode::Json && !listen {
        return Ok(match relay(&st, body).await {
            Some(text) => reply(200, "application/json", text),
            None => reply(500, "text/plain", "the scripted server went away".into()),
        });
    }
    let rx = st.bridge.request(body, listen);
    Ok(sse(&st, listen, Some(rx)))
}

/// An SSE reply: a keep-alive, a progress notification, the messages from
/// `rx`, and keep-alives every so often while `linger` holds it open.
fn sse(
    st: &Arc<State>,
    linger: bool,
    rx: Option<mpsc::UnboundedReceiver<String>>,
) -> Response<Body> {
    let (tx, body_rx) = mpsc::unbounded_channel::<String>();
    let every = st.keep_alive;
    tokio::spawn(async move {
        let _ = tx.send(": keep-alive\n\n".into());
        let Some(mut rx) = rx else {
            if linger {
                while tx.send(": keep-alive\n\n".into()).is_ok() {
                    tokio::time::sleep(every).await;
                }
            }
            return; // a broken stream: ends here
        };
        let progress = json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"front","progress":1}});
        let _ = tx.send(format!("data: {progress}\n\n"));
        let mut tick = tokio::time::interval(every);
        loop {
            tokio::select! {
                msg = rx.recv() => match msg {
                    Some(text) => {
                        if tx.send(format!("event: message\ndata: {text}\n\n")).is_err() {
                            return;
                        }
                    }
                    None => return,
                },
                _ = tick.tick() => {
                    if tx.send(": keep-alive\n\n".into()).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let st = st.clone();
    let body = Body::on_drop(body_rx, move |ended| {
        if !ended {
            st.dropped.fetch_add(1, Ordering::SeqCst);
        }
    });
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .header("x-accel-buffering", "no")
        .body(body)
        .unwrap()
}

fn reply(status: u16, ctype: &str, text: String) -> Response<Body> {
    Response::builder()
        .status(status)
        .header("content-type", ctype)
        .body(Body::text(text))
        .unwrap()
}

/// The front's connection to the scripted server. Ids are renumbered so
/// any number of HTTP clients can share it.
struct Bridge {
    out: mpsc::UnboundedSender<Outbound>,
    next: AtomicI64,
    routes: Arc<Mutex<HashMap<i64, Route>>>,
    gateway: Arc<Mutex<Gateway>>,
}

struct Route {
    original: Value,
    tx: mpsc::UnboundedSender<String>,
    listen: bool,
}

impl Bridge {
    async fn open(server: &TestServer) -> (Bridge, Vec<JoinHandle<()>>) {
        let (mut sink, mut stream) = server.connect().connect().await.unwrap();
        let (out, mut out_rx) = mpsc::unbounded_channel::<Outbound>();
        let writer = tokio::spawn(async move {
            while let Some(m) = out_rx.recv().await {
                if sink.send(m).await.is_err() {
                    return;
                }
            }
        });
        let routes: Arc<Mutex<HashMap<i64, Route>>> = Arc::default();
        let gateway: Arc<Mutex<Gateway>> = Arc::default();
        let table = routes.clone();
        let ids = gateway.clone();
        let reader = tokio::spawn(async move {
            while let Ok(Some(Inbound::Message(text))) = stream.recv().await {
                route(&table, &ids, &text);
            }
        });
        let bridge = Bridge {
            out,
            next: AtomicI64::new(1),
            routes,
            gateway,
        };
        (bridge, vec![writer, reader])
    }

    /// Forwards a request; its reply (and, for a listen, its notifications) come on the receiver.
    fn request(&self, mut body: Value, listen: bool) -> mpsc::UnboundedReceiver<String> {
        let ours = self.next.fetch_add(1, Ordering::SeqCst);
        let (tx, rx) = mpsc::unbounded_channel();
        self.gateway.lock().unwrap().for_server(&mut body);
        let original = std::mem::replace(&mut body["id"], json!(ours));
        self.routes.lock().unwrap().insert(
            ours,
            Route {
                original,
                tx,
                listen,
            },
        );
        let method = body["method"].as_str().unwrap_or_default().to_owned();
        let _ = self.out.send(Outbound::new(body.to_string(), method));
        if listen {
            // When the HTTP stream goes, end the subscription as a stdio client would.
            let out = self.out.clone();
            let routes = self.routes.clone();
            tokio::spawn(async move {
                loop {
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    let closed = match routes.lock().unwrap().get(&ours) {
                        Some(r) => r.tx.is_closed(),
                        None => return,
                    };
                    if closed {
                        routes.lock().unwrap().remove(&ours);
                        let cancel = json!({"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId": ours}});
                        let _ =
                            out.send(Outbound::new(cancel.to_string(), "notifications/cancelled"));
                        return;
                    }
                }
            });
        }
        rx
    }

    fn notify(&self, mut body: Value) {
        self.gateway.lock().unwrap().for_server(&mut body);
        let method = body["method"].as_str().unwrap_or_default().to_owned();
        let _ = self.out.send(Outbound::new(body.to_string(), method));
    }
}

/// Routes one message from the scripted server back to its HTTP exchange.
fn route(table: &Mutex<HashMap<i64, Route>>, gateway: &Mutex<Gateway>, text: &str) {
    let Ok(mut value) = serde_json::from_str::<Value>(text) else {
        return;
    };
    gateway.lock().unwrap().for_client(&mut value);
    let mut routes = table.lock().unwrap();
    // A reply has an id and no method; a notification, a method and no id.
    match (value.get("method").is_some(), value.get("id").is_some()) {
        (false, true) => {
            let Some(ours) = value["id"].as_i64() else {
                return;
            };
            if let Some(r) = routes.remove(&ours) {
                value["id"] = r.original.clone();
                let _ = r.tx.send(value.to_string());
            }
        }
        (true, false) => {
            let meta = &mut value["params"]["_meta"][META_SUBSCRIPTION_ID];
            let Some(ours) = meta.as_i64() else { return };
            if let Some(r) = routes.get(&ours).filter(|r| r.listen) {
                *meta = r.original.clone();
                let _ = r.tx.send(value.to_string());
            }
        }
        _ => {}
    }
}
