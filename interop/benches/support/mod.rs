//! What the benches share: their runtime, a CPU's accounting from `/proc`
//! (Linux), and the task lifecycles they measure, with mcp-tasks and with
//! rmcp's client.

#![allow(dead_code, reason = "shared by every bench; each uses part of it")]

use std::collections::HashSet;
use std::hint::black_box;
use std::time::Duration;

use rmcp::RoleClient;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ClientConfig, GetTaskParams,
    JsonObject, TaskPayload,
};
use rmcp::service::RunningService;
use serde_json::{Value, json};

/// The runtime every client in the benches runs on: one thread, this one.
pub fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

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

/// rmcp's client, the way its task example drives a task: call the `bench`
/// tool (with `arguments`, if any), then read the task until its status is
/// terminal, sleeping `pollIntervalMs` before each read when the server
/// gives one, then parse the inlined result. The example's default when
/// there is none is 500 ms; here, as for mcp-tasks, there is no sleep then,
/// and a zero one is skipped (tokio would round it up to a timer tick).
pub async fn rmcp_lifecycle(
    client: &RunningService<RoleClient, ClientConfig>,
    arguments: Option<&JsonObject>,
) {
    let mut params = CallToolRequestParams::new("bench");
    if let Some(arguments) = arguments {
        params = params.with_arguments(arguments.clone());
    }
    let created = match client.call_tool_once(params).await.expect("tools/call") {
        CallToolResponse::Task(created) => created,
        _ => panic!("the bench tool answered without a task"),
    };
    let task_id = created.task.task_id;
    let mut interval = created.task.poll_interval_ms;
    let done = loop {
        if let Some(ms) = interval.filter(|ms| *ms > 0) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        let read = client
            .peer()
            .get_task(GetTaskParams::new(task_id.clone()))
            .await
            .expect("tasks/get");
        if read.task.status().is_terminal() {
            break read.task;
        }
        interval = read.task.task.poll_interval_ms;
    };
    let TaskPayload::Completed { result } = done.payload else {
        panic!("the bench task did not complete");
    };
    let result: CallToolResult =
        serde_json::from_value(Value::Object(result)).expect("a tool result");
    assert_eq!(result.structured_content, Some(json!({ "reads": 3 })));
    black_box(result);
}
