//! Many tasks pending at once on one client: memory per pending task, CPU,
//! and requests sent against the minimum the poll schedule needs.
//!
//! ```text
//! cargo bench --bench scale -- 10000
//! cargo bench --bench scale --features http -- 10000 --http
//! cargo bench --bench scale --features http -- 10000 --http --burst
//! cargo bench --bench scale --features http -- 10000 --http --burst --max-in-flight 64
//! ```
//!
//! The server runs in a child process (this program started with
//! `--serve`, or `--serve-http` behind a Streamable HTTP front on
//! 127.0.0.1), so the figures are the client's alone. Every task asks to be
//! polled every `I` and completes after 2.5 `I`: the schedule needs exactly
//! three `tasks/get` per task. `I` is a second up to 10,000 tasks and grows
//! with `N` beyond (50 s at 100,000, the client's `max_poll_interval` raised
//! to match), so that every task is still pending when the last one is
//! created, and the test server is not asked for more reads a second than
//! it serves on a small machine. Over HTTP, where each request is a POST
//! of its own, `I` is a second up to 1,000 tasks and `N` ms beyond (10 s at
//! 10,000). Linux only (reads `/proc/self`).
//!
//! Memory is reported twice: the growth of the resident set (what the
//! system sees, allocator overhead and fragmentation included) and the
//! growth of live heap bytes, counted by this program's allocator: the
//! handles (what `call_tool` returns) and their waits (each a spawned tokio
//! task running `finish()`). The size of one wait's future, as spawned,
//! is printed beside them: most of the heap a pending task takes.
//!
//! Over HTTP (`--http`) the front counts the TCP connections it accepts,
//! the most open at once, and the requests in flight at once, and the
//! client prints them. Tasks are created one after the other, as over
//! stdio; with `--burst` they are all created at once (each call on a
//! spawned task), so that their reads fall due together: what the
//! connection pool does with `N` concurrent requests. `--max-in-flight K`
//! sets [`Http::max_in_flight`](mcp_tasks::transport::Http::max_in_flight).

use std::alloc::{GlobalAlloc, Layout, System};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_tasks::protocol::CallToolResult;
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::transport::{Closed, MessageSink, Outbound, Stdio, Transport};
use mcp_tasks::{Client, Pending, Task, TaskState};
use serde_json::json;

const GETS_PER_TASK: usize = 3;

/// The poll interval for `n` tasks. Over HTTP every request is a POST
/// with its own headers and, on this machine, tasks are created about
/// 2,000 a second: the interval is `N` ms beyond 1,000 tasks (10 s at
/// 10,000), so that the last task is created before the first is read.
fn interval(n: usize, http: bool) -> Duration {
    match (http, n) {
        (false, 0..=10_000) | (true, 0..=1_000) => Duration::from_secs(1),
        (false, _) => Duration::from_millis(n as u64 / 2),
        (true, _) => Duration::from_millis(n as u64),
    }
}

fn server(n: usize, http: bool) -> TestServer {
    let every = interval(n, http);
    TestServer::new().tool(ScriptedTool::task(
        "job",
        TaskScript::new()
            .poll_interval(every)
            .complete(every * 5 / 2, CallToolResult::text("ok")),
    ))
}

/// The system allocator, counting the bytes it has handed out and not
/// taken back.
struct Counted;
static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call goes to `System` unchanged; only a counter is added.
unsafe impl GlobalAlloc for Counted {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: the caller's contract, passed on.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counted = Counted;

fn live_bytes() -> isize {
    LIVE_BYTES.load(Ordering::Relaxed)
}

/// Counts `tasks/get` requests on their way out.
struct Counting<T>(T, Arc<AtomicUsize>);
struct CountingSink<S>(S, Arc<AtomicUsize>);

impl<T: Transport> Transport for Counting<T> {
    type Sink = CountingSink<T::Sink>;
    type Stream = T::Stream;
    async fn connect(self) -> io::Result<(Self::Sink, Self::Stream)> {
        let (sink, stream) = self.0.connect().await?;
        Ok((CountingSink(sink, self.1), stream))
    }
}

impl<S: MessageSink> MessageSink for CountingSink<S> {
    async fn send(&mut self, m: Outbound) -> io::Result<()> {
        if m.method == "tasks/get" {
            self.1.fetch_add(1, Ordering::Relaxed);
        }
        self.0.send(m).await
    }
    async fn close(&mut self) -> io::Result<Closed> {
        self.0.close().await
    }
}

/// A field of /proc/self/status in KiB.
fn status_kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(field))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// User + system CPU time of this process.
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after_name = stat.rsplit_once(')').map(|(_, rest)| rest).unwrap_or("");
    let fields: Vec<u64> = after_name
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15 of the file, 12 and 13 after the name.
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

/// What the front of `--serve-http` counted, as it prints it at the end.
#[cfg(feature = "http")]
#[derive(Debug, Default, serde::Serialize, serde::Deserialize)]
struct FrontStats {
    /// TCP connections accepted.
    accepted: usize,
    /// The most connections open at once.
    peak_open: usize,
    /// Connections still open when the client asked.
    open: usize,
    /// The most POSTs being answered at once.
    peak_in_flight: usize,
    /// `tasks/get` POSTs received.
    gets: usize,
    /// `tools/call` POSTs received.
    calls: usize,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    let flag = |name: &str| std::env::args().any(|a| a == name);
    if flag("--serve") {
        server(n, false).serve_stdio().await?;
        return Ok(());
    }
    if flag("--serve-http") {
        #[cfg(feature = "http")]
        return front::serve(server(n, true)).await;
        #[cfg(not(feature = "http"))]
        return Err("--serve-http needs --features http".into());
    }
    let burst = flag("--burst");
    let gets = Arc::new(AtomicUsize::new(0));
    if flag("--http") {
        #[cfg(feature = "http")]
        {
            let mut child = front::spawn(n).await?;
            let mut transport = mcp_tasks::transport::Http::new(child.url.clone());
            let most = std::env::args()
                .skip_while(|a| a != "--max-in-flight")
                .nth(1)
                .map(|k| k.parse::<usize>())
                .transpose()?;
            if let Some(most) = most {
                transport = transport.max_in_flight(most);
                println!("max in flight:         {most}");
            }
            let client = Client::connect(Counting(transport, gets.clone())).await?;
            run(n, client, gets, burst, true).await?;
            let stats = child.stats().await?;
            println!(
                "connections:           {} opened, {} open at most at once, {} open at the end",
                stats.accepted, stats.peak_open, stats.open
            );
            println!(
                "server saw:            {} tools/call, {} tasks/get; {} requests in flight at most",
                stats.calls, stats.gets, stats.peak_in_flight
            );
            return Ok(());
        }
        #[cfg(not(feature = "http"))]
        return Err("--http needs --features http".into());
    }
    let child = Stdio::command(std::env::current_exe()?)
        .arg(n.to_string())
        .arg("--serve");
    let client = Client::connect(Counting(child, gets.clone())).await?;
    run(n, client, gets, burst, false).await
}

/// Waits for a task to end: whether it completed.
async fn wait(task: Task<Pending>) -> Result<bool, String> {
    task.finish()
        .await
        .map(|t| t.into_outcome().is_completed())
        .map_err(|e| e.to_string())
}

/// Creates `n` tasks on `client`, waits for them all, prints the figures.
async fn run(
    n: usize,
    client: Client,
    gets: Arc<AtomicUsize>,
    burst: bool,
    http: bool,
) -> Result<(), Box<dyn std::error::Error>> {
    client.discover().await?;

    let mut waiters = Vec::with_capacity(n);
    let rss_before = status_kib("VmRSS:");
    let heap_before = live_bytes();
    let cpu_before = cpu_time();
    let started = Instant::now();
    let every = interval(n, http);
    let settings = move |client: &Client| {
        client
            .task()
            .timeout((every * 10).max(Duration::from_secs(300)))
            .max_poll_interval(every.max(Duration::from_secs(30)))
    };

    let mut failed = 0;
    // The size of one wait's future, as spawned (the same for every task).
    let mut future_size = 0;
    if burst {
        // Every call on a task of its own, which hands its wait to another
        // task and ends: the pending tasks are then the same as below.
        let calls: Vec<_> = (0..n)
            .map(|_| {
                let client = client.clone();
                tokio::spawn(async move {
                    match settings(&client).call_tool("job", json!({})).await {
                        Ok(TaskState::Pending(task)) => {
                            let waiting = wait(task);
                            Ok((size_of_val(&waiting), tokio::spawn(waiting)))
                        }
                        Ok(_) => Err("expected a pending task".to_owned()),
                        Err(e) => Err(e.to_string()),
                    }
                })
            })
            .collect();
        let mut first_error = None;
        for call in calls {
            match call.await? {
                Ok((size, waiter)) => {
                    future_size = size;
                    waiters.push(waiter);
                }
                Err(e) => {
                    failed += 1;
                    first_error.get_or_insert(e);
                }
            }
        }
        if let Some(e) = first_error {
            println!("creation failed:       {failed} of {n} calls; the first: {e}");
        }
    } else {
        for _ in 0..n {
            let state = settings(&client).call_tool("job", json!({})).await?;
            let TaskState::Pending(task) = state else {
                return Err("expected a pending task".into());
            };
            let waiting = wait(task);
            future_size = size_of_val(&waiting);
            waiters.push(tokio::spawn(waiting));
        }
    }
    let created_in = started.elapsed();
    // Let every waiter start and park in its first sleep.
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let rss_pending = status_kib("VmRSS:");
    let heap_per_task = (live_bytes() - heap_before) as f64 / n as f64;

    let mut completed = 0;
    let mut first_error = None;
    for w in waiters {
        match w.await? {
            Ok(true) => completed += 1,
            Ok(false) => {}
            Err(e) => {
                first_error.get_or_insert(e);
            }
        }
    }
    // Zero when /proc cannot be opened (no file descriptor left).
    let cpu = cpu_time().saturating_sub(cpu_before);
    let sent = gets.load(Ordering::Relaxed);
    let per_task = (rss_pending.saturating_sub(rss_before) * 1024) as f64 / n as f64;
    let scheduled = (n - failed) * GETS_PER_TASK;

    println!(
        "tasks:                 {n} ({completed} completed), polled every {:?}{}",
        every,
        if burst { ", created at once" } else { "" }
    );
    if let Some(e) = first_error {
        println!("first failure:         {e}");
    }
    println!(
        "created in:            {created_in:.2?}; all done in {:.2?}",
        started.elapsed()
    );
    println!(
        "RSS before / pending:  {rss_before} KiB / {rss_pending} KiB (peak {} KiB)",
        status_kib("VmHWM:")
    );
    println!("memory per pending:    {per_task:.0} bytes (resident set)");
    println!("live heap per pending: {heap_per_task:.0} bytes (handle and wait)");
    println!("a wait's future:       {future_size} bytes (`finish()`, as spawned)");
    println!(
        "client CPU:            {cpu:.2?} ({:.1} µs per task)",
        cpu.as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "tasks/get sent:        {sent} (schedule {scheduled}; {} beyond it)",
        sent.saturating_sub(scheduled)
    );
    // Ends the connection and waits until it is ended; dropping the
    // client would do it in the background, unawaited.
    client.close().await?;
    Ok(())
}

/// The Streamable HTTP front of `--serve-http`, and the client's side of
/// starting it.
#[cfg(feature = "http")]
mod front {
    use std::collections::HashMap;
    use std::convert::Infallible;
    use std::sync::atomic::{AtomicI64, AtomicUsize, Ordering};
    use std::sync::{Arc, Mutex};

    use bytes::Bytes;
    use http_body_util::{BodyExt as _, Full};
    use hyper::body::Incoming;
    use hyper::service::service_fn;
    use hyper::{Request, Response};
    use hyper_util::rt::TokioIo;
    use mcp_tasks::testing::TestServer;
    use mcp_tasks::transport::{Inbound, MessageSink, MessageStream, Outbound, Transport};
    use serde_json::{Value, json};
    use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _, BufReader};
    use tokio::process::{Child, ChildStdout, Command};
    use tokio::sync::{mpsc, oneshot};

    use super::FrontStats;

    /// A gauge that remembers its highest value.
    #[derive(Default)]
    struct Gauge {
        now: AtomicUsize,
        peak: AtomicUsize,
    }

    impl Gauge {
        fn up(&self) {
            let now = self.now.fetch_add(1, Ordering::Relaxed) + 1;
            self.peak.fetch_max(now, Ordering::Relaxed);
        }
        fn down(&self) {
            self.now.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Lowers a gauge when dropped.
    struct Held<'a>(&'a Gauge);

    impl Drop for Held<'_> {
        fn drop(&mut self) {
            self.0.down();
        }
    }

    struct Front {
        out: mpsc::UnboundedSender<Outbound>,
        next: AtomicI64,
        /// Our id → the client's id and where its reply goes.
        routes: Mutex<HashMap<i64, (Value, oneshot::Sender<Value>)>>,
        accepted: AtomicUsize,
        open: Gauge,
        in_flight: Gauge,
        gets: AtomicUsize,
        calls: AtomicUsize,
    }

    impl Front {
        fn stats(&self) -> FrontStats {
            FrontStats {
                accepted: self.accepted.load(Ordering::Relaxed),
                peak_open: self.open.peak.load(Ordering::Relaxed),
                open: self.open.now.load(Ordering::Relaxed),
                peak_in_flight: self.in_flight.peak.load(Ordering::Relaxed),
                gets: self.gets.load(Ordering::Relaxed),
                calls: self.calls.load(Ordering::Relaxed),
            }
        }
    }

    /// Serves `server` over HTTP on 127.0.0.1: prints its URL on stdout,
    /// then, when stdin closes, what it counted (one JSON line).
    pub async fn serve(server: TestServer) -> Result<(), Box<dyn std::error::Error>> {
        let (mut sink, mut stream) = server.connect().connect().await?;
        let (out, mut out_rx) = mpsc::unbounded_channel::<Outbound>();
        tokio::spawn(async move {
            while let Some(m) = out_rx.recv().await {
                if sink.send(m).await.is_err() {
                    return;
                }
            }
        });
        let front = Arc::new(Front {
            out,
            next: AtomicI64::new(1),
            routes: Mutex::default(),
            accepted: AtomicUsize::new(0),
            open: Gauge::default(),
            in_flight: Gauge::default(),
            gets: AtomicUsize::new(0),
            calls: AtomicUsize::new(0),
        });
        let replies = front.clone();
        tokio::spawn(async move {
            while let Ok(Some(Inbound::Message(text))) = stream.recv().await {
                let Ok(mut reply) = serde_json::from_str::<Value>(&text) else {
                    continue;
                };
                // Notifications (pushes) have nowhere to go: no listen stream.
                let Some(ours) = reply.get("id").and_then(Value::as_i64) else {
                    continue;
                };
                let route = replies.routes.lock().unwrap().remove(&ours);
                if let Some((theirs, tx)) = route {
                    reply["id"] = theirs;
                    let _ = tx.send(reply);
                }
            }
        });

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
        println!("http://{}/mcp", listener.local_addr()?);
        let counts = front.clone();
        tokio::spawn(async move {
            let mut rest = Vec::new();
            let _ = tokio::io::stdin().read_to_end(&mut rest).await;
            println!("{}", serde_json::to_string(&counts.stats()).unwrap());
            std::process::exit(0);
        });
        loop {
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of descriptors, say: say so, and go on accepting.
                    eprintln!("front: accept failed: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(10)).await;
                    continue;
                }
            };
            front.accepted.fetch_add(1, Ordering::Relaxed);
            front.open.up();
            let front = front.clone();
            tokio::spawn(async move {
                let _open = Held(&front.open);
                let service = service_fn(|req| handle(&front, req));
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    }

    async fn handle(
        front: &Front,
        req: Request<Incoming>,
    ) -> Result<Response<Full<Bytes>>, Infallible> {
        front.in_flight.up();
        let _in_flight = Held(&front.in_flight);
        let reply = |status: u16, body: String| {
            Ok(Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(Full::new(Bytes::from(body)))
                .unwrap())
        };
        let bytes = match req.into_body().collect().await {
            Ok(b) => b.to_bytes(),
            Err(_) => return reply(400, String::new()),
        };
        let Ok(mut body) = serde_json::from_slice::<Value>(&bytes) else {
            return reply(400, String::new());
        };
        let method = body["method"].as_str().unwrap_or_default().to_owned();
        match method.as_str() {
            "tasks/get" => front.gets.fetch_add(1, Ordering::Relaxed),
            "tools/call" => front.calls.fetch_add(1, Ordering::Relaxed),
            _ => 0,
        };
        let Some(theirs) = body.get("id").cloned().filter(|id| !id.is_null()) else {
            let _ = front.out.send(Outbound::new(body.to_string(), method));
            return reply(202, String::new());
        };
        let ours = front.next.fetch_add(1, Ordering::Relaxed);
        body["id"] = json!(ours);
        let (tx, rx) = oneshot::channel();
        front.routes.lock().unwrap().insert(ours, (theirs, tx));
        let _ = front.out.send(Outbound::new(body.to_string(), method));
        match rx.await {
            Ok(answer) => reply(200, answer.to_string()),
            Err(_) => reply(500, String::new()),
        }
    }

    /// The front as a child process of the client.
    pub struct Served {
        pub url: String,
        child: Child,
        stdout: BufReader<ChildStdout>,
    }

    impl Served {
        /// Closes the front's stdin and reads what it counted.
        pub async fn stats(&mut self) -> Result<FrontStats, Box<dyn std::error::Error>> {
            drop(self.child.stdin.take());
            let mut line = String::new();
            self.stdout.read_line(&mut line).await?;
            let _ = self.child.wait().await;
            Ok(serde_json::from_str(&line)?)
        }
    }

    /// Starts this program with `--serve-http` and reads its URL.
    pub async fn spawn(n: usize) -> Result<Served, Box<dyn std::error::Error>> {
        let mut child = Command::new(std::env::current_exe()?)
            .arg(n.to_string())
            .arg("--serve-http")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .kill_on_drop(true)
            .spawn()?;
        let mut stdout = BufReader::new(child.stdout.take().ok_or("no stdout")?);
        let mut url = String::new();
        stdout.read_line(&mut url).await?;
        Ok(Served {
            url: url.trim().to_owned(),
            child,
            stdout,
        })
    }
}
