//! The client over a real child process.
//!
//! This test binary is its own server: started with `--serve <mode>` it
//! speaks MCP on stdin/stdout (the scripted test server, or a misbehaving
//! peer), so every case below spawns a real process. It has its own
//! `main` because libtest would write to stdout, which belongs to the
//! protocol in server mode.

#[path = "support/calls.rs"]
mod calls;
#[path = "support/runner.rs"]
mod runner;
#[path = "support/time.rs"]
mod time;

use std::io::{BufRead, Write};
use std::time::Duration;

use calls::{call_text, structured};
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{CallToolResult, ElicitResult, InputRequest};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::transport::{Stderr, Stdio};
use mcp_tasks::{Client, TaskState};
use serde_json::json;
use time::ms;

fn scripted() -> TestServer {
    let form = InputRequest::form("Proceed?", json!({"type": "object"}));
    let mut server = TestServer::new()
        .page_size(2)
        .tool(ScriptedTool::immediate(
            "ping",
            CallToolResult::text("pong"),
        ))
        .tool(ScriptedTool::input_required(
            "deploy",
            [("confirm".to_string(), form.clone())].into(),
            Some("state-1".into()),
            CallToolResult::text("deployed"),
        ))
        .tool(ScriptedTool::task(
            "export",
            TaskScript::new()
                .poll_interval(ms(20))
                .working(ms(20), "exporting")
                .input(ms(20), [("approve".to_string(), form)].into())
                .complete_with_inputs(ms(20)),
        ));
    for i in 0..3 {
        server = server.tool(ScriptedTool::immediate(
            format!("extra{i}"),
            CallToolResult::text("x"),
        ));
    }
    server
}

/// A 2025-03-26 server that answers every request with a JSON-RPC batch
/// on one line: `[response]` to `initialize`, `[log, response]` to the
/// rest, as that version allowed.
fn serve_batches() {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    for line in stdin.lock().lines() {
        let Ok(request) = serde_json::from_str::<serde_json::Value>(&line.unwrap()) else {
            continue;
        };
        let (Some(id), Some(method)) = (request.get("id"), request["method"].as_str()) else {
            continue; // a notification
        };
        let result = match method {
            "initialize" => json!({"protocolVersion": "2025-03-26", "capabilities": {"tools": {}},
                "serverInfo": {"name": "batcher", "version": "1.0"}}),
            "tools/list" => json!({"tools": [{"name": "ping", "inputSchema": {"type": "object"}}]}),
            "tools/call" => json!({"content": [{"type": "text", "text": "pong"}]}),
            _ => json!({}),
        };
        let response = json!({"jsonrpc": "2.0", "id": id, "result": result});
        let batch = if method == "initialize" {
            json!([response])
        } else {
            let log = json!({"jsonrpc": "2.0", "method": "notifications/message",
                "params": {"level": "info", "data": "batched"}});
            json!([log, response])
        };
        writeln!(stdout, "{batch}").unwrap();
        stdout.flush().unwrap();
    }
}

/// Misbehaving peers, written by hand on std I/O.
fn serve_raw(mode: &str) {
    let stdin = std::io::stdin();
    let mut stdout = std::io::stdout();
    let mut line = String::new();
    stdin.lock().read_line(&mut line).unwrap();
    let request: serde_json::Value = serde_json::from_str(&line).unwrap();
    let id = &request["id"];
    match mode {
        "die" => std::process::exit(3),
        "garbage" => {
            writeln!(stdout, "this is not json").unwrap();
            stdout.write_all(b"\xff\xfe not utf-8\n").unwrap();
            writeln!(
                stdout,
                "{}",
                json!({"jsonrpc": "2.0", "id": id, "result": {"ok": true}})
            )
            .unwrap();
        }
        "huge" => {
            let big = "x".repeat(2 << 20);
            writeln!(
                stdout,
                "{}",
                json!({"jsonrpc": "2.0", "id": id, "result": {"big": big}})
            )
            .unwrap();
        }
        other => panic!("unknown mode {other}"),
    }
    stdout.flush().unwrap();
    // Stay until the client closes stdin.
    while stdin
        .lock()
        .read_line(&mut line)
        .map(|n| n > 0)
        .unwrap_or(false)
    {}
}

fn child(mode: &str) -> Stdio {
    Stdio::command(std::env::current_exe().unwrap())
        .args(["--serve", mode])
        .stderr(Stderr::Null)
}

async fn connect(mode: &str) -> Client {
    let handlers = InputHandlers::new()
        .elicitation_form(|_| async { Ok(ElicitResult::accept(json!({"go": true}))) });
    let builder = Client::builder()
        .input_handlers(handlers)
        .request_timeout(Duration::from_secs(10));
    // The misbehaving children answer only what a test sends; the scripted
    // one is a real server, and negotiates.
    let pinned = (mode != "scripted").then_some("2026-07-28");
    builder
        .maybe_protocol_version(pinned)
        .connect(child(mode))
        .await
        .unwrap()
}

async fn discover_list_and_plain_calls() {
    let client = connect("scripted").await;
    assert!(client.supports_tasks().await.unwrap());
    let tools = client.list_tools().await.unwrap();
    assert_eq!(tools.len(), 6, "three pages of two");
    assert_eq!(call_text(&client, "ping").await, "pong");
    assert_eq!(call_text(&client, "deploy").await, "deployed");
}

async fn a_task_with_input_runs_to_the_end() {
    let client = connect("scripted").await;
    let state = client.task().call_tool("export", json!({})).await.unwrap();
    assert!(matches!(state, TaskState::Pending(_)));
    let done = state.await.unwrap();
    let s = structured(&done);
    assert_eq!(s["inputResponses"]["approve"]["content"]["go"], true);
}

async fn unknown_task_is_not_found() {
    let client = connect("scripted").await;
    let e = client
        .get_task(&mcp_tasks::protocol::TaskId::new("nope"))
        .await
        .unwrap_err();
    assert!(e.is_task_not_found(), "{e}");
}

async fn server_exit_fails_pending_requests() {
    let client = connect("die").await;
    let e = client.call_tool("anything", json!({})).await.unwrap_err();
    assert!(e.is_transport() && e.is_outcome_unknown(), "{e}");
    let e = client.list_tools().await.unwrap_err();
    assert!(e.is_transport(), "{e}");
}

async fn malformed_lines_are_skipped() {
    let client = connect("garbage").await;
    let v = client.request("x/echo", json!({})).await.unwrap();
    assert_eq!(v["ok"], true);
}

async fn an_oversized_message_fails_cleanly() {
    let client = Client::builder()
        .protocol_version("2026-07-28")
        .connect(child("huge").max_message_size(1 << 20))
        .await
        .unwrap();
    let e = client.request("x/echo", json!({})).await.unwrap_err();
    assert!(e.is_transport(), "{e}");
    assert!(client.closed_reason().unwrap().contains("larger than"));
}

async fn batched_replies_are_read_one_message_at_a_time() {
    let logs = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = logs.clone();
    let client = Client::builder()
        .protocol_version("2025-03-26")
        .request_timeout(Duration::from_secs(10))
        .on_log(move |log| {
            seen.lock().unwrap().push(log.data);
            std::future::ready(())
        })
        .connect(child("batches"))
        .await
        .expect("the batched initialize reply is read");
    let tools = client.list_tools().await.expect("a batched reply");
    assert_eq!(tools.len(), 1);
    let r = client.call_tool("ping", json!({})).await.unwrap();
    assert_eq!(r.joined_text(), "pong");
    assert_eq!(client.stats().discarded_messages, 0, "nothing skipped");
    // The log messages of both batches reach the callback too.
    for _ in 0..200 {
        if logs.lock().unwrap().len() >= 2 {
            break;
        }
        tokio::time::sleep(ms(25)).await;
    }
    assert_eq!(*logs.lock().unwrap(), [json!("batched"), json!("batched")]);
    client.close().await.unwrap();
}

async fn close_waits_for_the_child_to_exit() {
    let pidfile =
        std::env::temp_dir().join(format!("mcp-tasks-stdio-close-{}.pid", std::process::id()));
    let client = Client::connect(child("scripted").env("MCP_TASKS_PIDFILE", &pidfile))
        .await
        .unwrap();
    let other = client.clone();
    client.discover().await.unwrap();
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let _ = std::fs::remove_file(&pidfile);
    client
        .close()
        .await
        .expect("the child exits once its stdin closes");
    assert_eq!(other.stats().servers_killed, 0, "it exited of itself");
    // Exited and reaped before `close` returned: no polling.
    let proc = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
    assert!(!proc.exists(), "the child {pid} outlived close");
    let e = other.list_tools().await.unwrap_err();
    assert!(e.to_string().contains("the client was closed"), "{e}");
}

async fn dropping_the_client_ends_the_child() {
    let pidfile = std::env::temp_dir().join(format!("mcp-tasks-stdio-{}.pid", std::process::id()));
    let client = Client::connect(child("scripted").env("MCP_TASKS_PIDFILE", &pidfile))
        .await
        .unwrap();
    client.discover().await.unwrap();
    let pid = std::fs::read_to_string(&pidfile).unwrap();
    let _ = std::fs::remove_file(&pidfile);
    drop(client);
    let proc = std::path::PathBuf::from(format!("/proc/{}", pid.trim()));
    for _ in 0..100 {
        if !proc.exists() {
            return;
        }
        tokio::time::sleep(ms(50)).await;
    }
    panic!("the child {pid} outlived the client");
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve") {
        let mode = args[i + 1].as_str();
        if let Some(path) = std::env::var_os("MCP_TASKS_PIDFILE") {
            std::fs::write(path, std::process::id().to_string()).unwrap();
        }
        if mode == "batches" {
            serve_batches();
        } else if mode == "scripted" {
            let rt = tokio::runtime::Runtime::new().unwrap();
            rt.block_on(scripted().serve_stdio()).unwrap();
        } else {
            serve_raw(mode);
        }
        return;
    }
    let cases = runner::cases![
        batched_replies_are_read_one_message_at_a_time,
        close_waits_for_the_child_to_exit,
        discover_list_and_plain_calls,
        a_task_with_input_runs_to_the_end,
        unknown_task_is_not_found,
        server_exit_fails_pending_requests,
        malformed_lines_are_skipped,
        an_oversized_message_fails_cleanly,
        dropping_the_client_ends_the_child,
    ];
    runner::run(&args, &cases);
}
