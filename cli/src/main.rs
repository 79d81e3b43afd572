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
mod catalog;
mod records;
mod reference;
mod report;
mod roots;
mod server;
mod watch;
mod watch_all;

use ask::Asker;
use mcp_tasks::TaskRef;
use mcp_tasks::store::RecordId;
use records::Records;
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
  mcp-tasks list
  mcp-tasks wait 12

`call --detach` keeps each task it leaves running in a task list, \
$XDG_DATA_HOME/mcp-tasks/tasks.db (else ~/.local/share/mcp-tasks/tasks.db; \
MCP_TASKS_DATA_DIR names another folder), readable by its owner alone: it holds the task ids, \
which are secrets, and how to reach each server (a URL or a command line; never a header or \
a token). `status`, `wait` and `cancel` take a task's short name from `mcp-tasks list` as well \
as its reference.

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
    /// Show the tasks `call --detach` left running, newest first, with how
    /// each last stood.
    #[command(after_help = "\
STATUS is the last one a command saw (`call --detach`, `status`, `wait`, `cancel`): \
working, input_required, or how the task ended (completed, tool_error, failed, cancelled, \
expired, unreachable). TASK is a digest of the task id, never the id itself.")]
    List {
        /// Print one JSON object per line (name, tool, status, message,
        /// server, created, task).
        #[arg(long)]
        json: bool,
    },
    /// Follow every open task of the task list until each ends, one line
    /// per status change.
    #[command(after_help = "\
Each task is followed over a connection of its own to its recorded server (a URL gets the \
token of MCP_BEARER_TOKEN, if set). A task that asks a question is left for \
`mcp-tasks wait NAME`. Exit status: 0 when every task was followed to its end, 1 otherwise.")]
    Watch {
        /// Print one JSON object per line (name, tool, status, message).
        #[arg(long)]
        json: bool,
    },
    /// Read a task's status once, by its short name or its reference.
    Status(RefArgs),
    /// Follow a task to its result, by its short name or its reference.
    Wait(RefArgs),
    /// Cancel a task and wait for it to end, by its short name or its reference.
    Cancel(RefArgs),
    #[command(flatten)]
    Catalog(catalog::Command),
}

#[derive(Debug, Args)]
struct CallArgs {
    /// The tool to call.
    tool: String,
    /// The arguments: one JSON object, or key=value pairs.
    #[arg(value_name = "ARGS")]
    arguments: Vec<String>,
    /// Print the task's reference and exit, leaving the task running,
    /// kept in the task list under a short name (follow it later with
    /// `mcp-tasks wait NAME` or `mcp-tasks wait REF`).
    #[arg(long)]
    detach: bool,
    #[command(flatten)]
    output: OutputArgs,
    #[command(flatten)]
    server: ServerArgs,
}

#[derive(Debug, Args)]
struct RefArgs {
    /// The task: its short name in the task list (`12` or `#12`; its
    /// server is the recorded one unless one is named here), or its
    /// reference (`mtr_…`) as `call --detach` printed it.
    #[arg(value_name = "NAME|REF")]
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
        Command::Tools { json, .. } | Command::List { json } | Command::Watch { json } => *json,
        Command::Call(c) => c.output.json,
        Command::Status(r) | Command::Wait(r) | Command::Cancel(r) => r.output.json,
        Command::Catalog(c) => c.json(),
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
pub fn chain(e: &anyhow::Error) -> String {
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
        Command::List { json } => list(json).await,
        Command::Watch { json } => watch_all::watch_all(json).await,
        Command::Call(args) => {
            let (mut watch, client) = Watch::start(&args.server, args.output.json).await?;
            let outcome = watch
                .call(&client, &args.tool, &args.arguments, args.detach)
                .await;
            if let Some(detached) = watch.take_detached() {
                let name = keep(&args, &detached).await;
                watch.announce(&detached.reference, name);
            }
            close(client, outcome).await
        }
        Command::Status(args) => on_task(args, Action::Status).await,
        Command::Wait(args) => on_task(args, Action::Wait).await,
        Command::Cancel(args) => on_task(args, Action::Cancel).await,
        Command::Catalog(command) => catalog::run(command).await,
    }
}

/// Records a detached task in the task list and gives its short name. A
/// list that cannot take it is a note, not a failure: the reference
/// printed next still finds the task.
async fn keep(args: &CallArgs, detached: &watch::Detached) -> Option<RecordId> {
    let endpoint = args.server.endpoint()?;
    let kept = async {
        Records::open()
            .await?
            .record(
                &detached.reference,
                &args.tool,
                &endpoint,
                detached.status,
                detached.status_message.clone(),
            )
            .await
    };
    match kept.await {
        Ok(name) => Some(name),
        Err(e) => {
            eprintln!(
                "mcp-tasks: the task is not in the task list ({}); keep its reference",
                chain(&e)
            );
            None
        }
    }
}

/// What `status`, `wait` and `cancel` do with their task.
#[derive(Debug, Clone, Copy)]
enum Action {
    Status,
    Wait,
    Cancel,
}

/// `status`, `wait` and `cancel`: the task by its short name (its server
/// from the task list unless the command line names one) or by its
/// reference; what the command saw is written back to the task list.
async fn on_task(args: RefArgs, action: Action) -> anyhow::Result<u8> {
    let (task, server, kept) = match records::parse_name(&args.reference) {
        Some(name) => {
            let records = Records::open().await?;
            let found = records.find(name).await?;
            let server = args.server.or_recorded(found.endpoint.as_ref());
            (found.record.reference, server, Some((records, name)))
        }
        None => {
            let task =
                reference::decode(&args.reference).map_err(|e| Failure::usage(e.to_string()))?;
            let kept = named(&task).await;
            (task, args.server, kept)
        }
    };
    let (mut watch, client) = Watch::start(&server, args.output.json).await?;
    if let Some((_, name)) = &kept {
        watch.name_as(*name);
    }
    let outcome = match action {
        Action::Status => watch.status(&client, &task).await,
        Action::Wait => watch.wait(&client, &task).await,
        Action::Cancel => watch.cancel_by_reference(&client, &task).await,
    };
    if let Some((records, name)) = kept
        && let Err(e) = records.write_back(name, watch.seen()).await
    {
        eprintln!("mcp-tasks: the task list was not updated: {}", chain(&e));
    }
    close(client, outcome).await
}

/// The task list and the short name of `task`, when it is in the list. A
/// list that cannot be opened is no error: the task is named by its
/// reference anyway.
async fn named(task: &TaskRef) -> Option<(Records, RecordId)> {
    let records = match Records::open_existing().await {
        Ok(Some(records)) => records,
        Ok(None) => return None,
        Err(e) => {
            tracing::debug!("no task list: {}", chain(&e));
            return None;
        }
    };
    let name = records.name_of(task).await?;
    Some((records, name))
}

/// `mcp-tasks list`.
async fn list(json: bool) -> anyhow::Result<u8> {
    let listed = match Records::open_existing().await? {
        Some(records) => records.list().await?,
        None => Vec::new(),
    };
    let now = std::time::SystemTime::now();
    if json {
        for task in &listed {
            let r = &task.record;
            println!(
                "{}",
                json!({
                    "name": r.id.0,
                    "tool": r.tool,
                    "status": task.status(),
                    "message": r.status_message,
                    "server": task.endpoint,
                    "created": records::rfc3339(r.created),
                    "task": r.reference.task_id().redacted(),
                })
            );
        }
        return Ok(exit::OK);
    }
    if listed.is_empty() {
        eprintln!("no tasks: `mcp-tasks call TOOL --detach …` adds one");
        return Ok(exit::OK);
    }
    let tool_width = listed
        .iter()
        .map(|t| t.record.tool.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let status_width = listed
        .iter()
        .map(|t| t.status().len())
        .max()
        .unwrap_or(6)
        .max(6);
    println!(
        "{:>4}  {:<tool_width$}  {:<status_width$}  {:>7}  {:<9}  SERVER",
        "NAME", "TOOL", "STATUS", "CREATED", "TASK"
    );
    for task in &listed {
        let r = &task.record;
        let server = task
            .endpoint
            .as_ref()
            .map_or_else(|| "?".to_owned(), ToString::to_string);
        println!(
            "{:>4}  {:<tool_width$}  {:<status_width$}  {:>7}  {:<9}  {server}",
            r.id.0,
            r.tool,
            task.status(),
            format!("{} ago", records::age(r.created, now)),
            r.reference.task_id().redacted(),
        );
    }
    Ok(exit::OK)
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
