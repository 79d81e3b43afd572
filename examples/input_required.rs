//! Answer a task's input requests: with a handler, or by hand.
//!
//! ```text
//! cargo run --example input_required
//! ```
//!
//! A `delete` tool asks for confirmation mid-task. The first client answers
//! with an elicitation handler; the second waits in manual mode, inspects
//! the request on its `Task<InputRequired>`, and answers with `respond`.

use std::time::Duration;

use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{ElicitResult, InputRequest, InputResponses};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::{Client, InputMode, TaskState};
use serde_json::json;

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let ms = Duration::from_millis;
    let confirm = InputRequest::form(
        "Delete 3 files?",
        json!({"type": "object", "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}),
    );
    let server = TestServer::new().tool(ScriptedTool::task(
        "delete",
        TaskScript::new()
            .poll_interval(ms(100))
            .working(ms(50), "listing files")
            .input(ms(50), [("confirm".to_string(), confirm)].into())
            .complete_with_inputs(ms(100)),
    ));

    // 1. A handler answers.
    let handlers = InputHandlers::new().elicitation_form(|request| async move {
        println!("handler asked: {}", request.message);
        Ok(ElicitResult::accept(json!({ "confirm": true })))
    });
    let client = Client::builder()
        .input_handlers(handlers)
        .connect(server.connect())
        .await?;
    let done = client.task().call_tool("delete", json!({})).await?.await?;
    println!("with a handler: {}", done.into_result()?.joined_text());
    client.close().await?;

    // 2. By hand: the wait stops at Task<InputRequired>.
    let client = Client::connect(server.connect()).await?;
    let state = client
        .task()
        .input(InputMode::Manual)
        .call_tool("delete", json!({}))
        .await?;
    let stopped = state.finish().await.unwrap_err();
    println!("the wait stopped: {}", stopped.error());
    let TaskState::InputRequired(task) = stopped.into_task() else {
        return Err("expected the task to ask for input".into());
    };
    for (key, request) in task.requests() {
        println!("request {key:?}: {}", request.method());
    }
    let answers: InputResponses = [("confirm".to_string(), ElicitResult::decline().into())].into();
    let done = task.respond(answers).await?.await?;
    println!("by hand: {}", done.into_result()?.joined_text());
    // Ends the connection and waits until it is ended; dropping the
    // client would do it in the background, unawaited.
    client.close().await?;
    Ok(())
}
