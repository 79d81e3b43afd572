//! What questions that wait for a person cost a tracker.
//!
//! ```sh
//! cargo bench --features test-util,sqlite --bench questions -- [--tasks N] [--secs S]
//! ```
//!
//! - **Reads per second** of one tracker over `--tasks` records (default
//!   2,000) against the scripted server on the in-memory transport, every
//!   task an hour long with a 100 ms interval, so the worker never runs
//!   out of due records: once with no task asking, once with one task in
//!   ten asking a question nobody answers for the whole run.
//! - **Store calls per question**: each question seen costs one
//!   `TaskStore::ask` (the first read that lists it; later reads of the
//!   same question write nothing), each answer one `TaskStore::answer`,
//!   and the answer's `taken` mark rides on the step's `save`.
//!
//! Figures are printed; nothing is asserted. On SQLite and in memory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_tasks::Client;
use mcp_tasks::protocol::{ElicitResult, InputRequest, InputRequests, InputResponse};
use mcp_tasks::store::{Filter, MemoryStore, SqliteStore, TaskStore, Tracker};
use mcp_tasks::testing::{HookedStore, ScriptedTool, StoreCall, TaskScript, TestServer};
use serde_json::json;

fn main() {
    let mut tasks = 2_000usize;
    let mut secs = 5u64;
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(a) = args.next() {
        match a.as_str() {
            "--tasks" => tasks = args.next().and_then(|v| v.parse().ok()).unwrap_or(tasks),
            "--secs" => secs = args.next().and_then(|v| v.parse().ok()).unwrap_or(secs),
            _ => {}
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        println!("tasks: {tasks}, {secs} s a run");
        println!("| store | none asking, reads/s | 1 in 10 asking, reads/s | ratio |");
        println!("|---|---|---|---|");
        for store in ["memory", "sqlite"] {
            let none = reads(store, tasks, 0, secs).await;
            let tenth = reads(store, tasks, tasks / 10, secs).await;
            println!(
                "| {store} | {none:.0} | {tenth:.0} | {:.2}× |",
                tenth / none
            );
        }
        println!();
        for store in ["memory", "sqlite"] {
            let calls = per_question(store).await;
            println!(
                "{store}: store calls for 10 tasks, 2 questions each, answered from elsewhere:"
            );
            for (method, n) in calls {
                println!("  {method}: {n}");
            }
        }
    });
}

fn form() -> InputRequest {
    InputRequest::form(
        "Approve?",
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
    )
}

fn asked(keys: &[&str]) -> InputRequests {
    keys.iter().map(|k| ((*k).to_owned(), form())).collect()
}

fn server() -> TestServer {
    let hour = Duration::from_secs(3_600);
    TestServer::new()
        .keep_requests(false)
        .tool(ScriptedTool::task(
            "job",
            TaskScript::new()
                .poll_interval(Duration::from_millis(100))
                .working(hour, "going")
                .complete(hour, mcp_tasks::protocol::CallToolResult::text("never")),
        ))
        .tool(ScriptedTool::task(
            "ask",
            TaskScript::new()
                .poll_interval(Duration::from_millis(100))
                .input(Duration::from_millis(1), asked(&["approve"]))
                .complete_with_inputs(Duration::from_millis(1)),
        ))
        .tool(ScriptedTool::task(
            "ask2",
            TaskScript::new()
                .poll_interval(Duration::from_millis(20))
                .input(Duration::from_millis(1), asked(&["a", "b"]))
                .complete_with_inputs(Duration::from_millis(1)),
        ))
}

async fn reads(store: &str, tasks: usize, asking: usize, secs: u64) -> f64 {
    match store {
        "memory" => reads_on(MemoryStore::new(), tasks, asking, secs).await,
        _ => reads_on(SqliteStore::memory().unwrap(), tasks, asking, secs).await,
    }
}

async fn reads_on<S: TaskStore + Clone>(store: S, tasks: usize, asking: usize, secs: u64) -> f64 {
    let server = server();
    let client = Client::connect(server.connect()).await.unwrap();
    let tracker = Tracker::builder(store, client.clone()).build();
    for i in 0..tasks {
        let tool = if i < asking { "ask" } else { "job" };
        tracker.call_tool(client.task(), tool, ()).await.unwrap();
    }
    let run = {
        let tracker = tracker.clone();
        tokio::spawn(async move { tracker.run(|_| async { true }).await })
    };
    // Warm up: every task read once, the questions recorded.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = server.count("tasks/get");
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let rate = (server.count("tasks/get") - before) as f64 / start.elapsed().as_secs_f64();
    run.abort();
    let waiting = tracker
        .store()
        .list(&Filter::all().asking())
        .await
        .unwrap()
        .len();
    assert_eq!(waiting, asking, "the asking tasks wait all run long");
    rate
}

async fn per_question(store: &str) -> BTreeMap<&'static str, usize> {
    match store {
        "memory" => per_question_on(MemoryStore::new()).await,
        _ => per_question_on(SqliteStore::memory().unwrap()).await,
    }
}

async fn per_question_on<S: TaskStore + Clone>(store: S) -> BTreeMap<&'static str, usize> {
    let server = server();
    let client = Client::connect(server.connect()).await.unwrap();
    let calls = Arc::default();
    let tracker = Tracker::builder(counting(store, &calls), client.clone())
        .idle(Duration::from_millis(10))
        .build();
    let mut ids = Vec::new();
    for _ in 0..10 {
        let started = tracker.call_tool(client.task(), "ask2", ()).await.unwrap();
        ids.push(started.record().unwrap());
    }
    let run = {
        let tracker = tracker.clone();
        tokio::spawn(async move { tracker.run(|_| async { true }).await })
    };
    // Let every question be seen, and read a few more times unanswered.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let yes: InputResponse = ElicitResult::accept(json!({"ok": true})).into();
    for id in &ids {
        for key in ["a", "b"] {
            tracker.answer(*id, key, yes.clone()).await.unwrap();
        }
    }
    loop {
        let done = tracker
            .store()
            .inner()
            .list(&Filter::all().state(mcp_tasks::store::RecordState::Delivered))
            .await
            .unwrap()
            .len();
        if done == ids.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    run.abort();
    calls.lock().unwrap().clone()
}

/// `inner`, counting the calls made to it by method (the reads `list`,
/// `counts` and `next_due` left out; a `save` that carries taken answers
/// apart).
fn counting<S: TaskStore>(
    inner: S,
    calls: &Arc<Mutex<BTreeMap<&'static str, usize>>>,
) -> HookedStore<S> {
    let calls = calls.clone();
    HookedStore::new(inner).before(move |call| {
        let method = match call {
            StoreCall::List { .. } | StoreCall::Counts { .. } | StoreCall::NextDue => return Ok(()),
            StoreCall::AnswerBy { .. } => "answer",
            StoreCall::Save { progress, .. } if !progress.taken.is_empty() => {
                "save (with taken answers)"
            }
            other => other.name(),
        };
        *calls.lock().unwrap().entry(method).or_default() += 1;
        Ok(())
    })
}
