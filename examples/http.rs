//! Talk to a remote MCP server over Streamable HTTP.
//!
//! ```text
//! cargo run --example http --features http -- URL [TOOL [JSON_ARGUMENTS]]
//! ```
//!
//! With only a URL, connects (negotiating the protocol revision: 2026-07-28,
//! or the initialize era's 2025-11-25 and earlier), then lists the server's
//! tools. With a tool name, calls it with the JSON arguments (default
//! `{}`), printing each progress report the server sends and, when the call
//! becomes a task, each change of its status, then the result. The
//! client declares what it can answer: the server's questions (an
//! elicitation form, a sampling request) are asked at the terminal, and
//! `roots/list` gets the current folder. A token in
//! `MCP_BEARER_TOKEN` is sent as `Authorization: Bearer …` on every request.
//! Exits 0 when the call completed, 1 when the tool reported an error or the
//! task failed, was cancelled or expired, 2 on a usage error. The `stdio`
//! example does the same with a server run as a child process.
//!
//! For example, against the reference server `server-everything` (pinned
//! in `interop/everything`; `npm ci --prefix interop/everything` installs it):
//!
//! ```text
//! PORT=3901 node interop/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js streamableHttp &
//! cargo run --example http --features http -- http://127.0.0.1:3901/mcp
//! cargo run --example http --features http -- http://127.0.0.1:3901/mcp \
//!     trigger-long-running-operation '{"duration": 3, "steps": 5}'
//! ```
//!
//! A 2025-11-25 task that asks a question on the way:
//!
//! ```text
//! … simulate-research-query '{"topic": "rust", "ambiguous": true}'
//! ```

#[path = "support/drive.rs"]
mod drive;

use std::process::ExitCode;
use std::time::Duration;

use mcp_tasks::Client;
use mcp_tasks::transport::Http;
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let Some(url) = args.next() else {
        eprintln!("usage: http URL [TOOL [JSON_ARGUMENTS]]");
        return Ok(ExitCode::from(2));
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
        .input_handlers(drive::terminal())
        .connect(transport)
        .await?;

    let outcome = drive::run(&client, tool, arguments).await;
    // Ends the session (its DELETE) and waits for the answer: dropping the
    // client would send it in the background, and the program would exit
    // before it went out.
    client.close().await?;
    outcome
}
