//! `mcp-tasks tools`: the server (name, protocol version, whether it runs
//! tasks) and its tools.

use anyhow::bail;
use mcp_tasks::Client;
use mcp_tasks::protocol::{TaskSupport, Tool};
use serde_json::json;

use super::on_server;
use crate::server::ServerArgs;
use crate::{Failure, exit, one_line};

/// `mcp-tasks tools [@NAME]`.
pub async fn run(at: Option<&str>, json: bool, mut server: ServerArgs) -> anyhow::Result<u8> {
    let at = match at.map(|a| a.strip_prefix('@')) {
        None => None,
        Some(Some(name)) if !name.is_empty() => Some(name),
        Some(_) => bail!(Failure::usage(
            "`tools` takes a server as @NAME (or --server NAME)"
        )),
    };
    server.resolve(at)?;
    tools(&server, json).await
}

/// Lists the tools of `server` and prints them.
async fn tools(server: &ServerArgs, json: bool) -> anyhow::Result<u8> {
    // Ended before the output: nothing waits on the server after it.
    let listed = on_server(server, json, false, "listing tools", |client| async move {
        listing(&client).await
    })
    .await?;
    let (info, tools) = listed?;
    if json {
        out!(
            "{}",
            serde_json::to_string(&json!({
                "server": info.name, "version": info.version,
                "protocolVersion": info.protocol, "tasks": info.tasks, "tools": tools,
            }))?
        );
        return Ok(exit::OK);
    }
    let name = match &info.version {
        Some(v) => format!("{} {v}", info.name),
        None => info.name.clone(),
    };
    out!("server    {name}");
    out!("protocol  {}", info.protocol);
    let modern = info.protocol == mcp_tasks::protocol::PROTOCOL_VERSION;
    out!(
        "tasks     {}",
        match (info.tasks, modern) {
            (true, true) => "yes: the server decides at each call whether it runs as a task",
            (true, false) => "yes: the tools whose TASK says optional or required",
            (false, _) => "no: calls answer when they are done",
        }
    );
    out!();
    let width = tools.iter().map(|t| t.name.len()).max().unwrap_or(4).max(4);
    // The description fills the rest of a terminal's line.
    let room = console::Term::stdout()
        .size_checked()
        .map(|(_, cols)| usize::from(cols).saturating_sub(width + 13).max(30))
        .unwrap_or(72);
    out!("{:<width$}  {:<9}  DESCRIPTION", "TOOL", "TASK");
    for tool in &tools {
        let about = one_line_about(tool.description.as_deref().unwrap_or(""), room);
        let support = task_column(tool, info.tasks, modern);
        out!("{:<width$}  {:<9}  {about}", tool.name, support);
    }
    if tools.is_empty() {
        out!("(no tools)");
    }
    Ok(exit::OK)
}

/// What a call of `tool` may become, for the TASK column of `tools`:
/// `maybe` on a 2026-07-28 server with tasks (its tools declare nothing:
/// the server decides at each call), an initialize-era tool's declared
/// `execution.taskSupport` (absent is `forbidden`, the 2025-11-25
/// default), `no` on a server without tasks.
fn task_column(tool: &Tool, tasks: bool, modern: bool) -> &str {
    match (tasks, modern) {
        (false, _) => "no",
        (true, true) => "maybe",
        (true, false) => tool
            .execution
            .as_ref()
            .and_then(|e| e.task_support.as_ref())
            .map_or("forbidden", TaskSupport::as_str),
    }
}

/// A description's first sentence, cut to fit a line.
fn one_line_about(description: &str, width: usize) -> String {
    let first = description
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    let sentence = match first.find(". ") {
        Some(end) => &first[..=end],
        None => first,
    };
    if sentence.chars().count() <= width {
        return sentence.to_owned();
    }
    let cut: String = sentence.chars().take(width - 1).collect();
    format!("{}…", cut.trim_end())
}

/// Who the server is, for the head of the listing.
struct ServerInfo {
    name: String,
    version: Option<String>,
    protocol: String,
    tasks: bool,
}

/// The server's description and its tools, every page of the listing.
async fn listing(client: &Client) -> anyhow::Result<(ServerInfo, Vec<Tool>)> {
    let discovered = client
        .discover()
        .await
        .map_err(|e| anyhow::anyhow!(one_line(&e)))?;
    let implementation = discovered.server_info();
    let info = ServerInfo {
        name: implementation
            .as_ref()
            .map(|i| i.name.clone())
            .or_else(|| client.server_id().map(str::to_owned))
            .unwrap_or_else(|| "(unnamed)".into()),
        version: implementation.map(|i| i.version),
        protocol: client.protocol_version().to_string(),
        tasks: discovered.capabilities.supports_tasks(),
    };
    let tools = client
        .list_tools()
        .await
        .map_err(|e| anyhow::anyhow!("cannot list the tools: {}", one_line(&e)))?;
    Ok((info, tools))
}
