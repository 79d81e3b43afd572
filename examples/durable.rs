//! Tasks that survive a crash: a worker starts 200 tasks, is killed with
//! SIGKILL half way, and a new worker delivers every outcome.
//!
//! ```text
//! cargo run --example durable --features sqlite
//! ```
//!
//! Three processes, all this program:
//! - `serve`: the scripted task server (the demo server's engine) on a
//!   loopback port, which outlives the workers;
//! - `work DB ADDR N`: a worker that starts `N` tasks, each recorded in the
//!   SQLite file `DB` before anything else happens, then runs a
//!   [`Tracker`] that reads them and hands each ending to the application
//!   (here: a line appended to `DB.outcomes`), acknowledging it after;
//! - with no arguments: the demonstration, which starts the server and a
//!   worker, kills the worker mid-run, starts another on the same file and
//!   counts the outcomes.
//!
//! Delivery is at least once: a worker killed between handling an outcome
//! and acknowledging it hands it over again. An application makes handling
//! idempotent (here: by the task's key), and then every outcome counts once.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use mcp_tasks::protocol::CallToolResult;
use mcp_tasks::store::{Filter, Label, RecordState, SqliteStore, TaskStore, Tracker};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::{Client, LineTransport};
use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::{TcpListener, TcpStream};

const TASKS: usize = 200;

type Fallible<T = ()> = Result<T, Box<dyn std::error::Error + Send + Sync>>;

#[tokio::main]
async fn main() -> Fallible {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.iter().map(String::as_str).collect::<Vec<_>>()[..] {
        [] => demonstrate().await,
        ["serve"] => serve().await,
        ["work", db, addr, n] => work(Path::new(db), addr, n.parse()?).await,
        _ => Err("usage: durable [serve | work DB ADDR N]".into()),
    }
}

/// The server: a task of about a second per call, on a loopback port.
async fn serve() -> Fallible {
    let ms = Duration::from_millis;
    let server = Arc::new(
        TestServer::new().tool(ScriptedTool::task(
            "job",
            TaskScript::new()
                .poll_interval(ms(100))
                .working(ms(400), "half way")
                .complete(ms(400), CallToolResult::text("done")),
        )),
    );
    let listener = TcpListener::bind("127.0.0.1:0").await?;
    println!("{}", listener.local_addr()?);
    std::io::stdout().flush()?;
    loop {
        let (stream, _) = listener.accept().await?;
        let server = server.clone();
        tokio::spawn(async move {
            let (read, write) = stream.into_split();
            let _ = server.serve(LineTransport::new(read, write)).await;
        });
    }
}

/// A worker: starts `n` tasks, then tracks every task in the store until
/// each outcome was handled.
async fn work(db: &Path, addr: &str, n: usize) -> Fallible {
    let (read, write) = TcpStream::connect(addr).await?.into_split();
    let client = Client::connect(LineTransport::new(read, write)).await?;
    let store = SqliteStore::open(db).await?;
    let tracker = Tracker::builder(store, client.clone()).build();

    for i in 0..n {
        let label = Label::tool("job").key(format!("job-{i}"));
        tracker
            .call_tool(client.task(), label, json!({ "n": i }))
            .await?;
    }

    let outcomes = outcomes_file(db);
    let worker = tracker.clone();
    let run = worker.run(move |delivery| {
        let outcomes = outcomes.clone();
        async move {
            // The application's handling: append the outcome, durably.
            let line = format!(
                "{} {}\n",
                delivery.key().unwrap_or("?"),
                delivery.ending().name()
            );
            let written = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&outcomes)
                .and_then(|mut f| f.write_all(line.as_bytes()).and_then(|()| f.sync_data()));
            // Acknowledged only once handled; otherwise offered again.
            written.is_ok()
        }
    });
    tokio::select! {
        r = run => r?,
        r = all_delivered(&tracker) => r?,
    }
    Ok(())
}

/// Resolves once no task is open and no outcome awaits delivery.
async fn all_delivered(tracker: &Tracker<SqliteStore, Client>) -> Fallible {
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let store = tracker.store();
        let open = store
            .list(&Filter::all().state(RecordState::Open).limit(1))
            .await?;
        let waiting = store
            .list(&Filter::all().state(RecordState::Undelivered).limit(1))
            .await?;
        if open.is_empty() && waiting.is_empty() {
            return Ok(());
        }
    }
}

fn outcomes_file(db: &Path) -> PathBuf {
    db.with_extension("outcomes")
}

/// The outcomes handled so far, by key.
fn handled(db: &Path) -> BTreeMap<String, usize> {
    let mut seen = BTreeMap::new();
    let text = std::fs::read_to_string(outcomes_file(db)).unwrap_or_default();
    for line in text.lines() {
        let key = line.split(' ').next().unwrap_or_default().to_owned();
        *seen.entry(key).or_insert(0) += 1;
    }
    seen
}

async fn demonstrate() -> Fallible {
    let me = std::env::current_exe()?;
    let dir = std::env::temp_dir().join(format!("mcp-tasks-durable-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("tasks.db");

    let mut server = tokio::process::Command::new(&me)
        .arg("serve")
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()?;
    let mut lines = BufReader::new(server.stdout.take().ok_or("no stdout")?).lines();
    let addr = lines.next_line().await?.ok_or("the server did not start")?;
    println!("server on {addr}");

    // The first worker: starts every task, and is killed half way.
    let mut first = Command::new(&me)
        .args([
            "work",
            db.to_str().ok_or("path")?,
            &addr,
            &TASKS.to_string(),
        ])
        .spawn()?;
    while handled(&db).len() < TASKS / 4 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    first.kill()?; // SIGKILL: no clean-up, no goodbye
    first.wait()?;
    let before = handled(&db).len();
    let store = SqliteStore::open(&db).await?;
    let open = store
        .list(&Filter::all().state(RecordState::Open))
        .await?
        .len();
    println!("worker 1 killed: {before} of {TASKS} outcomes handled, {open} tasks still open");

    // The second worker: starts nothing, finishes everything.
    let status = Command::new(&me)
        .args(["work", db.to_str().ok_or("path")?, &addr, "0"])
        .status()?;
    if !status.success() {
        return Err(format!("worker 2 failed: {status}").into());
    }
    let seen = handled(&db);
    let again: usize = seen.values().map(|n| n - 1).sum();
    println!(
        "worker 2 done: {} of {TASKS} outcomes handled ({again} offered twice: \
         handled between the outcome and its acknowledgement when worker 1 died)",
        seen.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
    if seen.len() != TASKS {
        return Err("outcomes are missing".into());
    }
    Ok(())
}
