//! Faults of real child processes: a server that exits in the middle of a
//! task, and children that would outlive the client if it let them.
//!
//! Like `transport_stdio.rs`, this binary is its own server: started with
//! `--serve <mode>` it plays the child. In `relay` mode it is a server
//! process in front of a durable task store: it relays its stdin and stdout
//! to a `TestServer` that the test runs on a loopback socket, so the
//! process can die while the tasks it served live on, as with a server
//! that keeps its tasks in a database.

#[path = "support/calls.rs"]
mod calls;
#[path = "support/runner.rs"]
mod runner;
#[path = "support/time.rs"]
mod time;

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::time::Duration;

use calls::start_pending;
use mcp_tasks::protocol::CallToolResult;
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::transport::{
    LineTransport, MessageSink, MessageStream, Outbound, Stderr, Stdio, Transport,
};
use mcp_tasks::{Client, TaskState};
use serde_json::json;
use time::ms;

/// `relay <port> <die_at> [<exit_after_ms>]`: relays stdin to the socket and
/// the socket to stdout; exits with status 3, without relaying it, on
/// reading line `die_at` of stdin (never, for 0), or of its own accord
/// `exit_after_ms` after starting.
fn relay(port: &str, die_at: usize, exit_after: Option<u64>) {
    if let Some(after) = exit_after {
        std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(after));
            std::process::exit(3);
        });
    }
    let socket = TcpStream::connect(("127.0.0.1", port.parse::<u16>().unwrap())).unwrap();
    let mut upstream = socket.try_clone().unwrap();
    std::thread::spawn(move || {
        let mut stdout = std::io::stdout();
        for line in BufReader::new(socket).lines() {
            let Ok(line) = line else { break };
            if writeln!(stdout, "{line}")
                .and_then(|()| stdout.flush())
                .is_err()
            {
                break;
            }
        }
        std::process::exit(0);
    });
    for (n, line) in std::io::stdin().lock().lines().enumerate() {
        let Ok(line) = line else { break };
        if n + 1 == die_at {
            std::process::exit(3);
        }
        if writeln!(upstream, "{line}").is_err() {
            break;
        }
    }
}

/// `stubborn`: reads stdin to its end, then does not exit.
fn stubborn() {
    let mut sink = Vec::new();
    let _ = std::io::copy(&mut std::io::stdin().lock(), &mut sink);
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

/// `flood <n>`: writes `n` requests (`ping`, with every fourth a
/// `roots/list`, which a 2026-07-28 client refuses) before it reads a
/// byte of its stdin; then reads its stdin, and answers the `tools/call`
/// it finds there once every request has been answered, saying how many
/// answers came and how many ids were answered more than once.
fn flood(n: u64) {
    let mut stdout = std::io::BufWriter::new(std::io::stdout().lock());
    for id in 0..n {
        let method = if id % 4 == 3 { "roots/list" } else { "ping" };
        let request = json!({"jsonrpc": "2.0", "id": id, "method": method});
        writeln!(stdout, "{request}").unwrap();
    }
    stdout.flush().unwrap();
    let mut answered = std::collections::HashSet::new();
    let (mut twice, mut call) = (0, None);
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let message: serde_json::Value = serde_json::from_str(&line).unwrap();
        if message["method"] == "tools/call" {
            call = Some(message["id"].clone());
        } else if let Some(id) = message["id"].as_u64()
            && !answered.insert(id)
        {
            twice += 1;
        }
        if answered.len() as u64 == n
            && let Some(id) = call.take()
        {
            let text = format!("{} answered, {twice} twice", answered.len());
            let result = json!({"jsonrpc": "2.0", "id": id,
                "result": {"content": [{"type": "text", "text": text}]}});
            writeln!(stdout, "{result}").unwrap();
            stdout.flush().unwrap();
        }
    }
}

/// A durable task store: a `TestServer` on a loopback port, serving at most
/// `connections` connections.
async fn store(server: TestServer, connections: usize) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        for _ in 0..connections {
            let Ok((socket, _)) = listener.accept().await else {
                return;
            };
            let (read, write) = socket.into_split();
            let server = server.clone();
            tokio::spawn(async move { server.serve(LineTransport::new(read, write)).await });
        }
    });
    port
}

fn relay_child(port: u16, die_at: usize) -> Stdio {
    Stdio::command(std::env::current_exe().unwrap())
        .args(["--serve", "relay", &port.to_string(), &die_at.to_string()])
        .stderr(Stderr::Null)
}

/// A child that exits between two reads of a task polled every 20 s: the
/// wait learns it when the child's stdout closes, not at the next read.
async fn a_child_that_exits_between_reads_fails_the_wait_at_once() {
    let server = TestServer::new().tool(ScriptedTool::task(
        "export",
        TaskScript::new()
            .poll_interval(Duration::from_secs(20))
            .complete(Duration::from_secs(600), CallToolResult::text("late")),
    ));
    let port = store(server.clone(), 1).await;
    let child = Stdio::command(std::env::current_exe().unwrap())
        .args(["--serve", "relay", &port.to_string(), "0", "1500"])
        .stderr(Stderr::Null);
    let client = Client::connect(child).await.unwrap();
    let task = start_pending(client.task().timeout(Duration::from_secs(10)), "export").await;
    // The next read would come at 20 s, after the 10 s bound: a wait that
    // only learns of the exit by reading would end `is_deadline`.
    let err = task.finish().await.unwrap_err();
    assert!(err.error().is_transport(), "{}", err.error());
    assert!(!err.error().is_deadline(), "{}", err.error());
    assert!(client.closed_reason().is_some());
    let TaskState::Pending(task) = err.into_task() else {
        panic!("the handle comes back pending")
    };
    assert_eq!(&server.task_ids()[0], task.id());
}

async fn server_exit_mid_task_fails_the_wait_and_the_task_resumes_on_a_fresh_server() {
    let server = TestServer::new().tool(ScriptedTool::task(
        "export",
        TaskScript::new()
            .poll_interval(ms(50))
            .complete(ms(500), CallToolResult::text("exported")),
    ));
    let port = store(server.clone(), 2).await;
    let connect = |die_at| {
        Client::builder()
            .server_id("export-server")
            .request_timeout(Duration::from_secs(10))
            .connect(relay_child(port, die_at))
    };

    // The process dies on reading its third line (after the connect probe
    // and tools/call): the first tasks/get.
    let client = connect(3).await.unwrap();
    let TaskState::Pending(task) = client.task().call_tool("export", json!({})).await.unwrap()
    else {
        panic!("expected a pending task")
    };
    let saved = serde_json::to_string(&task.reference()).unwrap();
    let err = task.finish().await.unwrap_err();
    assert!(err.error().is_transport(), "{}", err.error());
    assert!(
        !err.error().is_outcome_unknown(),
        "a read has no outcome to lose"
    );
    assert_eq!(client.stats().pending_requests, 0);
    assert!(client.closed_reason().is_some());
    let TaskState::Pending(_) = err.into_task() else {
        panic!("the handle comes back pending")
    };
    // Later requests fail at once.
    assert!(client.list_tools().await.unwrap_err().is_transport());
    drop(client);

    // A fresh server process in front of the same store still has the task.
    let client = connect(0).await.unwrap();
    let reference: mcp_tasks::TaskRef = serde_json::from_str(&saved).unwrap();
    let done = client
        .task()
        .resume(&reference)
        .await
        .unwrap()
        .await
        .unwrap();
    assert_eq!(done.into_result().unwrap().joined_text(), "exported");
    assert_eq!(server.count("tools/call"), 1, "the tool ran once");
}

fn pidfile(case: &str) -> PathBuf {
    std::env::temp_dir().join(format!("mcp-tasks-{case}-{}.pid", std::process::id()))
}

fn stubborn_child(pidfile: &Path) -> Stdio {
    Stdio::command(std::env::current_exe().unwrap())
        .args(["--serve", "stubborn"])
        .env("MCP_TASKS_PIDFILE", pidfile)
        .stderr(Stderr::Null)
}

/// A client of a child that ignores its stdin closing (its pid file named
/// after `case`), given 200 ms to exit after it; the client and the
/// child's pid, checked running.
async fn stubborn_client(case: &str) -> (Client, u32) {
    let file = pidfile(case);
    let client = Client::builder()
        .protocol_version("2026-07-28")
        .connect(stubborn_child(&file).shutdown_timeout(ms(200)))
        .await
        .unwrap();
    let pid = child_pid(&file).await;
    assert!(running(pid));
    (client, pid)
}

/// The pid the child wrote, waiting for it to appear.
async fn child_pid(pidfile: &Path) -> u32 {
    for _ in 0..200 {
        if let Ok(pid) = std::fs::read_to_string(pidfile)
            && let Ok(pid) = pid.trim().parse()
        {
            let _ = std::fs::remove_file(pidfile);
            return pid;
        }
        tokio::time::sleep(ms(25)).await;
    }
    panic!("the child never wrote {}", pidfile.display());
}

/// Whether a process is still running (a zombie has ended: it only waits
/// to be reaped).
fn running(pid: u32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat
                .rsplit(')')
                .next()
                .and_then(|s| s.trim().chars().next());
            state != Some('Z')
        }
        Err(_) => false,
    }
}

async fn ends_within(pid: u32, limit: Duration) {
    let until = tokio::time::Instant::now() + limit;
    while tokio::time::Instant::now() < until {
        if !running(pid) {
            return;
        }
        tokio::time::sleep(ms(25)).await;
    }
    panic!("the child {pid} outlived the client");
}

async fn a_child_that_ignores_its_stdin_closing_is_killed() {
    let (client, pid) = stubborn_client("stubborn").await;
    drop(client);
    ends_within(pid, Duration::from_secs(5)).await;
}

async fn a_child_dies_with_the_runtime_even_if_the_client_is_never_dropped() {
    let (file, grandchild) = (pidfile("runtime"), pidfile("runtime-grandchild"));
    let (pid, left) = tokio::task::spawn_blocking(move || {
        let rt = tokio::runtime::Runtime::new().unwrap();
        let (client, pids) = rt.block_on(async {
            let server = wrapped("stubborn", false, &file, &grandchild)
                .shutdown_timeout(Duration::from_secs(3600));
            let client = Client::builder()
                .protocol_version("2026-07-28")
                .connect(server)
                .await
                .unwrap();
            let pids = (child_pid(&file).await, child_pid(&grandchild).await);
            (client, pids)
        });
        assert!(running(pids.0) && running(pids.1));
        // The runtime goes first, with the client's tasks and the child handle.
        drop(rt);
        std::mem::forget(client);
        pids
    })
    .await
    .unwrap();
    ends_within(pid, Duration::from_secs(5)).await;
    ends_within(left, Duration::from_secs(5)).await;
}

/// The connection was closed, so `close` says `Ok` (a `?` on it must not
/// fail a program that did its work); the kill is counted.
async fn close_kills_a_child_that_ignores_its_stdin_closing_and_counts_it() {
    let (client, pid) = stubborn_client("close-stubborn").await;
    let other = client.clone();
    assert_eq!(other.stats().servers_killed, 0);
    client.close().await.expect("closed, if not gracefully");
    // Killed and reaped before `close` returned.
    assert!(!running(pid), "the child {pid} outlived close");
    assert_eq!(other.stats().servers_killed, 1);
    let e = other.list_tools().await.unwrap_err();
    assert!(e.to_string().contains("the client was closed"), "{e}");
}

/// A server that floods the client with requests before it reads its
/// stdin, where a `tools/call` waits: the client must read on while its
/// writer is stuck on the full pipe, or neither side moves again (the
/// answers would wait for room the writer never makes).
async fn a_flood_of_requests_before_the_server_reads_does_not_deadlock_the_call() {
    const FLOOD: u64 = 20_000;
    let client = Client::builder()
        .protocol_version("2026-07-28")
        .request_timeout(Duration::from_secs(10))
        .connect(
            Stdio::command(std::env::current_exe().unwrap())
                .args(["--serve", "flood", &FLOOD.to_string()])
                .stderr(Stderr::Null),
        )
        .await
        .unwrap();
    let result = client.call_tool("anything", json!({})).await.unwrap();
    assert_eq!(result.joined_text(), format!("{FLOOD} answered, 0 twice"));
    assert_eq!(client.stats().dropped_answers, 0);
    client.close().await.unwrap();
}

/// The server in `mode` behind a shell that first starts a grandchild
/// (`sleep`), which holds the server's stdout, as the server behind an
/// `npx` or shell wrapper does; with `ignore_term`, both ignore SIGTERM.
/// The server writes its pid to `server`, the grandchild to `grandchild`.
fn wrapped(mode: &str, ignore_term: bool, server: &Path, grandchild: &Path) -> Stdio {
    let trap = if ignore_term { "trap '' TERM; " } else { "" };
    let script = format!("{trap}sleep 300 & echo $! > \"$GRANDCHILD\"; exec \"$0\" --serve {mode}");
    Stdio::command("sh")
        .args(["-c", &script])
        .arg(std::env::current_exe().unwrap())
        .env("MCP_TASKS_PIDFILE", server)
        .env("GRANDCHILD", grandchild)
        .stderr(Stderr::Null)
}

/// A server that exits when its stdin closes, leaving behind a process it
/// started: `close` ends that process too (before, it lived on, holding
/// the server's stdout).
async fn close_ends_the_processes_a_server_leaves_behind() {
    let (server, grandchild) = (pidfile("left-server"), pidfile("left-grandchild"));
    let client = Client::connect(wrapped("scripted", false, &server, &grandchild))
        .await
        .unwrap();
    client.list_tools().await.unwrap();
    let (pid, left) = (child_pid(&server).await, child_pid(&grandchild).await);
    assert!(running(left));
    let other = client.clone();
    client.close().await.unwrap();
    assert!(!running(pid), "the server {pid} outlived close");
    assert!(!running(left), "the grandchild {left} outlived close");
    assert_eq!(other.stats().servers_killed, 1, "its group had to be ended");
}

/// A server and the process it started both ignore their stdin closing
/// and SIGTERM: SIGKILL ends them, within the two bounds, and `close`
/// says `Ok`.
async fn close_kills_a_server_group_that_ignores_sigterm() {
    let (server, grandchild) = (pidfile("deaf-server"), pidfile("deaf-grandchild"));
    let client = Client::builder()
        .protocol_version("2026-07-28")
        .connect(
            wrapped("stubborn", true, &server, &grandchild)
                .shutdown_timeout(ms(100))
                .terminate_timeout(ms(200)),
        )
        .await
        .unwrap();
    let (pid, left) = (child_pid(&server).await, child_pid(&grandchild).await);
    assert!(running(pid) && running(left));
    let other = client.clone();
    client.close().await.expect("killed is closed");
    assert!(!running(pid), "the server {pid} outlived close");
    assert!(!running(left), "the grandchild {left} outlived close");
    assert_eq!(other.stats().servers_killed, 1);
}

/// Dropping the client ends the server's group as `close` does, in the
/// background.
async fn dropping_the_client_ends_the_server_s_process_group() {
    let (server, grandchild) = (pidfile("drop-server"), pidfile("drop-grandchild"));
    let client = Client::builder()
        .protocol_version("2026-07-28")
        .connect(wrapped("stubborn", false, &server, &grandchild).shutdown_timeout(ms(100)))
        .await
        .unwrap();
    let (pid, left) = (child_pid(&server).await, child_pid(&grandchild).await);
    drop(client);
    ends_within(pid, Duration::from_secs(5)).await;
    ends_within(left, Duration::from_secs(5)).await;
}

/// A server that closes its stdout (and its stdin) and lives on is
/// reported at once, by a read and by a send alike, not after waiting for
/// an exit status that does not come. The wait is measured on tokio's
/// paused clock, which moves only for the timers the transport sets: it
/// shows how long the transport waited, not how busy the machine was.
async fn a_server_that_closes_its_stdout_is_reported_at_once() {
    let (read, sent) = tokio::task::spawn_blocking(|| {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        rt.block_on(async {
            let (mut sink, mut stream) = Stdio::command("sh")
                .args(["-c", "exec <&- >&-; exec sleep 30"])
                .stderr(Stderr::Null)
                .connect()
                .await
                .unwrap();
            let start = tokio::time::Instant::now();
            let read = stream.recv().await.unwrap_err();
            let read = (start.elapsed(), read.to_string());
            let start = tokio::time::Instant::now();
            let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
            let sent = sink.send(Outbound::new(ping.into(), "ping")).await;
            let sent = (start.elapsed(), sent.unwrap_err().to_string());
            // Dropping the runtime kills the process, with its group.
            (read, sent)
        })
    })
    .await
    .unwrap();
    for (waited, error) in [read, sent] {
        assert!(error.contains("the server closed its stdout"), "{error}");
        assert!(
            waited < Duration::from_secs(1),
            "reported after {waited:?}: {error}"
        );
    }
}

/// Connects to `sh -c script` the way a user would, without pinning a
/// version; fails the test when connecting takes longer than 15 s.
async fn connect_sh(script: &str, stderr: Stderr) -> mcp_tasks::Result<Client> {
    let connect = Client::builder()
        .probe_timeout(ms(500))
        .request_timeout(Duration::from_secs(30))
        .connect(Stdio::command("sh").args(["-c", script]).stderr(stderr));
    tokio::time::timeout(Duration::from_secs(15), connect)
        .await
        .expect("the connect failed fast")
}

async fn a_program_that_prints_only_lines_that_are_not_json_rpc_fails_quoting_them() {
    let e = connect_sh(
        "echo hello; echo 'Listening on port 80'; sleep 60",
        Stderr::Null,
    )
    .await
    .unwrap_err();
    let text = e.to_string();
    assert!(e.is_transport(), "{text}");
    assert!(text.contains(r#""hello""#), "{text}");
    assert!(text.contains(r#""Listening on port 80""#), "{text}");
    assert!(text.contains("not JSON-RPC"), "{text}");
}

async fn a_program_that_exits_during_the_handshake_fails_at_once_with_its_status_and_stderr() {
    let e = connect_sh(
        "echo oops >&2; echo 'usage: server [--port N]' >&2; exit 3",
        Stderr::Null,
    )
    .await
    .unwrap_err();
    let text = e.to_string();
    assert!(e.is_transport(), "{text}");
    assert!(text.contains("exit status: 3"), "{text}");
    assert!(text.contains(r#""oops""#), "{text}");
    assert!(text.contains(r#""usage: server [--port N]""#), "{text}");
    // The same when the stderr is logged rather than discarded.
    let e = connect_sh("echo printed; echo broken >&2; exit 7", Stderr::Log)
        .await
        .unwrap_err();
    let text = e.to_string();
    assert!(text.contains("exit status: 7"), "{text}");
    assert!(text.contains(r#""broken""#), "{text}");
    assert!(text.contains(r#""printed""#), "{text}");
}

async fn a_banner_before_json_rpc_is_tolerated() {
    let exe = std::env::current_exe().unwrap();
    let client = Client::builder()
        .connect(
            Stdio::command("sh")
                .args([
                    "-c",
                    "echo 'my-server 1.0 starting'; exec \"$0\" --serve scripted",
                ])
                .arg(exe)
                .stderr(Stderr::Null),
        )
        .await
        .expect("a banner line does not stop the handshake");
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools[0].name, "ping");
    client.close().await.unwrap();
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        if let Some(path) = std::env::var_os("MCP_TASKS_PIDFILE") {
            std::fs::write(path, std::process::id().to_string()).unwrap();
        }
        match args[i + 1].as_str() {
            "relay" => relay(
                &args[i + 2],
                args[i + 3].parse().unwrap(),
                args.get(i + 4).map(|a| a.parse().unwrap()),
            ),
            "stubborn" => stubborn(),
            "flood" => flood(args[i + 2].parse().unwrap()),
            "scripted" => {
                let server = TestServer::new().tool(ScriptedTool::immediate(
                    "ping",
                    CallToolResult::text("pong"),
                ));
                let rt = tokio::runtime::Runtime::new().unwrap();
                rt.block_on(server.serve_stdio()).unwrap();
            }
            other => panic!("unknown mode {other}"),
        }
        return;
    }
    let cases = runner::cases![
        a_server_that_closes_its_stdout_is_reported_at_once,
        close_ends_the_processes_a_server_leaves_behind,
        close_kills_a_server_group_that_ignores_sigterm,
        dropping_the_client_ends_the_server_s_process_group,
        a_flood_of_requests_before_the_server_reads_does_not_deadlock_the_call,
        close_kills_a_child_that_ignores_its_stdin_closing_and_counts_it,
        a_program_that_prints_only_lines_that_are_not_json_rpc_fails_quoting_them,
        a_program_that_exits_during_the_handshake_fails_at_once_with_its_status_and_stderr,
        a_banner_before_json_rpc_is_tolerated,
        a_child_that_exits_between_reads_fails_the_wait_at_once,
        server_exit_mid_task_fails_the_wait_and_the_task_resumes_on_a_fresh_server,
        a_child_that_ignores_its_stdin_closing_is_killed,
        a_child_dies_with_the_runtime_even_if_the_client_is_never_dropped,
    ];
    runner::run(&args, &cases);
}
