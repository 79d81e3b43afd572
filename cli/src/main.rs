//! `mcp-tasks`: call a tool on any MCP server from the command line, watch
//! it run, answer its questions, press Ctrl-C to cancel it.

use std::io::IsTerminal;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use mcp_tasks::Client;
use serde_json::{Value, json};
use tokio::sync::mpsc;

mod arguments;
mod ask;
mod reference;
mod report;
mod roots;
mod server;
mod watch;

use ask::Asker;
use report::{Report, Style};
use server::ServerArgs;
use watch::Watch;

/// Call tools on any MCP server, watch long-running ones as tasks, answer
/// their questions, cancel them with Ctrl-C.
#[derive(Debug, Parser)]
#[command(
    name = "mcp-tasks",
    version,
    after_help = "\
Every command names its server the same way: --url URL, or a command after `--`.

Examples:
  mcp-tasks tools -- mcp-tasks-demo
  mcp-tasks call export table=orders -- mcp-tasks-demo
  mcp-tasks call echo '{\"message\": \"hi\"}' -- npx -y @modelcontextprotocol/server-everything stdio
  mcp-tasks call export --detach --url https://mcp.example.com/mcp

Exit status: 0 completed, 1 the tool or task failed, 2 usage or connection error, \
130 cancelled with Ctrl-C."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the server (name, protocol version, whether it runs tasks) and its tools.
    Tools {
        /// Print the listing as one JSON object.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Call a tool, following it to its result if it becomes a task.
    #[command(after_help = "\
ARGS is one JSON object ('{\"table\": \"orders\"}') or key=value pairs, typed by the tool's \
input schema (integer, number, boolean; JSON for objects and arrays; a string otherwise). \
key:=JSON gives a value as JSON whatever the schema says.

While it waits, the status line shows the task's status message and the time it has run, \
with a bar when the server reports progress totals. The server's questions are asked at the \
prompt. Ctrl-C cancels the task and waits for it to end; a second Ctrl-C stops waiting at \
once and prints the task's reference, to resume it with `mcp-tasks wait`.")]
    Call(CallArgs),
    /// Read a task's status once, by the reference --detach printed.
    Status(RefArgs),
    /// Follow a task to its result, by the reference --detach printed.
    Wait(RefArgs),
    /// Cancel a task and wait for it to end, by the reference --detach printed.
    Cancel(RefArgs),
}

#[derive(Debug, Args)]
struct CallArgs {
    /// The tool to call.
    tool: String,
    /// The arguments: one JSON object, or key=value pairs.
    #[arg(value_name = "ARGS")]
    arguments: Vec<String>,
    /// Print the task's reference and exit, leaving the task running
    /// (follow it later with `mcp-tasks wait REF`).
    #[arg(long)]
    detach: bool,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(Debug, Args)]
struct RefArgs {
    /// The task's reference, as `call --detach` printed it.
    #[arg(value_name = "REF")]
    reference: String,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(Debug, Args)]
struct OutputArgs {
    /// Print JSON lines on stdout (one per status change, then the
    /// outcome) and never prompt: questions are declined.
    #[arg(long)]
    json: bool,
}

/// A failure with its exit status: the message is printed as one line.
#[derive(Debug)]
pub struct Failure {
    code: u8,
    message: String,
}

impl Failure {
    /// Exit status 2: the command line is wrong.
    pub fn usage(message: impl Into<String>) -> Self {
        Failure {
            code: 2,
            message: message.into(),
        }
    }

    /// Exit status 1: the tool or the task failed.
    pub fn failed(message: impl Into<String>) -> Self {
        Failure {
            code: 1,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Failure {}

/// Exit statuses.
pub mod exit {
    /// The tool completed.
    pub const OK: u8 = 0;
    /// The tool reported an error, or the task failed, was cancelled
    /// (not by this person) or expired.
    pub const FAILED: u8 = 1;
    /// The command line was wrong, or the server could not be reached.
    pub const USAGE: u8 = 2;
    /// The person pressed Ctrl-C.
    pub const INTERRUPTED: u8 = 130;
}

/// An error and its causes on one line, each cause once.
pub fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut line = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let text = cause.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        source = cause.source();
    }
    line
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("mcp-tasks: cannot start: {e}");
            return ExitCode::from(exit::USAGE);
        }
    };
    let json = match &cli.command {
        Command::Tools { json, .. } => *json,
        Command::Call(c) => c.output.json,
        Command::Status(r) | Command::Wait(r) | Command::Cancel(r) => r.output.json,
    };
    let code = runtime.block_on(async {
        match run(cli).await {
            Ok(code) => code,
            Err(e) => {
                let (code, text) = match e.downcast_ref::<Failure>() {
                    Some(f) => (f.code, f.message.clone()),
                    None => (exit::USAGE, chain(&e)),
                };
                if json {
                    println!("{}", json!({ "type": "error", "message": text }));
                }
                eprintln!("mcp-tasks: {text}");
                code
            }
        }
    });
    // The server's child process is closed (or killed) with the runtime.
    runtime.shutdown_timeout(std::time::Duration::from_secs(3));
    ExitCode::from(code)
}

/// anyhow's context chain on one line, each part once.
fn chain(e: &anyhow::Error) -> String {
    let mut line = String::new();
    for part in e.chain() {
        let text = part.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Whether questions can be asked, and how status is shown.
fn style(json: bool) -> (Style, bool) {
    if json {
        return (Style::Json, false);
    }
    let terminal = std::io::stderr().is_terminal();
    let interactive = terminal && std::io::stdin().is_terminal();
    (
        if terminal { Style::Live } else { Style::Lines },
        interactive,
    )
}

async fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Tools { json, server } => tools(&server, json).await,
        Command::Call(args) => {
            let (watch, client) = Watch::start(&args.server, args.output.json).await?;
            let outcome = watch
                .call(&client, &args.tool, &args.arguments, args.detach)
                .await;
            close(client, outcome).await
        }
        Command::Status(args) => {
            let r =
                reference::decode(&args.reference).map_err(|e| Failure::usage(e.to_string()))?;
            let (watch, client) = Watch::start(&args.server, args.output.json).await?;
            let outcome = watch.status(&client, &r).await;
            close(client, outcome).await
        }
        Command::Wait(args) => {
            let r =
                reference::decode(&args.reference).map_err(|e| Failure::usage(e.to_string()))?;
            let (watch, client) = Watch::start(&args.server, args.output.json).await?;
            let outcome = watch.wait(&client, &r).await;
            close(client, outcome).await
        }
        Command::Cancel(args) => {
            let r =
                reference::decode(&args.reference).map_err(|e| Failure::usage(e.to_string()))?;
            let (watch, client) = Watch::start(&args.server, args.output.json).await?;
            let outcome = watch.cancel_by_reference(&client, &r).await;
            close(client, outcome).await
        }
    }
}

/// Ends the connection and waits until it is ended (an HTTP session's
/// `DELETE` answered, a stdio server exited) before the process exits,
/// which would otherwise cut both short. The command's own outcome stands:
/// a close that was not graceful is logged, not an error of the command.
async fn close(client: Client, outcome: anyhow::Result<u8>) -> anyhow::Result<u8> {
    if let Err(e) = client.close().await {
        tracing::debug!("the connection did not close gracefully: {e}");
    }
    outcome
}

/// `mcp-tasks tools`.
async fn tools(server: &ServerArgs, json: bool) -> anyhow::Result<u8> {
    let (style, _) = style(json);
    let report = Report::new(if style == Style::Json {
        Style::Lines
    } else {
        style
    });
    report.activity("connecting");
    let (tx, _rx) = mpsc::unbounded_channel();
    let asker = Asker::new(report.clone(), false, tx);
    let client = server.connect(asker.handlers(), &report).await;
    let client = match client {
        Ok(client) => client,
        Err(e) => {
            report.clear();
            return Err(e);
        }
    };
    report.activity("listing tools");
    let listed = listing(&client).await;
    // Ended before the output: nothing waits on the server after it.
    report.activity("closing");
    if let Err(e) = client.close().await {
        tracing::debug!("the connection did not close gracefully: {e}");
    }
    report.clear();
    let (info, tools) = listed?;
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&json!({
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
    println!("server    {name}");
    println!("protocol  {}", info.protocol);
    println!(
        "tasks     {}",
        if info.tasks {
            "yes: long calls may run as tasks"
        } else {
            "no: calls answer when they are done"
        }
    );
    println!();
    let width = tools
        .iter()
        .filter_map(|t| t["name"].as_str())
        .map(str::len)
        .max()
        .unwrap_or(4)
        .max(4);
    // The description fills the rest of a terminal's line.
    let room = console::Term::stdout()
        .size_checked()
        .map(|(_, cols)| usize::from(cols).saturating_sub(width + 13).max(30))
        .unwrap_or(72);
    println!("{:<width$}  {:<9}  DESCRIPTION", "TOOL", "TASK");
    for tool in &tools {
        let about = one_line_about(tool["description"].as_str().unwrap_or(""), room);
        let support = tool["execution"]["taskSupport"].as_str().unwrap_or("-");
        println!(
            "{:<width$}  {:<9}  {about}",
            tool["name"].as_str().unwrap_or("?"),
            support
        );
    }
    if tools.is_empty() {
        println!("(no tools)");
    }
    Ok(exit::OK)
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

struct ServerInfo {
    name: String,
    version: Option<String>,
    protocol: String,
    tasks: bool,
}

async fn listing(client: &Client) -> anyhow::Result<(ServerInfo, Vec<Value>)> {
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
    let tools = tools
        .iter()
        .map(|t| serde_json::to_value(t).unwrap_or(Value::Null))
        .collect();
    Ok((info, tools))
}
