//! Follow a task through pushes instead of polls.
//!
//! ```text
//! cargo run --example listen
//! ```
//!
//! With `listen()`, the client opens `subscriptions/listen` for the task,
//! reads it once after the acknowledgement, and then follows
//! `notifications/tasks` pushes; the status messages below arrive as the
//! server pushes them, although the server asks for polls only every ten
//! minutes. Against a server that does not push, the same code polls.

use std::future::poll_fn;
use std::pin::Pin;
use std::time::Duration;

use futures_core::Stream;
use mcp_tasks::protocol::CallToolResult;
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::{Client, TaskState};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ms = Duration::from_millis;
    let server = TestServer::new().tool(ScriptedTool::task(
        "train",
        TaskScript::new()
            .poll_interval(Duration::from_secs(600))
            .status_message("queued")
            .working(ms(200), "epoch 1/3")
            .working(ms(200), "epoch 2/3")
            .working(ms(200), "epoch 3/3")
            .complete(ms(200), CallToolResult::text("model saved")),
    ));
    let client = Client::connect(server.connect()).await?;
    let state = client.task().listen().call_tool("train", json!({})).await?;
    let TaskState::Pending(task) = state else {
        return Err("expected a running task".into());
    };

    let mut updates = task.updates();
    while let Some(snapshot) = poll_fn(|cx| Pin::new(&mut updates).poll_next(cx)).await {
        let snapshot = snapshot?;
        println!(
            "{:>9}  {}",
            snapshot.status.to_string(),
            snapshot.status_message.unwrap_or_default()
        );
    }
    let TaskState::Finished(done) = updates.into_task() else {
        return Err("expected the task to finish".into());
    };
    println!("result: {}", done.into_result()?.joined_text());
    println!(
        "requests: {} tasks/get, {} pushes",
        server.count("tasks/get"),
        server.pushes()
    );
    // Ends the connection and waits until it is ended; dropping the
    // client would do it in the background, unawaited.
    client.close().await?;
    Ok(())
}
