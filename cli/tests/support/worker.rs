//! The worker process of the tracker's tests and benchmarks, and the
//! demo server it works against: a binary that includes this module runs
//! itself with `--worker` to get a worker process ([`spawn`]).
#![allow(
    dead_code,
    reason = "the test and the benchmark use different parts of it"
)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::ElicitResult;
use mcp_tasks::store::{
    Filter, Label, PostgresStore, RecordState, SqliteStore, StoreResult, TaskStore, Tracker,
    Tracking,
};
use mcp_tasks::testing::{HookedStore, StoreCall, StoreReply};
use mcp_tasks::{Client, Http};
use serde_json::{Value, json};

/// The demo server's binary.
pub const DEMO: &str = env!("CARGO_BIN_EXE_mcp-tasks-demo");

/// The bound on any one wait.
pub const LIMIT: Duration = Duration::from_secs(120);

/// What a scenario returns: an error in words.
pub type Fallible<T = ()> = Result<T, String>;

// ---- the worker process ----------------------------------------------

/// What a worker process is told on its command line.
#[derive(Debug, Default)]
pub struct Options {
    pub store: PathBuf,
    pub server: String,
    pub name: String,
    pub outcomes: PathBuf,
    /// Start this many tasks of `tool` first.
    pub start: usize,
    pub tool: String,
    /// Milliseconds each `job` works.
    pub job_ms: u64,
    pub lease_ms: u64,
    /// Hang (for the test to kill) right after this store call:
    /// `record_answer`, `claim-answered` (a claim that holds an answer not
    /// sent yet), or `save-taken` (after `tasks/update`, before it is
    /// saved).
    pub hang_after: Option<String>,
    /// Append a line to this file each time the input handler is asked.
    pub asked: Option<PathBuf>,
    /// Whether the worker answers questions itself (an input handler);
    /// without, they wait for an answer from another process.
    pub handler: bool,
    /// End once this many outcomes were delivered; with 0, run until
    /// killed (or stopped with SIGTERM, which shuts the tracker down).
    pub expect: usize,
    /// Print `start KEY RECORD HOW` for each task started (`HOW`:
    /// `tracked`, `known` or `immediate`).
    pub report: bool,
    /// End once the tasks are started, without running the tracker.
    pub exit_after_start: bool,
    /// The tracker's `stop_within`, in milliseconds (default 10 s).
    pub stop_within_ms: Option<u64>,
    /// Once connected, print `ready` and start nothing before this file
    /// exists (so that two processes start at once).
    pub go: Option<PathBuf>,
}

impl Options {
    /// Reads the options after `--worker`.
    pub fn parse(args: &[String]) -> Options {
        let mut o = Options {
            tool: "job".into(),
            job_ms: 300,
            lease_ms: 5_000,
            handler: true,
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
                "--handler" => o.handler = value.parse().unwrap(),
                "--report" => o.report = value.parse().unwrap(),
                "--exit-after-start" => o.exit_after_start = value.parse().unwrap(),
                "--stop-within-ms" => o.stop_within_ms = Some(value.parse().unwrap()),
                "--go" => o.go = Some(value.into()),
                _ => panic!("unknown option {flag}"),
            }
        }
        o
    }

    /// The command line that gives these options back.
    pub fn args(&self) -> Vec<String> {
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
            "--handler".into(),
            self.handler.to_string(),
            "--report".into(),
            self.report.to_string(),
            "--exit-after-start".into(),
            self.exit_after_start.to_string(),
        ];
        if let Some(f) = &self.go {
            a.extend(["--go".into(), f.display().to_string()]);
        }
        if let Some(ms) = self.stop_within_ms {
            a.extend(["--stop-within-ms".into(), ms.to_string()]);
        }
        if let Some(h) = &self.hang_after {
            a.extend(["--hang-after".into(), h.clone()]);
        }
        if let Some(f) = &self.asked {
            a.extend(["--asked".into(), f.display().to_string()]);
        }
        a
    }
}

/// A worker process: opens the store `o` names and works its tasks.
pub async fn worker(o: Options) -> Fallible {
    let store = o.store.display().to_string();
    // `pg:` and a connection string: Postgres; else a SQLite file.
    if let Some(url) = store.strip_prefix("pg:") {
        // Each worker migrates first (an advisory lock makes that once),
        // as a deploy would before starting them.
        PostgresStore::migrate(url)
            .await
            .map_err(|e| format!("migrate the store: {e}"))?;
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

/// Starts `o.start` tasks, then runs the tracker until `o.expect`
/// outcomes were delivered (or forever, with 0), or until SIGTERM, which
/// shuts it down (`stopped` on stdout once it gave its records back).
pub async fn work<S: TaskStore>(o: Options, store: S) -> Fallible {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate()).map_err(|e| format!("SIGTERM: {e}"))?;
    let asked = o.asked.clone();
    let handlers = if o.handler {
        InputHandlers::new().elicitation_form(move |_| {
            let asked = asked.clone();
            async move {
                if let Some(f) = asked {
                    append(&f, "asked")?;
                }
                Ok(ElicitResult::accept(json!({"answer": "forty-two"})))
            }
        })
    } else {
        InputHandlers::new()
    };
    let client = Client::builder()
        .server_id("demo")
        .input_handlers(handlers)
        .connect(Http::new(o.server.as_str()))
        .await
        .map_err(|e| format!("connect: {e}"))?;
    let (store, _calls) = probe(store, o.hang_after.clone());
    let tracker = tracker(store, &client, &o);
    if let Some(go) = &o.go {
        println!("ready");
        std::io::stdout().flush().ok();
        let waited = tokio::time::timeout(LIMIT, async {
            while !go.exists() {
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        });
        waited.await.map_err(|_| "never told to go".to_string())?;
    }
    // Started 32 at a time: each is recorded before its call returns.
    let mut calls: tokio::task::JoinSet<Fallible> = tokio::task::JoinSet::new();
    for i in 0..o.start {
        if calls.len() >= 32 {
            calls.join_next().await.unwrap().unwrap()?;
        }
        let (tracker, client) = (tracker.clone(), client.clone());
        let (tool, job_ms, report) = (o.tool.clone(), o.job_ms, o.report);
        calls.spawn(async move {
            let key = format!("{tool}-{i}");
            let label = Label::tool(tool.as_str()).key(key.as_str());
            let started = tracker
                .call_tool(client.task(), label, json!({"n": i, "ms": job_ms}))
                .await
                .map_err(|e| format!("call {i}: {e}"))?;
            if report {
                let how = match &started {
                    Tracking::Tracked(_) => "tracked",
                    Tracking::Known(_) => "known",
                    _ => "immediate",
                };
                let id = started.record().map_or("-".into(), |id| id.to_string());
                println!("start {key} {id} {how}");
            }
            Ok(())
        });
    }
    while let Some(done) = calls.join_next().await {
        done.unwrap()?;
    }
    println!("started");
    std::io::stdout().flush().ok();
    if o.exit_after_start {
        return Ok(());
    }

    let outcomes = o.outcomes.clone();
    let run = tracker.run(move |d| {
        let line = format!("{} {}", d.key().unwrap_or("?"), d.ending().name());
        let written = append(&outcomes, &line);
        async move { written.is_ok() }
    });
    let expect = o.expect;
    let done = async {
        if expect == 0 {
            std::future::pending::<()>().await;
        }
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
    tokio::pin!(run);
    tokio::select! {
        r = &mut run => r.map_err(|e| e.to_string())?,
        () = done => {}
        _ = term.recv() => {
            let ((), ran) = tokio::join!(tracker.shutdown(), &mut run);
            ran.map_err(|e| e.to_string())?;
            println!("stopped");
            std::io::stdout().flush().ok();
        }
    }
    Ok(())
}

/// The tracker of a worker process, with the settings of `o`.
pub fn tracker<S: TaskStore>(store: S, client: &Client, o: &Options) -> Tracker<S, Client> {
    let builder = Tracker::builder(store, client.clone())
        .worker(o.name.clone())
        .lease(Duration::from_millis(o.lease_ms))
        .min_poll_interval(Duration::from_millis(20));
    match o.stop_within_ms {
        Some(ms) => builder.stop_within(Duration::from_millis(ms)).build(),
        None => builder.build(),
    }
}

/// Appends `line` to `file`, synced.
pub fn append(file: &Path, line: &str) -> Result<(), std::io::Error> {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)?;
    // One write: with several processes appending, a line written in
    // pieces could be cut by another's.
    f.write_all(format!("{line}\n").as_bytes())?;
    f.sync_data()
}

/// How often each method of a [`probe`]d store was called.
#[derive(Debug, Default)]
pub struct Calls {
    /// `claim`.
    pub claim: AtomicU64,
    /// `save`.
    pub save: AtomicU64,
    /// `next_due`.
    pub next_due: AtomicU64,
    /// Every other method.
    pub other: AtomicU64,
}

impl Calls {
    /// `(claim, save, next_due, other)` so far.
    pub fn read(&self) -> [u64; 4] {
        [&self.claim, &self.save, &self.next_due, &self.other].map(|c| c.load(Ordering::Relaxed))
    }
}

/// `inner`, counting the calls made to it (the returned [`Calls`]), and
/// hanging the process at one point (`after`: `call-answered`,
/// `claim-answered`, `record_answer` or `save-taken`), so that a test can
/// kill it there.
pub fn probe<S: TaskStore>(inner: S, after: Option<String>) -> (HookedStore<S>, Arc<Calls>) {
    let calls = Arc::new(Calls::default());
    let (before, counted) = (after.clone(), calls.clone());
    let store = HookedStore::new(inner)
        .before_async(move |call| {
            let c = match call {
                StoreCall::Claim { .. } => &counted.claim,
                StoreCall::Save { .. } => &counted.save,
                StoreCall::NextDue => &counted.next_due,
                _ => &counted.other,
            };
            c.fetch_add(1, Ordering::Relaxed);
            hang_at(
                before.as_deref(),
                match call {
                    StoreCall::Start { .. } => "call-answered",
                    // Sending answers the server took, before they are marked so.
                    StoreCall::Save { progress, .. } if !progress.taken.is_empty() => "save-taken",
                    _ => "",
                },
            )
        })
        .after_async(move |call, reply| {
            hang_at(
                after.as_deref(),
                match (call, reply) {
                    // Holding an answer given elsewhere, before it is sent.
                    (StoreCall::Claim { .. }, Ok(StoreReply::Records(claimed)))
                        if claimed
                            .iter()
                            .flatten()
                            .any(|r| r.answers.values().any(|a| !a.taken)) =>
                    {
                        "claim-answered"
                    }
                    (StoreCall::RecordAnswer { .. }, Ok(_)) => "record_answer",
                    _ => "",
                },
            )
        });
    (store, calls)
}

/// Hangs for ever, saying so first, when `point` is where the worker was
/// told to hang (`after`).
fn hang_at(
    after: Option<&str>,
    point: &'static str,
) -> impl Future<Output = StoreResult<()>> + Send + use<> {
    let hang = after == Some(point);
    async move {
        if hang {
            println!("hanging after {point}");
            std::io::stdout().flush().ok();
            std::future::pending::<()>().await;
        }
        Ok(())
    }
}

// ---- the test's side ---------------------------------------------------

/// A demo server on a loopback port; killed on drop.
pub struct Demo {
    pub child: Child,
    pub url: String,
}

impl Demo {
    /// Starts the demo server on `addr` with `extra` options.
    pub fn start(addr: &str, extra: &[&str]) -> Fallible<Demo> {
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
    pub fn addr(&self) -> String {
        let rest = self.url.strip_prefix("http://").unwrap_or(&self.url);
        rest.split('/').next().unwrap_or(rest).to_owned()
    }

    /// Its `GET /counters`.
    pub fn counters(&self) -> Fallible<Value> {
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
pub fn http_get(url: &str) -> Fallible<String> {
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
pub struct Scratch(pub PathBuf);

impl Scratch {
    /// A new, empty folder named after `name` and this process.
    pub fn new(name: &str) -> Scratch {
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

/// Starts a worker process: this binary with `--worker` and `o`.
pub fn spawn(o: &Options) -> Fallible<Child> {
    Command::new(std::env::current_exe().unwrap())
        .args(o.args())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .map_err(|e| e.to_string())
}

/// Waits for a worker to print `line` on its stdout.
pub fn wait_for_line(child: &mut Child, line: &str) -> Fallible {
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

/// The lines a worker prints, read on a thread of their own, for a test
/// that waits for more than one.
pub struct Lines(std::sync::mpsc::Receiver<String>);

impl Lines {
    /// Reads `child`'s stdout from now on.
    pub fn of(child: &mut Child) -> Fallible<Lines> {
        let out = child.stdout.take().ok_or("no stdout")?;
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in BufReader::new(out).lines() {
                let Ok(l) = l else { break };
                if tx.send(l).is_err() {
                    break;
                }
            }
        });
        Ok(Lines(rx))
    }

    /// Every line until the process closes its stdout, within `LIMIT`.
    pub fn rest(&self) -> Fallible<Vec<String>> {
        let deadline = std::time::Instant::now() + LIMIT;
        let mut out = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.0.recv_timeout(left) {
                Ok(l) => out.push(l),
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Ok(out),
                Err(_) => return Err("the worker never closed its stdout".into()),
            }
        }
    }

    /// Waits for `line`, skipping the lines before it, within `LIMIT`.
    pub fn until(&self, line: &str) -> Fallible {
        let deadline = std::time::Instant::now() + LIMIT;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            match self.0.recv_timeout(left) {
                Ok(l) if l == line => return Ok(()),
                Ok(_) => {}
                Err(_) => return Err(format!("the worker never printed {line:?}")),
            }
        }
    }
}

/// A current-thread runtime, as a worker runs on.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}
