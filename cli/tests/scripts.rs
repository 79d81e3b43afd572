//! `mcp-tasks` as a script runs it: the exit status of every kind of
//! outcome, `--json` lines that name their task, `--detach` refused where
//! no later command could follow the task, a closed pipe, a pinned
//! protocol revision, and what the installed binary prints about itself
//! (version, completions, manual page).
//!
//! Servers: the bundled demo (after `--`, or on a loopback port), the
//! library's ending server on a loopback port in this process (a task
//! that ends the way a test says, in either era), and a loopback port that
//! refuses every request with `401`. Every command is bounded in time.

#[path = "../../tests/support/ending_server.rs"]
mod ending_server;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::Duration;

use ending_server::{Ending, Era, Payload};
use serde_json::Value;

#[path = "support/data_dir.rs"]
#[allow(dead_code, reason = "a task list folder's own path is enough here")]
mod data_dir;
#[path = "support/http_demo.rs"]
mod http_demo;
use data_dir::{CLI, LIMIT, TempDir, run as run_in, wait_within};
use http_demo::HttpDemo;

const DEMO: &str = env!("CARGO_BIN_EXE_mcp-tasks-demo");

/// Reads `child`'s stderr to its end, then waits for it, killing it past
/// [`LIMIT`]: what it said and how it ended.
fn stderr_and_status(child: &mut Child, what: &str) -> (String, ExitStatus) {
    let mut err = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    let status = wait_within(child, LIMIT)
        .unwrap_or_else(|| panic!("mcp-tasks {what} did not end within {LIMIT:?}"));
    (err, status)
}

/// [`run_in`] with a task list folder that nothing writes to.
fn run(args: &[&str]) -> Output {
    let dir = std::env::temp_dir().join(format!(
        "mcp-tasks-cli-scripts-no-data-{}",
        std::process::id()
    ));
    run_in(&dir, args)
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// stdout as JSON lines; each line must be one JSON object.
fn json_lines(out: &Output) -> Vec<Value> {
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

/// The URL of the ending server, on a loopback port, for `ending`.
fn ending_url(era: Era, status: &'static str, payload: Payload) -> String {
    ending_server::serve_http(Ending {
        era,
        status,
        payload,
    })
}

/// A loopback endpoint that answers every request `401 Unauthorized`.
fn refusing_url() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                // The request's head and body: read until the client waits.
                stream
                    .set_read_timeout(Some(Duration::from_millis(200)))
                    .unwrap();
                let mut buf = [0u8; 8192];
                let _ = stream.read(&mut buf);
                let _ = stream.write_all(
                    b"HTTP/1.1 401 Unauthorized\r\nWWW-Authenticate: Bearer\r\n\
                      Content-Length: 0\r\nConnection: close\r\n\r\n",
                );
            });
        }
    });
    url
}

#[test]
fn detach_is_refused_for_a_server_run_after_the_command() {
    let dir = TempDir::new("refused");
    let out = run_in(&dir.0, &["call", "export", "--detach", "--", DEMO]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = text(&out.stderr);
    assert!(
        err.contains("--detach refused") && err.contains("--detach-anyway"),
        "{err}"
    );
    assert!(out.stdout.is_empty(), "no reference: {out:?}");
    // Nothing was kept to follow later.
    assert!(!dir.0.join("tasks.db").exists());

    // Asked for all the same: left running, and said plainly.
    let out = run_in(&dir.0, &["call", "export", "--detach-anyway", "--", DEMO]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(text(&out.stdout).starts_with("mtr_"), "{out:?}");
    let err = text(&out.stderr);
    assert!(err.contains("a later command cannot follow it"), "{err}");
}

#[test]
fn detach_is_refused_for_an_initialize_era_http_session() {
    let dir = TempDir::new("session");
    let url = ending_url(Era::Legacy, "completed", Payload::Content);
    let out = run_in(&dir.0, &["call", "work", "--detach", "--url", &url]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = text(&out.stderr);
    assert!(
        err.contains("--detach refused") && err.contains("2025-11-25"),
        "{err}"
    );

    let out = run_in(
        &dir.0,
        &["call", "work", "--detach-anyway", "--json", "--url", &url],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let lines = json_lines(&out);
    let detached = lines.last().unwrap();
    assert_eq!(detached["type"], "detached", "{lines:?}");
    assert_eq!(detached["followable"], false, "{lines:?}");
    assert!(detached["reference"].as_str().unwrap().starts_with("mtr_"));
}

#[test]
fn detach_over_http_2026_is_followable_and_every_json_line_names_the_task() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("json");
    let out = run_in(
        &dir.0,
        &[
            "call",
            "job",
            "ms:=300",
            "--detach",
            "--json",
            "--url",
            &demo.url(),
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let lines = json_lines(&out);
    let detached = lines.last().unwrap();
    assert_eq!(detached["type"], "detached", "{lines:?}");
    assert_eq!(detached["followable"], true);
    assert_eq!(detached["name"], 1);
    let reference = detached["reference"].as_str().unwrap().to_owned();
    assert!(reference.starts_with("mtr_"), "{reference}");

    let out = run_in(
        &dir.0,
        &["wait", &reference, "--json", "--url", &demo.url()],
    );
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let lines = json_lines(&out);
    assert!(!lines.is_empty());
    for line in &lines {
        assert_eq!(line["reference"], reference.as_str(), "{line}");
        assert!(line["type"].is_string(), "{line}");
    }
    let last = lines.last().unwrap();
    assert_eq!(
        (&last["type"], &last["outcome"]),
        (&"outcome".into(), &"completed".into())
    );
    assert_eq!(last["exit"], 0);
}

#[test]
fn every_json_line_of_a_call_carries_the_reference_and_the_outcome_its_exit() {
    let out = run(&["call", "migrate", "--json", "--", DEMO]);
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let lines = json_lines(&out);
    let reference = lines[0]["reference"].as_str().expect("a reference");
    assert!(reference.starts_with("mtr_"), "{reference}");
    for line in &lines {
        assert_eq!(line["reference"], reference, "{line}");
    }
    let last = lines.last().unwrap();
    assert_eq!(last["outcome"], "failed");
    assert_eq!(last["exit"], 3);

    // A failure before any task: an error line, with no reference.
    let out = run(&["call", "nope", "--json", "--", DEMO]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let lines = json_lines(&out);
    assert_eq!(lines.len(), 1, "{lines:?}");
    assert_eq!(lines[0]["type"], "error");
    assert_eq!(lines[0]["exit"], 2);
    assert!(lines[0]["reference"].is_null());
}

#[test]
fn exit_statuses_tell_each_outcome_apart() {
    let completed = run(&["call", "export", "--", DEMO]);
    assert_eq!(completed.status.code(), Some(0), "{completed:?}");

    let url = ending_url(Era::Modern, "completed", Payload::ToolError);
    let tool_error = run(&["call", "work", "--url", &url]);
    assert_eq!(tool_error.status.code(), Some(1), "{tool_error:?}");
    assert!(text(&tool_error.stderr).contains("the tool reported an error"));

    let usage = run(&["call", "export", "--frobnicate", "--", DEMO]);
    assert_eq!(usage.status.code(), Some(2), "{usage:?}");

    let failed = run(&["call", "migrate", "--", DEMO]);
    assert_eq!(failed.status.code(), Some(3), "{failed:?}");

    let url = ending_url(Era::Modern, "cancelled", Payload::Nothing);
    let cancelled = run(&["call", "work", "--url", &url]);
    assert_eq!(cancelled.status.code(), Some(4), "{cancelled:?}");
    assert!(
        text(&cancelled.stderr).contains("by the server or another client"),
        "{cancelled:?}"
    );

    let auth = run(&["tools", "--url", &refusing_url()]);
    assert_eq!(auth.status.code(), Some(5), "{auth:?}");
    assert!(text(&auth.stderr).contains("401"), "{auth:?}");

    // Port 1 on loopback: nothing listens there.
    let unreachable = run(&["call", "export", "--url", "http://127.0.0.1:1/mcp"]);
    assert_eq!(unreachable.status.code(), Some(6), "{unreachable:?}");
    let no_program = run(&["tools", "--", "/no/such/mcp-server"]);
    assert_eq!(no_program.status.code(), Some(6), "{no_program:?}");
}

/// A real pipe whose reader is already gone, for stdout.
fn closed_pipe() -> std::io::PipeWriter {
    let (reader, writer) = std::io::pipe().unwrap();
    drop(reader);
    writer
}

#[test]
fn a_closed_pipe_ends_every_command_quietly() {
    // Each command that prints, human and JSON: `mcp-tasks … | head -0`.
    let dir = std::env::temp_dir().join(format!("mcp-tasks-pipe-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("servers.json");
    std::fs::write(
        &config,
        format!(r#"{{"mcpServers": {{"demo": {{"command": {:?}}}}}}}"#, DEMO),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let commands: [&[&str]; 12] = [
        &["tools", "--", DEMO],
        &["tools", "--json", "--", DEMO],
        &["resources", "--", DEMO],
        &["resources", "--json", "--", DEMO],
        &["templates", "--", DEMO],
        &["prompts", "--", DEMO],
        &["read", "demo://readme", "--", DEMO],
        &["prompt", "review", "file=a.rs", "--", DEMO],
        &["complete", "--prompt", "review", "focus=s", "--", DEMO],
        &["servers", "--config", config],
        &["servers", "--json", "--config", config],
        &["man"],
    ];
    for args in commands {
        let mut child = Command::new(CLI)
            .args(args)
            .env("MCP_TASKS_DATA_DIR", &dir)
            .stdin(Stdio::null())
            .stdout(closed_pipe())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let (err, status) = stderr_and_status(&mut child, args[0]);
        assert_eq!(status.code(), Some(141), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?} is not quiet: {err}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn call_json_read_by_a_reader_that_leaves_after_one_line_ends_quietly() {
    // `mcp-tasks call export --json | head -1`.
    let (reader, writer) = std::io::pipe().unwrap();
    let mut child = Command::new(CLI)
        .args(["call", "export", "--json", "--", DEMO])
        .stdin(Stdio::null())
        .stdout(writer)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut first = String::new();
    BufReader::new(reader).read_line(&mut first).unwrap();
    // The reader is gone; the task's later lines meet a closed pipe.
    let line: Value = serde_json::from_str(&first).unwrap();
    assert!(line["reference"].as_str().unwrap().starts_with("mtr_"));
    let (err, status) = stderr_and_status(&mut child, "call --json");
    assert_eq!(status.code(), Some(141), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_listing_with_json_is_one_object_on_one_line() {
    let out = run(&["tools", "--json", "--", DEMO]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = text(&out.stdout);
    assert_eq!(text.trim_end().lines().count(), 1, "{text}");
    let listing: Value = serde_json::from_str(&text).unwrap();
    assert!(
        listing["tools"].as_array().is_some_and(|t| !t.is_empty()),
        "{listing}"
    );
}

#[test]
fn protocol_version_pins_the_revision_and_an_unknown_one_is_a_usage_error() {
    let pinned = run(&["tools", "--protocol-version", "2026-07-28", "--", DEMO]);
    assert_eq!(pinned.status.code(), Some(0), "{pinned:?}");
    assert!(text(&pinned.stdout).contains("protocol  2026-07-28"));

    let unknown = run(&["tools", "--protocol-version", "2024-01-01", "--", DEMO]);
    assert_eq!(unknown.status.code(), Some(2), "{unknown:?}");
    let err = text(&unknown.stderr);
    assert!(
        err.contains("\"2024-01-01\"") && err.contains("2026-07-28, 2025-11-25"),
        "{err}"
    );

    // The demo speaks 2026-07-28 alone: pinned to an older revision it
    // cannot be spoken to, and the message says which was pinned.
    let older = run(&["tools", "--protocol-version", "2025-11-25", "--", DEMO]);
    assert_eq!(older.status.code(), Some(6), "{older:?}");
    assert!(text(&older.stderr).contains("--protocol-version 2025-11-25"));
}

#[test]
fn version_completions_and_manual_page() {
    let version = run(&["--version"]);
    assert_eq!(version.status.code(), Some(0));
    assert_eq!(
        text(&version.stdout).trim(),
        concat!("mcp-tasks ", env!("CARGO_PKG_VERSION"))
    );
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run(&["completions", shell]);
        assert_eq!(out.status.code(), Some(0), "{shell}: {out:?}");
        let script = text(&out.stdout);
        assert!(
            script.contains("mcp-tasks") && script.contains("detach-anyway"),
            "{shell}: {script}"
        );
    }
    let bad = run(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2));
    let man = run(&["man"]);
    assert_eq!(man.status.code(), Some(0));
    let page = text(&man.stdout);
    assert!(page.contains(".TH mcp-tasks 1"), "{page}");
    assert!(page.contains("completions"), "{page}");
}

#[test]
fn the_help_says_status_and_wait_exit_with_how_the_task_stands() {
    let help = run(&["--help"]);
    assert_eq!(help.status.code(), Some(0), "{help:?}");
    let help = text(&help.stdout);
    let table = help
        .split("Exit status")
        .nth(1)
        .unwrap_or_else(|| panic!("no exit status table: {help}"));
    assert!(table.contains("how the task stands"), "{table}");
    let code = |n: &str| {
        table
            .lines()
            .find(|l| l.trim_start().starts_with(&format!("{n} ")))
            .unwrap_or_else(|| panic!("no code {n}: {table}"))
            .to_owned()
    };
    assert!(code("7").contains("still running"), "{table}");
    assert!(!code("4").contains("someone else"), "{table}");
    for command in ["status", "wait"] {
        let help = text(&run(&[command, "--help"]).stdout);
        assert!(
            help.contains("7") && help.contains("still running"),
            "{command}: {help}"
        );
    }
}

#[test]
fn tools_say_which_calls_may_become_tasks() {
    // The demo speaks 2026-07-28: its server decides at each call.
    let out = run(&["tools", "--", DEMO]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let listing = text(&out.stdout);
    let rows: Vec<&str> = listing
        .lines()
        .skip_while(|l| !l.starts_with("TOOL"))
        .skip(1)
        .collect();
    assert!(rows.len() >= 5, "{listing}");
    for row in &rows {
        let task = row.split_whitespace().nth(1).unwrap_or_default();
        assert_eq!(task, "maybe", "{row}: {listing}");
    }
    assert!(listing.contains("the server decides"), "{listing}");

    // An initialize-era server declares each tool's task support.
    let url = ending_url(Era::Legacy, "completed", Payload::Nothing);
    let out = run(&["tools", "--url", &url]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let listing = text(&out.stdout);
    let row = listing
        .lines()
        .find(|l| l.starts_with("work "))
        .unwrap_or_else(|| panic!("{listing}"));
    assert_eq!(row.split_whitespace().nth(1), Some("required"), "{listing}");

    // A 2026-07-28 server that still declares it: the server decides all
    // the same.
    let url = ending_url(Era::Modern, "completed", Payload::Nothing);
    let out = run(&["tools", "--url", &url]);
    let listing = text(&out.stdout);
    let row = listing.lines().find(|l| l.starts_with("work "));
    let row = row.unwrap_or_else(|| panic!("{out:?}"));
    assert_eq!(row.split_whitespace().nth(1), Some("maybe"), "{listing}");
}

#[test]
fn the_demo_help_lists_its_tools() {
    let out = Command::new(DEMO).arg("--help").output().unwrap();
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let help = text(&out.stdout);
    let listing = run(&["tools", "--json", "--", DEMO]);
    let listing: Value = serde_json::from_slice(&listing.stdout).unwrap();
    let tools = listing["tools"].as_array().unwrap();
    assert!(tools.len() >= 5, "{listing}");
    for tool in tools {
        let name = tool["name"].as_str().unwrap();
        let about = tool["description"].as_str().unwrap();
        let line = help
            .lines()
            .find(|l| l.split_whitespace().next() == Some(name))
            .unwrap_or_else(|| panic!("{name} is not in the help: {help}"));
        assert!(line.contains(about), "{line}");
    }
    assert!(help.contains("mcp-tasks call"), "an example: {help}");
}

#[test]
fn the_demo_asks_its_question_in_words() {
    for (args, expected) in [
        (&["call", "ask"][..], "Your answer?"),
        (&["call", "ask", "n:=3"], "Your answer for n=3?"),
    ] {
        let mut all = args.to_vec();
        all.extend(["--", DEMO]);
        let out = run(&all);
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        let err = text(&out.stderr);
        let asked = err
            .lines()
            .find(|l| l.contains("the server asks"))
            .unwrap_or_else(|| panic!("{err}"));
        assert!(asked.ends_with(expected), "{asked}");
        assert!(!asked.contains("{}"), "{asked}");
    }
}
