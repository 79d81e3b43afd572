//! What the benches share: a CPU's accounting from `/proc` (Linux), and
//! the mcp-tasks lifecycle each of them measures.

#![allow(dead_code, reason = "shared by every bench; each uses part of it")]

use std::collections::HashSet;
use std::hint::black_box;
use std::time::Duration;

use serde_json::{Value, json};

/// Clock ticks per second of `/proc/*/stat` (`USER_HZ`; 100 on Linux).
pub const TICKS_PER_SECOND: f64 = 100.0;

/// User and system time of a process (`self`, or a pid), in ticks.
pub fn process_ticks(pid: &str) -> (u64, u64) {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("/proc/*/stat");
    // Fields after the command (which may hold spaces): state is field 3,
    // utime and stime are fields 14 and 15.
    let rest = &stat[stat.rfind(')').expect("a stat line") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    (fields[11].parse().unwrap(), fields[12].parse().unwrap())
}

/// Time the threads of a process have run on a CPU, in ns (threads that
/// have ended are not counted: every client and server here keeps its
/// threads).
pub fn process_ns(pid: &str) -> u64 {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return 0;
    };
    tasks
        .filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Time this thread has run on a CPU, in ns.
pub fn thread_ns() -> u64 {
    std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|s| s.split_whitespace().next()?.parse().ok())
        .unwrap_or(0)
}

/// The children of a process (`self`, or a pid).
pub fn children(pid: &str) -> HashSet<String> {
    let mut pids = HashSet::new();
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return pids;
    };
    for task in tasks {
        let path = task.unwrap().path().join("children");
        if let Ok(list) = std::fs::read_to_string(path) {
            pids.extend(list.split_whitespace().map(str::to_owned));
        }
    }
    pids
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// mcp-tasks' lifecycle of the `bench` tool: call it as a task, wait for
/// its end without pausing between reads, check its result.
pub async fn mcp_tasks_lifecycle(client: &mcp_tasks::Client, arguments: &Value) {
    let done = client
        .task()
        .poll_interval(Duration::ZERO)
        .min_poll_interval(Duration::ZERO)
        .call_tool("bench", arguments.clone())
        .await
        .expect("tools/call")
        .await
        .expect("the task's end");
    let result = done.outcome().result().expect("completed");
    assert_eq!(result.structured_content, Some(json!({ "reads": 3 })));
    black_box(result);
}
