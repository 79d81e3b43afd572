//! Talk to a remote MCP server over Streamable HTTP.
//!
//! ```text
//! cargo run --example http --features http -- URL [TOOL [JSON_ARGUMENTS]]
//! ```
//!
//! With only a URL, discovers the server and lists its tools. With a tool
//! name, calls it with the JSON arguments (default `{}`): an immediate
//! answer is printed as is, and a task is followed to its end, printing
//! each status message on the way. A token in `MCP_BEARER_TOKEN` is sent as
//! `Authorization: Bearer …` on every request.
//!
//! For example, against a local server:
//!
//! ```text
//! cargo run --example http --features http -- http://127.0.0.1:8000/mcp export '{"table":"orders"}'
//! ```

use std::time::Duration;

use mcp_tasks::transport::Http;
use mcp_tasks::{Client, Outcome, TaskState};
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(url) = args.next() else {
        eprintln!("usage: http URL [TOOL [JSON_ARGUMENTS]]");
        std::process::exit(2);
    };
    let tool = args.next();
    let arguments: Value = match args.next() {
        Some(text) => serde_json::from_str(&text)?,
        None => json!({}),
    };

    let mut transport = Http::new(url).connect_timeout(Duration::from_secs(5));
    if let Ok(token) = std::env::var("MCP_BEARER_TOKEN") {
        transport = transport.bearer_token(token);
    }
    let client = Client::builder()
        .client_info("mcp-tasks-http-example", env!("CARGO_PKG_VERSION"))
        .connect(transport)
        .await?;

    let Some(tool) = tool else {
        let server = client.discover().await?;
        println!("server: {}", client.server_id().unwrap_or("(unnamed)"));
        println!("versions: {}", server.supported_versions.join(", "));
        println!("tasks extension: {}", client.supports_tasks().await?);
        for tool in client.list_tools().await? {
            let about = tool.description.as_deref().unwrap_or("");
            println!("  {:<24} {about}", tool.name);
        }
        return Ok(());
    };

    let mut state = client
        .task()
        .timeout(Duration::from_secs(600))
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
