//! The inbox's pages over big stores: the time to render a page (the
//! router called in-process, so no socket or browser is counted) and its
//! size, on the memory, SQLite and Postgres stores (Postgres: a throwaway
//! cluster, as the tests start one; skipped when `initdb` is missing).
//!
//! ```text
//! cargo bench --features inbox,sqlite,postgres --bench inbox -- 1000 10000 100000
//! ```
//!
//! At 10,000 records the questions page has 1,000 open questions to
//! choose from. Names among the sizes (`memory`, `sqlite`, `pg`) measure
//! only those stores.
//!
//! Each store holds N records (a tenth asking a form question, a third
//! ended); each page is rendered 20 times and the median and the slowest
//! are printed: the first page of the task list, the same filtered by
//! tool, its last page (`before` near the oldest), a task's page, the
//! questions page (at most 200 records) and the metrics.

use std::time::{Duration, Instant, SystemTime};

use axum::body::Body;
use axum::http::Request;
use mcp_tasks::TaskRef;
use mcp_tasks::inbox::{Options, router};
use mcp_tasks::protocol::{InputRequest, InputRequests, TaskId, TaskStatus};
use mcp_tasks::store::backend::{Claim, NewTask, StepReport};
use mcp_tasks::store::{
    Ending, MemoryStore, PostgresStore, RecordId, Schedule, SqliteStore, TaskStore,
};
use serde_json::json;
use tower::ServiceExt;

#[allow(dead_code)]
#[path = "../tests/support/postgres.rs"]
mod postgres;

fn task(n: u64) -> NewTask {
    NewTask {
        reference: TaskRef::new(
            TaskId::new(format!("task-{n}-0123456789abcdef")),
            Some("srv".into()),
        ),
        tool: ["export", "import", "index"][(n % 3) as usize].into(),
        key: Some(format!("order-{n}")),
        unique_key: false,
        scope: format!("tenant-{}", n % 10),
        status: TaskStatus::Working,
        status_message: Some(format!("step {n} of a long job")),
        poll_interval_ms: Some(1_000),
        due: SystemTime::now() + Duration::from_secs(3_600),
        ending: None,
        schedule: Schedule::default(),
    }
}

/// Fills `store` with `n` records: every tenth asks, every third ended.
async fn fill<S: TaskStore>(store: &S, n: u64) {
    let now = SystemTime::now();
    let question: InputRequests = [(
        "approve".to_owned(),
        InputRequest::form(
            "Approve?",
            json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
        ),
    )]
    .into();
    for i in 1..=n {
        let id = store.insert(task(i)).await.unwrap();
        if i % 10 == 0 || i % 3 == 0 {
            let held = store
                .claim(Claim {
                    worker: "w",
                    limit: 1,
                    now,
                    lease: Duration::from_secs(60),
                    record: Some(id),
                })
                .await
                .unwrap();
            let fence = held[0].as_ref().unwrap().fence().unwrap();
            if i % 10 == 0 {
                store.ask(id, fence, &question, now).await.unwrap();
                let progress = StepReport {
                    status: TaskStatus::InputRequired,
                    status_message: Some("waiting for a person".into()),
                    poll_interval_ms: None,
                    failed_reads: 0,
                    due: now + Duration::from_secs(3_600),
                    taken: Vec::new(),
                    offered: Vec::new(),
                };
                store.save(id, fence, progress).await.unwrap();
            } else {
                store.finish(id, fence, &Ending::Cancelled).await.unwrap();
            }
        }
    }
}

async fn measure(app: &axum::Router, uri: &str) -> (Duration, Duration, usize) {
    let mut times = Vec::new();
    let mut size = 0;
    for _ in 0..20 {
        let request = Request::builder()
            .uri(uri)
            .header("host", "127.0.0.1")
            .body(Body::empty())
            .unwrap();
        let start = Instant::now();
        let response = app.clone().oneshot(request).await.unwrap();
        assert!(
            response.status().is_success(),
            "{uri}: {}",
            response.status()
        );
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        times.push(start.elapsed());
        size = body.len();
    }
    times.sort();
    (times[times.len() / 2], times[times.len() - 1], size)
}

async fn report<S: TaskStore>(name: &str, store: S, n: u64) {
    let app = router(store, Options::new());
    let last = RecordId(i64::try_from(n.min(60)).unwrap());
    for uri in [
        "/tasks".to_owned(),
        "/tasks?tool=index".to_owned(),
        format!("/tasks?before={}", last),
        format!("/tasks/{}", n / 2),
        "/questions".to_owned(),
        "/metrics".to_owned(),
    ] {
        let (median, worst, size) = measure(&app, &uri).await;
        println!(
            "{name:>6} {n:>7} {uri:<20} median {:>8.2} ms  max {:>8.2} ms  {:>6.1} KB",
            median.as_secs_f64() * 1e3,
            worst.as_secs_f64() * 1e3,
            size as f64 / 1024.0
        );
    }
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let sizes: Vec<u64> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let sizes = if sizes.is_empty() { vec![1_000] } else { sizes };
    let names: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a.parse::<u64>().is_err() && !a.starts_with('-'))
        .collect();
    let wants = |store: &str| names.is_empty() || names.iter().any(|n| n == store);
    let pg = if wants("pg") { postgres::start() } else { None };
    if pg.is_none() {
        eprintln!("postgres: skipped, no initdb here");
    }
    for n in sizes {
        if wants("memory") {
            let memory = MemoryStore::new();
            let start = Instant::now();
            fill(&memory, n).await;
            eprintln!(
                "memory: {n} records in {:.1} s",
                start.elapsed().as_secs_f64()
            );
            report("memory", memory, n).await;
        }
        if wants("sqlite") {
            let dir = std::env::temp_dir()
                .join(format!("mcp-tasks-inbox-bench-{}-{n}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let sqlite = SqliteStore::open(dir.join("tasks.db")).await.unwrap();
            let start = Instant::now();
            fill(&sqlite, n).await;
            eprintln!(
                "sqlite: {n} records in {:.1} s",
                start.elapsed().as_secs_f64()
            );
            report("sqlite", sqlite, n).await;
            let _ = std::fs::remove_dir_all(&dir);
        }
        if let Some((_, pg)) = &pg {
            let url = pg.database().await;
            PostgresStore::migrate(&url).await.unwrap();
            let store = PostgresStore::connect(&url).await.unwrap();
            let start = Instant::now();
            fill(&store, n).await;
            eprintln!(
                "postgres: {n} records in {:.1} s",
                start.elapsed().as_secs_f64()
            );
            // As autovacuum leaves a table that grew so (within a minute
            // of the inserts): statistics, and a visibility map, without
            // which a count by index reads every row's page as well.
            postgres::connect(&url)
                .await
                .batch_execute("VACUUM ANALYZE mcp_tasks_tasks")
                .await
                .unwrap();
            report("pg", store, n).await;
        }
    }
}
