//! The Streamable HTTP transport against a strict loopback server
//! (127.0.0.1 only; every test bounded in time).

#[path = "../support/asking_server.rs"]
mod asking_server;
#[path = "../support/calls.rs"]
mod calls;
#[path = "../support/http_server.rs"]
mod http_server;
#[path = "../support/loopback.rs"]
mod loopback;
#[path = "../support/scripted_http.rs"]
mod scripted_http;
#[path = "../support/session_server.rs"]
mod session_server;
#[path = "../support/time.rs"]
mod time;

use std::time::Duration;

use calls::{call_text, tool_names};
use http_server::{Front, Mode, Scripted, Seen, decode};
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{
    CallToolResult, ElicitResult, InputRequest, InputResponses, META_PROTOCOL_VERSION,
};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::transport::Http;
use mcp_tasks::{Client, Outcome, TaskState};
use serde_json::json;
use time::{bounded, ms};

mod errors;
mod held;
mod negotiated;
mod overload;
mod pool;
mod session;
mod status;
mod tasks;
mod wire;

fn http(front: &Front) -> Http {
    Http::new(&front.url)
        .header("X-Team", "data-platform")
        .bearer_token("tok-123")
}

async fn connect(front: &Front) -> Client {
    Client::builder()
        .client_info("http-tests", "1.0")
        .connect(http(front))
        .await
        .expect("connect")
}

/// Every POST the front refused, which a correct client never causes.
fn rejected(front: &Front) -> Vec<(String, String)> {
    front
        .seen()
        .into_iter()
        .filter_map(|s| s.rejected.map(|r| (s.method, r)))
        .collect()
}

fn confirm() -> InputRequest {
    InputRequest::form(
        "Go ahead?",
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
    )
}

/// A task that works, asks `confirm`, then completes with the answers.
fn approval() -> TestServer {
    TestServer::new().tool(ScriptedTool::task(
        "approve",
        TaskScript::new()
            .poll_interval(ms(20))
            .working(ms(10), "checking")
            .input(ms(30), [("confirm".to_string(), confirm())].into())
            .complete_with_inputs(ms(30)),
    ))
}

fn yes() -> InputHandlers {
    InputHandlers::new()
        .elicitation_form(|_| async { Ok(ElicitResult::accept(json!({"ok": true}))) })
}
