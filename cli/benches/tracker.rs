//! Benchmarks of the tracker against the demo server's HTTP mode.
//!
//! ```sh
//! cargo bench -p mcp-tasks-cli --bench tracker -- [one] [many] [starts] [--secs S]
//!     [--rounds R] [--one-tasks N] [--tasks N] [--workers 1,2,4] [--lease-ms MS]
//!     [--setup SQL]... [--starts N]
//! ```
//!
//! - `one`: one tracker in this process, against the in-memory store,
//!   SQLite and Postgres, and the floor beside each: a bare loop that
//!   claims a batch, reads each task with a raw `tasks/get` and saves it,
//!   with the tracker's batch and concurrency. Reads per second (the demo
//!   server's count), store calls per read, and CPU time per read of this
//!   process (`/proc/PID/stat`); for Postgres also the transactions the
//!   database committed (`pg_stat_database`) and the cluster's CPU time
//!   per read. CPU per read is the figure to compare on a busy machine:
//!   other work slows the reads but adds little to their CPU.
//! - `many`: `--tasks` records pending in Postgres, worked by 1, 2 and 4
//!   worker processes (this binary with `--worker`): reads per second;
//!   CPU time per read of the workers, of the whole Postgres cluster and
//!   of the demo server (`/proc/PID/stat`); the tables' updates, how many
//!   were HOT, and their dead rows (`pg_stat_user_tables`); resident
//!   memory of each worker against an idle one; and the time from a
//!   worker's SIGKILL until every record it held was claimed by another.
//!   `--setup SQL` runs SQL after the migration and before the records
//!   are inserted (to try a table setting). The table is analyzed once
//!   the records are in, as autovacuum would within a minute.
//!
//! - `starts`: the cost of a start with a unique key (reserved before
//!   `tools/call`, then written) against one without, on SQLite and
//!   Postgres: `--starts` starts one after another through
//!   `Tracker::call_tool` (store calls per start, Postgres commits per
//!   start, time per start with the call), and the store's part alone
//!   (`insert` against `reserve` + `start`, time per start).
//!
//! Every task is a `job` of an hour on the demo server: none ends during a
//! run, so every step is one read and one save. Records outnumber what a
//! worker reads in the server's interval (100 ms), so workers never wait.
//! Figures are printed; nothing is asserted.

use std::process::Child;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use mcp_tasks::protocol::TaskStatus;
use mcp_tasks::store::backend::{Claim, NewTask, StepReport};
use mcp_tasks::store::{Label, MemoryStore, PostgresStore, SqliteStore, TaskStore};
use mcp_tasks::{Client, Http, TaskRef, TaskState};
use serde_json::json;

#[path = "../../tests/support/postgres.rs"]
mod postgres;
#[path = "../tests/support/worker.rs"]
mod worker;

use worker::{Demo, Fallible, Options, Scratch, probe, runtime, spawn, wait_for_line};

/// What the command line asks for.
struct Args {
    scenarios: Vec<String>,
    secs: u64,
    rounds: usize,
    one_tasks: usize,
    tasks: usize,
    workers: Vec<usize>,
    lease_ms: u64,
    setup: Vec<String>,
    starts: usize,
}

fn main() {
    // `cargo bench` adds `--bench`.
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    if args.first().map(String::as_str) == Some("--worker") {
        if let Err(e) = runtime().block_on(worker::worker(Options::parse(&args[1..]))) {
            eprintln!("worker: {e}");
            std::process::exit(1);
        }
        return;
    }
    let args = match parse(&args) {
        Ok(a) => a,
        Err(e) => {
            eprintln!("tracker bench: {e}");
            std::process::exit(2);
        }
    };
    let all = args.scenarios.is_empty();
    let want = |s: &str| all || args.scenarios.iter().any(|a| a == s);
    let mut failed = false;
    if want("one")
        && let Err(e) = one(&args)
    {
        println!("one: FAILED: {e}");
        failed = true;
    }
    if want("many")
        && let Err(e) = many(&args)
    {
        println!("many: FAILED: {e}");
        failed = true;
    }
    if want("starts")
        && let Err(e) = starts(&args)
    {
        println!("starts: FAILED: {e}");
        failed = true;
    }
    if failed {
        std::process::exit(1);
    }
}

fn parse(args: &[String]) -> Fallible<Args> {
    let mut a = Args {
        scenarios: Vec::new(),
        secs: 10,
        rounds: 2,
        one_tasks: 1_000,
        tasks: 100_000,
        workers: vec![1, 2, 4],
        lease_ms: 2_000,
        setup: Vec::new(),
        starts: 500,
    };
    let mut it = args.iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().ok_or(format!("{arg} needs a value"));
        let number = |v: &String| v.parse::<u64>().map_err(|e| format!("{arg}: {e}"));
        match arg.as_str() {
            "--secs" => a.secs = number(value()?)?,
            "--rounds" => a.rounds = number(value()?)? as usize,
            "--one-tasks" => a.one_tasks = number(value()?)? as usize,
            "--tasks" => a.tasks = number(value()?)? as usize,
            "--lease-ms" => a.lease_ms = number(value()?)?,
            "--setup" => a.setup.push(value()?.clone()),
            "--starts" => a.starts = number(value()?)? as usize,
            "--workers" => {
                a.workers = value()?
                    .split(',')
                    .map(|w| w.parse().map_err(|e| format!("--workers: {e}")))
                    .collect::<Fallible<_>>()?;
            }
            "one" | "many" | "starts" => a.scenarios.push(arg.clone()),
            other => return Err(format!("unknown argument {other}")),
        }
    }
    Ok(a)
}

// ---- shared ----------------------------------------------------------

/// A client of the demo server, as a worker makes it.
async fn connect(demo: &Demo) -> Fallible<Client> {
    Client::builder()
        .server_id("demo")
        .connect(Http::new(demo.url.as_str()))
        .await
        .map_err(|e| format!("connect: {e}"))
}

/// Starts `n` jobs of an hour on the demo server, 32 at a time.
async fn seed(client: &Client, n: usize) -> Fallible<Vec<TaskRef>> {
    let mut calls = tokio::task::JoinSet::new();
    let mut refs = Vec::with_capacity(n);
    for i in 0..n {
        if calls.len() >= 32
            && let Some(done) = calls.join_next().await
        {
            refs.push(done.map_err(|e| e.to_string())??);
        }
        let client = client.clone();
        calls.spawn(async move {
            let state = client
                .task()
                .call_tool("job", json!({"n": i, "ms": 3_600_000}))
                .await
                .map_err(|e| format!("call {i}: {e}"))?;
            match state {
                TaskState::Pending(t) => Ok(t.detach()),
                _ => Err(format!("job {i} is not pending")),
            }
        });
    }
    while let Some(done) = calls.join_next().await {
        refs.push(done.map_err(|e| e.to_string())??);
    }
    Ok(refs)
}

/// Inserts `n` records, due now, referring to `refs` in turn; 64 inserts in
/// flight at a time.
async fn fill<S: TaskStore>(store: &Arc<S>, refs: &[TaskRef], n: usize) -> Fallible {
    let mut inserts = tokio::task::JoinSet::new();
    for i in 0..n {
        if inserts.len() >= 64
            && let Some(done) = inserts.join_next().await
        {
            done.map_err(|e| e.to_string())??;
        }
        let task = NewTask {
            unique_key: false,
            reference: refs[i % refs.len()].clone(),
            tool: "job".into(),
            key: Some(format!("job-{i}")),
            scope: "default".into(),
            // As `call_tool` records the demo's job: what its first read
            // says, so that a read changes nothing in the history.
            status: TaskStatus::Working,
            status_message: Some("working".into()),
            poll_interval_ms: Some(100),
            due: SystemTime::now(),
            ending: None,
            schedule: Default::default(),
        };
        let store = store.clone();
        inserts.spawn(async move {
            store
                .insert(task)
                .await
                .map(drop)
                .map_err(|e| format!("insert: {e}"))
        });
    }
    while let Some(done) = inserts.join_next().await {
        done.map_err(|e| e.to_string())??;
    }
    Ok(())
}

/// The demo server's count of `tasks/get` so far.
fn reads(demo: &Demo) -> Fallible<u64> {
    demo.counters()?["totals"]["reads"]
        .as_u64()
        .ok_or_else(|| "no read count".to_owned())
}

/// Transactions committed and rows updated in the database of `url` so far.
async fn commits(url: &str) -> (i64, i64) {
    let client = postgres::connect(url).await;
    let row = client
        .query_one(
            "SELECT xact_commit, tup_updated FROM pg_stat_database \
             WHERE datname = current_database()",
            &[],
        )
        .await
        .expect("pg_stat_database");
    (row.get(0), row.get(1))
}

// ---- one: a tracker and its floor, in this process -------------------

/// Which store a round of `one` runs on.
#[derive(Clone, Copy, Debug)]
enum Kind {
    Memory,
    Sqlite,
    Postgres,
}

fn one(args: &Args) -> Fallible {
    let demo = Demo::start("127.0.0.1:0", &[])?;
    let rt = runtime();
    let client = rt.block_on(connect(&demo))?;
    let refs = rt.block_on(seed(&client, args.one_tasks))?;
    let dir = Scratch::new("bench-one");
    let pg = postgres::start();
    println!(
        "one: {} jobs of an hour, one record each, {} s per run, {} rounds",
        refs.len(),
        args.secs,
        args.rounds
    );
    println!(
        "store     loop     reads/s  claim/read save/read next_due/read other  cpu µs/read  (Postgres: commits/read rows updated/read cpu µs/read)"
    );
    let mut n = 0;
    for round in 0..args.rounds {
        for kind in [Kind::Memory, Kind::Sqlite, Kind::Postgres] {
            for floor in [false, true] {
                n += 1;
                let url = match (kind, &pg) {
                    (Kind::Postgres, Some((_, pg))) => Some(rt.block_on(pg.database())),
                    (Kind::Postgres, None) => continue,
                    _ => None,
                };
                let line = rt.block_on(async {
                    let secs = Duration::from_secs(args.secs);
                    match (kind, &url) {
                        (Kind::Memory, _) => {
                            run_one(&demo, &client, &refs, MemoryStore::new(), floor, secs, None)
                                .await
                        }
                        (Kind::Sqlite, _) => {
                            let path = dir.0.join(format!("one-{n}.db"));
                            let store = SqliteStore::open(&path)
                                .await
                                .map_err(|e| format!("open: {e}"))?;
                            run_one(&demo, &client, &refs, store, floor, secs, None).await
                        }
                        (Kind::Postgres, Some(url)) => {
                            // Filled through a connection of its own, closed
                            // before the count starts: a backend's
                            // statistics are flushed when it exits.
                            PostgresStore::migrate(url)
                                .await
                                .map_err(|e| format!("migrate: {e}"))?;
                            let filler = Arc::new(
                                PostgresStore::connect(url)
                                    .await
                                    .map_err(|e| format!("connect: {e}"))?,
                            );
                            fill(&filler, &refs, refs.len()).await?;
                            drop(filler);
                            let store = PostgresStore::connect(url)
                                .await
                                .map_err(|e| format!("connect: {e}"))?;
                            tokio::time::sleep(Duration::from_millis(500)).await;
                            let db = Db {
                                url,
                                postmaster: pg.as_ref().and_then(|(c, _)| c.postmaster()),
                            };
                            run_one(&demo, &client, &[], store, floor, secs, Some(db)).await
                        }
                        (Kind::Postgres, None) => unreachable!("skipped above"),
                    }
                })?;
                let what = if floor { "floor" } else { "tracker" };
                println!(
                    "{:<9} {what:<8} {line}  (round {})",
                    format!("{kind:?}"),
                    round + 1
                );
            }
        }
    }
    if pg.is_none() {
        println!("one: no Postgres here; its rounds were skipped");
    }
    Ok(())
}

/// The Postgres a round of `one` runs on.
struct Db<'a> {
    url: &'a str,
    /// The cluster's postmaster, whose CPU time is counted.
    postmaster: Option<u32>,
}

/// Fills `store` with a record for each of `refs`, then runs the tracker
/// (or the floor) on it for `secs`.
async fn run_one<S: TaskStore>(
    demo: &Demo,
    client: &Client,
    refs: &[TaskRef],
    store: S,
    floor: bool,
    secs: Duration,
    db: Option<Db<'_>>,
) -> Fallible<String> {
    let url = db.as_ref().map(|d| d.url);
    let postmaster = db.as_ref().and_then(|d| d.postmaster);
    let store = Arc::new(store);
    if !refs.is_empty() {
        fill(&store, refs, refs.len()).await?;
    }
    let Ok(store) = Arc::try_unwrap(store) else {
        return Err("the store is still shared".into());
    };
    let before_db = match url {
        Some(u) => Some(commits(u).await),
        None => None,
    };
    let (probe, calls) = probe(store, None);
    let before = reads(demo)?;
    let own_before = stat(std::process::id())?.own();
    let db_before = postmaster.map(cluster_cpu).transpose()?;
    let start = Instant::now();
    if floor {
        let _ = tokio::time::timeout(secs, bare_loop(probe, client.clone())).await;
    } else {
        let o = Options {
            name: "tracker".into(),
            lease_ms: 30_000,
            ..Options::default()
        };
        let tracker = worker::tracker(probe, client, &o);
        let _ = tokio::time::timeout(secs, tracker.run(|_| async { true })).await;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let own = stat(std::process::id())?.own() - own_before;
    let db = match (postmaster, db_before) {
        (Some(pm), Some(before)) => Some(cluster_cpu(pm)?.saturating_sub(before)),
        _ => None,
    };
    let n = reads(demo)? - before;
    let per = |c: u64| c as f64 / n.max(1) as f64;
    let micros = 1e6 / clock_tick()? as f64;
    let [claim, save, next_due, other] = calls.read();
    let mut line = format!(
        "{:>8.0}  {:>10.4} {:>9.4} {:>13.4} {:>5} {:>11.1}",
        n as f64 / elapsed,
        per(claim),
        per(save),
        per(next_due),
        other,
        per(own) * micros
    );
    if let (Some(u), Some((c0, t0))) = (url, before_db) {
        // The store's connection is closed (the tracker was dropped): its
        // statistics are flushed at exit.
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (c1, t1) = commits(u).await;
        // One commit is the query that read `before`.
        line += &format!(
            "  {:.4} {:.4} {:.1}",
            per((c1 - c0 - 1).max(0) as u64),
            per((t1 - t0).max(0) as u64),
            per(db.unwrap_or(0)) * micros
        );
    }
    Ok(line)
}

/// The floor: what the tracker does for a task that is still working,
/// with no tracker, no typestate and no schedule: claim a batch, read each
/// with a raw `tasks/get` (16 at a time, as the tracker), save what it
/// says, due again after the server's interval. Runs until dropped.
async fn bare_loop<S: TaskStore>(store: S, client: Client) -> Fallible {
    const BATCH: usize = 64;
    const CONCURRENCY: usize = 16;
    let store = Arc::new(store);
    let permits = Arc::new(tokio::sync::Semaphore::new(CONCURRENCY));
    loop {
        let records = store
            .claim(Claim {
                worker: "floor",
                limit: BATCH,
                now: SystemTime::now(),
                lease: Duration::from_secs(30),
                record: None,
            })
            .await
            .map_err(|e| e.to_string())?;
        if records.is_empty() {
            tokio::time::sleep(Duration::from_millis(5)).await;
            continue;
        }
        let mut set = tokio::task::JoinSet::new();
        for record in records {
            let record = record.map_err(|e| e.to_string())?;
            let permit = permits.clone().acquire_owned().await;
            let (store, client) = (store.clone(), client.clone());
            set.spawn(async move {
                let _permit = permit;
                let fence = record.fence().ok_or("no lease")?;
                let id = record.reference.task_id().expose();
                let got = client
                    .request("tasks/get", json!({"taskId": id}))
                    .await
                    .map_err(|e| e.to_string())?;
                let status: TaskStatus =
                    serde_json::from_value(got["status"].clone()).map_err(|e| e.to_string())?;
                let interval = got["pollIntervalMs"].as_u64();
                let wait = Duration::from_millis(interval.unwrap_or(1_000).max(20));
                let progress = StepReport {
                    status,
                    status_message: got["statusMessage"].as_str().map(str::to_owned),
                    poll_interval_ms: interval,
                    failed_reads: 0,
                    due: SystemTime::now() + wait,
                    taken: Vec::new(),
                    offered: Vec::new(),
                };
                store
                    .save(record.id, fence, progress)
                    .await
                    .map_err(|e| e.to_string())
            });
        }
        while let Some(done) = set.join_next().await {
            done.map_err(|e| e.to_string())??;
        }
    }
}

// ---- many: worker processes on one Postgres --------------------------

fn many(args: &Args) -> Fallible {
    let Some((cluster, pg)) = postgres::start() else {
        println!("many: skipped, no Postgres here");
        return Ok(());
    };
    let rt = runtime();
    let demo = Demo::start("127.0.0.1:0", &[])?;
    let dir = Scratch::new("bench-many");
    let client = rt.block_on(connect(&demo))?;
    let jobs = args.tasks.clamp(1, 1_000);
    let refs = rt.block_on(seed(&client, jobs))?;
    let url = rt.block_on(pg.database());
    let empty = rt.block_on(pg.database());
    let start = Instant::now();
    rt.block_on(async {
        PostgresStore::migrate(&url)
            .await
            .map_err(|e| format!("migrate: {e}"))?;
        let db = postgres::connect(&url).await;
        for sql in &args.setup {
            db.batch_execute(sql)
                .await
                .map_err(|e| format!("--setup {sql}: {e}"))?;
            println!("many: ran {sql}");
        }
        let store = Arc::new(
            PostgresStore::connect(&url)
                .await
                .map_err(|e| format!("connect: {e}"))?,
        );
        fill(&store, &refs, args.tasks).await?;
        // What autovacuum does within a minute of a bulk load: before it,
        // Postgres takes `ending IS NULL` for rare and may plan a claim as
        // a sort of every due record (the store's docs say so).
        db.batch_execute("ANALYZE mcp_tasks_tasks")
            .await
            .map_err(|e| format!("analyze: {e}"))
    })?;
    let took = start.elapsed().as_secs_f64();
    println!(
        "many: {} records on {jobs} jobs of an hour, inserted in {took:.1} s ({:.0}/s)",
        args.tasks,
        args.tasks as f64 / took
    );
    let base = Options {
        store: format!("pg:{url}").into(),
        server: demo.url.clone(),
        outcomes: dir.0.join("outcomes"),
        lease_ms: args.lease_ms,
        ..Options::default()
    };

    // An idle worker: the same process with an empty store.
    let mut idle = spawn(&Options {
        store: format!("pg:{empty}").into(),
        name: "idle".into(),
        ..Options::parse(&base.args()[1..])
    })?;
    wait_for_line(&mut idle, "started")?;
    std::thread::sleep(Duration::from_secs(3));
    let idle_rss = memory(&idle)?;
    stop(idle);
    println!(
        "many: an idle worker: VmRSS {} KiB, VmHWM {} KiB",
        idle_rss.0, idle_rss.1
    );

    let postmaster = cluster.postmaster();
    let tick = clock_tick()?;
    for &w in &args.workers {
        let tables_before = rt.block_on(tables(&url))?;
        let mut children = Vec::new();
        for i in 0..w {
            let mut child = spawn(&Options {
                name: format!("w{}", i + 1),
                ..Options::parse(&base.args()[1..])
            })?;
            wait_for_line(&mut child, "started")?;
            children.push(child);
        }
        std::thread::sleep(Duration::from_secs(2));
        let before = reads(&demo)?;
        let db_before = rt.block_on(commits(&url));
        let cpu_before = Cpu::sample(&children, postmaster, &demo)?;
        let machine_before = machine()?;
        let start = Instant::now();
        std::thread::sleep(Duration::from_secs(args.secs));
        let cpu_after = Cpu::sample(&children, postmaster, &demo)?;
        let machine_after = machine()?;
        let n = reads(&demo)? - before;
        let db_after = rt.block_on(commits(&url));
        let secs = start.elapsed().as_secs_f64();
        let rss: Vec<(u64, u64)> = children.iter().map(memory).collect::<Fallible<_>>()?;
        let per_task: Vec<String> = rss
            .iter()
            .map(|(r, _)| {
                format!(
                    "{:.2}",
                    (*r as f64 - idle_rss.0 as f64) * 1024.0 / args.tasks as f64
                )
            })
            .collect();
        println!(
            "many: {w} worker(s): {n} reads in {secs:.1} s, {:.0} reads/s; \
             ~{:.3} commits/read, ~{:.3} rows updated/read (pg_stat_database); \
             VmRSS/VmHWM KiB {rss:?}; (VmRSS - idle) / records: {} bytes",
            n as f64 / secs,
            (db_after.0 - db_before.0) as f64 / n.max(1) as f64,
            (db_after.1 - db_before.1) as f64 / n.max(1) as f64,
            per_task.join(", ")
        );
        let us = |ticks: u64| ticks as f64 / tick as f64 * 1e6 / n.max(1) as f64;
        let workers: Vec<u64> = cpu_after
            .workers
            .iter()
            .zip(&cpu_before.workers)
            .map(|(a, b)| a - b)
            .collect();
        let postgres = match (cpu_after.postgres, cpu_before.postgres) {
            (Some(a), Some(b)) => format!("{:.1}", us(a.saturating_sub(b))),
            _ => "? (not a cluster of this run)".into(),
        };
        let (busy, total) = (
            machine_after.0 - machine_before.0,
            machine_after.1 - machine_before.1,
        );
        println!(
            "many: {w} worker(s): CPU per read: workers {:.1} µs (each {}), Postgres {postgres} µs, \
             demo server {:.1} µs; machine busy {:.0}%, load average {}",
            us(workers.iter().sum()),
            workers
                .iter()
                .map(|t| format!("{:.1}", us(*t)))
                .collect::<Vec<_>>()
                .join(", "),
            us(cpu_after.demo - cpu_before.demo),
            busy as f64 * 100.0 / total.max(1) as f64,
            load_average()
        );
        for child in children {
            stop(child);
        }
        // The killed workers' leases run out before the next round; their
        // backends have exited by then, which flushes their statistics.
        std::thread::sleep(Duration::from_millis(args.lease_ms + 500));
        let tables_after = rt.block_on(tables(&url))?;
        for after in &tables_after {
            let before = tables_before.iter().find(|t| t.name == after.name);
            let upd = after.upd - before.map_or(0, |t| t.upd);
            let hot = after.hot - before.map_or(0, |t| t.hot);
            let vacuums = after.vacuums - before.map_or(0, |t| t.vacuums);
            println!(
                "many: {w} worker(s): {}: {upd} updates, {:.1}% HOT, {} dead rows at the end, \
                 {vacuums} autovacuums",
                after.name,
                hot as f64 * 100.0 / upd.max(1) as f64,
                after.dead
            );
        }
    }

    takeover(&rt, &base, &url, args.lease_ms)?;
    drop(rt);
    drop(cluster);
    Ok(())
}

/// CPU time so far, in clock ticks.
struct Cpu {
    /// Of each worker.
    workers: Vec<u64>,
    /// Of the whole cluster: the postmaster, its live children and the
    /// children it reaped (backends that exited, autovacuum workers).
    postgres: Option<u64>,
    /// Of the demo server.
    demo: u64,
}

impl Cpu {
    fn sample(children: &[Child], postmaster: Option<u32>, demo: &Demo) -> Fallible<Cpu> {
        let workers = children
            .iter()
            .map(|c| stat(c.id()).map(|s| s.own()))
            .collect::<Fallible<_>>()?;
        let postgres = match postmaster {
            Some(pm) => Some(cluster_cpu(pm)?),
            None => None,
        };
        Ok(Cpu {
            workers,
            postgres,
            demo: stat(demo.child.id())?.own(),
        })
    }
}

/// What `/proc/PID/stat` says of a process.
struct Stat {
    ppid: u32,
    utime: u64,
    stime: u64,
    cutime: u64,
    cstime: u64,
}

impl Stat {
    /// Its own CPU time, user and system.
    fn own(&self) -> u64 {
        self.utime + self.stime
    }
}

fn stat(pid: u32) -> Fallible<Stat> {
    let text =
        std::fs::read_to_string(format!("/proc/{pid}/stat")).map_err(|e| format!("{pid}: {e}"))?;
    // The name, in parentheses, may hold spaces: count after its end.
    let rest = text
        .rsplit_once(')')
        .map(|(_, r)| r)
        .ok_or("an unreadable /proc/PID/stat")?;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // Fields 4 (ppid) and 14 to 17 (utime, stime, cutime, cstime), from
    // field 3 (state) on.
    let field = |n: usize| -> Fallible<u64> {
        fields
            .get(n - 3)
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("no field {n} in /proc/{pid}/stat"))
    };
    Ok(Stat {
        ppid: field(4)? as u32,
        utime: field(14)?,
        stime: field(15)?,
        cutime: field(16)?,
        cstime: field(17)?,
    })
}

/// The CPU time of a Postgres cluster: the postmaster's own and its
/// reaped children's, and that of each live child.
fn cluster_cpu(postmaster: u32) -> Fallible<u64> {
    let pm = stat(postmaster)?;
    let mut total = pm.own() + pm.cutime + pm.cstime;
    for entry in std::fs::read_dir("/proc").map_err(|e| e.to_string())? {
        let Some(pid) = entry
            .ok()
            .and_then(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        else {
            continue;
        };
        // A child that exits meanwhile is counted in the reaped time.
        if let Ok(s) = stat(pid)
            && s.ppid == postmaster
        {
            total += s.own();
        }
    }
    Ok(total)
}

/// Clock ticks per second, the unit of `/proc/PID/stat`.
fn clock_tick() -> Fallible<u64> {
    let out = std::process::Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .map_err(|e| format!("getconf CLK_TCK: {e}"))?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .map_err(|e| format!("getconf CLK_TCK: {e}"))
}

/// The machine's busy and total CPU time so far (`/proc/stat`), in ticks.
fn machine() -> Fallible<(u64, u64)> {
    let text = std::fs::read_to_string("/proc/stat").map_err(|e| e.to_string())?;
    let cpu: Vec<u64> = text
        .lines()
        .next()
        .and_then(|l| l.strip_prefix("cpu "))
        .ok_or("no cpu line in /proc/stat")?
        .split_whitespace()
        .filter_map(|v| v.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal ...
    let idle = cpu.get(3).copied().unwrap_or(0) + cpu.get(4).copied().unwrap_or(0);
    let total: u64 = cpu.iter().take(8).sum();
    Ok((total - idle, total))
}

/// The 1, 5 and 15 minute load averages.
fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

/// A table's counts in `pg_stat_user_tables`.
struct Table {
    name: String,
    upd: i64,
    hot: i64,
    dead: i64,
    vacuums: i64,
}

/// The counts of the store's tables.
async fn tables(url: &str) -> Fallible<Vec<Table>> {
    let db = postgres::connect(url).await;
    let rows = db
        .query(
            "SELECT relname::text, n_tup_upd, n_tup_hot_upd, n_dead_tup, autovacuum_count \
             FROM pg_stat_user_tables WHERE relname LIKE 'mcp_tasks_%' \
             AND relname <> 'mcp_tasks_schema' ORDER BY relname",
            &[],
        )
        .await
        .map_err(|e| format!("pg_stat_user_tables: {e}"))?;
    Ok(rows
        .iter()
        .map(|r| Table {
            name: r.get(0),
            upd: r.get(1),
            hot: r.get(2),
            dead: r.get(3),
            vacuums: r.get(4),
        })
        .collect())
}

/// Two workers; the first is killed: how long until every record it held
/// under a live lease was claimed by the other.
fn takeover(rt: &tokio::runtime::Runtime, base: &Options, url: &str, lease_ms: u64) -> Fallible {
    let mut victim = spawn(&Options {
        name: "victim".into(),
        ..Options::parse(&base.args()[1..])
    })?;
    let mut other = spawn(&Options {
        name: "other".into(),
        ..Options::parse(&base.args()[1..])
    })?;
    wait_for_line(&mut victim, "started")?;
    wait_for_line(&mut other, "started")?;
    std::thread::sleep(Duration::from_secs(3));
    let db = rt.block_on(postgres::connect(url));
    // Killed while it holds records: between its saves and its next claim
    // a worker holds none. Stopped first, so that what it holds can be
    // read before it dies; the clock starts at the stop.
    let mut attempts = 0;
    let (killed, held) = loop {
        attempts += 1;
        if attempts > 100 {
            return Err("the victim never held a record".into());
        }
        let stopped = Instant::now();
        signal(&victim, "-STOP");
        let now = millis(SystemTime::now());
        let held: Vec<i64> = rt
            .block_on(db.query(
                "SELECT id FROM mcp_tasks_tasks WHERE lease_owner = 'victim' AND lease_until > $1",
                &[&now],
            ))
            .map_err(|e| e.to_string())?
            .iter()
            .map(|r| r.get(0))
            .collect();
        if held.is_empty() {
            signal(&victim, "-CONT");
            std::thread::sleep(Duration::from_millis(7));
            continue;
        }
        victim.kill().map_err(|e| e.to_string())?; // SIGKILL
        victim.wait().map_err(|e| e.to_string())?;
        break (stopped, held);
    };
    let mut left = held.len() as i64;
    while left > 0 {
        if killed.elapsed() > worker::LIMIT {
            return Err(format!(
                "{left} records still held after {:?}",
                worker::LIMIT
            ));
        }
        std::thread::sleep(Duration::from_millis(10));
        left = rt
            .block_on(db.query_one(
                "SELECT count(*) FROM mcp_tasks_tasks WHERE id = ANY($1) AND lease_owner = 'victim'",
                &[&held],
            ))
            .map_err(|e| e.to_string())?
            .get(0);
    }
    let took = killed.elapsed();
    let by_other: i64 = rt
        .block_on(db.query_one(
            "SELECT count(*) FROM mcp_tasks_tasks WHERE id = ANY($1) AND lease_owner = 'other'",
            &[&held],
        ))
        .map_err(|e| e.to_string())?
        .get(0);
    println!(
        "takeover: the victim held {} records under a live lease when stopped ({attempts} \
         tries), then killed; all claimed again {:.2} s after the stop ({by_other} of them still held by the other worker at \
         that moment); lease {:.1} s",
        held.len(),
        took.as_secs_f64(),
        lease_ms as f64 / 1000.0
    );
    stop(other);
    Ok(())
}

/// Sends `sig` (`-STOP`, `-CONT`) to a worker.
fn signal(child: &Child, sig: &str) {
    let _ = std::process::Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status();
}

/// Kills a worker and reaps it.
fn stop(mut child: Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// `VmRSS` and `VmHWM` of a process, in KiB.
fn memory(child: &Child) -> Fallible<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{}/status", child.id()))
        .map_err(|e| e.to_string())?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|l| l.strip_prefix(name))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .ok_or_else(|| format!("no {name} in /proc/PID/status"))
    };
    Ok((field("VmRSS:")?, field("VmHWM:")?))
}

/// Milliseconds since the Unix epoch, as the Postgres store writes them.
fn millis(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

// ---- starts: a keyed start against an unkeyed one ---------------------

fn starts(args: &Args) -> Fallible {
    let demo = Demo::start("127.0.0.1:0", &[])?;
    let rt = runtime();
    let client = rt.block_on(connect(&demo))?;
    let dir = Scratch::new("bench-starts");
    let pg = postgres::start();
    let n = args.starts;
    println!(
        "starts: {n} one after another, per start, {} rounds",
        args.rounds
    );
    println!("store     start     call_tool µs  store calls  (Postgres commits)   store alone µs");
    let mut files = 0;
    for round in 0..args.rounds {
        for kind in [Kind::Sqlite, Kind::Postgres] {
            for keyed in [false, true] {
                files += 1;
                let url = match (kind, &pg) {
                    (Kind::Postgres, Some((_, pg))) => Some(rt.block_on(pg.database())),
                    (Kind::Postgres, None) => continue,
                    _ => None,
                };
                let line = rt.block_on(async {
                    match &url {
                        Some(url) => {
                            PostgresStore::migrate(url)
                                .await
                                .map_err(|e| format!("migrate: {e}"))?;
                            let open = || async {
                                PostgresStore::connect(url)
                                    .await
                                    .map_err(|e| format!("connect: {e}"))
                            };
                            let tracked =
                                start_many(&client, open().await?, keyed, n, Some(url)).await?;
                            let alone = store_alone(open().await?, keyed, n).await?;
                            Ok::<_, String>(format!("{tracked}   {alone:>10.0}"))
                        }
                        None => {
                            let open = |name: String| {
                                let path = dir.0.join(name);
                                async move {
                                    SqliteStore::open(&path)
                                        .await
                                        .map_err(|e| format!("open: {e}"))
                                }
                            };
                            let tracked = start_many(
                                &client,
                                open(format!("t-{files}.db")).await?,
                                keyed,
                                n,
                                None,
                            )
                            .await?;
                            let alone =
                                store_alone(open(format!("s-{files}.db")).await?, keyed, n).await?;
                            Ok(format!("{tracked}   {alone:>10.0}"))
                        }
                    }
                })?;
                let how = if keyed { "keyed" } else { "unkeyed" };
                println!(
                    "{:<9} {how:<8} {line}  (round {})",
                    format!("{kind:?}"),
                    round + 1
                );
            }
        }
    }
    if pg.is_none() {
        println!("starts: no Postgres here; its rounds were skipped");
    }
    Ok(())
}

/// `n` starts of an hour-long `job` through a tracker on `store`, one
/// after another: time and store calls per start (and, on Postgres,
/// commits per start).
async fn start_many<S: TaskStore>(
    client: &Client,
    store: S,
    keyed: bool,
    n: usize,
    url: Option<&str>,
) -> Fallible<String> {
    let (probe, calls) = probe(store, None);
    let o = Options {
        name: "starter".into(),
        lease_ms: 30_000,
        ..Options::default()
    };
    let tracker = worker::tracker(probe, client, &o);
    let before_db = match url {
        Some(u) => Some(commits(u).await),
        None => None,
    };
    let start = Instant::now();
    for i in 0..n {
        let label = if keyed {
            Label::tool("job").key(format!("job-{i}"))
        } else {
            Label::tool("job")
        };
        tracker
            .call_tool(client.task(), label, json!({"n": i, "ms": 3_600_000}))
            .await
            .map_err(|e| format!("start {i}: {e}"))?;
    }
    let per_start = start.elapsed().as_secs_f64() * 1e6 / n as f64;
    drop(tracker);
    let [claim, save, next_due, other] = calls.read();
    let mut line = format!(
        "{per_start:>12.0}  {:>11.3}",
        (claim + save + next_due + other) as f64 / n as f64
    );
    if let (Some(u), Some((c0, _))) = (url, before_db) {
        // Flushed once the store's connection closed (dropped above).
        tokio::time::sleep(Duration::from_millis(500)).await;
        let (c1, _) = commits(u).await;
        line += &format!("  ({:.3})", (c1 - c0 - 1).max(0) as f64 / n as f64);
    } else {
        line += "         ";
    }
    Ok(line)
}

/// The store's part of `n` starts alone, one after another: `insert`, or
/// `reserve` then `start` (what the server answered written into the
/// reserved record). Microseconds per start.
async fn store_alone<S: TaskStore>(store: S, keyed: bool, n: usize) -> Fallible<f64> {
    use mcp_tasks::protocol::TaskId;
    use mcp_tasks::store::backend::Reservation;
    let start = Instant::now();
    for i in 0..n {
        let reference = TaskRef::new(TaskId::new(format!("task-{i}")), Some("demo".into()));
        let task = NewTask {
            unique_key: keyed,
            reference: if keyed {
                TaskRef::new(TaskId::new(String::new()), None)
            } else {
                reference.clone()
            },
            tool: "job".into(),
            key: keyed.then(|| format!("alone-{i}")),
            scope: "default".into(),
            status: TaskStatus::Working,
            status_message: None,
            poll_interval_ms: None,
            due: SystemTime::now(),
            ending: None,
            schedule: Default::default(),
        };
        if !keyed {
            store.insert(task).await.map_err(|e| e.to_string())?;
            continue;
        }
        let until = SystemTime::now() + Duration::from_secs(30);
        let Reservation::Reserved { id, fence } = store
            .reserve(task, "starter", until)
            .await
            .map_err(|e| e.to_string())?
        else {
            return Err(format!("key alone-{i} taken"));
        };
        let progress = StepReport {
            status: TaskStatus::Working,
            status_message: None,
            poll_interval_ms: Some(100),
            failed_reads: 0,
            due: SystemTime::now(),
            taken: Vec::new(),
            offered: Vec::new(),
        };
        store
            .start(id, fence, &reference, &Default::default(), progress)
            .await
            .map_err(|e| e.to_string())?;
    }
    Ok(start.elapsed().as_secs_f64() * 1e6 / n as f64)
}
