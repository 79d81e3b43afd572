//! A loopback Streamable HTTP server of the initialize era (2025-11-25)
//! whose tasks may ask the client one question, as that era does it
//! (PROTOCOL.md §7.2): the question (`elicitation/create`, tagged with
//! the task) goes out on the task's `tasks/result` stream, which stays
//! open until the task ends and then carries its result.
//!
//! One tool, `job` (`taskSupport: required`), with the arguments
//! `ask` (bool: ask a question halfway) and `after_ms` (how long the task
//! works once answered; the server's `work` by default). A task works for
//! `work`, asks if told to (`input_required` until the answer is posted),
//! works again, and completes with the text `done`. `GET` is refused
//! (`405`): questions come on `tasks/result` only. Listens on 127.0.0.1
//! only; shared by the `transport_http` tests and the `in_flight` bench.
#![allow(dead_code, reason = "the tests and the bench use different parts")]

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Incoming;
use hyper::{Request, Response};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot, watch};

use crate::loopback::{Accepting, Body, Received, listen};

/// The version the server speaks.
pub const VERSION: &str = "2025-11-25";

/// Where one task is.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Phase {
    Working,
    /// Waiting for the answer to the question with this JSON-RPC id.
    Asking(String),
    Done,
}

impl Phase {
    fn status(&self) -> &'static str {
        match self {
            Phase::Working => "working",
            Phase::Asking(_) => "input_required",
            Phase::Done => "completed",
        }
    }
}

struct State {
    work: Duration,
    poll_interval: Duration,
    /// Each task's phase, watched by its `tasks/result` streams.
    tasks: Mutex<HashMap<String, watch::Sender<Phase>>>,
    /// The questions waiting for an answer, by their JSON-RPC id.
    questions: Mutex<HashMap<String, oneshot::Sender<()>>>,
    next: AtomicUsize,
    /// `tasks/result` streams open now, and the most at once.
    results_open: AtomicUsize,
    results_peak: AtomicUsize,
    /// POSTs received, by JSON-RPC method (responses under `""`).
    posts: Mutex<HashMap<String, usize>>,
}

/// A running server. Dropping it stops the listener.
pub struct AskingServer {
    pub url: String,
    state: Arc<State>,
    _accept: Accepting,
}

impl AskingServer {
    /// A server whose tasks work `work` before and after their question,
    /// and ask to be read every `poll_interval`.
    pub async fn start(work: Duration, poll_interval: Duration) -> AskingServer {
        let state = Arc::new(State {
            work,
            poll_interval,
            tasks: Mutex::new(HashMap::new()),
            questions: Mutex::new(HashMap::new()),
            next: AtomicUsize::new(0),
            results_open: AtomicUsize::new(0),
            results_peak: AtomicUsize::new(0),
            posts: Mutex::new(HashMap::new()),
        });
        let st = state.clone();
        let (url, _accept) = listen(move |req| handle(st.clone(), req)).await;
        AskingServer {
            url,
            state,
            _accept,
        }
    }

    /// The `tasks/result` streams open now.
    pub fn results_open(&self) -> usize {
        self.state.results_open.load(Ordering::SeqCst)
    }

    /// The most `tasks/result` streams that were open at once.
    pub fn results_peak(&self) -> usize {
        self.state.results_peak.load(Ordering::SeqCst)
    }

    /// How many POSTs of this JSON-RPC method came (`""`: responses).
    pub fn posts(&self, method: &str) -> usize {
        self.state
            .posts
            .lock()
            .unwrap()
            .get(method)
            .copied()
            .unwrap_or(0)
    }
}

fn json_reply(status: u16, session: Option<&str>, text: String) -> Response<Body> {
    let (tx, rx) = mpsc::unbounded_channel();
    if !text.is_empty() {
        let _ = tx.send(text);
    }
    let mut builder = Response::builder()
        .status(status)
        .header("content-type", "application/json");
    if let Some(session) = session {
        builder = builder.header("mcp-session-id", session);
    }
    builder.body(Body::new(rx)).unwrap()
}

async fn handle(st: Arc<State>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let Received { verb, body, .. } = Received::read(req).await;
    match verb.as_str() {
        "GET" => return Ok(json_reply(405, None, String::new())),
        "DELETE" => return Ok(json_reply(200, None, String::new())),
        _ => {}
    }
    let method = body["method"].as_str().unwrap_or_default().to_owned();
    *st.posts.lock().unwrap().entry(method.clone()).or_default() += 1;
    if body.get("id").is_none() || method.is_empty() {
        // A notification, or the client's answer to a question.
        if let Some(id) = body["id"].as_str()
            && let Some(answered) = st.questions.lock().unwrap().remove(id)
        {
            let _ = answered.send(());
        }
        return Ok(json_reply(202, None, String::new()));
    }
    let task_id = body["params"]["taskId"].as_str().unwrap_or_default();
    let result = match method.as_str() {
        "initialize" => {
            let result = json!({"jsonrpc":"2.0","id":body["id"],"result":{
                "protocolVersion": VERSION,
                "capabilities": {"tools": {}, "tasks": {"requests": {"tools": {"call": {}}}}},
                "serverInfo": {"name": "asking-server", "version": "1.0.0"}}});
            return Ok(json_reply(200, Some("s-1"), result.to_string()));
        }
        "tools/list" => json!({"tools": [{"name": "job", "inputSchema": {"type": "object"},
            "execution": {"taskSupport": "required"}}]}),
        "tools/call" => json!({"task": task_json(&st, &start_task(&st, &body["params"]))}),
        "tasks/get" => task_json(&st, task_id),
        "tasks/result" => return Ok(result_stream(&st, body["id"].clone(), task_id)),
        _ => json!({}),
    };
    let response = json!({"jsonrpc":"2.0","id":body["id"],"result":result});
    Ok(json_reply(200, None, response.to_string()))
}

/// Creates a task and starts running it; its id.
fn start_task(st: &Arc<State>, params: &Value) -> String {
    let n = st.next.fetch_add(1, Ordering::SeqCst) + 1;
    let id = format!("job-{n}");
    let ask = params["arguments"]["ask"].as_bool().unwrap_or(false);
    let after = params["arguments"]["after_ms"]
        .as_u64()
        .map_or(st.work, Duration::from_millis);
    let (phase, _) = watch::channel(Phase::Working);
    st.tasks.lock().unwrap().insert(id.clone(), phase.clone());
    let (st, question) = (st.clone(), format!("q-{n}"));
    tokio::spawn(async move {
        tokio::time::sleep(st.work).await;
        if ask {
            let (answered, answer) = oneshot::channel();
            st.questions
                .lock()
                .unwrap()
                .insert(question.clone(), answered);
            phase.send_replace(Phase::Asking(question));
            let _ = answer.await;
            phase.send_replace(Phase::Working);
        }
        tokio::time::sleep(after).await;
        phase.send_replace(Phase::Done);
    });
    id
}

fn task_json(st: &State, id: &str) -> Value {
    let status = st
        .tasks
        .lock()
        .unwrap()
        .get(id)
        .map_or("failed", |phase| phase.borrow().status());
    json!({"taskId": id, "status": status, "ttl": 600_000,
        "pollInterval": st.poll_interval.as_millis() as u64})
}

/// `tasks/result`: an SSE stream that sends the task's question when it
/// asks one, and its result when it ends.
fn result_stream(st: &Arc<State>, request: Value, task_id: &str) -> Response<Body> {
    let (tx, rx) = mpsc::unbounded_channel();
    let phase = st.tasks.lock().unwrap().get(task_id).map(|p| p.subscribe());
    let now = st.results_open.fetch_add(1, Ordering::SeqCst) + 1;
    st.results_peak.fetch_max(now, Ordering::SeqCst);
    let open = Open(st.clone());
    let related = json!({"io.modelcontextprotocol/related-task": {"taskId": task_id}});
    tokio::spawn(async move {
        let Some(mut phase) = phase else {
            let error = json!({"jsonrpc":"2.0","id":request,
                "error":{"code":-32602,"message":"no such task"}});
            let _ = tx.send(format!("data: {error}\n\n"));
            return;
        };
        let mut asked = None;
        loop {
            let now = phase.borrow_and_update().clone();
            match now {
                Phase::Asking(question) if asked.as_ref() != Some(&question) => {
                    let ask = json!({"jsonrpc":"2.0","id":question,"method":"elicitation/create",
                        "params":{"message":"Go ahead?","requestedSchema":{"type":"object",
                            "properties":{"ok":{"type":"boolean"}}},"_meta":related}});
                    if tx.send(format!("data: {ask}\n\n")).is_err() {
                        return;
                    }
                    asked = Some(question);
                }
                Phase::Done => {
                    let done = json!({"jsonrpc":"2.0","id":request,"result":{
                        "content":[{"type":"text","text":"done"}],"_meta":related}});
                    let _ = tx.send(format!("data: {done}\n\n"));
                    return;
                }
                _ => {}
            }
            tokio::select! {
                changed = phase.changed() => if changed.is_err() { return },
                () = tx.closed() => return,
            }
        }
    });
    Response::builder()
        .status(200)
        .header("content-type", "text/event-stream")
        .body(Body::with_guard(rx, open))
        .unwrap()
}

/// Counts a `tasks/result` stream as open while its body lives.
struct Open(Arc<State>);

impl Drop for Open {
    fn drop(&mut self) {
        self.0.results_open.fetch_sub(1, Ordering::SeqCst);
    }
}
