//! Soak: thousands of tool calls and tasks through random faults, in
//! paused time, on one client.
//!
//! The server duplicates, reorders and lies in pushes and lets ended tasks
//! go back; the transport loses or swallows a few requests in a hundred.
//! Each call follows one of several plans (plain call, wait, listen, TTL,
//! cancel, cancel on drop, resume). The soak checks that every call ends
//! with an expected outcome or error and a result that belongs to it, that
//! the pending-request table is empty, that the listen stream is closed
//! once nothing is watched, and that every background task (the client's
//! and the server's) is gone once both are dropped.
//!
//! Memory is counted by a global allocator that tracks live bytes: the
//! soak reports (and bounds) what the client still holds after its calls,
//! and what is left once client and server are gone.
//!
//! 2,000 calls run by default; 10,000 run in an ignored test (see
//! RELIABILITY.md). Both print their figures with `--nocapture`.
//! `SOAK_SEED` sets the seed of the plans and of the transport's faults;
//! the mix still varies a little between runs of one seed, because
//! `tokio::select!` polls ready branches in random order.

mod support;

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{CallToolResult, ElicitResult, RpcError};
use mcp_tasks::testing::{Faults, ScriptedTool, TaskScript, TestServer};
use mcp_tasks::{Client, Error, Outcome, TaskState};
use serde_json::json;
use support::*;
use tokio::task::JoinSet;

/// The system allocator, counting live bytes.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every method forwards to `System` with the caller's arguments and
// only adds bookkeeping on an atomic counter.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `System::alloc`; the caller upholds its contract.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `System::alloc_zeroed`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            LIVE.fetch_add(layout.size(), Ordering::Relaxed);
        }
        p
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` was allocated by this allocator with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `System::realloc`.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            LIVE.fetch_add(new_size, Ordering::Relaxed);
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Soaks run one at a time, so the byte counts are theirs.
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn live_bytes() -> usize {
    LIVE.load(Ordering::Relaxed)
}

/// The tools and what a completed call of each returns.
fn server() -> TestServer {
    let done = |name: &str| CallToolResult::text(name);
    TestServer::new()
        .tool(ScriptedTool::immediate("quick", done("quick")))
        .tool(ScriptedTool::input_required(
            "mrtr",
            requests(&["confirm"]),
            Some("state".into()),
            done("mrtr"),
        ))
        .tool(ScriptedTool::task(
            "short",
            TaskScript::new()
                .poll_interval(ms(100))
                .complete(ms(300), done("short")),
        ))
        .tool(ScriptedTool::task(
            "slow",
            TaskScript::new()
                .poll_interval(ms(1000))
                .working(ms(1000), "a third")
                .working(ms(1000), "two thirds")
                .complete(ms(1000), done("slow")),
        ))
        .tool(ScriptedTool::task(
            "failing",
            TaskScript::new()
                .poll_interval(ms(100))
                .fail(ms(200), RpcError::new(-32603, "it broke")),
        ))
        .tool(ScriptedTool::task(
            "asking",
            TaskScript::new()
                .poll_interval(ms(100))
                .ttl(Duration::from_secs(120))
                .input(ms(50), requests(&["ok"]))
                .complete_with_inputs(ms(100)),
        ))
        .tool(ScriptedTool::task(
            "expiring",
            TaskScript::new()
                .poll_interval(ms(200))
                .ttl(ms(500))
                .complete(ms(10_000), done("expiring")),
        ))
        .tool(ScriptedTool::task(
            "stubborn",
            TaskScript::new()
                .poll_interval(ms(250))
                .ignore_cancel()
                .complete(ms(2000), done("stubborn")),
        ))
        .tool(ScriptedTool::task(
            "reluctant",
            TaskScript::new()
                .poll_interval(ms(250))
                .cancel_delay(ms(300))
                .complete(ms(3000), done("reluctant")),
        ))
        .faults(
            Faults::new()
                .duplicate_pushes()
                .reorder_pushes()
                .stray_pushes()
                .regress_after_terminal(),
        )
}

const TOOLS: [&str; 9] = [
    "quick",
    "mrtr",
    "short",
    "slow",
    "failing",
    "asking",
    "expiring",
    "stubborn",
    "reluctant",
];

/// How one call ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum End {
    Completed,
    Failed,
    Cancelled,
    Expired,
    Dropped,
    NotFound,
    OutcomeUnknown,
    Timeout,
    Transport,
    Deadline,
}

/// Classifies an error, failing the soak on one no fault explains.
fn classify(e: &Error) -> End {
    if e.is_outcome_unknown() {
        End::OutcomeUnknown
    } else if e.is_task_not_found() {
        End::NotFound
    } else if e.is_timeout() {
        End::Timeout
    } else if e.is_transport() {
        End::Transport
    } else if e.is_deadline() {
        End::Deadline
    } else if e.is_rpc() && e.to_string().contains("the task failed") {
        End::Failed
    } else if e.to_string().contains("the task was cancelled") {
        End::Cancelled
    } else if e.to_string().contains("outlived its time to live") {
        End::Expired
    } else {
        panic!("an error no fault explains: {e} ({e:?})")
    }
}

/// Checks a finished task's outcome against the tool that ran.
fn check(tool: &str, outcome: &Outcome) -> End {
    match outcome {
        Outcome::Completed(r) if tool == "asking" => {
            let answers = &r.structured_content.as_ref().unwrap()["inputResponses"];
            assert_eq!(answers["ok"]["action"], "accept", "{tool}: {r:?}");
            End::Completed
        }
        Outcome::Completed(r) => {
            assert_eq!(r.joined_text(), tool, "a result that is not this call's");
            End::Completed
        }
        Outcome::Failed(e) => {
            assert_eq!((tool, e.code), ("failing", -32603), "{e}");
            End::Failed
        }
        Outcome::Cancelled => End::Cancelled,
        Outcome::Expired => End::Expired,
    }
}

fn finished(tool: &str, r: Result<mcp_tasks::Task<mcp_tasks::Finished>, Error>) -> End {
    match r {
        Ok(done) => check(tool, done.outcome()),
        Err(e) => classify(&e),
    }
}

/// One call, following plan `plan`.
async fn run(client: Client, tool: &'static str, plan: u64) -> End {
    if plan == 0 {
        return match client.call_tool(tool, json!({})).await {
            Ok(r) => check(tool, &Outcome::Completed(r)),
            Err(e) => classify(&e),
        };
    }
    let builder = client.task().timeout(Duration::from_secs(60));
    let state = match plan {
        1 => builder.listen().call_tool(tool, json!({})).await,
        2 => builder.with_ttl(ms(700)).call_tool(tool, json!({})).await,
        4 => builder.cancel_on_drop().call_tool(tool, json!({})).await,
        _ => builder.call_tool(tool, json!({})).await,
    };
    let state = match state {
        Ok(state) => state,
        Err(e) => return classify(&e),
    };
    match (plan, state) {
        (_, TaskState::Finished(done)) => check(tool, done.outcome()),
        (3, TaskState::Pending(t)) => {
            finished(tool, t.cancel_and_wait().await.map_err(Error::from))
        }
        (4, state) => {
            drop(state);
            End::Dropped
        }
        (5, TaskState::Pending(t)) => match t.next().await {
            Ok(state) => finished(tool, state.finish().await.map_err(Error::from)),
            Err(e) => classify(e.error()),
        },
        (6, TaskState::Pending(t)) => {
            let saved = t.reference();
            drop(t);
            match client.task().resume(&saved).await {
                Ok(state) => finished(tool, state.finish().await.map_err(Error::from)),
                Err(e) => classify(&e),
            }
        }
        (_, state) => finished(tool, state.finish().await.map_err(Error::from)),
    }
}

async fn soak(calls: usize, default_seed: u64) {
    let _alone = ONE_AT_A_TIME.lock().await;
    let seed = std::env::var("SOAK_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default_seed);
    let wall = std::time::Instant::now();
    let started = tokio::time::Instant::now();
    let metrics = tokio::runtime::Handle::current().metrics();
    let baseline = metrics.num_alive_tasks();
    let bytes_before = live_bytes();

    let server = server();
    let asked = Arc::new(AtomicUsize::new(0));
    let handlers = {
        let asked = asked.clone();
        InputHandlers::new().elicitation_form(move |_| {
            asked.fetch_add(1, Ordering::Relaxed);
            async { Ok(ElicitResult::accept(json!({"ok": true}))) }
        })
    };
    // Loses 2 and swallows 1 request in a hundred.
    let transport = Chaos::random(server.connect(), seed, 20, 10);
    let client = Client::builder()
        .input_handlers(handlers)
        .request_timeout(Duration::from_secs(2))
        .connect(transport)
        .await
        .unwrap();

    let mut rng = Rng(seed);
    let mut ends: BTreeMap<End, usize> = BTreeMap::new();
    let mut jobs = JoinSet::new();
    const AT_ONCE: usize = 500;
    for _ in 0..calls {
        if jobs.len() == AT_ONCE {
            let end = jobs.join_next().await.unwrap().unwrap();
            *ends.entry(end).or_default() += 1;
        }
        let tool = TOOLS[rng.below(TOOLS.len() as u64) as usize];
        let plan = rng.below(7);
        let client = client.clone();
        jobs.spawn(async move {
            tokio::time::timeout(Duration::from_secs(600), run(client, tool, plan))
                .await
                .unwrap_or_else(|_| panic!("{tool} with plan {plan} hung"))
        });
    }
    while let Some(end) = jobs.join_next().await {
        *ends.entry(end.unwrap()).or_default() += 1;
    }
    let took = started.elapsed();

    assert_eq!(ends.values().sum::<usize>(), calls, "every call ended");
    assert_eq!(
        client.stats().pending_requests,
        0,
        "the pending table drains"
    );
    assert!(ends[&End::Completed] > calls / 4, "{ends:?}");
    let tasks_created = server.task_ids().len();
    let requests = server.requests().len();
    let faults = server.faults_fired();

    // Let cancels sent on drop land and scripts run out, then check that the
    // listen stream was closed with nothing left to watch.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(client.stats().pending_requests, 0);
    assert_eq!(
        server.open_subscriptions(),
        0,
        "no stream outlives its waits"
    );

    // Stop every task still running on the server (input nobody answered,
    // work nobody waits for), through a client without faults.
    let cleaner = Client::connect(server.connect()).await.unwrap();
    for id in server.task_ids() {
        match cleaner.cancel_task(&id).await {
            Ok(()) => {}
            Err(e) if e.is_task_not_found() => {}
            Err(e) => panic!("cleanup: {e}"),
        }
    }
    tokio::time::sleep(Duration::from_secs(60)).await;
    drop(cleaner);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let with_client = live_bytes();
    drop(client);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let client_held = with_client.saturating_sub(live_bytes());
    drop(server);
    tokio::time::sleep(Duration::from_secs(1)).await;
    let left = metrics.num_alive_tasks();
    let bytes_left = live_bytes() as i64 - bytes_before as i64;

    eprintln!(
        "soak: {calls} calls, seed {seed}: {ends:?}; {tasks_created} tasks, {requests} requests, \
         {faults} server faults, {} inputs answered; {took:?} of paused time, {:?} wall; \
         background tasks {baseline} before, {left} after; the client held {client_held} \
         bytes at rest, {bytes_left} bytes left after both were dropped",
        asked.load(Ordering::Relaxed),
        wall.elapsed(),
    );
    assert_eq!(left, baseline, "background tasks leaked");
    // What the client holds at rest does not grow with the calls it made.
    assert!(
        client_held < 256 * 1024,
        "the client held {client_held} bytes"
    );
    assert!(bytes_left < 256 * 1024, "{bytes_left} bytes leaked");
}

#[tokio::test(start_paused = true)]
async fn soak_two_thousand_calls_with_random_faults() {
    soak(2_000, 0x5eed_0001).await;
}

#[tokio::test(start_paused = true)]
#[ignore = "about 10 s in a debug build; run with --ignored (see RELIABILITY.md)"]
async fn soak_ten_thousand_calls_with_random_faults() {
    soak(10_000, 0x5eed_0002).await;
}
