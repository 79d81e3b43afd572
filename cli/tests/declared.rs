//! What the CLI declares it can answer, and what it answers: this binary,
//! started with `--serve-recording FILE`, is a 2025-11-25 stdio server
//! that records every message it receives in FILE (one JSON per line).
//! After the handshake it asks the client `roots/list` and
//! `sampling/createMessage`, and answers `tools/list` once both are
//! answered. The CLI runs `tools` against it without a terminal.

use std::io::{BufRead, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};
use wait::wait_within;

#[path = "support/wait.rs"]
mod wait;

const CLI: &str = env!("CARGO_BIN_EXE_mcp-tasks");

/// The bound on one run of the command.
const LIMIT: Duration = Duration::from_secs(30);

/// The server: reads stdin to its end, recording and answering.
fn serve_recording(file: &Path) {
    let mut record = std::fs::File::create(file).expect("the record file");
    let mut out = std::io::stdout().lock();
    let mut send = |message: Value| {
        writeln!(out, "{message}").unwrap();
        out.flush().unwrap();
    };
    let (mut answers, mut listing) = (0, None);
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { break };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        writeln!(record, "{message}").unwrap();
        let id = message["id"].clone();
        match message["method"].as_str() {
            Some("server/discover") => send(json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": "Method not found"}})),
            Some("initialize") => send(json!({"jsonrpc": "2.0", "id": id, "result": {
                "protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                "serverInfo": {"name": "recording", "version": "1.0.0"}}})),
            Some("notifications/initialized") => {
                send(json!({"jsonrpc": "2.0", "id": "roots-1", "method": "roots/list"}));
                send(json!({"jsonrpc": "2.0", "id": "sampling-1",
                    "method": "sampling/createMessage", "params": {"maxTokens": 10,
                    "messages": [{"role": "user", "content": {"type": "text", "text": "Hi?"}}]}}));
            }
            Some("tools/list") => listing = Some(id),
            Some(_) => send(json!({"jsonrpc": "2.0", "id": id, "result": {}})),
            None => answers += 1,
        }
        if answers == 2
            && let Some(id) = listing.take()
        {
            send(json!({"jsonrpc": "2.0", "id": id, "result": {"tools": []}}));
        }
    }
}

/// Runs `mcp-tasks tools` (with `extra` arguments) against the recording
/// server; its exit status and what the server received.
fn run(extra: &[&str], name: &str) -> (i32, Vec<Value>) {
    let record = std::env::temp_dir().join(format!(
        "mcp-tasks-declared-{}-{name}.jsonl",
        std::process::id()
    ));
    let mut child = Command::new(CLI)
        .arg("tools")
        .args(extra)
        .arg("--")
        .arg(std::env::current_exe().unwrap())
        .arg("--serve-recording")
        .arg(&record)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start mcp-tasks");
    let code = wait_within(&mut child, LIMIT).map_or(-1, |s| s.code().expect("an exit code"));
    let text = std::fs::read_to_string(&record).unwrap_or_default();
    let _ = std::fs::remove_file(&record);
    let messages = text
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect();
    (code, messages)
}

fn find(messages: &[Value], what: impl Fn(&Value) -> bool) -> Option<&Value> {
    messages.iter().find(|m| what(m))
}

/// `initialize` declares roots and sampling; `roots/list` gets the
/// current folder; sampling, with no terminal to ask at, is declined with
/// an error (not "method not found").
fn the_cli_declares_roots_and_sampling_and_answers_them() -> Result<(), String> {
    let (code, seen) = run(&[], "default");
    if code != 0 {
        return Err(format!("exit {code}; the server saw {seen:?}"));
    }
    let init = find(&seen, |m| m["method"] == "initialize").ok_or("no initialize")?;
    let caps = &init["params"]["capabilities"];
    for declared in ["roots", "sampling", "elicitation"] {
        if caps.get(declared).is_none() {
            return Err(format!("initialize does not declare {declared}: {caps}"));
        }
    }
    let roots = find(&seen, |m| m["id"] == "roots-1").ok_or("roots/list unanswered")?;
    let here = std::fs::canonicalize(std::env::current_dir().unwrap()).unwrap();
    let uri = roots["result"]["roots"][0]["uri"].as_str().unwrap_or("");
    let last = here.file_name().unwrap().to_string_lossy().into_owned();
    if !uri.starts_with("file:///") || !uri.ends_with(&last) {
        return Err(format!("the root is not the current folder: {roots}"));
    }
    let sampling = find(&seen, |m| m["id"] == "sampling-1").ok_or("sampling unanswered")?;
    let code = sampling["error"]["code"].as_i64();
    let message = sampling["error"]["message"].as_str().unwrap_or("");
    if code == Some(-32601) || !message.contains("declined") {
        return Err(format!(
            "sampling is not declined as it should be: {sampling}"
        ));
    }
    Ok(())
}

/// `--root PATH` (repeatable) replaces the current folder.
fn each_root_option_is_a_root() -> Result<(), String> {
    let temp = std::fs::canonicalize(std::env::temp_dir()).unwrap();
    let manifest = env!("CARGO_MANIFEST_DIR");
    let (code, seen) = run(
        &["--root", temp.to_str().unwrap(), "--root", manifest],
        "roots",
    );
    if code != 0 {
        return Err(format!("exit {code}; the server saw {seen:?}"));
    }
    let roots = find(&seen, |m| m["id"] == "roots-1").ok_or("roots/list unanswered")?;
    let listed = roots["result"]["roots"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    let ends = |root: &Value, path: &Path| {
        let last = path.file_name().unwrap().to_string_lossy().into_owned();
        root["uri"].as_str().is_some_and(|u| u.ends_with(&last))
    };
    if listed.len() != 2 || !ends(&listed[0], &temp) || !ends(&listed[1], Path::new(manifest)) {
        return Err(format!("the roots are not the two folders: {roots}"));
    }
    Ok(())
}

/// A `--root` that does not exist is a usage error (exit 2), before any
/// server is started.
fn a_missing_root_is_a_usage_error() -> Result<(), String> {
    let (code, seen) = run(&["--root", "/no/such/folder/anywhere"], "missing");
    if code != 2 || !seen.is_empty() {
        return Err(format!("exit {code}; the server saw {seen:?}"));
    }
    Ok(())
}

/// `--protocol-version` pins the revision: no `server/discover` probe,
/// the handshake offers the pinned one.
fn a_pinned_protocol_version_skips_the_probe() -> Result<(), String> {
    let (code, seen) = run(&["--protocol-version", "2025-11-25"], "pinned");
    if code != 0 {
        return Err(format!("exit {code}; the server saw {seen:?}"));
    }
    if find(&seen, |m| m["method"] == "server/discover").is_some() {
        return Err(format!("the server was probed: {seen:?}"));
    }
    let first = seen.first().ok_or("the server saw nothing")?;
    if first["method"] != "initialize" || first["params"]["protocolVersion"] != "2025-11-25" {
        return Err(format!(
            "the first message is not the pinned initialize: {first}"
        ));
    }
    Ok(())
}

/// One test: `Err` says what went wrong.
type Test = fn() -> Result<(), String>;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve-recording") {
        serve_recording(Path::new(&args[i + 1]));
        return;
    }
    let tests: [(&str, Test); 4] = [
        (
            "the_cli_declares_roots_and_sampling_and_answers_them",
            the_cli_declares_roots_and_sampling_and_answers_them,
        ),
        ("each_root_option_is_a_root", each_root_option_is_a_root),
        (
            "a_missing_root_is_a_usage_error",
            a_missing_root_is_a_usage_error,
        ),
        (
            "a_pinned_protocol_version_skips_the_probe",
            a_pinned_protocol_version_skips_the_probe,
        ),
    ];
    let mut failed = 0;
    for (name, test) in tests {
        match test() {
            Ok(()) => println!("test {name} ... ok"),
            Err(why) => {
                failed += 1;
                println!("test {name} ... FAILED: {why}");
            }
        }
    }
    println!("{} passed, {failed} failed", tests.len() - failed);
    if failed > 0 {
        std::process::exit(1);
    }
}
