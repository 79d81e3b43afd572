//! `forget` and `prune` on a real task list: `forget` removes one task
//! and never cancels it (a task not ended is refused unless `--force`);
//! `prune --older-than AGE` removes the ended tasks last seen before then
//! and nothing else. Each test has a data folder of its own
//! (`MCP_TASKS_DATA_DIR`); every command is bounded by `LIMIT`.

use std::path::Path;
use std::time::{Duration, SystemTime};

use mcp_tasks::TaskRef;
use mcp_tasks::protocol::{CallToolResult, TaskId, TaskStatus};
use mcp_tasks::store::backend::{Claim, NewTask};
use mcp_tasks::store::{Ending, RecordId, SqliteStore, TaskStore};
use serde_json::Value;

#[path = "support/data_dir.rs"]
mod data_dir;
#[path = "support/http_demo.rs"]
mod http_demo;
use data_dir::{TempDir, run};
use http_demo::HttpDemo;

const DAY: u64 = 86_400;

/// The exit status and stderr of `mcp-tasks ARGS`.
fn code_and_stderr(data: &Path, args: &[&str]) -> (Option<i32>, String) {
    let out = run(data, args);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The short names `mcp-tasks list --json` shows, newest first.
fn names(data: &Path) -> Vec<i64> {
    let out = run(data, &["list", "--json"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            serde_json::from_str::<Value>(l).unwrap()["name"]
                .as_i64()
                .unwrap()
        })
        .collect()
}

#[test]
fn forget_removes_an_ended_task_and_never_cancels_a_running_one() {
    let demo = HttpDemo::start();
    let dir = TempDir::new("forget");
    let data = dir.data();
    let url = demo.url();
    let long = run(&data, &["call", "long", "--detach", "--url", &url]);
    assert_eq!(long.status.code(), Some(0), "{long:?}");
    let reference = String::from_utf8_lossy(&long.stdout).trim().to_owned();
    let job = run(&data, &["call", "job", "--detach", "--url", &url]);
    assert_eq!(job.status.code(), Some(0), "{job:?}");
    let (code, err) = code_and_stderr(&data, &["wait", "2"]);
    assert_eq!(code, Some(0), "{err}");

    // Running: refused, saying that forgetting would not cancel it.
    let (code, err) = code_and_stderr(&data, &["forget", "1"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("may still be running") && err.contains("not cancel"),
        "{err}"
    );
    assert!(err.contains("--force"), "says how: {err}");
    assert_eq!(names(&data), [2, 1], "nothing forgotten");

    // Ended: forgotten, once.
    let (code, err) = code_and_stderr(&data, &["forget", "#2"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("forgot task 2"), "{err}");
    assert_eq!(names(&data), [1]);
    let (code, err) = code_and_stderr(&data, &["forget", "2"]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("no task 2"), "{err}");

    // Forced, by its reference: forgotten, and still running on the server.
    let (code, err) = code_and_stderr(&data, &["forget", &reference, "--force"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("forgot task 1") && err.contains("NOT cancelled"),
        "{err}"
    );
    assert!(names(&data).is_empty());
    let (code, err) = code_and_stderr(&data, &["status", &reference, "--url", &url]);
    assert_eq!(code, Some(7), "still running: {err}");
}

/// A record of the task list as `call --detach` writes it, ended (and
/// seen so) unless `open`, then aged: recorded `created` days ago, last
/// seen `seen` days ago.
async fn aged(store: &SqliteStore, file: &Path, created: f64, seen: f64, open: bool) -> RecordId {
    let id = store
        .insert(NewTask {
            unique_key: false,
            reference: TaskRef::new(
                TaskId::new("task-secret"),
                Some("http://127.0.0.1:9/mcp".into()),
            ),
            tool: "export".into(),
            key: Some(TaskId::new("task-secret").redacted()),
            scope: "mcp-tasks-cli".into(),
            status: TaskStatus::Working,
            status_message: None,
            poll_interval_ms: None,
            due: SystemTime::now(),
            ending: None,
            schedule: Default::default(),
        })
        .await
        .unwrap();
    if !open {
        let claimed = store
            .claim(Claim {
                worker: "mcp-tasks-cli",
                limit: 1,
                now: SystemTime::now(),
                lease: Duration::from_secs(30),
                record: Some(id),
            })
            .await
            .unwrap();
        let fence = claimed[0].as_ref().unwrap().fence().unwrap();
        let ending = Ending::Completed {
            result: CallToolResult::text("done"),
        };
        store.finish(id, fence, &ending).await.unwrap();
        store.acknowledge(id, fence).await.unwrap();
    }
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64;
    let ago = |days: f64| now - (days * DAY as f64 * 1000.0) as i64;
    rusqlite::Connection::open(file)
        .unwrap()
        .execute(
            "UPDATE tasks SET created_ms = ?2, updated_ms = ?3 WHERE id = ?1",
            rusqlite::params![id.0, ago(created), ago(seen)],
        )
        .unwrap();
    id
}

#[tokio::test]
async fn prune_removes_the_ended_tasks_last_seen_before_the_age() {
    let dir = TempDir::new("prune");
    let data = dir.data();

    // No task list: nothing to do, and nothing created.
    let (code, err) = code_and_stderr(&data, &["prune", "--older-than", "7d"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(!data.exists(), "prune created the task list");

    std::fs::create_dir_all(&data).unwrap();
    let file = data.join("tasks.db");
    let store = SqliteStore::open(&file).await.unwrap();
    let old = aged(&store, &file, 9.0, 8.0, false).await;
    let recent = aged(&store, &file, 6.0, 6.0, false).await;
    let open = aged(&store, &file, 30.0, 30.0, true).await;
    // Started long ago, ended an hour ago.
    let late = aged(&store, &file, 9.0, 1.0 / 24.0, false).await;
    drop(store);
    let all = |ids: &[RecordId]| ids.iter().map(|id| id.0).collect::<Vec<_>>();
    assert_eq!(names(&data), all(&[late, open, recent, old]));

    for bad in ["7", "7w", "d", "1.5h"] {
        let (code, err) = code_and_stderr(&data, &["prune", "--older-than", bad]);
        assert_eq!(code, Some(2), "{bad}: {err}");
        assert!(err.contains("30m, 12h or 7d"), "{bad}: {err}");
    }
    assert_eq!(names(&data).len(), 4, "a bad age prunes nothing");

    let (code, err) = code_and_stderr(&data, &["prune", "--older-than", "7d"]);
    assert_eq!(code, Some(0), "{err}");
    assert!(
        err.contains("pruned 1 ended task") && err.contains("3 tasks left"),
        "{err}"
    );
    assert_eq!(names(&data), all(&[late, open, recent]));

    let (code, err) = code_and_stderr(&data, &["prune", "--older-than", "12h"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(names(&data), all(&[late, open]), "{err}");

    // Every ended task: the one that runs stays, however old.
    let (code, err) = code_and_stderr(&data, &["prune", "--older-than", "0s"]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(names(&data), all(&[open]), "{err}");
}
