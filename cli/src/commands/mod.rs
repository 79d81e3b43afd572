//! The commands, one file each; `main.rs` holds the command line and
//! hands each command to its file.

use clap::Args;
use mcp_tasks::Client;

pub mod call;
pub mod catalog;
pub mod completions;
pub mod forget;
pub mod list;
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
