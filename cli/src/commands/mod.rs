//! The commands, a file each (a family shares one: `catalog` what a
//! server offers besides tools, `on_task` `status`, `wait` and `cancel`,
//! `questions` `questions` and `answer`, `login` `login` and `logout`);
//! `main.rs` holds the command line and hands each command to its file.

use clap::Args;
use mcp_tasks::Client;
use tokio::sync::mpsc;

use crate::ask::Asker;
use crate::report::{self, Report, Style};
use crate::server::ServerArgs;

pub mod call;
pub mod catalog;
pub mod completions;
pub mod forget;
pub mod history;
pub mod list;
pub mod login;
pub mod man;
pub mod on_task;
pub mod prune;
pub mod questions;
pub mod serve;
pub mod servers;
pub mod store;
pub mod tools;
pub mod watch;

/// `--json`, for the commands that follow a task.
#[derive(Debug, Args)]
pub struct OutputArgs {
    /// Print JSON lines on stdout (one per status change, then the
    /// outcome) and never prompt: questions are declined.
    #[arg(long)]
    pub json: bool,
}

/// Ends the connection and waits until it is ended (an HTTP session's
/// `DELETE` answered, a stdio server exited) before the process exits,
/// which would otherwise cut both short. The command's own outcome stands:
/// a close that was not graceful is logged, not an error of the command.
pub async fn close(client: Client, outcome: anyhow::Result<u8>) -> anyhow::Result<u8> {
    if let Err(e) = client.close().await {
        tracing::debug!("the connection did not close gracefully: {e}");
    }
    outcome
}

/// Connects to `server`, runs `ask` and closes, with a status line
/// saying `doing` meanwhile (on a terminal). The server's questions are
/// asked at the prompt when `may_ask` and there is one, else declined. A
/// failed connection is the command's error (with the exit status its
/// cause calls for); what `ask` returns is the caller's to judge.
pub async fn on_server<T, E, F, Fut>(
    server: &ServerArgs,
    json: bool,
    may_ask: bool,
    doing: &str,
    ask: F,
) -> anyhow::Result<Result<T, E>>
where
    F: FnOnce(Client) -> Fut,
    Fut: Future<Output = Result<T, E>>,
{
    let (style, interactive) = report::style(json);
    // Status never goes to stdout, which holds the one JSON line.
    let report = Report::new(if style == Style::Json {
        Style::Lines
    } else {
        style
    });
    report.activity("connecting");
    let (interrupts, _) = mpsc::unbounded_channel();
    let asker = Asker::new(report.clone(), may_ask && interactive, interrupts);
    let client = match server.connect(asker.handlers(), &report).await {
        Ok(client) => client,
        Err(e) => {
            report.clear();
            return Err(e);
        }
    };
    report.activity(doing);
    let answer = ask(client.clone()).await;
    report.activity("closing");
    if let Err(e) = client.close().await {
        tracing::debug!("the connection did not close gracefully: {e}");
    }
    report.clear();
    Ok(answer)
}
