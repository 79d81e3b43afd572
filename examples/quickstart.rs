//! Drive a long-running tool call against the bundled demo server.
//!
//! ```text
//! cargo run --example quickstart
//! ```
//!
//! The example starts itself a second time with `--serve`, as a child
//! process that runs the crate's scripted demo server over stdio, so the
//! client below uses the real stdio transport. It calls `export`, a tool
//! that becomes a task, prints each status message as it changes, and
//! prints the final result.

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
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().any(|a| a == "--serve") {
        demo_server().serve_stdio().await?;
        return Ok(());
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

    let mut state = client
        .task()
        .timeout(Duration::from_secs(30))
        .call_tool("export", json!({ "table": "orders" }))
        .await?;
    println!(
        "task {} started",
        state.id().map(|id| id.redacted()).unwrap_or_default()
    );

    // Print every status message until the task ends.
    let mut last = None;
    let finished = loop {
        let message = state.status_message().map(str::to_owned);
        if message.is_some() && message != last {
            println!(
                "  {} — {}",
                state.status(),
                message.as_deref().unwrap_or("")
            );
            last = message;
        }
        state = match state {
            TaskState::Pending(task) => task.next().await?,
            TaskState::InputRequired(task) => task.finish().await?.into(),
            TaskState::Finished(task) => break task,
        };
    };

    let result = finished.into_result()?;
    println!("result: {}", result.joined_text());
    if let Some(data) = &result.structured_content {
        println!("structured: {data}");
    }
    // Ends the connection and waits until it is ended; dropping the
    // client would do it in the background, unawaited.
    client.close().await?;
    Ok(())
}
