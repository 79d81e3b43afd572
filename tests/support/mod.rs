//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::time::Duration;

use mcp_tasks::Client;
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{CallToolResult, InputRequest, InputRequests};
use mcp_tasks::testing::{RecordedRequest, TestServer};
use serde_json::json;

pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub async fn client(server: &TestServer) -> Client {
    Client::connect(server.connect()).await.expect("connect")
}

pub async fn client_with(server: &TestServer, handlers: InputHandlers) -> Client {
    Client::builder()
        .input_handlers(handlers)
        .connect(server.connect())
        .await
        .expect("connect")
}

pub fn text(t: &str) -> CallToolResult {
    CallToolResult::text(t)
}

pub fn confirm_form() -> InputRequest {
    InputRequest::form(
        "Confirm the export?",
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
    )
}

pub fn requests(keys: &[&str]) -> InputRequests {
    keys.iter()
        .map(|k| (k.to_string(), confirm_form()))
        .collect()
}

/// The requests of one method, in order.
pub fn of(server: &TestServer, method: &str) -> Vec<RecordedRequest> {
    server
        .requests()
        .into_iter()
        .filter(|r| r.method == method)
        .collect()
}

/// Gaps between consecutive requests of one method.
pub fn gaps(server: &TestServer, method: &str) -> Vec<Duration> {
    let at: Vec<_> = of(server, method).iter().map(|r| r.at).collect();
    at.windows(2).map(|w| w[1] - w[0]).collect()
}
