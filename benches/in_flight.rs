//! Wall time for many initialize-era tasks, half of which ask a question,
//! under [`Http::max_in_flight`]: does a bound on requests in flight make
//! tasks that ask wait on each other, or on the others?
//!
//! ```text
//! cargo bench --features http --bench in_flight
//! cargo bench --features http --bench in_flight -- --tasks 200 --rounds 3
//! ```
//!
//! Against a loopback 2025-11-25 server in the same process, on its own
//! runtime (tests/support/asking_server.rs): each task works 250 ms, asks
//! one question if it is an asking one (every other task), works 250 ms
//! more and completes; reads every 100 ms. Each `tasks/result` stays open
//! from the question to the end of its task, as that era's servers do.
//! The client's input handler answers at once. All tasks are started at
//! once; the figure is the time from the first call to the last result,
//! for no bound, `max_in_flight(64)` and `max_in_flight(16)`, a fresh
//! server and client each, best of `--rounds`.

#[path = "../tests/support/asking_server.rs"]
mod asking_server;
#[path = "../tests/support/loopback.rs"]
mod loopback;

use std::time::{Duration, Instant};

use asking_server::{AskingServer, VERSION};
use mcp_tasks::Client;
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::ElicitResult;
use mcp_tasks::transport::Http;
use serde_json::json;

const WORK: Duration = Duration::from_millis(250);
const POLL: Duration = Duration::from_millis(100);

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let number = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    let tasks = number("--tasks", 200);
    let rounds = number("--rounds", 3).max(1);
    // The server on a runtime of its own, so it keeps pace whatever the
    // client does.
    let server_rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let client_rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    println!("{tasks} tasks, half asking one question; best of {rounds}");
    for bound in [None, Some(64), Some(16)] {
        let mut best = Duration::MAX;
        let mut peak = 0;
        for _ in 0..rounds {
            let server = server_rt.block_on(AskingServer::start(WORK, POLL));
            let took = client_rt.block_on(run(&server.url, bound, tasks));
            best = best.min(took);
            peak = peak.max(server.results_peak());
            // Dropped on its runtime: it aborts its listener there.
            server_rt.block_on(async move { drop(server) });
        }
        let label = bound.map_or("unbounded".to_owned(), |k| format!("max_in_flight({k})"));
        println!(
            "{label:>20}: {:>7.2} s  (tasks/result open at once, at most: {peak})",
            best.as_secs_f64()
        );
    }
}

/// Starts `tasks` tasks at once and waits for all: the wall time.
async fn run(url: &str, bound: Option<usize>, tasks: usize) -> Duration {
    let mut http = Http::new(url);
    if let Some(most) = bound {
        http = http.max_in_flight(most);
    }
    let handlers = InputHandlers::new()
        .elicitation_form(|_| async { Ok(ElicitResult::accept(json!({"ok": true}))) });
    let client = Client::builder()
        .client_info("in-flight-bench", "1.0")
        .protocol_version(VERSION)
        .input_handlers(handlers)
        .request_timeout(Duration::from_secs(120))
        .connect(http)
        .await
        .expect("connect");
    let started = Instant::now();
    let mut running = tokio::task::JoinSet::new();
    for n in 0..tasks {
        let client = client.clone();
        running.spawn(async move {
            let state = client
                .task()
                .call_tool("job", json!({"ask": n % 2 == 0}))
                .await
                .expect("the call");
            let finished = state.finish().await.expect("the task ends");
            let text = finished
                .outcome()
                .result()
                .expect("completed")
                .joined_text();
            assert_eq!(text, "done");
        });
    }
    while let Some(done) = running.join_next().await {
        done.expect("a task panicked");
    }
    let took = started.elapsed();
    let _ = client.close().await;
    took
}
