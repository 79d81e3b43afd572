//! Print the tracing spans of a task's life.
//!
//! ```text
//! cargo run --example tracing
//! ```
//!
//! Needs `tracing-subscriber` (with its `fmt`, `registry` and `std`
//! features) beside `mcp-tasks`. Every task is one `mcp_tasks.task` span,
//! from the `tools/call` that starts it to the end of its handle; every
//! request it sends is a `mcp_tasks.request` span inside it. Status changes
//! and input rounds are events in the task span, and the span records the
//! outcome, the number of reads and the input rounds when it closes. Task
//! ids appear only as a short prefix (`task…`).
//!
//! The task here works, asks for a confirmation (answered by a handler),
//! and completes. The `fmt` layer prints each span when it opens (`new`)
//! and closes (`close`, with its busy and idle time), and each event with
//! the spans it is in.

use std::time::Duration;

use mcp_tasks::Client;
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{CallToolResult, ElicitResult, InputRequest};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use serde_json::json;
use tracing::level_filters::LevelFilter;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::format::FmtSpan;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    // Task spans and their events are at INFO, request spans at DEBUG.
    let filter = Targets::new()
        .with_target("mcp_tasks", LevelFilter::DEBUG)
        // The scripted server's own logs are not the client's.
        .with_target("mcp_tasks::testing", LevelFilter::OFF);
    tracing_subscriber::registry()
        .with(
            tracing_subscriber::fmt::layer()
                .without_time()
                .with_target(false)
                .with_span_events(FmtSpan::NEW | FmtSpan::CLOSE)
                .with_filter(filter),
        )
        .init();

    let ms = Duration::from_millis;
    let confirm = InputRequest::form(
        "Export 42 rows?",
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
    );
    let server = TestServer::new().tool(ScriptedTool::task(
        "export",
        TaskScript::new()
            .poll_interval(ms(40))
            .working(ms(30), "counting rows")
            .input(ms(30), [("confirm".to_string(), confirm)].into())
            .complete(ms(30), CallToolResult::text("42 rows exported")),
    ));
    let handlers = InputHandlers::new()
        .elicitation_form(|_| async { Ok(ElicitResult::accept(json!({ "ok": true }))) });
    let client = Client::builder()
        .input_handlers(handlers)
        .connect(server.connect())
        .await?;

    let done = client
        .task()
        .call_tool("export", json!({ "table": "orders" }))
        .await?
        .await?;
    println!("result: {}", done.into_result()?.joined_text());
    // Ends the connection and waits until it is ended; dropping the
    // client would do it in the background, unawaited.
    client.close().await?;
    Ok(())
}
