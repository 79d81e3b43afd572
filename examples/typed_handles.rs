//! Match on the state a call lands in, and act on each typed handle.
//!
//! ```text
//! cargo run --example typed_handles
//! ```
//!
//! Three tools on the in-process test server: one answers at once, one
//! becomes a task that completes, one becomes a task that fails. Each
//! `TaskState` variant has only the methods valid in its state. The failed
//! task is what the example shows, not an error of the example: it exits 0
//! once every outcome is printed (and non-zero if the client fails).

use std::time::Duration;

use mcp_tasks::protocol::{CallToolResult, RpcError};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::{Client, Outcome, TaskState};
use serde_json::json;

#[tokio::main]
async fn main() -> mcp_tasks::Result<()> {
    let ms = Duration::from_millis;
    let server = TestServer::new()
        .tool(ScriptedTool::immediate(
            "ping",
            CallToolResult::text("pong"),
        ))
        .tool(ScriptedTool::task(
            "build",
            TaskScript::new()
                .poll_interval(ms(100))
                .working(ms(100), "compiling")
                .complete(ms(200), CallToolResult::text("build #12 passed")),
        ))
        .tool(ScriptedTool::task(
            "deploy",
            TaskScript::new()
                .poll_interval(ms(100))
                .fail(ms(150), RpcError::new(-32603, "the cluster is unreachable")),
        ));
    let client = Client::connect(server.connect()).await?;

    for tool in ["ping", "build", "deploy"] {
        let state = client.task().call_tool(tool, json!({})).await?;
        let finished = match state {
            TaskState::Finished(task) => {
                println!(
                    "{tool}: answered at once (no task id: {})",
                    task.id().is_none()
                );
                task
            }
            TaskState::Pending(task) => {
                println!("{tool}: task {:?} is {}", task.id(), task.snapshot().status);
                task.finish().await?
            }
            TaskState::InputRequired(task) => {
                println!("{tool}: needs {:?}", task.requests().keys());
                task.finish().await?
            }
        };
        match finished.outcome() {
            Outcome::Completed(result) => println!("  completed: {}", result.joined_text()),
            Outcome::Failed(error) => println!("  failed: {error}"),
            Outcome::Cancelled => println!("  cancelled"),
            Outcome::Expired => println!("  expired"),
        }
    }
    // Ends the connection and waits until it is ended; dropping the
    // client would do it in the background, unawaited.
    client.close().await?;
    Ok(())
}
