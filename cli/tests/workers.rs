//! Tracked tasks across processes: worker processes (this binary, started
//! with `--worker`) drive tasks on the demo server over loopback HTTP and
//! are killed, stopped and restarted; the demo server's counters and the
//! store say what happened.
//!
//! Each scenario prints one line; the binary fails when one fails.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant, SystemTime};

use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{ElicitResult, InputResponse};
use mcp_tasks::store::{
    Claim, Ending, Fence, Filter, Label, NewTask, PostgresStore, Progress, RecordId, RecordState,
    SqliteStore, StoreResult, TaskRecord, TaskStore, Tracker,
};
use mcp_tasks::{Client, Http};
use serde_json::{Value, json};

#[path = "../../tests/support/postgres.rs"]
mod postgres;

const DEMO: &str = env!("CARGO_BIN_EXE_mcp-tasks-demo");

/// The bound on any one wait of a scenario.
const LIMIT: Duration = Duration::from_secs(120);

type Fallible<T = ()> = Result<T, String>;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--worker") {
        let runtime = runtime();
        if let Err(e) = runtime.block_on(worker(Options::parse(&args[1..]))) {
            eprintln!("worker: {e}");
            std::process::exit(1);
        }
        return;
    }
    type Scenario = (&'static str, fn() -> Fallible);
    let scenarios: [Scenario; 6] = [
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
    ];
    let mut failed = 0;
    for (name, scenario) in scenarios {
        let start = Instant::now();
        match scenario() {
            Ok(()) => println!("ok    {name} ({:.1} s)", start.elapsed().as_secs_f64()),
            Err(e) => {
                failed += 1;
                println!("FAIL  {name}: {e}");
            }
        }
    }
    println!("{} passed, {failed} failed", scenarios.len() - failed);
    if failed > 0 {
        std::process::exit(1);
    }
}

// ---- the worker process ----------------------------------------------

/// What a worker process is told on its command line.
#[derive(Debug, Default)]
struct Options {
    store: PathBuf,
    server: String,
    name: String,
    outcomes: PathBuf,
    /// Start this many tasks of `tool` first.
    start: usize,
    tool: String,
    /// Milliseconds each `job` works.
    job_ms: u64,
    lease_ms: u64,
    /// Hang (for the test to kill) right after this store write:
    /// `record_answer`, or `save-taken` (after `tasks/update`, before it
    /// is saved).
    hang_after: Option<String>,
    /// Append a line to this file each time the input handler is asked.
    asked: Option<PathBuf>,
    /// End once this many outcomes were delivered.
    expect: usize,
}

impl Options {
    fn parse(args: &[String]) -> Options {
        let mut o = Options {
            tool: "job".into(),
            job_ms: 300,
            lease_ms: 5_000,
            ..Options::default()
        };
        for pair in args.chunks(2) {
            let [flag, value] = pair else {
                panic!("an option without a value: {pair:?}")
            };
            match flag.as_str() {
                "--store" => o.store = value.into(),
                "--server" => o.server = value.clone(),
                "--name" => o.name = value.clone(),
                "--outcomes" => o.outcomes = value.into(),
                "--start" => o.start = value.parse().unwrap(),
                "--tool" => o.tool = value.clone(),
                "--job-ms" => o.job_ms = value.parse().unwrap(),
                "--lease-ms" => o.lease_ms = value.parse().unwrap(),
                "--hang-after" => o.hang_after = Some(value.clone()),
                "--asked" => o.asked = Some(value.into()),
                "--expect" => o.expect = value.parse().unwrap(),
                _ => panic!("unknown option {flag}"),
            }
        }
        o
    }

    fn args(&self) -> Vec<String> {
        let mut a = vec![
            "--worker".into(),
            "--store".into(),
            self.store.display().to_string(),
            "--server".into(),
            self.server.clone(),
            "--name".into(),
            self.name.clone(),
            "--outcomes".into(),
            self.outcomes.display().to_string(),
            "--start".into(),
            self.start.to_string(),
            "--tool".into(),
            self.tool.clone(),
            "--job-ms".into(),
            self.job_ms.to_string(),
            "--lease-ms".into(),
            self.lease_ms.to_string(),
            "--expect".into(),
            self.expect.to_string(),
        ];
        if let Some(h) = &self.hang_after {
            a.extend(["--hang-after".into(), h.clone()]);
        }
        if let Some(f) = &self.asked {
            a.extend(["--asked".into(), f.display().to_string()]);
        }
        a
    }
}

async fn worker(o: Options) -> Fallible {
    let store = o.store.display().to_string();
    // `pg:` and a connection string: Postgres; else a SQLite file.
    if let Some(url) = store.strip_prefix("pg:") {
        let store = PostgresStore::connect(url)
            .await
            .map_err(|e| format!("connect the store: {e}"))?;
        work(o, store).await
    } else {
        let store = SqliteStore::open(&o.store)
            .await
            .map_err(|e| format!("open the store: {e}"))?;
        work(o, store).await
    }
}

async fn work<S: TaskStore>(o: Options, store: S) -> Fallible {
    let asked = o.asked.clone();
    let handlers = InputHandlers::new().elicitation_form(move |_| {
        let asked = asked.clone();
        async move {
            if let Some(f) = asked {
                append(&f, "asked")?;
            }
            Ok(ElicitResult::accept(json!({"answer": "forty-two"})))
        }
    });
    let client = Client::builder()
        .server_id("demo")
        .input_handlers(handlers)
        .connect(Http::new(o.server.as_str()))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let store = Hanging {
        inner: store,
        after: o.hang_after.clone(),
    };
    let tracker = Tracker::builder(store, client.clone())
        .worker(o.name.clone())
        .lease(Duration::from_millis(o.lease_ms))
        .min_poll_interval(Duration::from_millis(20))
        .build();
    // Started 32 at a time: each is recorded before its call returns.
    let mut calls = tokio::task::JoinSet::new();
    for i in 0..o.start {
        if calls.len() >= 32 {
            calls.join_next().await.unwrap().unwrap()?;
        }
        let (tracker, client) = (tracker.clone(), client.clone());
        let (tool, job_ms) = (o.tool.clone(), o.job_ms);
        calls.spawn(async move {
            let label = Label::tool(tool.as_str()).key(format!("{tool}-{i}"));
            tracker
                .call_tool(client.task(), label, json!({"n": i, "ms": job_ms}))
                .await
                .map(drop)
                .map_err(|e| format!("call {i}: {e}"))
        });
    }
    while let Some(done) = calls.join_next().await {
        done.unwrap()?;
    }
    println!("started");
    std::io::stdout().flush().ok();

    let outcomes = o.outcomes.clone();
    let run = tracker.run(move |d| {
        let line = format!("{} {}", d.key().unwrap_or("?"), d.ending().name());
        let written = append(&outcomes, &line);
        async move { written.is_ok() }
    });
    let expect = o.expect;
    let done = async {
        loop {
            tokio::time::sleep(Duration::from_millis(200)).await;
            let delivered = tracker
                .store()
                .list(&Filter::all().state(RecordState::Delivered))
                .await;
            if delivered.is_ok_and(|r| r.len() >= expect) {
                return;
            }
        }
    };
    tokio::select! {
        r = run => r.map_err(|e| e.to_string())?,
        () = done => {}
    }
    Ok(())
}

fn append(file: &Path, line: &str) -> Result<(), std::io::Error> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?;
    // One write: with several processes appending, a line written in
    // pieces could be cut by another's.
    f.write_all(format!("{line}\n").as_bytes())?;
    f.sync_data()
}

/// A store that hangs the process right after one kind of write, so that a
/// test can kill it at that point.
struct Hanging<S> {
    inner: S,
    after: Option<String>,
}

impl<S> Hanging<S> {
    async fn hang_if(&self, point: &str) {
        if self.after.as_deref() == Some(point) {
            println!("hanging after {point}");
            std::io::stdout().flush().ok();
            std::future::pending::<()>().await;
        }
    }
}

impl<S: TaskStore> TaskStore for Hanging<S> {
    async fn insert(&self, task: NewTask) -> StoreResult<RecordId> {
        self.inner.insert(task).await
    }
    async fn get(&self, id: RecordId) -> StoreResult<Option<TaskRecord>> {
        self.inner.get(id).await
    }
    async fn claim(&self, claim: Claim<'_>) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        self.inner.claim(claim).await
    }
    async fn renew(&self, id: RecordId, fence: Fence, until: SystemTime) -> StoreResult<()> {
        self.inner.renew(id, fence, until).await
    }
    async fn record_answer(
        &self,
        id: RecordId,
        fence: Fence,
        key: &str,
        response: &InputResponse,
    ) -> StoreResult<()> {
        self.inner.record_answer(id, fence, key, response).await?;
        self.hang_if("record_answer").await;
        Ok(())
    }
    async fn save(&self, id: RecordId, fence: Fence, progress: Progress) -> StoreResult<()> {
        if !progress.taken.is_empty() {
            self.hang_if("save-taken").await;
        }
        self.inner.save(id, fence, progress).await
    }
    async fn finish(&self, id: RecordId, fence: Fence, ending: &Ending) -> StoreResult<()> {
        self.inner.finish(id, fence, ending).await
    }
    async fn acknowledge(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        self.inner.acknowledge(id, fence).await
    }
    async fn request_cancel(&self, id: RecordId, now: SystemTime) -> StoreResult<bool> {
        self.inner.request_cancel(id, now).await
    }
    async fn remove(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        self.inner.remove(id, fence).await
    }
    async fn list(&self, filter: &Filter) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        self.inner.list(filter).await
    }
    async fn next_due(&self) -> StoreResult<Option<SystemTime>> {
        self.inner.next_due().await
    }
}

// ---- the test's side ---------------------------------------------------

/// A demo server on a loopback port; killed on drop.
struct Demo {
    child: Child,
    url: String,
}

impl Demo {
    fn start(addr: &str, extra: &[&str]) -> Fallible<Demo> {
        let mut child = Command::new(DEMO)
            .args(["--http", addr])
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .map_err(|e| format!("start the demo server: {e}"))?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .map_err(|e| e.to_string())?;
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .ok_or_else(|| format!("the demo server said {line:?}"))?
            .to_owned();
        Ok(Demo { child, url })
    }

    /// The host and port it listens on.
    fn addr(&self) -> String {
        let rest = self.url.strip_prefix("http://").unwrap_or(&self.url);
        rest.split('/').next().unwrap_or(rest).to_owned()
    }

    fn counters(&self) -> Fallible<Value> {
        let url = self.url.replace("/mcp", "/counters");
        let body = http_get(&url)?;
        serde_json::from_str(&body).map_err(|e| format!("counters: {e}: {body}"))
    }
}

impl Drop for Demo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A GET over a plain TCP connection (loopback), its body.
fn http_get(url: &str) -> Fallible<String> {
    use std::io::Read;
    let rest = url.strip_prefix("http://").ok_or("not http")?;
    let (host, path) = rest.split_once('/').ok_or("no path")?;
    let mut s = std::net::TcpStream::connect(host).map_err(|e| e.to_string())?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    write!(
        s,
        "GET /{path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n"
    )
    .map_err(|e| e.to_string())?;
    let mut text = String::new();
    s.read_to_string(&mut text).map_err(|e| e.to_string())?;
    let (_, body) = text.split_once("\r\n\r\n").ok_or("no body")?;
    Ok(body.to_owned())
}

/// A folder of a scenario's own; removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Scratch {
        let dir =
            std::env::temp_dir().join(format!("mcp-tasks-workers-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn spawn(o: &Options) -> Fallible<Child> {
    Command::new(std::env::current_exe().unwrap())
        .args(o.args())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| e.to_string())
}

/// Waits for a worker to print `line` on its stdout.
fn wait_for_line(child: &mut Child, line: &str) -> Fallible {
    let out = child.stdout.take().ok_or("no stdout")?;
    let (tx, rx) = std::sync::mpsc::channel();
    let want = line.to_owned();
    std::thread::spawn(move || {
        for l in BufReader::new(out).lines() {
            let Ok(l) = l else { break };
            if l == want {
                let _ = tx.send(());
            }
        }
    });
    rx.recv_timeout(LIMIT)
        .map_err(|_| format!("the worker never printed {line:?}"))
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
        ..Options::default()
    }
}

/// Every key of `n` tasks handled, and at most one twice (the one a killed
/// worker may have handled but not acknowledged).
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
    if twice > 1 {
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

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
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
    let c = demo.counters()?;
    if c["totals"]["answers"] != 1 {
        return Err(format!(
            "the server took {} answers",
            c["totals"]["answers"]
        ));
    }
    Ok(())
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
    let Some((cluster, pg)) = postgres::start() else {
        println!(
            "      skipped: no Postgres here (MCP_TASKS_REQUIRE_POSTGRES=1 makes this a failure)"
        );
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
    let mut w1 = spawn(&Options {
        start: N,
        ..Options::parse(&base.args()[1..])
    })?;
    let mut others = Vec::new();
    for name in ["w2", "w3"] {
        others.push(spawn(&Options {
            name: name.into(),
            ..Options::parse(&base.args()[1..])
        })?);
    }
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
