//! A loopback Streamable HTTP server of the initialize era (2025-11-25),
//! with sessions: `initialize` opens one (`Mcp-Session-Id: s-1`, `s-2`, …),
//! every later request must carry it (`404` once the server forgot it),
//! `GET` answers as each test scripts it, `DELETE` is recorded. Every
//! request is recorded with the (possibly paused) tokio clock. Everything
//! listens on 127.0.0.1 only.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use crate::loopback::{Accepting, Body, Received, find_header, listen};
use tokio::time::Instant;

/// The version the server speaks.
pub const VERSION: &str = "2025-11-25";

/// One `GET` stream, as scripted.
#[derive(Debug, Clone)]
pub enum GetStream {
    /// Sends this SSE text, then ends the stream.
    End(&'static str),
    /// Sends this SSE text, then stays open, sending what [`SessionServer::push`] gives.
    Hold(&'static str),
    /// Sends this SSE text, then ends the stream, for this `GET` and every
    /// later one (it stays at the head of the script).
    Forever(&'static str),
}

/// Where the server sends one body larger than the client accepts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Oversize {
    /// The reply to the `initialize` that renews a lost session, as JSON.
    RenewalJson,
    /// The same, as one SSE event.
    RenewalSse,
    /// The reply to `tools/list`, as JSON.
    ListJson,
    /// The reply to `tools/list`, as one SSE event.
    ListSse,
    /// A `500` to `tools/list` whose (HTML) body is that large.
    ListErrorBody,
}

/// One HTTP request as received.
#[derive(Debug, Clone)]
pub struct Hit {
    /// `GET`, `POST` or `DELETE`.
    pub verb: String,
    /// The JSON-RPC method (empty for a response or a body-less request).
    pub method: String,
    pub body: Value,
    pub headers: Vec<(String, String)>,
    pub at: Instant,
}

impl Hit {
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }
}

struct State {
    hits: Mutex<Vec<Hit>>,
    /// The session the server knows, if any.
    current: Mutex<Option<String>>,
    sessions: AtomicUsize,
    /// `None`: `405` to every `GET`; else one stream per `GET`, then `405`.
    gets: Mutex<Option<VecDeque<GetStream>>>,
    /// Feeds the `GET` stream held open.
    push: Mutex<Option<mpsc::UnboundedSender<String>>>,
    /// Whether replies are JSON-RPC batches (a notification, then the response).
    batch: AtomicBool,
    /// Whether each session is forgotten as soon as it is handed out.
    amnesiac: AtomicBool,
    /// Whether `tools/call` streams end before the response, which then
    /// waits for a `GET` with `Last-Event-ID: call-1`.
    resume_calls: AtomicBool,
    /// Whether `tools/call` streams, and every `GET` that resumes one,
    /// send a priming event only (`id: call-1`, `retry: 0`) and end: a
    /// response that never comes.
    prime_calls_forever: AtomicBool,
    /// Whether a `DELETE` is never answered.
    hang_deletes: AtomicBool,
    /// The response such a `GET` gets.
    pending: Mutex<Option<Value>>,
    /// Keeps the streams of those `GET`s open.
    held: Mutex<Vec<mpsc::UnboundedSender<String>>>,
    /// `tasks/get` reads of the one task (`job`), which completes on the
    /// fourth; the session is forgotten after read number `forget_at`
    /// (0: never).
    task_reads: AtomicUsize,
    forget_at: AtomicUsize,
    /// Whether the server declares tasks and lists the `job` tool.
    tasks: AtomicBool,
    /// Whether a `tools/call` first asks the client a question (an
    /// `elicitation/create` with id `srv-ask`) on its own response stream,
    /// and answers only once the client's answer is posted.
    ask_in_calls: AtomicBool,
    /// The stream of the call waiting for that answer, and its response.
    asking: Mutex<Option<(mpsc::UnboundedSender<String>, Value)>>,
    /// The next reply of that kind is padded to this many bytes.
    oversize: Mutex<Option<(Oversize, usize)>>,
}

/// A running server. Dropping it stops the listener.
pub struct SessionServer {
    pub url: String,
    state: Arc<State>,
    _accept: Accepting,
}

impl SessionServer {
    /// A server that answers every `GET` with `405`.
    pub async fn start() -> SessionServer {
        let state = Arc::new(State {
            hits: Mutex::new(Vec::new()),
            current: Mutex::new(None),
            sessions: AtomicUsize::new(0),
            gets: Mutex::new(None),
            push: Mutex::new(None),
            batch: AtomicBool::new(false),
            amnesiac: AtomicBool::new(false),
            resume_calls: AtomicBool::new(false),
            prime_calls_forever: AtomicBool::new(false),
            hang_deletes: AtomicBool::new(false),
            pending: Mutex::new(None),
            held: Mutex::new(Vec::new()),
            task_reads: AtomicUsize::new(0),
            forget_at: AtomicUsize::new(0),
            tasks: AtomicBool::new(false),
            ask_in_calls: AtomicBool::new(false),
            asking: Mutex::new(None),
            oversize: Mutex::new(None),
        });
        let st = state.clone();
        let (url, _accept) = listen(move |req| handle(st.clone(), req)).await;
        SessionServer {
            url,
            state,
            _accept,
        }
    }

    /// Answers the coming `GET`s with these streams, in order (then `405`).
    pub fn gets(&self, streams: impl IntoIterator<Item = GetStream>) {
        *self.state.gets.lock().unwrap() = Some(streams.into_iter().collect());
    }

    /// Has each `tools/call` ask the client a question on its response
    /// stream first (`elicitation/create`, id `srv-ask`), held open until
    /// the answer is posted, as initialize-era servers do.
    pub fn ask_in_calls(&self) {
        self.state.ask_in_calls.store(true, Ordering::SeqCst);
    }

    /// Answers with JSON-RPC batches: `[notifications/message, response]`.
    pub fn batches(&self) {
        self.state.batch.store(true, Ordering::SeqCst);
    }

    /// Ends each `tools/call` stream after a priming event (`id: call-1`,
    /// `retry: 2000`) and sends the response on the `GET` that resumes it.
    pub fn resume_calls(&self) {
        self.state.resume_calls.store(true, Ordering::SeqCst);
    }

    /// Ends each `tools/call` stream, and every `GET` that resumes it, after
    /// a priming event alone (`id: call-1`, `retry: 0`): the response
    /// never comes.
    pub fn prime_calls_forever(&self) {
        self.state.prime_calls_forever.store(true, Ordering::SeqCst);
    }

    /// Never answers a `DELETE` (the connection stays open, silent).
    pub fn hang_deletes(&self) {
        self.state.hang_deletes.store(true, Ordering::SeqCst);
    }

    /// Pads the next reply of kind `which` to `bytes` bytes (a valid
    /// message, with a long `instructions` or tool description), streamed
    /// in chunks of 8 KiB. One reply only.
    pub fn oversize_next(&self, which: Oversize, bytes: usize) {
        *self.state.oversize.lock().unwrap() = Some((which, bytes));
    }

    /// Forgets every session as soon as it is handed out, from now on.
    pub fn amnesiac(&self) {
        self.state.amnesiac.store(true, Ordering::SeqCst);
        self.forget_session();
    }

    /// Forgets the session right after the `n`th `tasks/get` of the `job`
    /// task (a 2025-11-25 task, which outlives the session).
    pub fn forget_after_read(&self, n: usize) {
        self.state.forget_at.store(n, Ordering::SeqCst);
    }

    /// Declares 2025-11-25 tasks and lists the `job` tool (`taskSupport:
    /// required`), a task that completes on its fourth `tasks/get`.
    pub fn runs_tasks(&self) {
        self.state.tasks.store(true, Ordering::SeqCst);
    }

    /// Forgets the session: requests that carry it now get `404`.
    pub fn forget_session(&self) {
        *self.state.current.lock().unwrap() = None;
    }

    /// Sends a message on the `GET` stream held open; `false` if none is.
    pub fn push(&self, message: Value) -> bool {
        match &*self.state.push.lock().unwrap() {
            Some(tx) => tx.send(format!("data: {message}\n\n")).is_ok(),
            None => false,
        }
    }

    pub fn hits(&self) -> Vec<Hit> {
        self.state.hits.lock().unwrap().clone()
    }

    /// The requests of one verb (`GET`, `DELETE`) or JSON-RPC method.
    pub fn hits_of(&self, what: &str) -> Vec<Hit> {
        self.hits()
            .into_iter()
            .filter(|h| h.verb == what || h.method == what)
            .collect()
    }
}

fn reply(status: u16, ctype: &str, session: Option<&str>, text: String) -> Response<Body> {
    let (tx, rx) = mpsc::unbounded_channel();
    if !text.is_empty() {
        let _ = tx.send(text);
    }
    drop(tx);
    let mut builder = Response::builder()
        .status(status)
        .header("content-type", ctype);
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    builder.body(Body::new(rx)).unwrap()
}

async fn handle(st: Arc<State>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let Received {
        verb,
        headers,
        body,
        ..
    } = Received::read(req).await;
    let hit = Hit {
        verb: verb.clone(),
        method: body["method"].as_str().unwrap_or_default().to_owned(),
        body: body.clone(),
        headers,
        at: Instant::now(),
    };
    st.hits.lock().unwrap().push(hit.clone());
    let current = st.current.lock().unwrap().clone();
    let sent = hit.header("mcp-session-id").map(str::to_owned);
    if hit.method == "initialize" {
        let n = st.sessions.fetch_add(1, Ordering::SeqCst) + 1;
        let session = format!("s-{n}");
        if !st.amnesiac.load(Ordering::SeqCst) {
            *st.current.lock().unwrap() = Some(session.clone());
        }
        let mut capabilities = json!({"tools": {}});
        if st.tasks.load(Ordering::SeqCst) {
            capabilities["tasks"] = json!({"requests": {"tools": {"call": {}}}});
        }
        let mut result = json!({"jsonrpc":"2.0","id":body["id"],"result":{
            "protocolVersion": VERSION,
            "capabilities": capabilities,
            "serverInfo": {"name": "session-server", "version": "1.0.0"}}});
        if n > 1 {
            for (which, sse) in [(Oversize::RenewalJson, false), (Oversize::RenewalSse, true)] {
                if let Some(bytes) = take_oversize(&st, which) {
                    result["result"]["instructions"] = json!("i".repeat(bytes));
                    return Ok(chunked(sse, Some(&session), result.to_string()));
                }
            }
        }
        return Ok(reply(
            200,
            "application/json",
            Some(&session),
            result.to_string(),
        ));
    }
    match (&sent, &current) {
        (Some(s), Some(c)) if s == c => {}
        (Some(_), _) => {
            let gone = json!({"jsonrpc":"2.0","id":null,"error":{"code":-32001,"message":"Session not found"}});
            return Ok(reply(404, "application/json", None, gone.to_string()));
        }
        (None, _) => return Ok(reply(400, "text/plain", None, "no session id".into())),
    }
    match verb.as_str() {
        "DELETE" if st.hang_deletes.load(Ordering::SeqCst) => {
            std::future::pending::<()>().await;
        }
        "DELETE" => {
            *st.current.lock().unwrap() = None;
            return Ok(reply(200, "text/plain", None, String::new()));
        }
        "GET"
            if hit.header("last-event-id") == Some("call-1")
                && st.prime_calls_forever.load(Ordering::SeqCst) =>
        {
            let priming = "id: call-1\nretry: 0\ndata: \n\n".to_owned();
            return Ok(reply(200, "text/event-stream", None, priming));
        }
        "GET" if hit.header("last-event-id") == Some("call-1") => {
            let pending = st.pending.lock().unwrap().take();
            let (tx, rx) = mpsc::unbounded_channel();
            if let Some(response) = pending {
                let _ = tx.send(format!("id: call-2\ndata: {response}\n\n"));
            }
            // Held open, as a server may: the client stops reading.
            st.held.lock().unwrap().push(tx);
            return Ok(Response::builder()
                .status(200)
                .header("content-type", "text/event-stream")
                .body(Body::new(rx))
                .unwrap());
        }
        "GET" => return Ok(get_stream(&st)),
        _ => {}
    }
    if body.get("id").is_none() || body.get("method").is_none() {
        // A notification, or the client's answer to a request of ours.
        if body["id"] == "srv-ask"
            && let Some((stream, response)) = st.asking.lock().unwrap().take()
        {
            // The question is answered: the call's response ends its stream.
            let _ = stream.send(format!("data: {response}\n\n"));
        }
        return Ok(reply(202, "text/plain", None, String::new()));
    }
    let task = |status: &str| json!({"taskId": "job-1", "status": status, "ttl": 60000, "pollInterval": 50});
    let result = match hit.method.as_str() {
        "tools/list" => {
            let mut tools = vec![json!({"name": "echo", "inputSchema": {"type": "object"}})];
            if st.tasks.load(Ordering::SeqCst) {
                tools.push(json!({"name": "job", "inputSchema": {"type": "object"},
                    "execution": {"taskSupport": "required"}}));
            }
            json!({"tools": tools})
        }
        "tools/call" if body["params"]["name"] == "job" => json!({"task": task("working")}),
        "tools/call" => json!({"content": [{"type": "text", "text": "echoed"}]}),
        "tasks/get" => {
            let n = st.task_reads.fetch_add(1, Ordering::SeqCst) + 1;
            if n == st.forget_at.load(Ordering::SeqCst) {
                *st.current.lock().unwrap() = None;
            }
            task(if n >= 4 { "completed" } else { "working" })
        }
        "tasks/result" => json!({"content": [{"type": "text", "text": "job done"}]}),
        _ => json!({}),
    };
    let mut response = json!({"jsonrpc":"2.0","id":body["id"],"result":result});
    if hit.method == "tools/list" {
        if let Some(bytes) = take_oversize(&st, Oversize::ListErrorBody) {
            let page = format!("<html><body>{}</body></html>", "e".repeat(bytes));
            let (tx, rx) = mpsc::unbounded_channel();
            for part in page.as_bytes().chunks(8192) {
                let _ = tx.send(String::from_utf8(part.to_vec()).unwrap());
            }
            return Ok(Response::builder()
                .status(500)
                .header("content-type", "text/html")
                .body(Body::new(rx))
                .unwrap());
        }
        for (which, sse) in [(Oversize::ListJson, false), (Oversize::ListSse, true)] {
            if let Some(bytes) = take_oversize(&st, which) {
                response["result"]["tools"][0]["description"] = json!("d".repeat(bytes));
                return Ok(chunked(sse, None, response.to_string()));
            }
        }
    }
    if hit.method == "tools/call" && st.ask_in_calls.load(Ordering::SeqCst) {
        let ask = json!({"jsonrpc":"2.0","id":"srv-ask","method":"elicitation/create","params":{
            "message":"Go ahead?",
            "requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}});
        let (tx, rx) = mpsc::unbounded_channel();
        let _ = tx.send(format!("data: {ask}\n\n"));
        *st.asking.lock().unwrap() = Some((tx, response));
        return Ok(Response::builder()
            .status(200)
            .header("content-type", "text/event-stream")
            .body(Body::new(rx))
            .unwrap());
    }
    if hit.method == "tools/call" && st.prime_calls_forever.load(Ordering::SeqCst) {
        let priming = "id: call-1\nretry: 0\ndata: \n\n".to_owned();
        return Ok(reply(200, "text/event-stream", None, priming));
    }
    if hit.method == "tools/call" && st.resume_calls.load(Ordering::SeqCst) {
        *st.pending.lock().unwrap() = Some(response);
        let priming = "id: call-1\nretry: 2000\ndata: \n\n".to_owned();
        return Ok(reply(200, "text/event-stream", None, priming));
    }
    let text = if st.batch.load(Ordering::SeqCst) {
        let log = json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"first"}});
        json!([log, response]).to_string()
    } else {
        response.to_string()
    };
    Ok(reply(200, "application/json", None, text))
}

/// Takes the padding asked for `which`, if it is the one asked for.
fn take_oversize(st: &State, which: Oversize) -> Option<usize> {
    let mut asked = st.oversize.lock().unwrap();
    match *asked {
        Some((w, bytes)) if w == which => {
            *asked = None;
            Some(bytes)
        }
        _ => None,
    }
}

/// A `200` whose body is `message` (as JSON, or as one SSE event),
/// streamed in chunks of 8 KiB (ASCII text, so any cut is a char boundary).
fn chunked(sse: bool, session: Option<&str>, message: String) -> Response<Body> {
    let text = if sse {
        format!("data: {message}\n\n")
    } else {
        message
    };
    let (tx, rx) = mpsc::unbounded_channel();
    for part in text.as_bytes().chunks(8192) {
        let _ = tx.send(String::from_utf8(part.to_vec()).unwrap());
    }
    let ctype = if sse {
        "text/event-stream"
    } else {
        "application/json"
    };
    let mut builder = Response::builder()
        .status(200)
        .header("content-type", ctype);
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    builder.body(Body::new(rx)).unwrap()
}

fn get_stream(st: &State) -> Response<Body> {
    let next = match &mut *st.gets.lock().unwrap() {
        Some(streams) => match streams.front() {
            Some(GetStream::Forever(text)) => Some(GetStream::End(text)),
            _ => streams.pop_front(),
        },
        None => None,
    };
    let Some(stream) = next else {
        return reply(405, "text/plain", None, "no GET stream".into());
    };
    let (tx, rx) = mpsc::unbounded_channel();
    match stream {
        GetStream::End(text) | GetStream::Forever(text) => {
            let _ = tx.send(text.to_owned());
        }
        GetStream::Hold(text) => {
            let _ = tx.send(format!("{text}: open\n\n"));
            *st.push.lock().unwrap() = Some(tx);
        }
    }
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(Body::new(rx))
        .unwrap()
}
