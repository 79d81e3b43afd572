//! Park a handle in a spawned task, save its reference, and resume it from
//! another client after the first one is gone.
//!
//! ```text
//! cargo run --example background
//! ```

use std::time::Duration;

use mcp_tasks::protocol::CallToolResult;
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::{BoxError, Client, TaskRef, TaskState};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), BoxError> {
    let ms = Duration::from_millis;
    let server = TestServer::new().tool(ScriptedTool::task(
        "reindex",
        TaskScript::new()
            .poll_interval(ms(100))
            .working(ms(100), "indexing")
            .complete(ms(600), CallToolResult::text("reindexed 10,000 documents")),
    ));

    // Handles are 'static + Send + Sync: spawn the wait and carry on.
    let client = Client::connect(server.connect()).await?;
    let state = client.task().call_tool("reindex", json!({})).await?;
    let waiter = tokio::spawn(async move {
        // A failed, cancelled or expired task is an error: the example then
        // exits non-zero.
        let done = state.await?;
        Ok::<_, BoxError>(done.into_result()?)
    });
    println!("doing other work while the task runs…");
    println!("background result: {}", waiter.await??.joined_text());

    // Save a reference (it is a secret: it grants access to the task)…
    let saved = {
        let client = Client::builder()
            .server_id("search")
            .connect(server.connect())
            .await?;
        let TaskState::Pending(task) = client.task().call_tool("reindex", json!({})).await? else {
            return Err("expected a running task".into());
        };
        let saved = serde_json::to_string(&task.reference())?;
        // The connection ends here (the handle's with it); the task runs on.
        client.close().await?;
        saved
    };

    // …and resume it later from a fresh client.
    let reference: TaskRef = serde_json::from_str(&saved)?;
    println!("resuming {reference:?}");
    let client = Client::builder()
        .server_id("search")
        .connect(server.connect())
        .await?;
    let done = client.task().resume(&reference).await?.await?;
    println!("resumed result: {}", done.into_result()?.joined_text());
    // Ends the connection and waits until it is ended; dropping the
    // client would do it in the background, unawaited.
    client.close().await?;
    Ok(())
}
