//! `mcp-tasks forget NAME`: removes one task from the task list. A task
//! that has not ended is refused unless `--force`: forgetting never
//! cancels it, it runs on at its server.

use anyhow::bail;
use clap::Args;
use mcp_tasks::store::Forgotten;

use crate::records::{self, Records};
use crate::{Failure, exit, reference};

/// The arguments of `forget`.
#[derive(Debug, Args)]
pub struct ForgetArgs {
    /// The task: its short name in the task list (`12` or `#12`), or its
    /// reference (`mtr_…`).
    #[arg(value_name = "NAME|REF")]
    name: String,
    /// Forget a task that has not ended as well. It is not cancelled: it
    /// runs on at its server, and no command follows it by name again.
    #[arg(long)]
    force: bool,
}

/// `mcp-tasks forget`.
pub async fn run(args: ForgetArgs) -> anyhow::Result<u8> {
    let records = Records::open_existing().await?;
    let id = match records::parse_name(&args.name) {
        Some(id) => id,
        None => {
            let task = reference::decode(&args.name).map_err(|e| Failure::usage(e.to_string()))?;
            let named = match &records {
                Some(records) => records.name_of(&task, None).await,
                None => None,
            };
            match named {
                Some(id) => id,
                None => bail!(Failure::usage(
                    "that task is not in the task list (`mcp-tasks list` shows them)"
                )),
            }
        }
    };
    let Some(records) = records else {
        bail!(Failure::usage(format!(
            "there is no task {id} in the task list (`mcp-tasks list` shows them)"
        )));
    };
    let found = records.find(id).await?;
    let running = found.record.ending.is_none();
    if running && !args.force {
        bail!(Failure::usage(format!(
            "task {id} may still be running (last seen {}), and forgetting it would not \
             cancel it: `mcp-tasks status {id}` reads it again, `mcp-tasks cancel {id}` \
             cancels it, `mcp-tasks forget {id} --force` forgets it all the same and leaves \
             it running",
            found.status()
        )));
    }
    match records.forget(id).await? {
        Forgotten::Removed if running => {
            eprintln!(
                "forgot task {id} ({}, last seen {}): it was NOT cancelled and may still be \
                 running on its server",
                found.record.tool,
                found.status()
            );
        }
        Forgotten::Removed => {
            eprintln!(
                "forgot task {id} ({}, {})",
                found.record.tool,
                found.status()
            );
        }
        Forgotten::Missing => bail!(Failure::usage(format!(
            "there is no task {id} in the task list (`mcp-tasks list` shows them)"
        ))),
        Forgotten::Held { .. } => bail!(Failure::usage(format!(
            "another command is writing task {id} back right now: try again in a moment"
        ))),
    }
    Ok(exit::OK)
}
