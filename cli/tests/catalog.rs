//! `resources`, `templates`, `read`, `prompts`, `prompt` and `complete`
//! as a script runs them (piped, no terminal), against the bundled demo
//! server over stdio (spawned after `--`) and over loopback HTTP
//! (`mcp-tasks-demo --http 127.0.0.1:0`). Each run is bounded by the
//! client's own request timeout and the demo's answers, which are
//! immediate; nothing asserts how long anything took.

use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

#[path = "support/http_demo.rs"]
mod http_demo;
use http_demo::HttpDemo;

const CLI: &str = env!("CARGO_BIN_EXE_mcp-tasks");
const DEMO: &str = env!("CARGO_BIN_EXE_mcp-tasks-demo");

/// How the command line names the demo server.
enum Server {
    /// `-- mcp-tasks-demo`.
    Stdio,
    /// `--url http://127.0.0.1:PORT/mcp` of a demo in HTTP mode.
    Http(HttpDemo),
}

impl Server {
    /// `mcp-tasks ARGS` against this server, piped.
    fn run(&self, args: &[&str]) -> Output {
        let mut cmd = Command::new(CLI);
        cmd.args(args).stdin(Stdio::null());
        match self {
            Server::Stdio => {
                cmd.arg("--").arg(DEMO);
            }
            Server::Http(demo) => {
                cmd.arg("--url").arg(demo.url());
            }
        }
        cmd.output().expect("run mcp-tasks")
    }
}

fn stdout(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// Runs `args`, expecting success, and gives stdout.
fn ok(server: &Server, args: &[&str]) -> String {
    let out = server.run(args);
    assert_eq!(
        out.status.code(),
        Some(0),
        "mcp-tasks {args:?}: {}",
        stderr(&out)
    );
    stdout(&out)
}

/// Runs `args` with `--json`, expecting success and one JSON object on
/// one line, as every `--json` output is.
fn json_of(server: &Server, args: &[&str]) -> Value {
    let mut args = args.to_vec();
    args.push("--json");
    let text = ok(server, &args);
    assert_eq!(text.trim_end().lines().count(), 1, "one line: {text}");
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("one JSON object ({e}): {text}"))
}

fn lists_and_reads(server: &Server) {
    let listed = ok(server, &["resources"]);
    let lines: Vec<&str> = listed.lines().collect();
    assert!(lines[0].starts_with("URI"), "{listed}");
    assert!(
        lines
            .iter()
            .any(|l| l.starts_with("demo://readme") && l.contains("text/markdown")),
        "{listed}"
    );
    assert!(listed.contains("demo://logo.png"), "{listed}");

    let listed = json_of(server, &["resources"]);
    let uris: Vec<&str> = listed["resources"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    assert_eq!(
        uris,
        [
            "demo://readme",
            "demo://tables/orders/summary",
            "demo://logo.png"
        ]
    );

    let text = ok(server, &["read", "demo://readme"]);
    assert!(text.starts_with("# The demo server\n"), "{text}");

    let blob = ok(server, &["read", "demo://logo.png"]);
    assert_eq!(
        blob.trim(),
        "[binary image/png, 69 bytes: --out FILE saves it]"
    );
    let read = json_of(server, &["read", "demo://logo.png"]);
    assert_eq!(read["contents"][0]["mimeType"], "image/png");
    assert!(read["contents"][0]["blob"].is_string(), "{read}");

    let templates = ok(server, &["templates"]);
    assert!(
        templates.contains("demo://tables/{table}/summary"),
        "{templates}"
    );
    let templates = json_of(server, &["templates"]);
    assert_eq!(
        templates["resourceTemplates"][0]["uriTemplate"],
        "demo://tables/{table}/summary"
    );
}

fn prompts_and_completion(server: &Server) {
    let listed = ok(server, &["prompts"]);
    assert!(
        listed
            .lines()
            .any(|l| l.starts_with("review") && l.contains("file*, focus")),
        "{listed}"
    );
    let listed = json_of(server, &["prompts"]);
    assert_eq!(listed["prompts"][0]["name"], "review");
    assert_eq!(listed["prompts"][0]["arguments"][0]["required"], true);

    let rendered = ok(
        server,
        &["prompt", "review", "file=src/lib.rs", "focus=speed"],
    );
    assert_eq!(
        rendered,
        "[user]\nPlease review src/lib.rs, looking first at speed.\n\n\
         [assistant]\nI will read src/lib.rs and start with speed.\n"
    );
    let rendered = json_of(server, &["prompt", "review", r#"{"file": "a.rs"}"#]);
    assert_eq!(rendered["description"], "A review request");
    assert_eq!(rendered["messages"][0]["role"], "user");
    assert!(
        rendered["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .contains("a.rs"),
        "{rendered}"
    );

    let found = ok(server, &["complete", "--prompt", "review", "focus=s"]);
    assert_eq!(found, "security\nspeed\nstyle\n");
    let found = json_of(
        server,
        &[
            "complete",
            "--template",
            "demo://tables/{table}/summary",
            "table=order",
        ],
    );
    assert_eq!(found, json!({"values": ["orders", "order_items"]}));
    let none = ok(
        server,
        &["complete", "--prompt", "review", "file=zzz", "focus=speed"],
    );
    assert_eq!(none, "");
}

fn unknown_names_fail_clearly(server: &Server) {
    let out = server.run(&["read", "demo://nope"]);
    assert_eq!(out.status.code(), Some(3));
    assert_eq!(stdout(&out), "");
    assert!(
        stderr(&out).contains("cannot read demo://nope: resource not found"),
        "{}",
        stderr(&out)
    );

    let out = server.run(&["prompt", "nope", "--json"]);
    assert_eq!(out.status.code(), Some(3));
    let error: Value = serde_json::from_str(&stdout(&out)).expect("one JSON line");
    assert_eq!(error["type"], "error");
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("cannot get the prompt \"nope\": unknown prompt"),
        "{error}"
    );

    let out = server.run(&["prompt", "review"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stderr(&out).contains("missing argument: file"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn stdio_lists_and_reads() {
    lists_and_reads(&Server::Stdio);
}

#[test]
fn stdio_prompts_and_completion() {
    prompts_and_completion(&Server::Stdio);
}

#[test]
fn stdio_unknown_names_fail_clearly() {
    unknown_names_fail_clearly(&Server::Stdio);
}

#[test]
fn http_lists_reads_prompts_and_completes() {
    let server = Server::Http(HttpDemo::start());
    lists_and_reads(&server);
    prompts_and_completion(&server);
    unknown_names_fail_clearly(&server);
}

#[test]
fn out_saves_the_bytes() {
    let dir = std::env::temp_dir().join(format!("mcp-tasks-catalog-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("logo.png");
    let out = Server::Stdio.run(&["read", "demo://logo.png", "--out", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert_eq!(stdout(&out), "", "saved, not printed");
    assert!(
        stderr(&out).contains("wrote 69 bytes (image/png)"),
        "{}",
        stderr(&out)
    );
    let bytes = std::fs::read(&file).unwrap();
    assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n");
    assert_eq!(bytes.len(), 69);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn complete_needs_a_prompt_or_a_template() {
    let out = Server::Stdio.run(&["complete", "focus=s"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--prompt NAME or --template URI_TEMPLATE"),
        "{}",
        stderr(&out)
    );
}
