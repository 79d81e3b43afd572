//! A 2026-07-28 Tasks server built on rmcp, the peer of the interop tests.
//!
//! ```text
//! rmcp-peer                 serve on stdin/stdout
//! rmcp-peer --http ADDR     serve Streamable HTTP at http://ADDR/mcp (port 0: any free port);
//!                           prints the endpoint URL as the first line of stdout
//! rmcp-peer --http ADDR --json
//!                           the same, answering with application/json instead of SSE
//! rmcp-peer --bench         (with either) also serve the `bench` tool, and count the
//!                           bytes read and written on stdio
//! ```
//!
//! Its tools, one per behaviour the client must handle:
//!
//! | tool | with the Tasks extension declared | without it |
//! |---|---|---|
//! | `progress` | a task that runs `steps` × `step_ms`, with a status message per step; `push: true`: also sends `notifications/tasks` on each change (see below) | `-32021` |
//! | `task_required` | a short task | `-32021` |
//! | `task_optional` | a task when `work_ms` ≥ 200, else an immediate result | an immediate result |
//! | `fail` | a task that ends `failed` (code `-32001`); `now: true`: a JSON-RPC error at once | the same error at once |
//! | `tool_error` | a task that completes with `isError: true` | `-32021` |
//! | `confirm` | a task that asks an elicitation form (`rounds` of them, keys `confirm`, `note`) | `-32021` |
//! | `forever` | a task that runs until `tasks/cancel` | `-32021` |
//! | `short_ttl` | a task with `ttlMs` 300 that needs 10 s: the server fails it at its TTL | `-32021` |
//! | `stats` | what the server saw: `tasks/get` requests and listen subscriptions (immediate) | the same |
//! | `bench` (`--bench` only) | a task that completes on its 3rd `tasks/get`, with no `pollIntervalMs` (or `poll_ms` from its arguments) | `-32021` |
//!
//! With `--bench`, `stats` also reports `benchCalls` and `benchGets` (the
//! `bench` tool's calls and the reads of its tasks) and, over stdio,
//! `bytesIn` and `bytesOut`; over HTTP, `httpRequests` (every request of
//! any method) and `httpBytesIn` (their bodies' `Content-Length`), so a
//! benchmark can check what each client sent.
//!
//! `subscriptions/listen` is accepted, and rmcp acknowledges it without the
//! `taskIds` (its filter type has no such field), so clients fall back to polling.
//!
//! Pushes: rmcp's subscription sink refuses `notifications/tasks` (its filter
//! has no `taskIds`), so a `progress` call with `push: true` sends them the
//! only way rmcp can: through the `tools/call` request's peer, with no
//! `subscriptionId` in `_meta`. Each one is the full `tasks/get` snapshot
//! (`DetailedTask`: `taskId`, `status`, `statusMessage`, timestamps, `ttlMs`,
//! `pollIntervalMs`, and the `result` once `completed`), sent on every change
//! of status or status message, the terminal one included. The server reads
//! its own task store for them; those reads are not counted as `tasks/get`.

use std::borrow::Cow;
use std::collections::HashMap;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::task::Poll;
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, CancelTaskParams, ClientCapabilities,
    ContentBlock, CreateTaskResult, DetailedTask, ElicitationCapability, ErrorCode, GetTaskParams,
    GetTaskResult, Implementation, InputRequest, JsonObject, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, ServerNotification,
    SubscriptionFilter, Task, TaskPayload, TaskStatus, TaskStatusNotification,
    TaskStatusNotificationParams, Tool, UpdateTaskParams,
};
use rmcp::service::{Peer as PeerHandle, RequestContext, RoleServer, SubscriptionContext};
use rmcp::task_manager::{TaskContext, TaskExit, TaskManager, TaskOptions, current_timestamp};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt};
use serde_json::{Value, json};

/// The code of the `fail` tool's JSON-RPC error.
const BACKEND_DOWN: i32 = -32001;

#[derive(Clone, Default)]
struct Peer {
    tasks: TaskManager,
    stats: Arc<Stats>,
    /// The `bench` tool, with `--bench` only.
    bench: Option<Arc<Bench>>,
}

/// Counts of what clients sent, for tests to check the client's pacing.
#[derive(Default)]
struct Stats {
    gets: AtomicUsize,
    listens: AtomicUsize,
}

/// The `bench` tool: a task that completes on its third read, kept out of
/// the task manager so that exactly three `tasks/get` are needed whatever
/// the client's pace. Its snapshots have the manager's shape (a UUID-like
/// id, timestamps, a TTL, a status message) but no `pollIntervalMs`, so a
/// client polls at its own interval.
#[derive(Default)]
struct Bench {
    /// The open bench tasks by id.
    open: Mutex<HashMap<String, OpenBench>>,
    calls: AtomicUsize,
    gets: AtomicUsize,
    /// Bytes read from stdin and written to stdout (stdio only).
    bytes_in: Arc<AtomicU64>,
    bytes_out: Arc<AtomicU64>,
    /// HTTP requests received, and the bytes of their bodies (HTTP only).
    http_requests: AtomicU64,
    http_bytes_in: AtomicU64,
}

/// An open bench task: created at, reads so far, its `pollIntervalMs`.
type OpenBench = (String, u32, Option<u64>);

/// Reads of a bench task before it is `completed`.
const BENCH_READS: u32 = 3;

/// A fresh task id shaped like a UUID, random enough for a test server.
fn random_id() -> String {
    use std::hash::{BuildHasher, RandomState};
    let a = RandomState::new().hash_one(1u8);
    let b = RandomState::new().hash_one(2u8);
    format!(
        "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
        a >> 32,
        (a >> 16) & 0xffff,
        a & 0xfff,
        b >> 52,
        b & 0xffff_ffff_ffff
    )
}

impl Bench {
    /// A new bench task; `poll_ms` is the `pollIntervalMs` its snapshots
    /// carry (none when absent).
    fn call(&self, tasks: bool, poll_ms: Option<u64>) -> Result<CallToolResponse, ErrorData> {
        if !tasks {
            return Err(needs_tasks());
        }
        self.calls.fetch_add(1, Ordering::SeqCst);
        let id = random_id();
        let now = current_timestamp();
        self.open
            .lock()
            .expect("bench lock")
            .insert(id.clone(), (now.clone(), 0, poll_ms));
        let mut task = Task::new(id, TaskStatus::Working, now.clone(), now)
            .with_ttl_ms(60_000)
            .with_status_message("starting");
        if let Some(ms) = poll_ms {
            task = task.with_poll_interval_ms(ms);
        }
        Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
    }

    /// The snapshot for a read of `id`, if it is an open bench task.
    fn get(&self, id: &str) -> Option<GetTaskResult> {
        let mut open = self.open.lock().expect("bench lock");
        let (created_at, reads, poll_ms) = open.get_mut(id)?;
        *reads += 1;
        self.gets.fetch_add(1, Ordering::SeqCst);
        let reads = *reads;
        let mut task = Task::new(
            id,
            TaskStatus::Working,
            created_at.clone(),
            current_timestamp(),
        )
        .with_ttl_ms(60_000);
        if let Some(ms) = *poll_ms {
            task = task.with_poll_interval_ms(ms);
        }
        let snapshot = if reads < BENCH_READS {
            DetailedTask::new(
                task.with_status_message(format!("step {reads}/{BENCH_READS}")),
                TaskPayload::Working,
            )
        } else {
            open.remove(id);
            let mut result = text(format!("done after {BENCH_READS} reads"));
            result.structured_content = Some(json!({ "reads": BENCH_READS }));
            let Value::Object(result) = json!(result) else {
                unreachable!("a tool result is an object")
            };
            DetailedTask::new(task, TaskPayload::Completed { result })
        };
        Some(GetTaskResult::new(snapshot))
    }
}

/// Counts the bytes that pass through a reader or writer.
struct Counted<T> {
    inner: T,
    bytes: Arc<AtomicU64>,
}

impl<T: tokio::io::AsyncRead + Unpin> tokio::io::AsyncRead for Counted<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        let read = buf.filled().len() - before;
        self.bytes.fetch_add(read as u64, Ordering::Relaxed);
        polled
    }
}

impl<T: tokio::io::AsyncWrite + Unpin> tokio::io::AsyncWrite for Counted<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, buf);
        if let Poll::Ready(Ok(n)) = polled {
            self.bytes.fetch_add(n as u64, Ordering::Relaxed);
        }
        polled
    }

    fn poll_flush(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

fn text(t: impl Into<String>) -> CallToolResult {
    CallToolResult::success(vec![ContentBlock::text(t.into())])
}

fn schema(v: Value) -> Arc<JsonObject> {
    match v {
        Value::Object(map) => Arc::new(map),
        _ => unreachable!("tool schemas are objects"),
    }
}

fn tool(name: &'static str, description: &'static str, properties: Value) -> Tool {
    Tool::new(
        name,
        description,
        schema(json!({ "type": "object", "properties": properties })),
    )
}

fn tools(bench: bool) -> Vec<Tool> {
    let mut tools = vec![
        tool(
            "progress",
            "Runs steps × step_ms, reporting each step in the status message; push=true also sends notifications/tasks on each change.",
            json!({
                "steps": { "type": "integer" },
                "step_ms": { "type": "integer" },
                "push": { "type": "boolean" }
            }),
        ),
        tool(
            "task_required",
            "Always a task; needs the Tasks extension.",
            json!({}),
        ),
        tool(
            "task_optional",
            "A task when the work is long and the client declares tasks; else answers at once.",
            json!({ "work_ms": { "type": "integer" } }),
        ),
        tool(
            "fail",
            "Fails with a JSON-RPC error: inside a task, or at once with now=true.",
            json!({ "now": { "type": "boolean" } }),
        ),
        tool(
            "tool_error",
            "Completes with a tool error (isError: true).",
            json!({}),
        ),
        tool(
            "confirm",
            "Asks the user to confirm (an elicitation form) while the task runs.",
            json!({ "rounds": { "type": "integer" } }),
        ),
        tool("forever", "Runs until cancelled.", json!({})),
        tool(
            "short_ttl",
            "A task whose ttlMs (300) passes long before it finishes.",
            json!({}),
        ),
        tool(
            "stats",
            "How many tasks/get requests and listen subscriptions the server has seen.",
            json!({}),
        ),
    ];
    if bench {
        tools.push(tool(
            "bench",
            "A task that completes on its third tasks/get (for benchmarks); poll_ms sets its pollIntervalMs.",
            json!({ "poll_ms": { "type": "integer" } }),
        ));
    }
    tools
}

fn arg_u64(args: &JsonObject, key: &str, default: u64) -> u64 {
    args.get(key).and_then(Value::as_u64).unwrap_or(default)
}

fn needs_tasks() -> ErrorData {
    ErrorData::missing_required_client_capability(
        ClientCapabilities::builder().enable_tasks().build(),
    )
}

fn backend_down() -> ErrorData {
    ErrorData::new(
        ErrorCode(BACKEND_DOWN),
        "the export backend is unavailable",
        Some(json!({ "retryAfterMs": 1000 })),
    )
}

/// Sleeps, or returns early with `Cancelled` when the task is cancelled.
async fn work(ctx: &TaskContext, d: Duration) -> Result<(), TaskExit> {
    tokio::select! {
        _ = ctx.cancelled() => Err(TaskExit::Cancelled),
        _ = tokio::time::sleep(d) => Ok(()),
    }
}

fn form(message: &str, properties: Value, required: &[&str]) -> Result<InputRequest, TaskExit> {
    serde_json::from_value(json!({
        "method": "elicitation/create",
        "params": {
            "message": message,
            "requestedSchema": { "type": "object", "properties": properties, "required": required },
        },
    }))
    .map_err(|e| TaskExit::Error(ErrorData::internal_error(e.to_string(), None)))
}

/// `confirm`: one or two elicitation rounds, then a summary of the answers.
async fn confirm(ctx: TaskContext, rounds: u64) -> Result<CallToolResult, TaskExit> {
    ctx.set_status_message("waiting for confirmation");
    let request = form(
        "Export 42 rows?",
        json!({ "approved": { "type": "boolean" } }),
        &["approved"],
    )?;
    let answer = ctx.request_input("confirm", request).await?;
    let approved = answer["action"] == "accept" && answer["content"]["approved"] == true;
    if !approved {
        return Ok(text(format!("not exported ({})", answer["action"])));
    }
    let mut summary = "exported 42 rows".to_owned();
    if rounds > 1 {
        ctx.set_status_message("waiting for a note");
        let request = form(
            "A note for the audit log?",
            json!({ "note": { "type": "string" } }),
            &["note"],
        )?;
        let answer = ctx.request_input("note", request).await?;
        if let Some(note) = answer["content"]["note"].as_str() {
            summary.push_str(&format!(" (note: {note})"));
        }
    }
    ctx.set_status_message("done");
    Ok(text(summary))
}

impl Peer {
    fn spawn<F, Fut>(&self, options: TaskOptions, op: F) -> CallToolResponse
    where
        F: FnOnce(TaskContext) -> Fut,
        Fut: Future<Output = Result<CallToolResult, TaskExit>> + Send + 'static,
    {
        let task = self.tasks.spawn(options, |ctx| Box::pin(op(ctx)));
        CallToolResponse::Task(CreateTaskResult::new(task))
    }
}

/// How often [`push_changes`] looks at its task.
const PUSH_CHECK: Duration = Duration::from_millis(5);

/// Sends `notifications/tasks` with the full snapshot each time the task's
/// status or status message changes, until it is terminal (that snapshot
/// included) or gone. It goes through the `tools/call` request's peer,
/// since rmcp's subscription sink refuses task notifications.
async fn push_changes(tasks: TaskManager, peer: PeerHandle<RoleServer>, seed: Task) {
    let mut last = (seed.status, seed.status_message);
    loop {
        tokio::time::sleep(PUSH_CHECK).await;
        let Ok(snapshot) = tasks.get_task(&seed.task_id) else {
            return;
        };
        let now = (snapshot.task.status, snapshot.task.status_message.clone());
        if now == last {
            continue;
        }
        let terminal = !matches!(now.0, TaskStatus::Working | TaskStatus::InputRequired);
        last = now;
        let note = TaskStatusNotification::new(TaskStatusNotificationParams::new(snapshot));
        if peer
            .send_notification(ServerNotification::TaskStatusNotification(note))
            .await
            .is_err()
            || terminal
        {
            return;
        }
    }
}

fn quick() -> TaskOptions {
    TaskOptions::new().with_poll_interval_ms(50)
}

impl ServerHandler for Peer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(
            ServerCapabilities::builder()
                .enable_tools()
                .enable_tasks()
                .build(),
        )
        .with_server_info(Implementation::new("rmcp-peer", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(tools(self.bench.is_some())))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let caps = context.client_capabilities().unwrap_or_default();
        let tasks = caps.supports_tasks();
        let args = request.arguments.clone().unwrap_or_default();
        let name: &str = &request.name;
        if let Some(bench) = &self.bench
            && name == "bench"
        {
            return bench.call(tasks, args.get("poll_ms").and_then(Value::as_u64));
        }
        match name {
            "fail" if args.get("now") == Some(&Value::Bool(true)) || !tasks => Err(backend_down()),
            "stats" => {
                let mut result = text("stats");
                let mut stats = json!({
                    "gets": self.stats.gets.load(Ordering::SeqCst),
                    "listens": self.stats.listens.load(Ordering::SeqCst),
                });
                if let Some(bench) = &self.bench {
                    stats["benchCalls"] = json!(bench.calls.load(Ordering::SeqCst));
                    stats["benchGets"] = json!(bench.gets.load(Ordering::SeqCst));
                    stats["bytesIn"] = json!(bench.bytes_in.load(Ordering::Relaxed));
                    stats["bytesOut"] = json!(bench.bytes_out.load(Ordering::Relaxed));
                    stats["httpRequests"] = json!(bench.http_requests.load(Ordering::Relaxed));
                    stats["httpBytesIn"] = json!(bench.http_bytes_in.load(Ordering::Relaxed));
                }
                result.structured_content = Some(stats);
                Ok(result.into())
            }
            "task_optional" => {
                let work_ms = arg_u64(&args, "work_ms", 0);
                if tasks && work_ms >= 200 {
                    Ok(self.spawn(quick(), move |ctx| async move {
                        work(&ctx, Duration::from_millis(work_ms)).await?;
                        Ok(text(format!("worked {work_ms} ms in a task")))
                    }))
                } else {
                    tokio::time::sleep(Duration::from_millis(work_ms)).await;
                    Ok(text(format!("worked {work_ms} ms inline")).into())
                }
            }
            _ if !tasks && tools(false).iter().any(|t| t.name == name) => Err(needs_tasks()),
            "progress" => {
                let steps = arg_u64(&args, "steps", 3);
                let step_ms = arg_u64(&args, "step_ms", 100);
                let options = quick().with_status_message("starting");
                let task = self.tasks.spawn(options, move |ctx| {
                    Box::pin(async move {
                        for i in 1..=steps {
                            work(&ctx, Duration::from_millis(step_ms)).await?;
                            ctx.set_status_message(format!("step {i}/{steps}"));
                        }
                        let mut result = text(format!("done after {steps} steps"));
                        result.structured_content = Some(json!({ "steps": steps }));
                        Ok(result)
                    })
                });
                if args.get("push") == Some(&Value::Bool(true)) {
                    tokio::spawn(push_changes(
                        self.tasks.clone(),
                        context.peer.clone(),
                        task.clone(),
                    ));
                }
                Ok(CallToolResponse::Task(CreateTaskResult::new(task)))
            }
            "task_required" => Ok(self.spawn(quick(), |ctx| async move {
                work(&ctx, Duration::from_millis(100)).await?;
                Ok(text("required task done"))
            })),
            "fail" => Ok(self.spawn(quick(), |ctx| async move {
                work(&ctx, Duration::from_millis(100)).await?;
                Err(TaskExit::Error(backend_down()))
            })),
            "tool_error" => Ok(self.spawn(quick(), |ctx| async move {
                work(&ctx, Duration::from_millis(100)).await?;
                Ok(CallToolResult::error(vec![ContentBlock::text(
                    "the table \"orders\" does not exist",
                )]))
            })),
            "confirm" => {
                let form_ok = caps
                    .elicitation
                    .as_ref()
                    .is_some_and(|e| e.form.is_some() || e.url.is_none());
                if !form_ok {
                    let mut required = ClientCapabilities::default();
                    required.elicitation = Some(ElicitationCapability::new());
                    return Err(ErrorData::missing_required_client_capability(required));
                }
                let rounds = arg_u64(&args, "rounds", 1);
                Ok(self.spawn(quick(), move |ctx| confirm(ctx, rounds)))
            }
            "forever" => Ok(self.spawn(
                quick().with_status_message("running until cancelled"),
                |ctx| async move {
                    ctx.cancelled().await;
                    Err(TaskExit::Cancelled)
                },
            )),
            "short_ttl" => Ok(self.spawn(quick().with_ttl_ms(300), |ctx| async move {
                work(&ctx, Duration::from_secs(10)).await?;
                Ok(text("finished late"))
            })),
            _ => Err(ErrorData::invalid_params(
                Cow::Owned(format!("unknown tool {name:?}")),
                None,
            )),
        }
    }

    async fn get_task(
        &self,
        request: GetTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetTaskResult, ErrorData> {
        self.stats.gets.fetch_add(1, Ordering::SeqCst);
        if let Some(read) = self.bench.as_ref().and_then(|b| b.get(&request.task_id)) {
            return Ok(read);
        }
        Ok(GetTaskResult::new(self.tasks.get_task(&request.task_id)?))
    }

    async fn update_task(
        &self,
        request: UpdateTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks
            .update_task(&request.task_id, request.input_responses)
    }

    async fn cancel_task(
        &self,
        request: CancelTaskParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<(), ErrorData> {
        self.tasks.cancel_task(&request.task_id)
    }

    fn accepted_subscription_filter(
        &self,
        requested: &SubscriptionFilter,
    ) -> Option<SubscriptionFilter> {
        Some(requested.clone())
    }

    async fn listen(&self, context: SubscriptionContext) -> Result<(), ErrorData> {
        self.stats.listens.fetch_add(1, Ordering::SeqCst);
        context.cancelled().await;
        Ok(())
    }
}

async fn serve_http(peer: Peer, addr: &str, json_response: bool) -> std::io::Result<()> {
    let bench = peer.bench.clone();
    let config = StreamableHttpServerConfig::default()
        .with_legacy_session_mode(false)
        .with_json_response(json_response)
        .with_sse_keep_alive(None);
    let service: StreamableHttpService<Peer, LocalSessionManager> =
        StreamableHttpService::new(move || Ok(peer.clone()), Default::default(), config);
    let mut router = axum::Router::new().nest_service("/mcp", service);
    if let Some(bench) = bench {
        // Every HTTP request, whatever it carries, and the bytes of the
        // bodies posted (by `Content-Length`).
        router = router.layer(axum::middleware::from_fn(
            move |request: axum::extract::Request, next: axum::middleware::Next| {
                let bench = bench.clone();
                async move {
                    bench.http_requests.fetch_add(1, Ordering::Relaxed);
                    let length = request
                        .headers()
                        .get(axum::http::header::CONTENT_LENGTH)
                        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok())
                        .unwrap_or(0);
                    bench.http_bytes_in.fetch_add(length, Ordering::Relaxed);
                    next.run(request).await
                }
            },
        ));
    }
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let local = listener.local_addr()?;
    let host = match local {
        std::net::SocketAddr::V4(a) => a.to_string(),
        std::net::SocketAddr::V6(a) => format!("[{}]:{}", a.ip(), a.port()),
    };
    // The first line of stdout is the endpoint; tests read it to connect.
    println!("http://{host}/mcp");
    axum::serve(listener, router).await
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let peer = Peer {
        bench: args
            .iter()
            .any(|a| a == "--bench")
            .then(|| Arc::new(Bench::default())),
        ..Peer::default()
    };
    match args.iter().position(|a| a == "--http") {
        Some(i) => {
            let addr = args.get(i + 1).map_or("127.0.0.1:0", String::as_str);
            let json_response = args.iter().any(|a| a == "--json");
            serve_http(peer, addr, json_response).await?;
        }
        None => match peer.bench.clone() {
            None => {
                let running = peer.serve(rmcp::transport::stdio()).await?;
                running.waiting().await?;
            }
            Some(bench) => {
                let (stdin, stdout) = rmcp::transport::stdio();
                let stdin = Counted {
                    inner: stdin,
                    bytes: bench.bytes_in.clone(),
                };
                let stdout = Counted {
                    inner: stdout,
                    bytes: bench.bytes_out.clone(),
                };
                let running = peer.serve((stdin, stdout)).await?;
                running.waiting().await?;
            }
        },
    }
    Ok(())
}
