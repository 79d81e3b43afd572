//! Many tasks pending at once on one client: memory per pending task, CPU,
//! and requests sent against the minimum the poll schedule needs.
//!
//! ```text
//! cargo run --release --example scale -- 10000
//! ```
//!
//! The server runs in a child process (this example started with
//! `--serve`), so the figures are the client's alone. Every task asks to be
//! polled every `I` and completes after 2.5 `I`: the schedule needs exactly
//! three `tasks/get` per task. `I` is a second up to 10,000 tasks and grows
//! with `N` beyond (50 s at 100,000, the client's `max_poll_interval` raised
//! to match), so that every task is still pending when the last one is
//! created, and the test server is not asked for more reads a second than
//! it serves on a small machine. Linux only (reads `/proc/self`).
//!
//! Memory is reported twice: the growth of the resident set (what the
//! system sees, allocator overhead and fragmentation included) and the
//! growth of live heap bytes, counted by this example's allocator: the
//! handles (what `call_tool` returns) and their waits (each a spawned tokio
//! task running `finish()`).

use std::alloc::{GlobalAlloc, Layout, System};
use std::io;
use std::sync::Arc;
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use mcp_tasks::protocol::CallToolResult;
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::transport::{MessageSink, Outbound, Stdio, Transport};
use mcp_tasks::{Client, TaskState};
use serde_json::json;

const GETS_PER_TASK: usize = 3;

/// The poll interval for `n` tasks.
fn interval(n: usize) -> Duration {
    if n <= 10_000 {
        Duration::from_secs(1)
    } else {
        Duration::from_millis(n as u64 / 2)
    }
}

fn server(n: usize) -> TestServer {
    let every = interval(n);
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
struct Counting(Stdio, Arc<AtomicUsize>);
struct CountingSink<S>(S, Arc<AtomicUsize>);

impl Transport for Counting {
    type Sink = CountingSink<<Stdio as Transport>::Sink>;
    type Stream = <Stdio as Transport>::Stream;
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
    async fn close(&mut self) {
        self.0.close().await;
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

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1000);
    if std::env::args().any(|a| a == "--serve") {
        server(n).serve_stdio().await?;
        return Ok(());
    }

    let gets = Arc::new(AtomicUsize::new(0));
    let child = Stdio::command(std::env::current_exe()?)
        .arg(n.to_string())
        .arg("--serve");
    let client = Client::connect(Counting(child, gets.clone())).await?;
    client.discover().await?;

    let mut waiters = Vec::with_capacity(n);
    let rss_before = status_kib("VmRSS:");
    let heap_before = live_bytes();
    let cpu_before = cpu_time();
    let started = Instant::now();

    for _ in 0..n {
        let state = client
            .task()
            .timeout(Duration::from_secs(300))
            .max_poll_interval(interval(n).max(Duration::from_secs(30)))
            .call_tool("job", json!({}))
            .await?;
        let TaskState::Pending(task) = state else {
            return Err("expected a pending task".into());
        };
        waiters.push(tokio::spawn(async move {
            task.finish().await.map(|t| t.into_outcome())
        }));
    }
    let created_in = started.elapsed();
    // Let every waiter start and park in its first sleep.
    tokio::task::yield_now().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let rss_pending = status_kib("VmRSS:");
    let heap_per_task = (live_bytes() - heap_before) as f64 / n as f64;

    let mut completed = 0;
    for w in waiters {
        if w.await?.map(|o| o.is_completed()).unwrap_or(false) {
            completed += 1;
        }
    }
    let cpu = cpu_time() - cpu_before;
    let sent = gets.load(Ordering::Relaxed);
    let per_task = (rss_pending.saturating_sub(rss_before) * 1024) as f64 / n as f64;

    println!(
        "tasks:                 {n} ({completed} completed), polled every {:?}",
        interval(n)
    );
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
    println!(
        "client CPU:            {cpu:.2?} ({:.1} µs per task)",
        cpu.as_secs_f64() * 1e6 / n as f64
    );
    println!(
        "tasks/get sent:        {sent} (schedule {}; {} beyond it)",
        n * GETS_PER_TASK,
        sent.saturating_sub(n * GETS_PER_TASK)
    );
    Ok(())
}
