//! `mcp-tasks status`, `wait` and `cancel`: one task, by its short name
//! in the task list or by its reference.

use clap::Args;
use mcp_tasks::TaskRef;
use mcp_tasks::store::RecordId;

use super::{OutputArgs, close};
use crate::follow::Follow;
use crate::records::{self, Endpoint, Records};
use crate::server::ServerArgs;
use crate::{Failure, chain, reference};

/// The arguments of `status`, `wait` and `cancel`.
#[derive(Debug, Args)]
pub struct RefArgs {
    /// The task: its short name in the task list (`12` or `#12`; its
    /// server is the recorded one unless one is named here), or its
    /// reference (`mtr_…`) as `call --detach` printed it.
    #[arg(value_name = "NAME|REF")]
    pub reference: String,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub server: ServerArgs,
}

/// What `status`, `wait` and `cancel` do with their task.
#[derive(Debug, Clone, Copy)]
pub enum Action {
    /// Read its status once (`status`).
    Status,
    /// Follow it to its end (`wait`).
    Wait,
    /// Cancel it and wait for it to end (`cancel`).
    Cancel,
    /// Send the answers kept in the task list (`mcp-tasks answer`).
    Deliver,
}

/// `status`, `wait` and `cancel`: the task by its short name (its server
/// from the task list unless the command line names one) or by its
/// reference; what the command saw is written back to the task list.
pub async fn run(mut args: RefArgs, action: Action) -> anyhow::Result<u8> {
    args.server.resolve(None)?;
    let mut stored = mcp_tasks::protocol::InputResponses::new();
    let (task, server, kept, listed) = match records::parse_name(&args.reference) {
        Some(name) => {
            let records = Records::open().await?;
            let found = records.find(name).await?;
            let server = args.server.or_recorded(found.endpoint.as_ref())?;
            stored = records::stored_answers(&found.record);
            (found.task, server, Some((records, name)), true)
        }
        None => {
            let task =
                reference::decode(&args.reference).map_err(|e| Failure::usage(e.to_string()))?;
            let kept = named(&task, args.server.endpoint().as_ref()).await;
            (task, args.server, kept, false)
        }
    };
    let (mut follow, client) = Follow::start(&server, args.output.json).await?;
    // The task list names the server by how it reaches it: the reference
    // names it as the server does again, as `call` printed it.
    let task = match task.server() {
        None if listed => records::with_server(&task, client.server_id().map(str::to_owned)),
        _ => task,
    };
    if let Some((_, name)) = &kept {
        follow.name_as(*name);
    }
    follow.send_first(stored);
    let outcome = match action {
        Action::Status => follow.status(&client, &task).await,
        Action::Wait => follow.wait(&client, &task).await,
        Action::Cancel => follow.cancel_by_reference(&client, &task).await,
        Action::Deliver => follow.deliver(&client, &task).await,
    };
    if let Some((records, name)) = kept
        && let Err(e) = records.write_back(name, follow.seen()).await
    {
        eprintln!("mcp-tasks: the task list was not updated: {}", chain(&e));
    }
    close(client, outcome).await
}

/// The task list and the short name of `task` on `server`, when it is in
/// the list. A list that cannot be opened is no error: the task is named
/// by its reference anyway.
async fn named(task: &TaskRef, server: Option<&Endpoint>) -> Option<(Records, RecordId)> {
    let records = match Records::open_existing().await {
        Ok(Some(records)) => records,
        Ok(None) => return None,
        Err(e) => {
            tracing::debug!("no task list: {}", chain(&e));
            return None;
        }
    };
    let name = records.name_of(task, server).await?;
    Some((records, name))
}
