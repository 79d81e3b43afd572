//! Calls the tests make again and again, each in one place. Needs no
//! test kit, so that every test binary can include it.
#![allow(
    dead_code,
    reason = "each test binary uses a different subset of these helpers"
)]

use mcp_tasks::{Client, Finished, Pending, Task, TaskBuilder, TaskState, task_builder};
use serde_json::{Value, json};

/// The text `tool` answers a plain call (no arguments) with.
pub async fn call_text(client: &Client, tool: &str) -> String {
    client
        .call_tool(tool, json!({}))
        .await
        .unwrap()
        .joined_text()
}

/// The names of the tools `client` lists, in order.
pub async fn tool_names(client: &Client) -> Vec<String> {
    client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect()
}

/// The structured content of a task that completed.
pub fn structured(done: &Task<Finished>) -> Value {
    done.outcome()
        .result()
        .unwrap()
        .structured_content
        .clone()
        .unwrap()
}

/// Calls `tool` (no arguments) as a task started by `task`; its pending
/// handle (a panic where the call left no task running).
pub async fn start_pending<S: task_builder::IsComplete>(
    task: TaskBuilder<S>,
    tool: &str,
) -> Task<Pending> {
    match task.call_tool(tool, json!({})).await.unwrap() {
        TaskState::Pending(task) => task,
        other => panic!("expected a pending task, got {other:?}"),
    }
}
