//! The command-line client `mcp-tasks` (package `mcp-tasks-cli`) against
//! the reference server `server-everything` over stdio, in a real
//! pseudo-terminal, as a person runs it: a 2025-11-25 task's stage
//! messages on the status line, its clarification asked and answered at
//! the prompt, the report printed; a progress bar from a plain call's
//! progress reports; `--json` lines.
//!
//! The binary is the one built in this target directory (`cargo build -p
//! mcp-tasks-cli` first), or the one `MCP_TASKS_CLI` names.

use std::path::PathBuf;
use std::process::Command;

use rexpect::process::WaitStatus;
use rexpect::session::{PtySession, spawn_command};
use serde_json::Value;

use crate::everything::EVERYTHING;

/// The bound on each expectation.
const TIMEOUT_MS: u64 = 30_000;

fn cli() -> PathBuf {
    if let Some(path) = std::env::var_os("MCP_TASKS_CLI") {
        return path.into();
    }
    // target/<profile>/deps/interop-… → target/<profile>/mcp-tasks
    let exe = std::env::current_exe().expect("the test's own path");
    let built = exe
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("mcp-tasks"))
        .expect("a target directory");
    assert!(
        built.exists(),
        "{} is not built: run `cargo build -p mcp-tasks-cli` first (or set MCP_TASKS_CLI)",
        built.display()
    );
    built
}

/// `mcp-tasks ARGS -- node server-everything stdio`.
fn command(args: &[&str]) -> Command {
    crate::everything::installed();
    let mut cmd = Command::new(cli());
    cmd.args(args).args(["--", "node", EVERYTHING, "stdio"]);
    cmd
}

/// The same in a 100x40 terminal without colours.
fn terminal(args: &[&str]) -> PtySession {
    let inner = command(args);
    let mut cmd = Command::new("sh");
    cmd.env("NO_COLOR", "1")
        .arg("-c")
        .arg("stty cols 100 rows 40 && exec \"$@\"")
        .arg("sh")
        .arg(inner.get_program())
        .args(inner.get_args());
    spawn_command(cmd, Some(TIMEOUT_MS)).expect("start mcp-tasks in a terminal")
}

fn exit_code(mut p: PtySession) -> i32 {
    p.exp_eof().expect("mcp-tasks ends");
    match p.process().wait().expect("its status") {
        WaitStatus::Exited(_, code) => code,
        other => panic!("mcp-tasks did not exit normally: {other:?}"),
    }
}

fn press(p: &mut PtySession, keys: &str) {
    p.send(keys).unwrap();
    p.flush().unwrap();
}

mod stdio {
    use super::*;

    #[test]
    fn cli_research_query_shows_stages_asks_the_clarification_and_prints_the_report() {
        let mut p = terminal(&[
            "call",
            "simulate-research-query",
            r#"{"topic":"rust","ambiguous":true}"#,
        ]);
        // A stage message on the status line ("Gathering sources...").
        p.exp_regex(r"working: [A-Z][a-z]+ [a-z]+\.\.\.").unwrap();
        p.exp_string("could have multiple interpretations").unwrap();
        // The first choice, once the prompt is up (its help line is the
        // field's description).
        p.exp_string("Which interpretation of the topic do you mean?")
            .unwrap();
        press(&mut p, "\r");
        p.exp_string("Research Report: rust").unwrap();
        p.exp_string("Clarification").unwrap();
        assert_eq!(exit_code(p), 0);
    }

    #[test]
    fn cli_progress_reports_fill_a_bar() {
        let mut p = terminal(&[
            "call",
            "trigger-long-running-operation",
            "duration=2",
            "steps=4",
        ]);
        p.exp_regex(r"\] +[1-9][0-9]?% ").unwrap();
        p.exp_string("Long running operation completed").unwrap();
        assert_eq!(exit_code(p), 0);
    }

    #[test]
    fn cli_json_lines_parse_and_end_with_the_outcome() {
        let out = command(&["call", "simulate-research-query", "topic=rust", "--json"])
            .output()
            .expect("run mcp-tasks");
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let lines: Vec<Value> = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
            .collect();
        assert!(
            lines
                .iter()
                .any(|l| l["type"] == "status" && l["status"] == "working")
        );
        let last = lines.last().unwrap();
        assert_eq!(last["outcome"], "completed");
        assert!(
            last["text"]
                .as_str()
                .unwrap()
                .contains("Research Report: rust")
        );
    }
}
