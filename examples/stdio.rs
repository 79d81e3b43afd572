//! Talk to an MCP server run as a child process over stdio.
//!
//! ```text
//! cargo run --example stdio -- PROGRAM [ARGS…] [-- TOOL [JSON_ARGUMENTS]]
//! ```
//!
//! Starts `PROGRAM` with its arguments and connects to it, negotiating the
//! protocol revision (2026-07-28, or the initialize era's 2025-11-25 and
//! earlier). Without a tool, lists the server's tools; with one, calls it
//! with the JSON arguments (default `{}`), printing each progress report
//! and, when the call becomes a task, each change of its status, then the
//! result. The client declares what it can answer: the server's
//! questions (an elicitation form, a sampling request) are asked at the
//! terminal, and `roots/list` gets the current folder. The server's
//! stderr passes through. Exits 0 when the call completed, 1 when the tool
//! reported an error or the task failed, was cancelled or expired, 2 on a
//! usage error. The twin of the `http` example.
//!
//! For example, against the reference server `server-everything` (pinned
//! in `interop/everything`; `npm ci --prefix interop/everything` installs it):
//!
//! ```text
//! cargo run --example stdio -- node interop/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio \
//!     -- trigger-long-running-operation '{"duration": 3, "steps": 5}'
//! ```
//!
//! A 2025-11-25 task that asks a question on the way:
//!
//! ```text
//! … stdio -- simulate-research-query '{"topic": "rust", "ambiguous": true}'
//! ```

#[path = "support/drive.rs"]
mod drive;

use std::process::ExitCode;

use mcp_tasks::Client;
use mcp_tasks::transport::Stdio;
use serde_json::{Value, json};

#[tokio::main]
async fn main() -> Result<ExitCode, Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (command, call) = match args.iter().position(|a| a == "--") {
        Some(at) => (&args[..at], &args[at + 1..]),
        None => (&args[..], &[][..]),
    };
    let Some((program, program_args)) = command.split_first() else {
        eprintln!("usage: stdio PROGRAM [ARGS…] [-- TOOL [JSON_ARGUMENTS]]");
        return Ok(ExitCode::from(2));
    };
    let tool = call.first().cloned();
    let arguments: Value = match call.get(1) {
        Some(text) => serde_json::from_str(text)?,
        None => json!({}),
    };

    let transport = Stdio::command(program).args(program_args);
    let client = Client::builder()
        .client_info("mcp-tasks-stdio-example", env!("CARGO_PKG_VERSION"))
        .input_handlers(drive::terminal())
        .connect(transport)
        .await?;
    let outcome = drive::run(&client, tool, arguments).await;
    // Closes the server's stdin and waits for it to exit (killing it after
    // a bound): dropping the client would do it in the background.
    client.close().await?;
    outcome
}
