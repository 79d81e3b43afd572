//! `mcp-tasks serve` as a process: it serves the store it is given, on
//! the address it is given, and asks for a token off loopback.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, SystemTime};

use mcp_tasks::TaskRef;
use mcp_tasks::protocol::{TaskId, TaskStatus};
use mcp_tasks::store::backend::NewTask;
use mcp_tasks::store::{Schedule, SqliteStore, TaskStore};

const CLI: &str = env!("CARGO_BIN_EXE_mcp-tasks");

/// The served process, killed when dropped.
struct Served(Child);

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `serve` with `args` and returns it with the first line it
/// printed.
fn serve(args: &[&str], token: Option<&str>) -> (Served, String) {
    let mut command = Command::new(CLI);
    command
        .arg("serve")
        .args(args)
        .env_remove("MCP_TASKS_INBOX_TOKEN")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(t) = token {
        command.env("MCP_TASKS_INBOX_TOKEN", t);
    }
    let mut child = command.spawn().unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (Served(child), line)
}

/// The port in `inbox on http://HOST:PORT/…`.
fn port(line: &str) -> u16 {
    let rest = line.split("://").nth(1).unwrap();
    let authority = rest.split('/').next().unwrap();
    authority.rsplit(':').next().unwrap().parse().unwrap()
}

/// One GET on loopback, as `host`; the status and the body.
fn get(port: u16, path: &str, headers: &str) -> (u16, String) {
    let mut s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n{headers}Connection: close\r\n\r\n"
    )
    .unwrap();
    let mut reply = String::new();
    s.read_to_string(&mut reply).unwrap();
    let status = reply[9..12].parse().unwrap();
    (status, reply)
}

async fn store_with_one_task(path: &std::path::Path) {
    let store = SqliteStore::open(path).await.unwrap();
    store
        .insert(NewTask {
            reference: TaskRef::new(TaskId::new("a-secret-task-id-0123456789"), None),
            tool: "export-orders".into(),
            key: None,
            unique_key: false,
            scope: "s".into(),
            status: TaskStatus::Working,
            status_message: Some("<b>half</b> way".into()),
            poll_interval_ms: None,
            due: SystemTime::now(),
            ending: None,
            schedule: Schedule::default(),
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn serve_shows_the_store_it_is_given() {
    let dir = std::env::temp_dir().join(format!("mcp-tasks-serve-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("tasks.db");
    store_with_one_task(&db).await;
    let store = format!("sqlite:{}", db.display());
    let (_served, line) = serve(&["--store", &store, "--listen", "127.0.0.1:0"], None);
    assert!(line.starts_with("inbox on http://127.0.0.1:"), "{line}");
    let (status, page) = get(port(&line), "/tasks", "");
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("export-orders"), "{page}");
    assert!(page.contains("&lt;b&gt;half&lt;/b&gt; way"), "{page}");
    assert!(!page.contains("a-secret-task-id"), "{page}");
    let (status, metrics) = get(port(&line), "/metrics", "");
    assert_eq!(status, 200);
    assert!(
        metrics.contains("mcp_tasks_records{state=\"open\"} 1"),
        "{metrics}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn off_loopback_a_token_is_made_and_asked_for() {
    let dir = std::env::temp_dir().join(format!("mcp-tasks-serve-t-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let store = format!("sqlite:{}", dir.join("tasks.db").display());
    let (_served, line) = serve(&["--store", &store, "--listen", "0.0.0.0:0"], None);
    let token = line
        .split("token=")
        .nth(1)
        .and_then(|t| t.split_whitespace().next())
        .unwrap_or_else(|| panic!("no token printed: {line}"))
        .to_owned();
    assert_eq!(token.len(), 64);
    let port = port(&line);
    assert_eq!(get(port, "/tasks", "").0, 401);
    let bearer = format!("Authorization: Bearer {token}\r\n");
    assert_eq!(get(port, "/tasks", &bearer).0, 200);
    // A token given is used as it is.
    let (_served, line) = serve(
        &["--store", &store, "--listen", "0.0.0.0:0"],
        Some("chosen-token"),
    );
    assert!(
        !line.contains("chosen-token"),
        "a given token is not printed: {line}"
    );
    let port = self::port(&line);
    assert_eq!(
        get(port, "/tasks", "Authorization: Bearer chosen-token\r\n").0,
        200
    );
    assert_eq!(get(port, "/tasks", &bearer).0, 401);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_store_that_is_not_one_is_a_usage_error() {
    let out = Command::new(CLI)
        .args(["serve", "--store", "mysql://x"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sqlite:PATH"));
}
