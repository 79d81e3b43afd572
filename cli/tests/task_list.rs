//! The task list: `call --detach` keeps the task, `list` shows it, and
//! `status`, `wait` and `cancel` find it by its short name, against the
//! demo server's HTTP mode on loopback. Each test has a data folder of its
//! own (`MCP_TASKS_DATA_DIR`). Every command is bounded by `LIMIT`;
//! nothing asserts how long anything took.

use std::path::Path;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mcp_tasks::TaskRef;
use mcp_tasks::protocol::TaskStatus;
use mcp_tasks::store::backend::NewTask;
use mcp_tasks::store::{RecordId, SqliteStore, TaskStore};
use serde_json::{Value, json};

#[path = "support/data_dir.rs"]
mod data_dir;
#[path = "support/http_demo.rs"]
mod http_demo;
use data_dir::{TempDir, run};
use http_demo::HttpDemo;

/// A token that must never reach the task list.
const TOKEN: &str = "s3cr3t-t0ken-for-the-demo";

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// `mcp-tasks list --json`, one object per line.
fn listed(data: &Path) -> Vec<Value> {
    let out = run(data, &["list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

/// The task id in full, read from a `mtr_` reference.
fn task_id(reference: &str) -> String {
    decoded(reference).task_id().expose().to_owned()
}

/// The `TaskRef` a `mtr_` reference holds.
fn decoded(reference: &str) -> TaskRef {
    let json = URL_SAFE_NO_PAD
        .decode(reference.trim().strip_prefix("mtr_").unwrap())
        .unwrap();
    serde_json::from_slice(&json).unwrap()
}

/// Record `id` of the task list in `data`, read with the library's store.
async fn record(data: &Path, id: i64) -> mcp_tasks::store::TaskRecord {
    let store = SqliteStore::open(data.join("tasks.db")).await.unwrap();
    store.get(RecordId(id)).await.unwrap().expect("the record")
}

#[tokio::test]
async fn a_record_names_its_server_by_its_reference_and_keeps_its_key_free_of_it() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("named");
    let data = dir.data();
    let detached = run(&data, &["call", "long", "--detach", "--url", &demo.url()]);
    assert_eq!(detached.status.code(), Some(0), "{detached:?}");
    let task = decoded(&text(&detached.stdout));

    // What the inbox (`mcp-tasks serve`) shows as the task's server and
    // key: the URL it is reached at, and the digest `list` shows.
    let kept = record(&data, 1).await;
    assert_eq!(kept.reference.server(), Some(demo.url().as_str()));
    assert_eq!(kept.reference.task_id(), task.task_id());
    assert_eq!(kept.key, Some(task.task_id().redacted()));
    assert_eq!(listed(&data)[0]["task"], task.task_id().redacted());
    // Followed by its short name, it goes by the reference `call` printed.
    let status = run(&data, &["status", "1", "--json"]);
    assert_eq!(status.status.code(), Some(7), "{status:?}");
    let line: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(line["reference"], text(&detached.stdout).trim(), "{line}");

    // Found by its reference, printed with the server's own name.
    let cancel = run(
        &data,
        &[
            "cancel",
            text(&detached.stdout).trim(),
            "--url",
            &demo.url(),
        ],
    );
    assert_eq!(cancel.status.code(), Some(0), "{cancel:?}");
    assert_eq!(listed(&data)[0]["status"], "cancelled");
}

#[tokio::test]
async fn a_record_written_before_is_listed_followed_and_found_by_its_reference() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("before");
    let started = dir.data();
    let detached = run(
        &started,
        &["call", "long", "--detach", "--url", &demo.url()],
    );
    assert_eq!(detached.status.code(), Some(0), "{detached:?}");
    let reference = text(&detached.stdout).trim().to_owned();

    // The same task in a task list of its own, as it was recorded before:
    // the endpoint as JSON in the key, the reference as the server gave it.
    let data = dir.data().with_file_name("before");
    std::fs::create_dir_all(&data).unwrap();
    let store = SqliteStore::open(data.join("tasks.db")).await.unwrap();
    let id = store
        .insert(NewTask {
            unique_key: false,
            reference: decoded(&reference),
            tool: "long".into(),
            key: Some(json!({ "url": demo.url() }).to_string()),
            scope: "mcp-tasks-cli".into(),
            status: TaskStatus::Working,
            status_message: None,
            poll_interval_ms: None,
            due: std::time::SystemTime::now(),
            ending: None,
            schedule: Default::default(),
        })
        .await
        .unwrap();
    drop(store);

    let tasks = listed(&data);
    assert_eq!(tasks[0]["name"], id.0, "{tasks:?}");
    assert_eq!(tasks[0]["server"]["url"], demo.url().as_str(), "{tasks:?}");
    // Followed by its short name on its recorded server.
    let status = run(&data, &["status", &id.0.to_string()]);
    assert_eq!(status.status.code(), Some(7), "{status:?}");
    // Found by its reference, its server named: written back.
    let cancel = run(&data, &["cancel", &reference, "--url", &demo.url()]);
    assert_eq!(cancel.status.code(), Some(0), "{cancel:?}");
    assert_eq!(listed(&data)[0]["status"], "cancelled");
    let forget = run(&data, &["forget", &id.0.to_string()]);
    assert_eq!(forget.status.code(), Some(0), "{forget:?}");
}

#[test]
fn a_detached_task_is_listed_followed_by_its_short_name_and_listed_as_ended() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("wait");
    let data = dir.data();

    let detached = run(
        &data,
        &[
            "call",
            "job",
            "n:=7",
            "ms:=1500",
            "--detach",
            "--url",
            &demo.url(),
            "--bearer",
            TOKEN,
        ],
    );
    assert_eq!(detached.status.code(), Some(0), "{detached:?}");
    let reference = text(&detached.stdout);
    assert!(reference.starts_with("mtr_"), "{reference}");
    let hint = text(&detached.stderr);
    assert!(
        hint.contains("#1") && hint.contains("mcp-tasks wait 1"),
        "{hint}"
    );

    let tasks = listed(&data);
    assert_eq!(tasks.len(), 1, "{tasks:?}");
    let task = &tasks[0];
    assert_eq!(task["name"], 1);
    assert_eq!(task["tool"], "job");
    assert_eq!(task["status"], "working");
    assert_eq!(task["server"]["url"], demo.url().as_str());
    assert!(task["created"].as_str().unwrap().ends_with('Z'), "{task}");
    let id = task_id(&reference);
    assert!(task["task"].as_str().unwrap().starts_with('#'), "{task}");
    let plain = run(&data, &["list"]);
    for shown in [text(&plain.stdout), tasks[0].to_string()] {
        assert!(!shown.contains(&id), "the full task id is shown: {shown}");
    }
    assert!(text(&plain.stdout).contains("job"), "{plain:?}");

    // No server named: the recorded URL is used.
    let waited = run(&data, &["wait", "1"]);
    assert_eq!(waited.status.code(), Some(0), "{waited:?}");
    assert!(text(&waited.stdout).contains("\"n\": 7"), "{waited:?}");

    let tasks = listed(&data);
    assert_eq!(tasks[0]["status"], "completed", "{tasks:?}");
    let status = run(&data, &["status", "#1"]);
    assert_eq!(status.status.code(), Some(0), "{status:?}");
    assert!(text(&status.stdout).starts_with("completed"), "{status:?}");
}

#[test]
fn the_task_list_is_private_and_holds_no_token() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("private");
    let data = dir.data();
    let detached = run(
        &data,
        &[
            "call",
            "job",
            "ms=200",
            "--detach",
            "--url",
            &demo.url(),
            "--header",
            &format!("X-Api-Key: {TOKEN}"),
            "--bearer",
            TOKEN,
        ],
    );
    assert_eq!(detached.status.code(), Some(0), "{detached:?}");
    assert_eq!(listed(&data).len(), 1);

    use std::os::unix::fs::PermissionsExt;
    let file = data.join("tasks.db");
    let mode = std::fs::metadata(&file).unwrap().permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "the task list is {mode:o}");
    let folder = std::fs::metadata(&data).unwrap().permissions().mode();
    assert_eq!(folder & 0o077, 0, "the data folder is {folder:o}");
    // The database and its write-ahead log.
    for entry in std::fs::read_dir(&data).unwrap() {
        let path = entry.unwrap().path();
        let bytes = std::fs::read(&path).unwrap();
        let found = bytes.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes());
        assert!(!found, "{} holds the token", path.display());
    }
}

#[test]
fn an_unknown_short_name_is_a_usage_error() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("unknown");
    let data = dir.data();

    // An empty list.
    let out = run(&data, &["wait", "7"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = text(&out.stderr);
    assert!(err.contains("no task 7 in the task list"), "{err}");
    assert_eq!(err.lines().count(), 1, "one line: {err}");
    let empty = run(&data, &["list"]);
    assert_eq!(empty.status.code(), Some(0), "{empty:?}");
    assert!(text(&empty.stdout).is_empty(), "{empty:?}");

    // A list with another task in it, and a server named.
    let detached = run(&data, &["call", "long", "--detach", "--url", &demo.url()]);
    assert_eq!(detached.status.code(), Some(0), "{detached:?}");
    let out = run(&data, &["cancel", "#2", "--url", &demo.url(), "--json"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let line: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(line["type"], "error", "{line}");
    let out = run(&data, &["cancel", "1"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
}

#[test]
fn a_task_named_by_its_reference_is_written_back_too() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("reference");
    let data = dir.data();
    let first = run(&data, &["call", "long", "--detach", "--url", &demo.url()]);
    let second = run(&data, &["call", "long", "--detach", "--url", &demo.url()]);
    assert_eq!(first.status.code(), Some(0), "{first:?}");
    assert_eq!(second.status.code(), Some(0), "{second:?}");

    let status = run(&data, &["status", "2", "--json"]);
    let line: Value = serde_json::from_slice(&status.stdout).unwrap();
    assert_eq!(line["status"], "working", "{line}");

    // The reference, with its server named, as before the task list.
    let reference = text(&first.stdout);
    let cancel = run(&data, &["cancel", reference.trim(), "--url", &demo.url()]);
    assert_eq!(cancel.status.code(), Some(0), "{cancel:?}");
    assert!(text(&cancel.stderr).contains("the task was cancelled"));

    // Newest first: the second task still runs, the first was cancelled.
    let tasks = listed(&data);
    let names: Vec<_> = tasks.iter().map(|t| t["name"].as_i64().unwrap()).collect();
    assert_eq!(names, [2, 1], "{tasks:?}");
    assert_eq!(tasks[0]["status"], "working", "{tasks:?}");
    assert_eq!(tasks[1]["status"], "cancelled", "{tasks:?}");
}

#[test]
fn watch_follows_every_open_task_to_its_end() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("watch");
    let data = dir.data();
    for ms in ["ms:=400", "ms:=900"] {
        let out = run(
            &data,
            &["call", "job", ms, "--detach", "--url", &demo.url()],
        );
        assert_eq!(out.status.code(), Some(0), "{out:?}");
    }

    let watched = run(&data, &["watch"]);
    assert_eq!(watched.status.code(), Some(0), "{watched:?}");
    let lines = text(&watched.stdout);
    for name in ["#1 job: completed", "#2 job: completed"] {
        assert_eq!(lines.matches(name).count(), 1, "{lines}");
    }
    assert!(lines.lines().all(|l| l.starts_with('#')), "{lines}");
    let tasks = listed(&data);
    assert!(
        tasks.iter().all(|t| t["status"] == "completed"),
        "{tasks:?}"
    );

    // Nothing left open: nothing to follow.
    let again = run(&data, &["watch", "--json"]);
    assert_eq!(again.status.code(), Some(0), "{again:?}");
    assert!(text(&again.stdout).is_empty(), "{again:?}");

    // A question is for `wait`: watch says so and leaves the task running.
    let out = run(&data, &["call", "ask", "--detach", "--url", &demo.url()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let watched = run(&data, &["watch", "--json"]);
    assert_eq!(watched.status.code(), Some(1), "{watched:?}");
    // Its last line (a slow machine may first see the task still working).
    let out = text(&watched.stdout);
    let last = out.lines().last().unwrap_or_default();
    let line: Value = serde_json::from_str(last).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(line["name"], 3, "{line}");
    assert_eq!(line["status"], "input_required", "{line}");
    assert!(
        line["message"]
            .as_str()
            .unwrap()
            .contains("mcp-tasks wait 3")
    );
    assert_eq!(listed(&data)[0]["status"], "input_required");
}

/// `mcp-tasks status NAME` until the task asks, bounded.
fn until_asking(data: &Path, name: &str) {
    for _ in 0..100 {
        let status = run(data, &["status", name]);
        // Still running (7) until it asks, and while it asks.
        assert_eq!(status.status.code(), Some(7), "{status:?}");
        if text(&status.stdout).starts_with("input_required") {
            return;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("task {name} never asked");
}

/// `mcp-tasks questions --json`, one object per line.
fn questions(data: &Path) -> Vec<Value> {
    let out = run(data, &["questions", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    text(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("one JSON object per line"))
        .collect()
}

#[test]
fn a_question_is_listed_and_answered_from_another_shell_once() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("answer");
    let data = dir.data();
    let url = demo.url();
    let detached = run(&data, &["call", "deploy", "--detach", "--url", &url]);
    assert_eq!(detached.status.code(), Some(0), "{detached:?}");
    assert!(questions(&data).is_empty(), "nothing asked yet");

    until_asking(&data, "1");
    let asked = questions(&data);
    assert_eq!(asked.len(), 1, "{asked:?}");
    assert_eq!(asked[0]["name"], 1);
    assert_eq!(asked[0]["tool"], "deploy");
    assert_eq!(asked[0]["key"], "target");
    assert_eq!(asked[0]["kind"], "form");
    assert_eq!(asked[0]["message"], "Deploy to which environment?");
    assert_eq!(
        asked[0]["schema"]["properties"]["environment"]["enum"],
        serde_json::json!(["staging", "production"])
    );
    let plain = run(&data, &["questions"]);
    assert!(
        text(&plain.stdout).contains("Deploy to which environment?"),
        "{plain:?}"
    );

    // Answers that do not fit are refused, naming the field; nothing is kept.
    for (words, field) in [
        (&["environment=qa", "replicas=2"][..], "environment"),
        (&["environment=staging", "replicas=0"][..], "replicas"),
        (&["replicas=2"][..], "environment"),
    ] {
        let mut args = vec!["answer", "1"];
        args.extend_from_slice(words);
        let refused = run(&data, &args);
        assert_eq!(refused.status.code(), Some(2), "{words:?}: {refused:?}");
        let why = text(&refused.stderr);
        assert!(why.contains(field), "{words:?}: {why}");
    }
    assert_eq!(questions(&data).len(), 1, "a refused answer leaves it open");

    // The server cannot be reached: the answer is kept all the same.
    let away = run(
        &data,
        &[
            "answer",
            "1",
            "target",
            "environment=staging",
            "replicas=3",
            "--url",
            "http://127.0.0.1:9/mcp",
        ],
    );
    assert_ne!(away.status.code(), Some(0), "{away:?}");
    assert!(text(&away.stderr).contains("mcp-tasks wait 1"), "{away:?}");
    // The first answer wins.
    let second = run(
        &data,
        &["answer", "1", "environment=production", "replicas=1"],
    );
    assert_eq!(second.status.code(), Some(2), "{second:?}");
    assert!(
        text(&second.stderr).contains("already answered"),
        "{second:?}"
    );

    // `wait` sends the kept answer before it would ask (no terminal here:
    // it would decline), and the task rolls out to staging.
    let waited = run(&data, &["wait", "1"]);
    assert_eq!(waited.status.code(), Some(0), "{waited:?}");
    let out = text(&waited.stdout);
    assert!(
        out.contains("staging") && !out.contains("production"),
        "{out}"
    );
    assert!(questions(&data).is_empty(), "{:?}", questions(&data));

    // The task's history says what happened, and who answered.
    let status = run(&data, &["status", "1", "--history"]);
    assert_eq!(status.status.code(), Some(0), "{status:?}");
    let out = text(&status.stdout);
    let history = &out[out.find("history:").unwrap_or_else(|| panic!("{out}"))..];
    let lines: Vec<&str> = history.lines().skip(1).collect();
    assert!(lines[0].contains("recorded, working"), "{history}");
    for words in [
        "input_required",
        "asked target",
        "target answered by a person on the command line",
        "ended: completed",
    ] {
        assert!(
            lines.iter().any(|l| l.contains(words)),
            "{words:?} not in {history}"
        );
    }
    let status = run(&data, &["status", "1", "--history", "--json"]);
    let out = text(&status.stdout);
    let last: Value = serde_json::from_str(out.lines().last().unwrap()).unwrap();
    let events: Vec<&str> = last["history"]
        .as_array()
        .unwrap_or_else(|| panic!("{out}"))
        .iter()
        .map(|e| e["event"].as_str().unwrap())
        .collect();
    assert_eq!(events[0], "created", "{last}");
    assert!(events.contains(&"ended"), "{last}");
    let answered = last["history"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["event"] == "answered")
        .unwrap_or_else(|| panic!("{last}"));
    assert_eq!(answered["by"], "command_line", "{last}");
    assert_eq!(answered["key"], "target");
    assert_eq!(last["dropped"], 0);
}

#[test]
fn an_answer_is_sent_at_once_and_never_twice() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("answer-now");
    let data = dir.data();
    let detached = run(&data, &["call", "ask", "--detach", "--url", &demo.url()]);
    assert_eq!(detached.status.code(), Some(0), "{detached:?}");
    until_asking(&data, "1");

    let answered = run(&data, &["answer", "#1", "answer=forty-two", "--json"]);
    assert_eq!(answered.status.code(), Some(0), "{answered:?}");
    let line: Value = serde_json::from_str(text(&answered.stdout).trim()).unwrap();
    assert_eq!(line["type"], "status", "{line}");
    assert!(questions(&data).is_empty());
    let again = run(&data, &["answer", "1", "answer=other"]);
    assert_eq!(again.status.code(), Some(2), "{again:?}");

    let waited = run(&data, &["wait", "1"]);
    assert_eq!(waited.status.code(), Some(0), "{waited:?}");
    let out = text(&waited.stdout);
    assert!(out.contains("forty-two") && !out.contains("other"), "{out}");
}

/// `mcp-tasks ARGS` on the task list in `data`: its exit status and stderr.
fn code_and_stderr(data: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = run(data, args);
    (out.status.code(), text(&out.stderr))
}

#[test]
fn status_and_wait_exit_with_how_the_task_stands() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("exit");
    let data = dir.data();
    let url = demo.url();
    for tool in ["long", "job", "migrate"] {
        let out = run(&data, &["call", tool, "--detach", "--url", &url]);
        assert_eq!(out.status.code(), Some(0), "{tool}: {out:?}");
    }

    // Still running: neither completed nor anything else.
    let (code, err) = code_and_stderr(&data, &["status", "1"]);
    assert_eq!(code, Some(7), "status of a running task: {err}");
    let status = run(&data, &["status", "1", "--json"]);
    assert_eq!(status.status.code(), Some(7), "{status:?}");

    // The person's own cancel, then `wait` and `status`: cancelled, and
    // never said to be someone else's doing.
    let (code, err) = code_and_stderr(&data, &["cancel", "1"]);
    assert_eq!(code, Some(0), "{err}");
    for args in [
        &["wait", "1"][..],
        &["status", "1"],
        &["wait", "1", "--json"],
    ] {
        let (code, err) = code_and_stderr(&data, args);
        assert_eq!(code, Some(4), "{args:?}: {err}");
        assert!(
            !err.contains("another client") && !err.contains("someone else"),
            "{args:?}: {err}"
        );
    }
    // A second cancel: the task is cancelled, as asked.
    let (code, err) = code_and_stderr(&data, &["cancel", "1"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("already"), "{err}");

    // Completed, and failed: the same code from both commands.
    for (name, expected) in [("2", 0), ("3", 3)] {
        for command in ["wait", "status"] {
            let (code, err) = code_and_stderr(&data, &[command, name]);
            assert_eq!(code, Some(expected), "{command} {name}: {err}");
        }
    }
}
