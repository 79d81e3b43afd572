//! Drive a long-running tool call against the bundled demo server.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! The example starts itself a second time with `--serve`, as a child
//! process that runs the crate's scripted demo server over stdio, so the
//! client below uses the real stdio transport. It calls `export`, a tool
//! that becomes a task, follows it with `updates()` (a stream of snapshots:
//! every status and status message as it changes), and prints the final
//! result. It exits non-zero when the task fails or the tool reports an
//! error, as a script would expect.

use std::process::ExitCode;
use std::time::Duration;

use mcp_tasks::protocol::CallToolResult;
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::transport::Stdio;
use mcp_tasks::{Client, TaskState};
use serde_json::json;

/// The demo server: one tool that works through a few steps.
fn demo_server() -> TestServer {
    let step = Duration::from_millis(400);
    TestServer::new().tool(
        ScriptedTool::task(
            "export",
            TaskScript::new()
                .poll_interval(Duration::from_millis(200))
                .status_message("queued")
                .working(step, "reading 1,204 orders")
                .working(step, "writing orders.csv")
                .working(step, "compressing")
                .complete(
                    step,
                    CallToolResult::text("exported 1,204 rows to orders.csv.gz")
                        .with_structured(json!({ "rows": 1204, "file": "orders.csv.gz" })),
                ),
        )
        .description("Export a table to a compressed CSV file"),
    )
}

#[tokio::main]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "--serve") {
        demo_server().serve_stdio().await?;
        return Ok(ExitCode::SUCCESS);
    }

    let server = Stdio::command(std::env::current_exe()?).arg("--serve");
    let client = Client::builder()
        .client_info("quickstart", env!("CARGO_PKG_VERSION"))
        .connect(server)
        .await?;

    let info = client.discover().await?;
    println!(
        "connected: {} (tasks: {})",
        client.server_id().unwrap_or("unknown server"),
        info.capabilities.supports_tasks()
    );

    let state = client
        .task()
        .timeout(Duration::from_secs(30))
        .call_tool("export", json!({ "table": "orders" }))
        .await?;

    let finished = match state {
        // The call became a task. Its updates are a stream of snapshots:
        // the task as it stands, then one per change of status or status
        // message, the last one when the task ends.
        TaskState::Pending(task) => {
            // The id is a secret: it prints shortened.
            println!("task {} started", task.id().redacted());
            let mut updates = task.updates();
            while let Some(snapshot) = updates.next().await {
                let snapshot = snapshot?;
                println!(
                    "  {:<9} {}",
                    snapshot.status.as_str(),
                    snapshot.status_message.as_deref().unwrap_or("")
                );
            }
            // The stream hands the task back; once it has ended, the task
            // has finished and awaiting it returns at once.
            updates.into_task().await?
        }
        // A server may also ask a question first, or answer at once.
        TaskState::InputRequired(task) => task.finish().await?,
        TaskState::Finished(task) => task,
    };

    // A failed, cancelled or expired task is an error here; a tool that
    // reports an error completes with `is_error` set.
    let result = finished.into_result()?;
    // Ends the connection and waits until it is ended; dropping the
    // client would do it in the background, unawaited.
    client.close().await?;
    if result.is_error {
        eprintln!("the tool reported an error: {}", result.joined_text());
        return Ok(ExitCode::FAILURE);
    }
    println!("result: {}", result.joined_text());
    if let Some(data) = &result.structured_content {
        println!("structured: {data}");
    }
    Ok(ExitCode::SUCCESS)
}
