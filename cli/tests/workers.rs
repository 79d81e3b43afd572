//! Tracked tasks across processes: worker processes (this binary, started
//! with `--worker`) drive tasks on the demo server over loopback HTTP and
//! are killed, stopped and restarted; the demo server's counters and the
//! store say what happened.
//!
//! Each scenario prints one line; the binary fails when one fails.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant, SystemTime};

use mcp_tasks::protocol::ElicitResult;
use mcp_tasks::store::{Filter, PostgresStore, RecordState, SqliteStore, TaskStore};
use serde_json::json;

#[path = "../../tests/support/postgres.rs"]
mod postgres;
#[path = "support/worker.rs"]
mod worker;

use worker::{Demo, Fallible, LIMIT, Lines, Options, Scratch, runtime, spawn, wait_for_line};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--worker") {
        let runtime = runtime();
        if let Err(e) = runtime.block_on(worker::worker(Options::parse(&args[1..]))) {
            eprintln!("worker: {e}");
            std::process::exit(1);
        }
        return;
    }
    type Scenario = (&'static str, fn() -> Fallible);
    let scenarios: [Scenario; 16] = [
        (
            "three workers on one Postgres, one killed: every task once",
            many_workers,
        ),
        (
            "a worker killed mid-run: every outcome after a restart",
            restart,
        ),
        ("a worker stopped past its lease cannot write", fencing),
        (
            "an answer recorded before tasks/update is sent once",
            answer_recorded,
        ),
        (
            "an answer sent but not saved is not sent again",
            answer_sent,
        ),
        (
            "a server that forgot its tasks: each ends unreachable once",
            gone,
        ),
        (
            "an answer from another process, the worker killed before sending it: sent once",
            outside_before_update,
        ),
        (
            "an answer from another process, the worker killed just after sending it: sent once",
            outside_after_update,
        ),
        (
            "three workers on one Postgres, one killed, a person answering elsewhere: each once",
            outside_many_workers,
        ),
        (
            "a worker shut down gives every record back: none waits for a lease",
            shutdown_hands_over,
        ),
        (
            "a worker killed and restarted under its name takes its records back at once",
            restart_under_name,
        ),
        (
            "two workers under one name on Postgres: each outcome once, no write overlaps",
            one_name_twice,
        ),
        (
            "a worker killed between the server's answer and the write: start_unknown, one call",
            killed_after_call,
        ),
        (
            "two processes start the same keys at once on SQLite: one call each",
            keys_raced_sqlite,
        ),
        (
            "two processes start the same keys at once on Postgres: one call each",
            keys_raced_postgres,
        ),
        (
            "mcp-tasks store migrate: once, again, then a worker role without DDL",
            store_migrate,
        ),
    ];
    // `cargo test --test workers -- WORDS`: only the scenarios whose name
    // holds one of the words.
    let chosen: Vec<_> = scenarios
        .into_iter()
        .filter(|(name, _)| args.is_empty() || args.iter().any(|w| name.contains(w.as_str())))
        .collect();
    let mut failed = 0;
    for (name, scenario) in &chosen {
        let start = Instant::now();
        match scenario() {
            Ok(()) => println!("ok    {name} ({:.1} s)", start.elapsed().as_secs_f64()),
            Err(e) => {
                failed += 1;
                println!("FAIL  {name}: {e}");
            }
        }
    }
    println!("{} passed, {failed} failed", chosen.len() - failed);
    if failed > 0 {
        std::process::exit(1);
    }
}

/// Waits for a worker to end on its own; an error if it fails or hangs.
fn finish(mut child: Child) -> Fallible {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            return if status.success() {
                Ok(())
            } else {
                Err(format!("a worker failed: {status}"))
            };
        }
        if start.elapsed() > LIMIT {
            let _ = child.kill();
            return Err("a worker did not finish in time".into());
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_until(what: &str, mut ready: impl FnMut() -> bool) -> Fallible {
    let start = Instant::now();
    while !ready() {
        if start.elapsed() > LIMIT {
            return Err(format!("timed out waiting for {what}"));
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// The outcomes handled so far: how often each key was, with its ending.
fn handled(file: &Path) -> BTreeMap<String, (usize, String)> {
    let mut seen = BTreeMap::new();
    for line in std::fs::read_to_string(file).unwrap_or_default().lines() {
        let (key, ending) = line.split_once(' ').unwrap_or((line, ""));
        let e = seen.entry(key.to_owned()).or_insert((0, ending.to_owned()));
        e.0 += 1;
    }
    seen
}

fn signal(child: &Child, sig: &str) {
    let _ = Command::new("kill")
        .args([sig, &child.id().to_string()])
        .status();
}

fn options(dir: &Path, demo: &Demo, name: &str) -> Options {
    Options {
        store: dir.join("tasks.db"),
        server: demo.url.clone(),
        name: name.into(),
        outcomes: dir.join("outcomes"),
        tool: "job".into(),
        job_ms: 300,
        lease_ms: 5_000,
        handler: true,
        ..Options::default()
    }
}

/// The endings a worker delivers side by side: the tracker's default
/// concurrency. A worker killed mid-run may have handled each of them
/// without its acknowledgement written: delivered at least once.
const IN_HAND: usize = 16;

/// Every key of `n` tasks handled, and at most [`IN_HAND`] twice (those a
/// killed worker may have handled but not acknowledged).
fn all_handled(file: &Path, tool: &str, n: usize, ending: &str) -> Fallible {
    let seen = handled(file);
    let missing: Vec<String> = (0..n)
        .map(|i| format!("{tool}-{i}"))
        .filter(|k| !seen.contains_key(k))
        .collect();
    if !missing.is_empty() {
        return Err(format!(
            "{} outcomes missing, e.g. {:?}",
            missing.len(),
            &missing[..missing.len().min(3)]
        ));
    }
    let twice = seen.values().filter(|(n, _)| *n > 1).count();
    if twice > IN_HAND {
        return Err(format!("{twice} outcomes handled more than once"));
    }
    if let Some((k, (_, e))) = seen.iter().find(|(_, (_, e))| e != ending) {
        return Err(format!("{k} ended {e}, not {ending}"));
    }
    Ok(())
}

fn restart() -> Fallible {
    const N: usize = 1_000;
    let dir = Scratch::new("restart");
    let demo = Demo::start("127.0.0.1:0", &[])?;
    let mut o = options(&dir.0, &demo, "first");
    o.start = N;
    o.expect = N;
    o.job_ms = 500;
    let mut first = spawn(&o)?;
    wait_for_line(&mut first, "started")?;
    wait_until("a fifth of the outcomes", || {
        handled(&o.outcomes).len() >= N / 5
    })?;
    first.kill().map_err(|e| e.to_string())?; // SIGKILL
    first.wait().map_err(|e| e.to_string())?;
    let before = handled(&o.outcomes).len();
    if before >= N {
        return Err("the worker finished before it was killed".into());
    }
    let o2 = Options {
        name: "second".into(),
        start: 0,
        ..o
    };
    finish(spawn(&o2)?)?;
    all_handled(&o2.outcomes, "job", N, "completed")?;
    let c = demo.counters()?;
    if c["totals"]["overlapping_reads"] != 0 {
        return Err(format!("overlapping reads: {}", c["totals"]));
    }
    println!(
        "      killed after {before} of {N}; {} reads in all",
        c["totals"]["reads"]
    );
    Ok(())
}

fn fencing() -> Fallible {
    const N: usize = 40;
    let dir = Scratch::new("fencing");
    // Slow reads, so that the stopped worker is stopped mid-read.
    let demo = Demo::start("127.0.0.1:0", &["--read-delay", "300"])?;
    let mut o = options(&dir.0, &demo, "stopped");
    o.start = N;
    o.expect = N;
    o.job_ms = 200;
    o.lease_ms = 500;
    let mut first = spawn(&o)?;
    wait_for_line(&mut first, "started")?;
    std::thread::sleep(Duration::from_millis(100));
    signal(&first, "-STOP");
    // Past its lease, another worker takes every task to its end.
    std::thread::sleep(Duration::from_millis(700));
    let o2 = Options {
        name: "second".into(),
        start: 0,
        lease_ms: 5_000,
        expect: N,
        ..options(&dir.0, &demo, "second")
    };
    finish(spawn(&o2)?)?;
    let done = handled(&o.outcomes);
    // The stopped worker wakes up with stale leases: whatever it read, it
    // cannot write it over the newer state.
    signal(&first, "-CONT");
    std::thread::sleep(Duration::from_millis(1_500));
    let _ = first.kill();
    let _ = first.wait();
    all_handled(&o.outcomes, "job", N, "completed")?;
    let after: usize = handled(&o.outcomes).values().map(|(n, _)| n).sum();
    let before: usize = done.values().map(|(n, _)| n).sum();
    if after > before + 1 {
        return Err(format!(
            "the stale worker handled {} outcomes again",
            after - before
        ));
    }
    let store = runtime()
        .block_on(SqliteStore::open(&o.store))
        .map_err(|e| e.to_string())?;
    let open = runtime()
        .block_on(store.list(&Filter::all().state(RecordState::Open)))
        .map_err(|e| e.to_string())?;
    if !open.is_empty() {
        return Err(format!("{} tasks reopened by a stale write", open.len()));
    }
    Ok(())
}

/// Kills a worker at `point` while it answers a question, then lets
/// another finish: the handler is asked once in all, the server takes one
/// answer, the task completes.
fn input_once(name: &str, point: &str) -> Fallible {
    let dir = Scratch::new(name);
    let demo = Demo::start("127.0.0.1:0", &[])?;
    let mut o = options(&dir.0, &demo, "first");
    o.start = 1;
    o.expect = 1;
    o.tool = "ask".into();
    o.hang_after = Some(point.into());
    o.lease_ms = 1_000;
    o.asked = Some(dir.0.join("asked"));
    let mut first = spawn(&o)?;
    wait_for_line(&mut first, &format!("hanging after {point}"))?;
    first.kill().map_err(|e| e.to_string())?;
    first.wait().map_err(|e| e.to_string())?;
    let o2 = Options {
        name: "second".into(),
        start: 0,
        hang_after: None,
        lease_ms: 5_000,
        ..o
    };
    // The first worker's lease must run out before the second may claim.
    finish(spawn(&o2)?)?;
    all_handled(&o2.outcomes, "ask", 1, "completed")?;
    let asked = std::fs::read_to_string(dir.0.join("asked")).unwrap_or_default();
    if asked.lines().count() != 1 {
        return Err(format!(
            "the handler was asked {} times",
            asked.lines().count()
        ));
    }
    answers_taken(&demo, 1)
}

fn answer_recorded() -> Fallible {
    input_once("recorded", "record_answer")
}

fn answer_sent() -> Fallible {
    input_once("sent", "save-taken")
}

fn gone() -> Fallible {
    const N: usize = 20;
    let dir = Scratch::new("gone");
    let demo = Demo::start("127.0.0.1:0", &[])?;
    let addr = demo.addr();
    let mut o = options(&dir.0, &demo, "first");
    o.start = N;
    o.expect = N;
    o.tool = "long".into();
    let mut first = spawn(&o)?;
    wait_for_line(&mut first, "started")?;
    first.kill().map_err(|e| e.to_string())?;
    first.wait().map_err(|e| e.to_string())?;
    // The server restarts on the same port and knows none of the tasks.
    drop(demo);
    let demo = Demo::start(&addr, &[])?;
    let o2 = Options {
        name: "second".into(),
        start: 0,
        server: demo.url.clone(),
        ..o
    };
    finish(spawn(&o2)?)?;
    all_handled(&o2.outcomes, "long", N, "unreachable")?;
    let seen = handled(&o2.outcomes);
    if seen.values().any(|(n, _)| *n != 1) {
        return Err("an unreachable task was handled twice".into());
    }
    let c = demo.counters()?;
    let reads = c["totals"]["unknown_task_requests"].as_u64().unwrap_or(0);
    if reads != N as u64 {
        return Err(format!(
            "{reads} requests for {N} forgotten tasks: one each, not a retry loop"
        ));
    }
    Ok(())
}

fn many_workers() -> Fallible {
    const N: usize = 5_000;
    let Some((cluster, pg)) = postgres_or_skip() else {
        return Ok(());
    };
    let rt = runtime();
    let url = rt.block_on(pg.database());
    let dir = Scratch::new("many");
    // Reads held a little, so that two workers reading one task would show.
    let demo = Demo::start("127.0.0.1:0", &["--read-delay", "5"])?;
    let base = Options {
        store: format!("pg:{url}").into(),
        expect: N,
        lease_ms: 2_000,
        ..options(&dir.0, &demo, "w1")
    };
    let started = Instant::now();
    let (mut w1, mut others) = three_workers(&base, N)?;
    wait_for_line(&mut w1, "started")?;
    wait_until("a third of the outcomes", || {
        handled(&base.outcomes).len() >= N / 3
    })?;
    let mut killed = others.remove(0);
    let _ = killed.kill(); // SIGKILL
    killed.wait().map_err(|e| e.to_string())?;
    let at_kill = handled(&base.outcomes).len();
    finish(w1)?;
    finish(others.remove(0))?;
    all_handled(&base.outcomes, "job", N, "completed")?;
    let c = demo.counters()?;
    if c["totals"]["overlapping_reads"] != 0 {
        return Err(format!(
            "two workers read one task at once: {}",
            c["totals"]
        ));
    }
    let reads = c["totals"]["reads"].as_u64().unwrap_or(0);
    let secs = started.elapsed().as_secs_f64();
    println!(
        "      w2 killed after {at_kill} of {N}; {reads} reads in {secs:.1} s ({:.0} reads/s)",
        reads as f64 / secs
    );
    drop(rt);
    drop(cluster);
    Ok(())
}

/// Questions answered from this process (not a worker), one per record
/// as each shows up, until `n` were answered; the answers given.
async fn answer_from_here<S: TaskStore>(store: &S, n: usize) -> Fallible<usize> {
    let start = Instant::now();
    let mut given = 0;
    while given < n {
        if start.elapsed() > LIMIT {
            return Err(format!("only {given} of {n} questions showed up"));
        }
        let asking = store
            .list(&Filter::all().asking())
            .await
            .map_err(|e| e.to_string())?;
        for record in asking.into_iter().flatten() {
            let keys: Vec<String> = record.open_questions().map(|(k, _)| k.to_owned()).collect();
            for key in keys {
                if given == n {
                    return Ok(given);
                }
                let answer = ElicitResult::accept(json!({"answer": "from a person"}));
                match store
                    .answer(record.id, &key, &answer.into(), SystemTime::now())
                    .await
                {
                    Ok(()) => given += 1,
                    // Closed meanwhile, or answered twice: never stored.
                    Err(e) if e.is_refused() => return Err(format!("refused: {e}")),
                    Err(e) => return Err(e.to_string()),
                }
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    Ok(given)
}

/// Three `ask` tasks whose questions are answered from this process; the
/// worker holding them is killed at `point`, and another one finishes:
/// each task completes, and the server takes one answer per question.
fn answered_outside(name: &str, point: &str) -> Fallible {
    const N: usize = 3;
    let dir = Scratch::new(name);
    let demo = Demo::start("127.0.0.1:0", &[])?;
    let mut o = options(&dir.0, &demo, "first");
    o.start = N;
    o.expect = 0;
    o.tool = "ask".into();
    o.handler = false;
    o.hang_after = Some(point.into());
    o.lease_ms = 1_000;
    let mut first = spawn(&o)?;
    let lines = Lines::of(&mut first)?;
    lines.until("started")?;
    let rt = runtime();
    let store = rt
        .block_on(SqliteStore::open(&o.store))
        .map_err(|e| e.to_string())?;
    rt.block_on(answer_from_here(&store, N))?;
    lines.until(&format!("hanging after {point}"))?;
    first.kill().map_err(|e| e.to_string())?;
    first.wait().map_err(|e| e.to_string())?;
    let o2 = Options {
        name: "second".into(),
        start: 0,
        expect: N,
        hang_after: None,
        lease_ms: 5_000,
        ..o
    };
    finish(spawn(&o2)?)?;
    all_handled(&o2.outcomes, "ask", N, "completed")?;
    answers_taken(&demo, N)
}

fn outside_before_update() -> Fallible {
    answered_outside("outside-before", "claim-answered")
}

fn outside_after_update() -> Fallible {
    answered_outside("outside-after", "save-taken")
}

fn outside_many_workers() -> Fallible {
    const N: usize = 30;
    let Some((cluster, pg)) = postgres_or_skip() else {
        return Ok(());
    };
    let rt = runtime();
    let url = rt.block_on(pg.database());
    let dir = Scratch::new("outside-many");
    let demo = Demo::start("127.0.0.1:0", &["--read-delay", "5"])?;
    let base = Options {
        store: format!("pg:{url}").into(),
        expect: N,
        tool: "ask".into(),
        handler: false,
        lease_ms: 1_000,
        ..options(&dir.0, &demo, "w1")
    };
    let (mut w1, mut others) = three_workers(&base, N)?;
    wait_for_line(&mut w1, "started")?;
    let store = rt
        .block_on(PostgresStore::connect(&url))
        .map_err(|e| e.to_string())?;
    // A third answered, then a worker killed mid-run, then the rest.
    rt.block_on(answer_from_here(&store, N / 3))?;
    let mut killed = others.remove(0);
    let _ = killed.kill(); // SIGKILL
    killed.wait().map_err(|e| e.to_string())?;
    rt.block_on(answer_from_here(&store, N - N / 3))?;
    finish(w1)?;
    finish(others.remove(0))?;
    all_handled(&base.outcomes, "ask", N, "completed")?;
    answers_taken(&demo, N)?;
    let c = demo.counters()?;
    if c["totals"]["overlapping_reads"] != 0 {
        return Err(format!(
            "two workers read one task at once: {}",
            c["totals"]
        ));
    }
    drop(rt);
    drop(cluster);
    Ok(())
}

/// A throwaway Postgres cluster, or `None` (said on stdout) where there is
/// none to start.
fn postgres_or_skip() -> Option<(postgres::Cluster, postgres::Pg)> {
    let started = postgres::start();
    if started.is_none() {
        println!(
            "      skipped: no Postgres here (MCP_TASKS_REQUIRE_POSTGRES=1 makes this a failure)"
        );
    }
    started
}

/// Workers `w1` (which starts `n` tasks), `w2` and `w3` with `base`'s
/// options.
fn three_workers(base: &Options, n: usize) -> Fallible<(Child, Vec<Child>)> {
    let w1 = spawn(&Options {
        start: n,
        ..Options::parse(&base.args()[1..])
    })?;
    let mut others = Vec::new();
    for name in ["w2", "w3"] {
        others.push(spawn(&Options {
            name: name.into(),
            ..Options::parse(&base.args()[1..])
        })?);
    }
    Ok((w1, others))
}

/// The demo server took exactly `n` answers in all.
fn answers_taken(demo: &Demo, n: usize) -> Fallible {
    let c = demo.counters()?;
    if c["totals"]["answers"] != n {
        return Err(format!(
            "the server took {} answers for {n} questions",
            c["totals"]["answers"]
        ));
    }
    Ok(())
}

/// A lease no scenario outlives (ten minutes, past [`LIMIT`]): a worker
/// that waited for one would not finish in time.
const LONG_LEASE_MS: u64 = 600_000;

/// The records of the SQLite file `store` whose lease is live now.
fn held(store: &Path) -> Fallible<Vec<mcp_tasks::store::TaskRecord>> {
    let rt = runtime();
    let store = rt
        .block_on(SqliteStore::open(store))
        .map_err(|e| e.to_string())?;
    let all = rt
        .block_on(store.list(&Filter::all()))
        .map_err(|e| e.to_string())?;
    let now = SystemTime::now();
    Ok(all
        .into_iter()
        .flatten()
        .filter(|r| r.lease.as_ref().is_some_and(|l| l.until > now))
        .collect())
}

/// A worker that holds records mid-read whenever one looks (reads take a
/// second on the demo server), under leases of ten minutes.
fn holding(dir: &Path, demo: &Demo, name: &str, n: usize) -> Options {
    Options {
        start: n,
        expect: 0,
        lease_ms: LONG_LEASE_MS,
        job_ms: 1_500,
        ..options(dir, demo, name)
    }
}

fn shutdown_hands_over() -> Fallible {
    const N: usize = 32;
    let dir = Scratch::new("handover");
    let demo = Demo::start("127.0.0.1:0", &["--read-delay", "1000"])?;
    let o = Options {
        // Reads in hand are cut, not waited for: their leases given back.
        stop_within_ms: Some(50),
        ..holding(&dir.0, &demo, "first", N)
    };
    let mut first = spawn(&o)?;
    let lines = Lines::of(&mut first)?;
    lines.until("started")?;
    wait_until("records held mid-read", || {
        held(&o.store).is_ok_and(|h| h.len() >= 8)
    })?;
    signal(&first, "-TERM");
    lines.until("stopped")?;
    finish(first)?;
    let left = held(&o.store)?;
    if !left.is_empty() {
        return Err(format!(
            "{} records still leased after the shutdown",
            left.len()
        ));
    }
    let o2 = Options {
        name: "second".into(),
        start: 0,
        expect: N,
        ..o
    };
    finish(spawn(&o2)?)?;
    all_handled(&o2.outcomes, "job", N, "completed")
}

fn restart_under_name() -> Fallible {
    const N: usize = 32;
    let dir = Scratch::new("restart-name");
    let demo = Demo::start("127.0.0.1:0", &["--read-delay", "1000"])?;
    let o = holding(&dir.0, &demo, "export-1", N);
    let mut first = spawn(&o)?;
    wait_for_line(&mut first, "started")?;
    wait_until("records held mid-read", || {
        held(&o.store).is_ok_and(|h| h.len() >= 8)
    })?;
    first.kill().map_err(|e| e.to_string())?; // SIGKILL
    first.wait().map_err(|e| e.to_string())?;
    let left = held(&o.store)?;
    if left.is_empty() {
        return Err("the killed worker held nothing: nothing to take back".into());
    }
    // Under the same name: at once, not ten minutes later.
    let o2 = Options {
        start: 0,
        expect: N,
        ..o
    };
    finish(spawn(&o2)?)?;
    all_handled(&o2.outcomes, "job", N, "completed")?;
    println!("      {} records taken back", left.len());
    Ok(())
}

fn one_name_twice() -> Fallible {
    const N: usize = 200;
    let Some((cluster, pg)) = postgres_or_skip() else {
        return Ok(());
    };
    let rt = runtime();
    let url = rt.block_on(pg.database());
    let dir = Scratch::new("one-name");
    let demo = Demo::start("127.0.0.1:0", &["--read-delay", "20"])?;
    let base = Options {
        store: format!("pg:{url}").into(),
        expect: N,
        lease_ms: LONG_LEASE_MS,
        job_ms: 200,
        ..options(&dir.0, &demo, "export-1")
    };
    let mut first = spawn(&Options {
        start: N,
        ..Options::parse(&base.args()[1..])
    })?;
    wait_for_line(&mut first, "started")?;
    wait_until("a tenth of the outcomes", || {
        handled(&base.outcomes).len() >= N / 10
    })?;
    // The same name again, by mistake: it takes the first one's records
    // over; fencing refuses the first one's writes to them.
    let second = spawn(&Options::parse(&base.args()[1..]))?;
    finish(first)?;
    finish(second)?;
    all_handled(&base.outcomes, "job", N, "completed")?;
    let c = demo.counters()?;
    if c["totals"]["overlapping_reads"].as_u64().unwrap_or(0) > IN_HAND as u64 {
        return Err(format!(
            "more reads overlapped than the taken-over records: {}",
            c["totals"]
        ));
    }
    let store = rt
        .block_on(PostgresStore::connect(&url))
        .map_err(|e| e.to_string())?;
    let open = rt
        .block_on(store.list(&Filter::all().state(RecordState::Open)))
        .map_err(|e| e.to_string())?;
    if !open.is_empty() {
        return Err(format!("{} tasks reopened by a stale write", open.len()));
    }
    drop(rt);
    drop(cluster);
    Ok(())
}

fn killed_after_call() -> Fallible {
    let dir = Scratch::new("after-call");
    let demo = Demo::start("127.0.0.1:0", &[])?;
    let mut o = holding(&dir.0, &demo, "first", 1);
    o.hang_after = Some("call-answered".into());
    let mut first = spawn(&o)?;
    wait_for_line(&mut first, "hanging after call-answered")?;
    first.kill().map_err(|e| e.to_string())?; // SIGKILL
    first.wait().map_err(|e| e.to_string())?;
    let left = held(&o.store)?;
    if left.len() != 1 || left[0].is_started() || left[0].key.as_deref() != Some("job-0") {
        return Err(format!("not one reserved record: {left:?}"));
    }
    // Restarted under its name, starting the same key again: no second
    // call, and the reservation ends start_unknown at once.
    let o2 = Options {
        hang_after: None,
        expect: 1,
        ..o
    };
    finish(spawn(&o2)?)?;
    let seen = handled(&o2.outcomes);
    if seen.len() != 1 || seen.get("job-0") != Some(&(1, "start_unknown".into())) {
        return Err(format!("outcomes: {seen:?}"));
    }
    let c = demo.counters()?;
    if c["totals"]["tasks"] != 1 || c["totals"]["reads"] != 0 {
        return Err(format!("one call, no read expected: {}", c["totals"]));
    }
    Ok(())
}

/// The lines a process prints from now until it exits (bounded), once it
/// ended well.
fn all_lines(child: Child, lines: Lines) -> Fallible<Vec<String>> {
    let rest = lines.rest()?;
    finish(child)?;
    Ok(rest)
}

/// Two processes start the keys `job-0`…`job-{n-1}` at once on `store`:
/// the demo server is called once per key, and both name the same record
/// for each key, one as the one that started it.
fn keys_raced(name: &str, store: std::path::PathBuf) -> Fallible {
    const N: usize = 40;
    let dir = Scratch::new(name);
    let demo = Demo::start("127.0.0.1:0", &[])?;
    let go = dir.0.join("go");
    let o = |who: &str| Options {
        store: store.clone(),
        start: N,
        report: true,
        exit_after_start: true,
        go: Some(go.clone()),
        ..options(&dir.0, &demo, who)
    };
    // Both connected, then both let go at once.
    let mut a = spawn(&o("a"))?;
    let mut b = spawn(&o("b"))?;
    let (a_lines, b_lines) = (Lines::of(&mut a)?, Lines::of(&mut b)?);
    a_lines.until("ready")?;
    b_lines.until("ready")?;
    std::fs::write(&go, "").map_err(|e| e.to_string())?;
    let (a, b) = (all_lines(a, a_lines)?, all_lines(b, b_lines)?);
    let starts = |lines: &[String]| -> BTreeMap<String, (String, String)> {
        lines
            .iter()
            .filter_map(|l| {
                let mut w = l.strip_prefix("start ")?.split(' ');
                let (key, id, how) = (w.next()?, w.next()?, w.next()?);
                Some((key.to_owned(), (id.to_owned(), how.to_owned())))
            })
            .collect()
    };
    let (a, b) = (starts(&a), starts(&b));
    if a.len() != N || b.len() != N {
        return Err(format!(
            "{} and {} starts reported of {N}",
            a.len(),
            b.len()
        ));
    }
    let mut raced = 0;
    for (key, (id, how)) in &a {
        let (other, other_how) = &b[key];
        if id != other {
            return Err(format!(
                "{key}: record {id} in one process, {other} in the other"
            ));
        }
        let tracked = [how, other_how]
            .iter()
            .filter(|h| h.as_str() == "tracked")
            .count();
        if tracked != 1 {
            return Err(format!("{key}: started as {how} and {other_how}"));
        }
        raced += usize::from(how == "tracked");
    }
    let c = demo.counters()?;
    if c["totals"]["tasks"] != N {
        return Err(format!("{} calls for {N} keys", c["totals"]["tasks"]));
    }
    println!("      keys started by the first process: {raced} of {N}");
    Ok(())
}

fn keys_raced_sqlite() -> Fallible {
    let dir = Scratch::new("race-file");
    let file = dir.0.join("tasks.db");
    // The file made first: the race is over keys, not over the first open
    // of a new file, where two processes may find it busy (a separate
    // matter).
    runtime()
        .block_on(SqliteStore::open(&file))
        .map_err(|e| format!("create the store: {e}"))?;
    keys_raced("race-sqlite", file)
}

fn keys_raced_postgres() -> Fallible {
    let Some((cluster, pg)) = postgres_or_skip() else {
        return Ok(());
    };
    let url = runtime().block_on(pg.database());
    keys_raced("race-postgres", format!("pg:{url}").into())?;
    drop(cluster);
    Ok(())
}

/// `mcp-tasks ARGS`: its exit status and stdout.
fn mcp_tasks(args: &[&str]) -> Fallible<(Option<i32>, String)> {
    let out = Command::new(env!("CARGO_BIN_EXE_mcp-tasks"))
        .args(args)
        .env_remove("DATABASE_URL")
        .stderr(std::process::Stdio::inherit())
        .output()
        .map_err(|e| format!("run mcp-tasks: {e}"))?;
    Ok((
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    ))
}

fn store_migrate() -> Fallible {
    let Some((cluster, pg)) = postgres_or_skip() else {
        return Ok(());
    };
    let rt = runtime();
    let url = rt.block_on(pg.database());
    let role = format!("cli_worker_{}", std::process::id());
    rt.block_on(async {
        pg.admin()
            .await
            .batch_execute(&format!("CREATE ROLE {role} LOGIN"))
            .await
    })
    .map_err(|e| e.to_string())?;
    let worker_url = format!("{url} user={role}");
    let as_worker = || {
        rt.block_on(
            PostgresStore::builder(&worker_url)
                .schema("tasks")
                .connect(),
        )
    };
    match as_worker() {
        Err(e) if e.is_schema_too_old() => {}
        other => return Err(format!("a worker before the migration: {other:?}")),
    }

    let args = [
        "store",
        "migrate",
        &url,
        "--schema",
        "tasks",
        "--grant-to",
        &role,
    ];
    let (code, first) = mcp_tasks(&args)?;
    let lines: Vec<&str> = first.lines().collect();
    let to = lines
        .first()
        .and_then(|l| l.strip_prefix("schema tasks: version 0 -> "))
        .ok_or_else(|| format!("first run printed {first:?}"))?;
    if code != Some(0) || lines.get(1) != Some(&format!("granted to {role}").as_str()) {
        return Err(format!("first run: {code:?} {first:?}"));
    }
    let (code, again) = mcp_tasks(&args[..5])?;
    if code != Some(0) || again.trim() != format!("schema tasks: version {to}, up to date") {
        return Err(format!("second run: {code:?} {again:?}"));
    }
    // The worker role, with rows and no schema rights, works.
    let store = as_worker().map_err(|e| format!("the worker role connects: {e}"))?;
    let id = rt
        .block_on(store.insert(mcp_tasks::store::backend::NewTask {
            unique_key: true,
            reference: mcp_tasks::TaskRef::new(mcp_tasks::protocol::TaskId::new("t-1"), None),
            tool: "job".into(),
            key: Some("once".into()),
            scope: "default".into(),
            status: mcp_tasks::protocol::TaskStatus::Working,
            status_message: None,
            poll_interval_ms: None,
            due: SystemTime::now(),
            ending: None,
            schedule: Default::default(),
        }))
        .map_err(|e| format!("the worker role inserts: {e}"))?;
    if rt.block_on(store.get(id)).ok().flatten().is_none() {
        return Err("the worker role cannot read its record".into());
    }

    // Nothing listening: exit status 6; no database of that name: 3.
    let (code, _) = mcp_tasks(&[
        "store",
        "migrate",
        "postgres://nobody@127.0.0.1:1/none?connect_timeout=2",
    ])?;
    if code != Some(6) {
        return Err(format!("an unreachable database exits {code:?}, not 6"));
    }
    let (code, _) = mcp_tasks(&["store", "migrate", &url, "--schema", "Bad; Name"])?;
    if code != Some(3) {
        return Err(format!("a bad schema name exits {code:?}, not 3"));
    }
    drop(store);
    drop(rt);
    drop(cluster);
    Ok(())
}
