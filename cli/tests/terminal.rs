//! `mcp-tasks` as a person uses it: the binary in a real pseudo-terminal
//! (and piped, as a script runs it), against the bundled demo server
//! `mcp-tasks-demo` spawned after `--`.
//!
//! Every expectation is bounded (the pty session's timeout, and the demo's
//! scripts take seconds); nothing asserts how long anything took.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use data_dir::TempDir;
use rexpect::process::WaitStatus;
use rexpect::session::{PtySession, spawn_command};
use serde_json::Value;

#[path = "support/data_dir.rs"]
#[allow(dead_code, reason = "the terminal tests run the CLI their own way")]
mod data_dir;

const CLI: &str = env!("CARGO_BIN_EXE_mcp-tasks");
const DEMO: &str = env!("CARGO_BIN_EXE_mcp-tasks-demo");

/// The bound on each expectation.
const TIMEOUT_MS: u64 = 30_000;

/// `mcp-tasks ARGS -- mcp-tasks-demo SERVER_ARGS` in a 100x40 terminal
/// without colours.
fn terminal(args: &[&str], server: &[&str]) -> PtySession {
    terminal_in(&no_data(), args, server)
}

/// [`terminal`], with `data` as the folder of the task list.
fn terminal_in(data: &Path, args: &[&str], server: &[&str]) -> PtySession {
    let mut cmd = Command::new("sh");
    cmd.env("MCP_TASKS_DATA_DIR", data);
    // Colours would split the words on screen that the tests look for.
    cmd.env("NO_COLOR", "1");
    // A pseudo-terminal starts with no size; a person's has one.
    cmd.arg("-c")
        .arg("stty cols 100 rows 40 && exec \"$@\"")
        .arg("sh")
        .arg(CLI)
        .args(args)
        .arg("--")
        .arg(DEMO)
        .args(server);
    spawn_command(cmd, Some(TIMEOUT_MS)).expect("start mcp-tasks in a terminal")
}

/// Types `keys`, as a person at the keyboard.
fn press(p: &mut PtySession, keys: &str) {
    p.send(keys).unwrap();
    p.flush().unwrap();
}

/// Waits for the end of the session and gives the exit status.
fn exit_code(mut p: PtySession) -> i32 {
    p.exp_eof().expect("mcp-tasks ends");
    match p.process().wait().expect("its status") {
        WaitStatus::Exited(_, code) => code,
        other => panic!("mcp-tasks did not exit normally: {other:?}"),
    }
}

/// `mcp-tasks ARGS -- mcp-tasks-demo SERVER_ARGS` with pipes: no terminal.
fn piped(args: &[&str], server: &[&str]) -> Output {
    piped_in(&no_data(), args, server)
}

/// [`piped`], with `data` as the folder of the task list.
fn piped_in(data: &Path, args: &[&str], server: &[&str]) -> Output {
    Command::new(CLI)
        .env("MCP_TASKS_DATA_DIR", data)
        .args(args)
        .arg("--")
        .arg(DEMO)
        .args(server)
        .stdin(Stdio::null())
        .output()
        .expect("run mcp-tasks")
}

/// A task list folder for the commands that keep no task: they never
/// create it, and the person's own list is never touched.
fn no_data() -> PathBuf {
    std::env::temp_dir().join(format!("mcp-tasks-cli-no-data-{}", std::process::id()))
}

#[test]
fn the_status_line_follows_the_task_and_the_result_is_printed() {
    let mut p = terminal(&["call", "export", "table=orders"], &[]);
    p.exp_string("working: reading 1,204 orders").unwrap();
    p.exp_string("working: writing orders.csv").unwrap();
    p.exp_string("working: compressing").unwrap();
    p.exp_string("exported 1,204 rows to orders.csv.gz")
        .unwrap();
    p.exp_string("\"rows\": 1204").unwrap();
    assert_eq!(exit_code(p), 0);
}

#[test]
fn a_form_question_is_answered_by_typing() {
    let mut p = terminal(&["call", "deploy", "version=1.2"], &[]);
    p.exp_string("The server asks: Deploy to which environment?")
        .unwrap();
    // Each key once the prompt is up and reading keys, as a person
    // types after seeing it.
    p.exp_string("to move, enter to select").unwrap();
    press(&mut p, "\x1b[B"); // Down, to the second choice
    p.exp_string("> production").unwrap();
    press(&mut p, "\r");
    p.exp_string("Replicas").unwrap();
    p.exp_string("(2)").unwrap();
    press(&mut p, "3\r");
    p.exp_string("Release note").unwrap();
    press(&mut p, "typed in a terminal\r");
    p.exp_string("working: rolling out").unwrap();
    // The demo's result repeats the answers it received.
    p.exp_string("\"environment\": \"production\"").unwrap();
    p.exp_string("\"note\": \"typed in a terminal\"").unwrap();
    p.exp_string("\"replicas\": 3").unwrap();
    assert_eq!(exit_code(p), 0);
}

#[test]
fn ctrl_c_cancels_the_running_task_and_exits_130() {
    let mut p = terminal(&["call", "index"], &[]);
    p.exp_string("indexed 1 of 120 files").unwrap();
    p.send_control('c').unwrap();
    p.exp_string("cancelling").unwrap();
    p.exp_string("the task was cancelled").unwrap();
    assert_eq!(exit_code(p), 130);
}

#[test]
fn a_second_ctrl_c_stops_waiting_and_prints_the_reference() {
    let dir = TempDir::new("second-ctrl-c");
    let shared = Shared::start(&dir.0);
    let socket = shared.socket();
    // A task that goes on when cancelled: the first Ctrl-C waits.
    let mut p = terminal(&["call", "archive"], &["--shared", &socket]);
    p.exp_string("archived 1 of 60 months").unwrap();
    p.send_control('c').unwrap();
    p.exp_string("cancelling").unwrap();
    p.send_control('c').unwrap();
    p.exp_string("stopped waiting").unwrap();
    p.exp_string("mcp-tasks wait mtr_").unwrap();
    assert_eq!(exit_code(p), 130);
}

#[test]
fn detach_then_wait_from_a_second_process_gets_the_result() {
    let dir = TempDir::new("detach");
    let data = dir.data();
    let shared = Shared::start(&dir.0);
    let socket = shared.socket();

    // A child server proxying to a shared one keeps its tasks beyond the
    // command: --detach-anyway (--detach refuses a server run after `--`).
    let detached = piped_in(
        &data,
        &["call", "export", "--detach-anyway"],
        &["--shared", &socket],
    );
    assert_eq!(detached.status.code(), Some(0), "{detached:?}");
    let reference = String::from_utf8(detached.stdout).unwrap();
    let reference = reference.trim();
    assert!(reference.starts_with("mtr_"), "{reference}");
    let hint = String::from_utf8_lossy(&detached.stderr);
    assert!(hint.contains("mcp-tasks wait 1"), "{hint}");

    // By its short name, the server named again.
    let mut p = terminal_in(&data, &["wait", "1"], &["--shared", &socket]);
    p.exp_string("working: reading 1,204 orders").unwrap();
    p.exp_string("exported 1,204 rows to orders.csv.gz")
        .unwrap();
    assert_eq!(exit_code(p), 0);

    let status = piped_in(&data, &["status", reference], &["--shared", &socket]);
    assert_eq!(status.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&status.stdout).starts_with("completed"));

    let list = Command::new(CLI)
        .env("MCP_TASKS_DATA_DIR", &data)
        .arg("list")
        .output()
        .unwrap();
    let list = String::from_utf8_lossy(&list.stdout);
    let row = list.lines().nth(1).unwrap_or_default();
    assert!(
        row.contains("export") && row.contains("completed"),
        "{list}"
    );
    assert!(row.contains("mcp-tasks-demo --shared"), "{list}");
}

#[test]
fn cancel_by_reference_from_another_process() {
    let dir = TempDir::new("cancel");
    let shared = Shared::start(&dir.0);
    let socket = shared.socket();
    let detached = piped_in(
        &dir.data(),
        &["call", "index", "--detach-anyway"],
        &["--shared", &socket],
    );
    let reference = String::from_utf8(detached.stdout).unwrap();
    let cancel = piped(&["cancel", reference.trim()], &["--shared", &socket]);
    assert_eq!(cancel.status.code(), Some(0), "{cancel:?}");
    assert!(String::from_utf8_lossy(&cancel.stderr).contains("the task was cancelled"));
    let status = piped(
        &["status", reference.trim(), "--json"],
        &["--shared", &socket],
    );
    let line: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(line["status"], "cancelled");
}

#[test]
fn json_output_is_one_json_object_per_line() {
    let out = piped(&["call", "export", "--json"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let lines: Vec<Value> = String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect();
    let statuses: Vec<&str> = lines
        .iter()
        .filter(|l| l["type"] == "status")
        .filter_map(|l| l["message"].as_str())
        .collect();
    assert!(statuses.contains(&"writing orders.csv"), "{lines:?}");
    let last = lines.last().unwrap();
    assert_eq!(last["type"], "outcome");
    assert_eq!(last["outcome"], "completed");
    assert_eq!(last["structuredContent"]["rows"], 1204);
}

#[test]
fn json_never_prompts_and_declines_the_question() {
    // In a terminal, too: --json is for programs.
    let mut p = terminal(&["call", "deploy", "--json"], &[]);
    p.exp_string("{\"answer\":\"declined\",\"kind\":\"for a form\"")
        .unwrap();
    p.exp_string("\"action\":\"decline\"").unwrap();
    assert_eq!(exit_code(p), 0);
}

#[test]
fn piped_output_has_one_plain_line_per_change_and_declines_questions() {
    let out = piped(&["call", "deploy"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8(out.stderr).unwrap();
    assert!(!err.contains('\x1b'), "no spinner, no colours: {err:?}");
    let lines: Vec<&str> = err.lines().collect();
    for expected in [
        "working: building the release",
        "input_required: release built",
        "  declined (no terminal to ask at)",
        "working: rolling out",
    ] {
        assert!(lines.contains(&expected), "{expected:?} in {lines:?}");
    }
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"decline\""));
}

#[test]
fn exit_statuses_tell_failure_from_usage() {
    let failed = piped(&["call", "migrate"], &[]);
    assert_eq!(failed.status.code(), Some(3));
    let err = String::from_utf8_lossy(&failed.stderr);
    assert!(
        err.contains("the task failed: migration 4 of 7 failed"),
        "{err}"
    );

    let unknown = piped(&["call", "nope"], &[]);
    assert_eq!(unknown.status.code(), Some(2));
    let err = String::from_utf8_lossy(&unknown.stderr);
    assert!(err.contains("the server has no tool \"nope\""), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");

    let no_server = Command::new(CLI).args(["call", "export"]).output().unwrap();
    assert_eq!(no_server.status.code(), Some(2));

    let bad_args = piped(&["call", "export", "table"], &[]);
    assert_eq!(bad_args.status.code(), Some(2));

    // A header typed without its colon is a usage error that does not
    // repeat what was typed: it may be a token.
    let bad_header = Command::new(CLI)
        .args(["tools", "--url", "http://127.0.0.1:9/mcp", "--header"])
        .arg("Authorization Bearer s3cr3t-t0ken")
        .output()
        .unwrap();
    assert_eq!(bad_header.status.code(), Some(2));
    let err = String::from_utf8_lossy(&bad_header.stderr);
    assert!(err.contains("NAME:VALUE"), "{err}");
    assert!(
        !err.contains("s3cr3t-t0ken"),
        "the value was repeated: {err}"
    );
}

#[test]
fn tools_lists_the_server_and_its_tools() {
    let out = piped(&["tools"], &[]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("protocol  2026-07-28"), "{text}");
    assert!(text.contains("tasks     yes"), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("export") && l.contains("Export a table"))
    );
}

/// A shared demo server on a Unix socket, stopped when dropped.
struct Shared {
    child: std::process::Child,
    socket: PathBuf,
}

impl Shared {
    fn start(dir: &Path) -> Shared {
        let socket = dir.join("demo.sock");
        let mut child = Command::new(DEMO)
            .arg("--serve-socket")
            .arg(&socket)
            .stdin(Stdio::null())
            .spawn()
            .expect("start the shared demo server");
        for _ in 0..100 {
            if std::os::unix::net::UnixStream::connect(&socket).is_ok() {
                return Shared { child, socket };
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        let _ = child.kill();
        let _ = child.wait();
        panic!("the shared demo server does not listen");
    }

    fn socket(&self) -> String {
        self.socket.to_string_lossy().into_owned()
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
