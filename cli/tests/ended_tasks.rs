//! The exit status of `mcp-tasks call` for every way a task can end:
//! each terminal status × each payload shape servers send with it × both
//! eras, over stdio (this binary, started with `--serve-ending`, is the
//! server) and over HTTP (the same server on a loopback port in this
//! process). A failed or cancelled task never exits 0, whatever its
//! payload; the library's own matrix is `tests/ended_tasks.rs`.

#[path = "../../tests/support/ending_server.rs"]
mod ending_server;
#[path = "support/wait.rs"]
mod wait;

use std::process::{Command, Stdio};
use std::time::Duration;

use ending_server::{Ending, Payload};
use wait::wait_within;

const CLI: &str = env!("CARGO_BIN_EXE_mcp-tasks");

/// The bound on one run of the command.
const LIMIT: Duration = Duration::from_secs(30);

/// The documented exit status (`mcp-tasks --help`) for an ending: the
/// stated status decides, and only a completed task's payload counts.
fn expected(ending: Ending) -> i32 {
    match (ending.status, ending.payload) {
        ("completed", Payload::Content | Payload::BareMeta) => 0,
        // The tool ran and reported an error.
        ("completed", Payload::ToolError) => 1,
        // A completed task with no result at all is a malformed answer:
        // no outcome, reported as a failed connection.
        ("completed", Payload::Nothing) => 6,
        // A cancellation this client did not ask for.
        ("cancelled", _) => 4,
        // Failed, or completed with a JSON-RPC error.
        _ => 3,
    }
}

/// Runs `mcp-tasks call work` against `ending` and gives its exit status;
/// `-1` when it did not end within [`LIMIT`] (it is killed).
fn exit_status(ending: Ending, http: bool) -> i32 {
    let mut cmd = Command::new(CLI);
    cmd.args(["call", "work"]);
    if http {
        cmd.args(["--url", &ending_server::serve_http(ending)]);
    } else {
        cmd.arg("--")
            .arg(std::env::current_exe().unwrap())
            .args(ending.args());
    }
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start mcp-tasks");
    wait_within(&mut child, LIMIT).map_or(-1, |s| s.code().expect("an exit code"))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve-ending") {
        ending_server::serve_stdio(Ending::parse(&args[i + 1..]));
        return;
    }
    let (mut passed, mut wrong) = (0, Vec::new());
    for http in [false, true] {
        for ending in Ending::all() {
            let (want, got) = (expected(ending), exit_status(ending, http));
            let over = if http { "HTTP" } else { "stdio" };
            if want == got {
                passed += 1;
            } else {
                wrong.push(format!("{ending:?} over {over}: exit {got}, want {want}"));
            }
        }
    }
    for line in &wrong {
        println!("{line}");
    }
    println!("{passed} passed, {} failed", wrong.len());
    if !wrong.is_empty() {
        std::process::exit(1);
    }
}
