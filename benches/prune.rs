//! Retention: how long pruning 100,000 delivered records takes, and how
//! long one batch holds the database, on SQLite and on Postgres.
//!
//! ```sh
//! cargo bench --features sqlite,postgres --bench prune -- [--records N] [--batch B]…
//! ```
//!
//! Each run seeds a fresh store with N delivered records 30 days old (the
//! ones to prune), N/10 delivered an hour ago and N/10 open records (both
//! to keep), then prunes everything older than 7 days with
//! `TaskStore::prune(cutoff, B)` until a batch comes back short. Meanwhile
//! another handle on the same database (a second `SqliteStore` on the
//! file, a second `PostgresStore` connection) works open records as a
//! worker does, a claim of one and a save, back to back; the longest of
//! those steps is what pruning costs everyone else. The same steps are
//! timed for as long again without pruning, for comparison. Postgres is a
//! throwaway cluster (`tests/support/postgres.rs`), skipped when none can
//! be started. Nothing is asserted but the counts left.

#[path = "../tests/support/postgres.rs"]
#[allow(dead_code)]
mod postgres;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use mcp_tasks::protocol::TaskStatus;
use mcp_tasks::store::backend::{Claim, StepReport};
use mcp_tasks::store::{Filter, PostgresStore, RecordId, RecordState, SqliteStore, TaskStore};

const DAY_MS: i64 = 86_400_000;

struct Args {
    records: i64,
    batches: Vec<usize>,
}

fn args() -> Args {
    let mut out = Args {
        records: 100_000,
        batches: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(a) = it.next() {
        match a.as_str() {
            "--records" => out.records = it.next().and_then(|v| v.parse().ok()).expect("N"),
            "--batch" => out
                .batches
                .push(it.next().and_then(|v| v.parse().ok()).expect("B")),
            _ => {} // cargo bench passes --bench
        }
    }
    if out.batches.is_empty() {
        out.batches.push(1_000);
    }
    out
}

fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// What one prune run found.
struct Run {
    total: Duration,
    batches: Vec<Duration>,
    removed: usize,
    /// A concurrent worker's steps (claim + save), while pruning.
    steps: Vec<Duration>,
    /// The same steps for as long, without pruning.
    quiet: Vec<Duration>,
}

fn ms(d: Duration) -> String {
    format!("{:.1}", d.as_secs_f64() * 1e3)
}

fn report(store: &str, batch: usize, run: &Run) {
    let mut b = run.batches.clone();
    b.sort();
    let median = b[b.len() / 2];
    let max = *b.last().unwrap();
    let first = run.batches[0];
    let next = b[b.len().saturating_sub(2)];
    let worst = |s: &[Duration]| s.iter().max().copied().unwrap_or_default();
    let p99 = |s: &[Duration]| {
        let mut s = s.to_vec();
        s.sort();
        s.get(s.len() * 99 / 100).copied().unwrap_or_default()
    };
    println!(
        "{store:<9} batch {batch:>5}: {} removed in {} ms ({} batches; per batch median {} ms, \
         longest {} ms, next {} ms, the first {} ms); a worker's step meanwhile: {} steps, p99 {} ms, longest {} ms; \
         without pruning: {} steps, p99 {} ms, longest {} ms",
        run.removed,
        ms(run.total),
        b.len(),
        ms(median),
        ms(max),
        ms(next),
        ms(first),
        run.steps.len(),
        ms(p99(&run.steps)),
        ms(worst(&run.steps)),
        run.quiet.len(),
        ms(p99(&run.quiet)),
        ms(worst(&run.quiet)),
    );
}

/// A worker's step on `store`, over the open records `open`, back to back
/// until `stop`: each step's time.
async fn steps<S: TaskStore>(
    store: S,
    open: Vec<RecordId>,
    stop: Arc<AtomicBool>,
) -> Vec<Duration> {
    let mut out = Vec::new();
    let mut i = 0;
    while !stop.load(Ordering::Relaxed) {
        let id = open[i % open.len()];
        i += 1;
        let start = Instant::now();
        let claimed = store
            .claim(Claim {
                worker: "bench",
                limit: 1,
                now: SystemTime::now(),
                lease: Duration::from_secs(30),
                record: Some(id),
            })
            .await
            .expect("claim");
        if let Some(Ok(r)) = claimed.into_iter().next() {
            let progress = StepReport {
                status: TaskStatus::Working,
                status_message: None,
                poll_interval_ms: None,
                failed_reads: 0,
                due: SystemTime::now() + Duration::from_secs(3600),
                taken: Vec::new(),
                offered: Vec::new(),
            };
            store
                .save(id, r.fence().unwrap(), progress)
                .await
                .expect("save");
        }
        out.push(start.elapsed());
        tokio::task::yield_now().await;
    }
    out
}

/// Prunes `store` down, with `worker` stepping open records meanwhile, then
/// times the worker alone for as long.
async fn prune<S: TaskStore + Clone>(store: &S, worker: S, batch: usize) -> Run {
    let open: Vec<RecordId> = store
        .list(&Filter::all().state(RecordState::Open))
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().id)
        .collect();
    let stop = Arc::new(AtomicBool::new(false));
    let stepping = tokio::spawn(steps(worker.clone(), open.clone(), stop.clone()));
    tokio::time::sleep(Duration::from_millis(50)).await;
    let cutoff = SystemTime::now() - Duration::from_secs(7 * 86_400);
    let mut batches = Vec::new();
    let mut removed = 0;
    let start = Instant::now();
    loop {
        let t = Instant::now();
        let n = store.prune(cutoff, batch).await.expect("prune");
        batches.push(t.elapsed());
        removed += n;
        if n < batch {
            break;
        }
    }
    let total = start.elapsed();
    stop.store(true, Ordering::Relaxed);
    let steps_during = stepping.await.unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let quiet = tokio::spawn(steps(worker, open, stop.clone()));
    tokio::time::sleep(total.max(Duration::from_millis(200))).await;
    stop.store(true, Ordering::Relaxed);
    Run {
        total,
        batches,
        removed,
        steps: steps_during,
        quiet: quiet.await.unwrap(),
    }
}

async fn left<S: TaskStore>(store: &S, n: i64) {
    let delivered = store
        .list(&Filter::all().state(RecordState::Delivered))
        .await
        .unwrap()
        .len();
    let open = store
        .list(&Filter::all().state(RecordState::Open))
        .await
        .unwrap()
        .len();
    assert_eq!((delivered as i64, open as i64), (n / 10, n / 10), "left");
}

/// The `SELECT` of the seeded rows, over `i` from 1 to `n` + n/5: the
/// first `n` a month old and the rest an hour old; the first `n` + n/10
/// ended and delivered (`delivered`, the dialect's test of `i <= {kept}`),
/// the rest open, due in a month. Both stores get the same rows.
fn seed_rows(n: i64, now: i64, delivered: &str) -> String {
    let kept = n + n / 10;
    format!(
        "SELECT 'task-' || i, 'srv', '2026-07-28', 'export', 'order-' || i, 'tenant',
            CASE WHEN i <= {n} THEN {old} + i ELSE {recent} + i END,
            CASE WHEN i <= {n} THEN {old} + i + 60000 ELSE {recent} + i + 60000 END,
            CASE WHEN i <= {kept} THEN 'cancelled' ELSE 'working' END,
            {far},
            CASE WHEN i <= {kept} THEN '{{\"ending\":\"cancelled\"}}' ELSE NULL END,
            {delivered}, 'earlier', 0, 1",
        old = now - 30 * DAY_MS,
        recent = now - 3_600_000,
        far = now + 30 * DAY_MS,
        delivered = delivered.replace("{kept}", &kept.to_string()),
    )
}

async fn sqlite(args: &Args, batch: usize) {
    let dir = std::env::temp_dir().join(format!("mcp-tasks-bench-prune-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("tasks.db");
    let store = SqliteStore::open(&file).await.unwrap();
    let seed = rusqlite::Connection::open(&file).unwrap();
    let n = args.records;
    let now = now_ms();
    let t = Instant::now();
    seed.execute_batch(&format!(
        "BEGIN;
        WITH RECURSIVE s(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM s WHERE i < {total})
        INSERT INTO tasks (task_id, server, protocol_version, tool, key, scope, created_ms,
            updated_ms, status, due_ms, ending, delivered, lease_owner, lease_until_ms, fence)
        {rows} FROM s;
        COMMIT;",
        total = n + n / 5,
        rows = seed_rows(n, now, "CASE WHEN i <= {kept} THEN 1 ELSE 0 END"),
    ))
    .unwrap();
    drop(seed);
    println!(
        "sqlite: seeded {} rows in {} ms",
        n + n / 5,
        ms(t.elapsed())
    );
    let worker = SqliteStore::open(&file).await.unwrap();
    let run = prune(&store, worker, batch).await;
    report("SQLite", batch, &run);
    left(&store, n).await;
    drop(store);
    let _ = std::fs::remove_dir_all(&dir);
}

async fn postgres(pg: &postgres::Pg, args: &Args, batch: usize) {
    let url = pg.database().await;
    PostgresStore::migrate(&url).await.unwrap();
    let store = PostgresStore::connect(&url).await.unwrap();
    let raw = postgres::connect(&url).await;
    let n = args.records;
    let now = now_ms();
    let t = Instant::now();
    raw.batch_execute(&format!(
        "INSERT INTO mcp_tasks_tasks (task_id, server, protocol_version, tool, key, scope,
            created, updated, status, due, ending, delivered, lease_owner, lease_until, fence)
        {rows} FROM generate_series(1, {total}) AS s(i);",
        total = n + n / 5,
        rows = seed_rows(n, now, "i <= {kept}"),
    ))
    .await
    .unwrap();
    println!(
        "postgres: seeded {} rows in {} ms",
        n + n / 5,
        ms(t.elapsed())
    );
    raw.batch_execute("VACUUM ANALYZE mcp_tasks_tasks")
        .await
        .unwrap();
    let plan = raw
        .query(
            "EXPLAIN DELETE FROM mcp_tasks_tasks WHERE id = ANY(ARRAY(SELECT id FROM mcp_tasks_tasks \
             WHERE ending IS NOT NULL AND delivered AND created < $1 AND updated < $1 \
             ORDER BY created, id LIMIT $2 FOR UPDATE SKIP LOCKED))",
            &[&(now - 7 * DAY_MS), &(batch as i64)],
        )
        .await
        .unwrap();
    for row in plan {
        let line = row.get::<_, String>(0);
        if line.contains("Scan") || line.contains("Sort") {
            println!("  plan: {}", line.trim());
        }
    }
    let worker = PostgresStore::connect(&url).await.unwrap();
    let run = prune(&store, worker, batch).await;
    report("Postgres", batch, &run);
    left(&store, n).await;
}

fn main() {
    let args = args();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "prune: {} delivered records 30 days old, {} delivered an hour ago and {} open kept; \
         cutoff 7 days",
        args.records,
        args.records / 10,
        args.records / 10
    );
    for &batch in &args.batches {
        rt.block_on(sqlite(&args, batch));
    }
    let Some((_cluster, pg)) = postgres::start() else {
        println!("postgres: skipped, no Postgres here");
        return;
    };
    for &batch in &args.batches {
        rt.block_on(postgres(&pg, &args, batch));
    }
}
