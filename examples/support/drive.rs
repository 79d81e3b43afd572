//! What the `http` and `stdio` examples do once connected: list the tools,
//! or call one, printing each progress report and each status message on
//! the way, then the outcome.

use std::time::Duration;

use mcp_tasks::{Client, Outcome, TaskState};
use serde_json::Value;

/// Lists the server's tools when `tool` is `None`, else calls it.
pub async fn run(
    client: &Client,
    tool: Option<String>,
    arguments: Value,
) -> Result<(), Box<dyn std::error::Error>> {
    let Some(tool) = tool else {
        let server = client.discover().await?;
        println!("server: {}", client.server_id().unwrap_or("(unnamed)"));
        println!("protocol: {}", client.protocol_version());
        println!("versions: {}", server.supported_versions.join(", "));
        println!("tasks extension: {}", client.supports_tasks().await?);
        for tool in client.list_tools().await? {
            let about = tool.description.as_deref().unwrap_or("");
            let about = about.lines().next().unwrap_or("");
            println!("  {:<32} {about}", tool.name);
        }
        return Ok(());
    };

    let mut state = client
        .task()
        .timeout(Duration::from_secs(600))
        .on_progress(|p| match p.fraction() {
            Some(f) => println!("progress {:>3.0}%  {p}", f * 100.0),
            None => println!("progress       {p}"),
        })
        .call_tool(&tool, arguments)
        .await?;
    let finished = loop {
        state = match state {
            TaskState::Finished(task) => break task,
            TaskState::Pending(task) => {
                // The id is a secret: it prints shortened.
                let status = task.status_message().unwrap_or("working");
                println!("task {:?}: {status}", task.id());
                task.next().await?
            }
            TaskState::InputRequired(task) => {
                // Answering is shown in the `input_required` example.
                println!("the server asks for input: {:?}", task.requests().keys());
                task.cancel().await?;
                return Ok(());
            }
        };
    };
    match finished.outcome() {
        Outcome::Completed(result) if result.is_error => {
            println!("the tool reported an error: {}", result.joined_text())
        }
        Outcome::Completed(result) => println!("{}", result.joined_text()),
        Outcome::Failed(error) => println!("the task failed: {error}"),
        Outcome::Cancelled => println!("the task was cancelled"),
        Outcome::Expired => println!("the task expired"),
    }
    Ok(())
}
