//! `mcp-tasks list`: the tasks `call --detach` left running.

use serde_json::json;

use crate::exit;
use crate::records::{self, Records};

/// `mcp-tasks list`.
pub async fn run(json: bool) -> anyhow::Result<u8> {
    let listed = match Records::open_existing().await? {
        Some(records) => records.list().await?,
        None => Vec::new(),
    };
    let now = std::time::SystemTime::now();
    if json {
        for task in &listed {
            let r = &task.record;
            out!(
                "{}",
                json!({
                    "name": r.id.0,
                    "tool": r.tool,
                    "status": task.status(),
                    "message": r.status_message,
                    "server": task.endpoint,
                    "created": records::rfc3339(r.created),
                    "task": r.reference.task_id().redacted(),
                })
            );
        }
        return Ok(exit::OK);
    }
    if listed.is_empty() {
        eprintln!("no tasks: `mcp-tasks call TOOL --detach …` adds one");
        return Ok(exit::OK);
    }
    let tool_width = listed
        .iter()
        .map(|t| t.record.tool.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let status_width = listed
        .iter()
        .map(|t| t.status().len())
        .max()
        .unwrap_or(6)
        .max(6);
    out!(
        "{:>4}  {:<tool_width$}  {:<status_width$}  {:>7}  {:<9}  SERVER",
        "NAME",
        "TOOL",
        "STATUS",
        "CREATED",
        "TASK"
    );
    for task in &listed {
        let r = &task.record;
        let server = task
            .endpoint
            .as_ref()
            .map_or_else(|| "?".to_owned(), ToString::to_string);
        out!(
            "{:>4}  {:<tool_width$}  {:<status_width$}  {:>7}  {:<9}  {server}",
            r.id.0,
            r.tool,
            task.status(),
            format!("{} ago", records::age(r.created, now)),
            r.reference.task_id().redacted(),
        );
    }
    Ok(exit::OK)
}
