//! `mcp-tasks watch`: follows every open task of the task list at once,
//! each over a connection of its own to its recorded server, printing one
//! line per status change, until each has ended (or asks a question,
//! which only `mcp-tasks wait NAME` can answer).

use std::time::Duration;

use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::TaskStatus;
use mcp_tasks::store::{Ending, RecordId};
use mcp_tasks::{Client, TaskState};
use serde_json::json;

use crate::records::{Listed, Records, Seen};
use crate::report::{Report, Style};
use crate::server::ServerArgs;
use crate::{exit, one_line};

/// A bound on one wait that no task reaches.
const NO_BOUND: Duration = Duration::from_secs(365 * 24 * 3600);

/// `mcp-tasks watch`: exit 0 when every task was followed to its end, 1
/// when some could not be (unreachable server, a question to answer).
pub async fn run(json: bool) -> anyhow::Result<u8> {
    let Some(records) = Records::open_existing().await? else {
        eprintln!("no tasks to watch");
        return Ok(exit::OK);
    };
    let open: Vec<Listed> = records
        .list()
        .await?
        .into_iter()
        .filter(|t| !t.record.is_finished())
        .collect();
    if open.is_empty() {
        eprintln!("no open tasks to watch");
        return Ok(exit::OK);
    }
    let mut followed = tokio::task::JoinSet::new();
    // Oldest first: the order they were started in.
    for task in open.into_iter().rev() {
        followed.spawn(follow(records.clone(), task, json));
    }
    let mut all = true;
    while let Some(done) = followed.join_next().await {
        all &= done.unwrap_or(false);
    }
    Ok(if all { exit::OK } else { NOT_ALL_ENDED })
}

/// `watch`'s exit status when some task was not followed to its end.
const NOT_ALL_ENDED: u8 = 1;

/// One task's line: `#12 export: working: reading orders`, or a JSON object.
struct Line {
    name: RecordId,
    tool: String,
    json: bool,
}

impl Line {
    fn print(&self, status: &str, message: Option<&str>) {
        if self.json {
            out!(
                "{}",
                json!({ "name": self.name.0, "tool": self.tool, "status": status, "message": message })
            );
            return;
        }
        match message {
            Some(m) => out!("#{} {}: {status}: {m}", self.name, self.tool),
            None => out!("#{} {}: {status}", self.name, self.tool),
        }
    }
}

/// Follows one task to its end and writes what was seen back; `true` when
/// it ended.
async fn follow(records: Records, task: Listed, json: bool) -> bool {
    let line = Line {
        name: task.record.id,
        tool: task.record.tool.clone(),
        json,
    };
    let Some(endpoint) = task.endpoint.as_ref() else {
        line.print(
            "unknown",
            Some("the task list does not say where its server is"),
        );
        return false;
    };
    let report = Report::new(Style::Lines);
    // No handler for questions: a question is never declined here, only
    // shown, and left for `wait`, which asks it.
    let connected = match ServerArgs::recorded(endpoint) {
        Ok(server) => server.connect(InputHandlers::new(), &report).await,
        Err(e) => Err(e),
    };
    let client = match connected {
        Ok(client) => client,
        Err(e) => {
            line.print("unreachable", Some(&crate::chain(&e)));
            return false;
        }
    };
    let mut seen = Seen::default();
    let ended = track(&client, &task, &line, &mut seen).await;
    if let Err(e) = records.write_back(task.record.id, &seen).await {
        eprintln!(
            "mcp-tasks: the task list was not updated: {}",
            crate::chain(&e)
        );
    }
    if let Err(e) = client.close().await {
        tracing::debug!("the connection did not close gracefully: {e}");
    }
    ended
}

async fn track(client: &Client, task: &Listed, line: &Line, seen: &mut Seen) -> bool {
    let mut state = match client.task().timeout(NO_BOUND).resume(&task.task).await {
        Ok(state) => state,
        Err(e) if e.is_task_not_found() => {
            seen.ending = Some(Ending::Unreachable {
                reason: "the server does not know the task".into(),
            });
            line.print("unreachable", Some("the server does not know the task"));
            return true;
        }
        Err(e) => {
            line.print("error", Some(&one_line(&e)));
            return false;
        }
    };
    let mut last: Option<(String, Option<String>)> = None;
    loop {
        state = match state {
            TaskState::Finished(done) => {
                let ending = Ending::from(done.outcome().clone());
                let message = match &ending {
                    Ending::Completed { result } if result.is_error => {
                        Some("the tool reported an error".to_owned())
                    }
                    Ending::Failed { error } => Some(error.message.clone()),
                    _ => None,
                };
                line.print(ending.name(), message.as_deref());
                seen.ending = Some(ending);
                return true;
            }
            TaskState::InputRequired(task) => {
                let status = task.snapshot().status;
                let message = task.status_message().map(str::to_owned);
                line.print(
                    status.as_str(),
                    Some(&format!(
                        "it asks a question: answer it with `mcp-tasks wait {}`",
                        line.name
                    )),
                );
                seen.status = Some((status, message));
                let _ = task.detach();
                return false;
            }
            TaskState::Pending(task) => {
                let mut updates = task.updates();
                while let Some(item) = updates.next().await {
                    match item {
                        Ok(snapshot) => {
                            let now = (
                                snapshot.status.as_str().to_owned(),
                                snapshot.status_message.clone(),
                            );
                            // The end is printed once, as the ending, and a
                            // question once, as the stream stops at it.
                            let shown = !snapshot.status.is_terminal()
                                && snapshot.status != TaskStatus::InputRequired;
                            if shown && last.as_ref() != Some(&now) {
                                line.print(&now.0, now.1.as_deref());
                                last = Some(now);
                            }
                            seen.status = Some((snapshot.status, snapshot.status_message));
                        }
                        Err(e) => {
                            line.print("error", Some(&one_line(&e)));
                            // Left running on the server: never cancelled by a drop.
                            match updates.into_task() {
                                TaskState::Pending(task) => drop(task.detach()),
                                TaskState::InputRequired(task) => drop(task.detach()),
                                TaskState::Finished(_) => {}
                            }
                            return false;
                        }
                    }
                }
                updates.into_task()
            }
        };
    }
}
