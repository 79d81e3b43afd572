//! `mcp-tasks call`: calls a tool and follows it to its result, or leaves
//! its task running (`--detach`) in the task list.

use anyhow::bail;
use clap::Args;
use mcp_tasks::store::RecordId;

use super::{OutputArgs, close};
use crate::follow::{Detach, Detached, Follow};
use crate::records::{self, Records};
use crate::server::ServerArgs;
use crate::{Failure, chain};

/// The arguments of `call`.
#[derive(Debug, Args)]
pub struct CallArgs {
    /// The tool to call.
    tool: String,
    /// The arguments: one JSON object, or key=value pairs.
    #[arg(value_name = "ARGS")]
    arguments: Vec<String>,
    /// Print the task's reference and exit, leaving the task running,
    /// kept in the task list under a short name (follow it later with
    /// `mcp-tasks wait NAME` or `mcp-tasks wait REF`).
    ///
    /// Refused, with exit status 2, for a task no later command could
    /// follow: on a server run after `--`, or on an HTTP server of the
    /// initialize era (its tasks may belong to the session, which ends
    /// with this command).
    #[arg(long)]
    detach: bool,
    /// --detach, even for a task that no later command may be able to
    /// follow (a server run after `--`, an initialize-era HTTP session):
    /// for a server that keeps its tasks beyond this command.
    #[arg(long)]
    detach_anyway: bool,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    server: ServerArgs,
}

impl CallArgs {
    /// Whether the command writes JSON lines (`--json`).
    pub fn json(&self) -> bool {
        self.output.json
    }
}

/// `mcp-tasks call`: a `--detach` that no later command could follow is
/// refused before the tool is called (a server run after `--` before it
/// is started; an HTTP server once its era is known).
pub async fn run(mut args: CallArgs) -> anyhow::Result<u8> {
    if let Some(name) = args.tool.strip_prefix('@').map(str::to_owned) {
        if args.arguments.is_empty() {
            bail!(Failure::usage(format!(
                "name the tool to call after @{name}"
            )));
        }
        args.tool = args.arguments.remove(0);
        args.server.resolve(Some(&name))?;
    } else {
        args.server.resolve(None)?;
    }
    let detach = match (args.detach || args.detach_anyway, args.detach_anyway) {
        (false, _) => Detach::No,
        (true, false) => Detach::IfFollowable,
        (true, true) => Detach::Anyway,
    };
    if detach == Detach::IfFollowable
        && let Some(why) = args.server.unfollowable(None)
    {
        bail!(refuse_detach(&why));
    }
    let (mut follow, client) = Follow::start(&args.server, args.output.json).await?;
    let unfollowable = args.server.unfollowable(Some(&client.protocol_version()));
    if detach == Detach::IfFollowable
        && let Some(why) = &unfollowable
    {
        follow.clear();
        return close(client, Err(refuse_detach(why).into())).await;
    }
    let outcome = follow
        .call(&client, &args.tool, &args.arguments, detach)
        .await;
    if let Some(detached) = follow.take_detached() {
        let name = keep(&args, &detached).await;
        follow.announce(&detached.reference, name, unfollowable.as_deref());
    }
    close(client, outcome).await
}

/// The usage error of a `--detach` no later command could follow.
fn refuse_detach(why: &str) -> Failure {
    Failure::usage(format!(
        "--detach refused: {why}, so no later command could follow the task. \
         Call without --detach to follow it now, or use --detach-anyway if the \
         server keeps its tasks beyond this command"
    ))
}

/// Records a detached task in the task list and gives its short name. A
/// list that cannot take it is a note, not a failure: the reference
/// printed next still finds the task.
async fn keep(args: &CallArgs, detached: &Detached) -> Option<RecordId> {
    let endpoint = args.server.endpoint()?;
    let kept = async {
        let records = Records::open().await?;
        let name = records
            .record(
                &detached.reference,
                &args.tool,
                &endpoint,
                detached.status,
                detached.status_message.clone(),
            )
            .await?;
        anyhow::Ok((records, name))
    };
    match kept.await {
        Ok((records, name)) => {
            // A task that asks at once: its questions go in the record too.
            if detached.asked.is_some() {
                let seen = records::Seen {
                    status: Some((detached.status, detached.status_message.clone())),
                    asked: detached.asked.clone(),
                    ..Default::default()
                };
                if let Err(e) = records.write_back(name, &seen).await {
                    eprintln!(
                        "mcp-tasks: the task's questions were not recorded: {}",
                        chain(&e)
                    );
                }
            }
            Some(name)
        }
        Err(e) => {
            eprintln!(
                "mcp-tasks: the task is not in the task list ({}); keep its reference",
                chain(&e)
            );
            None
        }
    }
}
