//! `mcp-tasks status NAME --history`: the status, then what the task list
//! recorded of the task, oldest first.

use clap::Args;
use mcp_tasks::store::{Answerer, Event, History, MAX_HISTORY};
use serde_json::json;

use super::on_task::{self, Action, RefArgs};
use crate::records::{self, Records, rfc3339};

/// `mcp-tasks status`.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    pub task: RefArgs,
    /// Then print the task's history as the task list recorded it: when
    /// it was recorded, each status and message seen, its questions and
    /// who answered them, a cancel asked for, its end (JSON: one object
    /// `{"history": [...], "dropped": N}` after the status lines).
    #[arg(long)]
    pub history: bool,
}

/// `status`, and with `--history` the task's history after it (printed
/// whether or not its server could be reached).
pub async fn run(args: StatusArgs) -> anyhow::Result<u8> {
    let (reference, json) = (args.task.reference.clone(), args.task.output.json);
    let outcome = on_task::run(args.task, Action::Status).await;
    if args.history {
        match recorded(&reference).await {
            Ok(Some(history)) => print(&history, json),
            Ok(None) => eprintln!("mcp-tasks: no history: the task is not in the task list"),
            Err(e) => eprintln!("mcp-tasks: no history: {}", crate::chain(&e)),
        }
    }
    outcome
}

/// The history of the task `reference` names (a short name or a
/// reference), when it is in the task list.
async fn recorded(reference: &str) -> anyhow::Result<Option<History>> {
    let Some(records) = Records::open_existing().await? else {
        return Ok(None);
    };
    let name = match records::parse_name(reference) {
        Some(name) => name,
        None => {
            let task = crate::reference::decode(reference)?;
            match records.name_of(&task, None).await {
                Some(name) => name,
                None => return Ok(None),
            }
        }
    };
    Ok(Some(records.find(name).await?.record.history))
}

fn print(history: &History, json: bool) {
    if json {
        let entries: Vec<serde_json::Value> = history
            .entries
            .iter()
            .map(|e| {
                let mut v = serde_json::to_value(e).unwrap_or_default();
                v["at"] = json!(rfc3339(e.at));
                v
            })
            .collect();
        out!(
            "{}",
            json!({"history": entries, "dropped": history.dropped})
        );
        return;
    }
    out!("history:");
    if history.is_cut() {
        out!(
            "  ({} older entries not kept: a task keeps its newest {MAX_HISTORY})",
            history.dropped
        );
    }
    for e in &history.entries {
        out!("  {}  {}", rfc3339(e.at), words(&e.event));
    }
}

/// An event in words, on one line (server text cut to one line).
fn words(event: &Event) -> String {
    let status = |status: &mcp_tasks::protocol::TaskStatus, message: &Option<String>| match message
    {
        Some(m) => format!("{}: {}", status.as_str(), one_line(m)),
        None => status.as_str().to_owned(),
    };
    match event {
        Event::Created { status: s, message } => format!("recorded, {}", status(s, message)),
        Event::Status { status: s, message } => status(s, message),
        Event::Asked { key } => format!("asked {}", one_line(key)),
        Event::Answered { key, by } => format!("{} answered by {}", one_line(key), who(*by)),
        Event::Taken { key } => format!("the server took the answer to {}", one_line(key)),
        Event::CancelRequested => "a cancel was asked for".into(),
        Event::Ended { ending } => format!("ended: {ending}"),
        Event::Delivered => "its end was delivered".into(),
        Event::TakenOver { from, to } => format!("{to} took it over from {from}"),
        _ => "(an event this version does not know)".into(),
    }
}

fn who(by: Answerer) -> &'static str {
    match by {
        Answerer::Handler => "an input handler",
        Answerer::Page => "a person on the inbox page",
        Answerer::CommandLine => "a person on the command line",
        Answerer::Application => "the application",
        _ => "someone",
    }
}

/// Text with its control characters (line breaks, escapes) as spaces, so
/// that a server's text cannot break a line or move the cursor.
fn one_line(text: &str) -> String {
    text.chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_text_stays_on_one_line() {
        let e = Event::Asked {
            key: "a\nb\x1b[2J".into(),
        };
        assert_eq!(words(&e), "asked a b [2J");
    }
}
