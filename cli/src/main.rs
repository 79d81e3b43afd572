//! `mcp-tasks`: call a tool on any MCP server from the command line, watch
//! it run, answer its questions, press Ctrl-C to cancel it.

// Every write to stdout goes through `stdout`, which ends the command
// quietly when the reader goes away.
#![deny(clippy::print_stdout)]

use std::io::IsTerminal;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::{Args, CommandFactory, Parser, Subcommand};
use mcp_tasks::Client;
use serde_json::{Value, json};
use tokio::sync::mpsc;

/// `println!` for the command's output: a closed stdout ends the command
/// quietly (see [`stdout::line`]) instead of panicking.
macro_rules! out {
    () => {
        $crate::stdout::line(format_args!(""))
    };
    ($($arg:tt)*) => {
        $crate::stdout::line(format_args!($($arg)*))
    };
}

mod arguments;
mod ask;
mod catalog;
mod config;
mod failure;
mod forget;
mod login;
mod prune;
mod questions;
mod records;
mod reference;
mod report;
mod roots;
mod serve;
mod server;
mod stdout;
mod store;
mod watch;
mod watch_all;

use ask::Asker;
pub use failure::{Failure, chain, exit, one_line};
use mcp_tasks::TaskRef;
use mcp_tasks::store::RecordId;
use records::Records;
use report::{Report, Style};
use server::{ConfigArgs, ServerArgs};
use watch::{Detach, Watch};

/// Call tools on any MCP server, watch long-running ones as tasks, answer
/// their questions, cancel them with Ctrl-C.
#[derive(Debug, Parser)]
#[command(
    name = "mcp-tasks",
    version,
    after_help = "\
Every command names its server the same way: --url URL, a command after `--`, or a server of \
a config file with --server NAME (`tools @NAME` and `call @NAME TOOL` for short; see \
`mcp-tasks servers`).

Examples:
  mcp-tasks tools -- mcp-tasks-demo
  mcp-tasks servers
  mcp-tasks call @github search_issues query=bug
  mcp-tasks login github
  mcp-tasks call export table=orders -- mcp-tasks-demo
  mcp-tasks call echo '{\"message\": \"hi\"}' -- npx -y @modelcontextprotocol/server-everything stdio
  mcp-tasks call export --detach --url https://mcp.example.com/mcp
  mcp-tasks list
  mcp-tasks wait 12
  mcp-tasks prune --older-than 7d

`call --detach` keeps each task it leaves running in a task list, \
$XDG_DATA_HOME/mcp-tasks/tasks.db (else ~/.local/share/mcp-tasks/tasks.db; \
MCP_TASKS_DATA_DIR names another folder), readable by its owner alone: it holds the task ids, \
which are secrets, and how to reach each server (a config file's server name, else a URL or \
a command line; never a header or a token). `status`, `wait` and `cancel` take a task's short name from `mcp-tasks list` as well \
as its reference. `forget NAME` removes one task from the list (never cancelling it), and \
`prune --older-than 7d` the tasks that ended more than 7 days ago.

`call --detach` refuses a task that no later command could follow: one on a server run \
after `--` (it ends with the command, and its tasks with it), or on an HTTP server of the \
initialize era (2025-11-25 and before), whose tasks may belong to the connection's session, \
which ends with the command. `--detach-anyway` leaves such a task running all the same.

Exit status of `status` and `wait`: how the task stands, not whether the command did its work \
(`status` of an ended task and `wait` for it give the same code):
  0    completed
  1    completed with a tool error (its result has isError)
  3    the call or the task failed, the task expired, or the server no longer knows it
  4    cancelled, by anyone (`mcp-tasks cancel` included)
  7    still running: working or input_required (`status`)
`call` follows its task by the same rule (`--detach`: 0 once the task is left running); `cancel` \
exits 0 once the task is cancelled, by it or before it. When the command could not tell:
  2    usage error: the command line, a bad reference, an unknown tool or short name
  5    the server refused to authorize (HTTP 401 or 403; sign in with `mcp-tasks login`)
  6    the server could not be reached, or the connection failed (closed, unreadable)
  130  interrupted with Ctrl-C (the task cancelled, or left running on a second Ctrl-C)
  141  stdout was closed (`mcp-tasks … | head -1`): the command ended at once, quietly

With --json, stdout has one JSON object per line; every line has \"type\" and \"reference\" \
(the task's reference, `mtr_…`, as `wait` takes it; null while there is no task). Types: \
status {status, message}; progress {progress, total, message}; input {kind, message, answer}; \
detached {name, followable}; outcome {outcome: completed|failed|cancelled|expired|interrupted, exit, \
and for completed: isError, text, structuredContent, content; for failed: error {code, \
message, data}}; error {message, exit}. `list --json` and `watch --json` name each task by \
its short name (\"name\"), which every command takes, and never show its id."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Show the server (name, protocol version, whether it runs tasks) and its tools.
    Tools {
        /// A server of a config file (the same as --server NAME).
        #[arg(value_name = "@NAME")]
        at: Option<String>,
        /// Print the listing as one JSON object.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        server: ServerArgs,
    },
    /// Call a tool, following it to its result if it becomes a task.
    #[command(after_help = "\
`mcp-tasks call @NAME TOOL ARGS` calls TOOL on the server NAME of a config file (a tool's \
name never starts with @; --server NAME says the same).

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
        /// server, created, task: a digest of the task id, never the id).
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
    /// List the questions the tasks of the task list wait on, oldest first.
    #[command(after_help = "\
A question is recorded when a command reads a task that asks it (`call --detach`, `status`, \
`wait`). Answer one with `mcp-tasks answer NAME [KEY] FIELD=VALUE…`, from any shell, at any \
time while the task still asks it.")]
    Questions {
        /// Print one JSON object per line (name, tool, key, kind, message,
        /// schema, url, asked).
        #[arg(long)]
        json: bool,
    },
    /// Answer a question of a task of the task list, then send the answer.
    #[command(after_help = "\
The answer is checked against the question (required fields, types, choices, formats and \
bounds of a form) and kept in the task list before it is sent: the first answer to a question \
wins, a second one is refused (exit status 2). An answer that could not be sent (the server \
away) stays kept: `mcp-tasks wait NAME` sends it before it asks anything.")]
    Answer(questions::AnswerArgs),
    /// Read a task's status once, by its short name or its reference.
    #[command(after_help = "\
The exit status tells how the task stands, as `wait` tells it once the task ended: 0 \
completed, 1 completed with a tool error (isError), 3 failed, expired or unknown to the \
server, 4 cancelled (by anyone), 7 still running (working or input_required). 2, 5 and 6: \
the command could not tell (see `mcp-tasks --help`).")]
    Status(RefArgs),
    /// Follow a task to its result, by its short name or its reference.
    #[command(after_help = "\
The exit status tells how the task ended, as `status` tells it: 0 completed, 1 completed \
with a tool error (isError), 3 failed, expired or unknown to the server, 4 cancelled (by \
anyone, `mcp-tasks cancel` included); 7 (still running) is for `status`. 2, 5, 6 and 130: \
the command could not tell (see `mcp-tasks --help`).")]
    Wait(RefArgs),
    /// Cancel a task and wait for it to end, by its short name or its reference.
    Cancel(RefArgs),
    /// Remove one task from the task list, by its short name or its reference.
    #[command(after_help = "\
Forgetting a task never cancels it. A task that has not ended (as last seen) is refused, \
with exit status 2, unless --force: it then runs on at its server, and no command follows \
it by its short name again (`mcp-tasks cancel NAME` first cancels it).")]
    Forget(forget::ForgetArgs),
    /// Remove the ended tasks last seen more than AGE ago from the task list.
    #[command(after_help = "\
A task is ended once a command saw it end (`wait`, `status`, `cancel`, `watch`); tasks that \
have not ended stay, however old (`mcp-tasks forget NAME --force` removes one). The list is \
pruned a thousand tasks at a time, so that other commands never wait long for it.")]
    Prune(prune::PruneArgs),
    /// List the servers of the config files: name, kind, command or URL
    /// (secrets redacted), and the file each comes from.
    #[command(after_help = "\
Read: --config FILE alone, else the first of these to define each name: ./.vscode/mcp.json, \
./.cursor/mcp.json, ./.mcp.json, $XDG_CONFIG_HOME/mcp-tasks/servers.json, Claude Desktop's \
claude_desktop_config.json, ~/.cursor/mcp.json. Both forms are read: {\"mcpServers\": {NAME: \
{\"command\", \"args\", \"env\"} or {\"url\", \"headers\"}}} and VS Code's {\"servers\": {NAME: \
{\"type\", \"command\", \"args\", \"env\", \"envFile\", \"url\", \"headers\"}}}. Values may hold \
${VAR} or ${env:VAR} (expanded when the server is used; a variable that is not set is an \
error), ${workspaceFolder} and ${userHome}; VS Code's ${input:ID} is refused. A per-server \
bound on each request: \"timeout\" in milliseconds (1000 or more) or with a unit (\"90s\", \
\"2m\", \"500ms\"), or \"timeoutMs\", or \"timeoutSeconds\" (default 60 s).")]
    Servers {
        /// Print one JSON object per line (name, kind, command or url,
        /// args, env and header names, timeoutMs, disabled, file).
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Sign in to a server that asks for it (OAuth in the browser), and
    /// keep its tokens for later commands.
    #[command(after_help = "\
The authorization URL is printed; open it in a browser (--open does). The browser comes back \
to 127.0.0.1 on a port of the moment. The tokens are kept in \
$XDG_CONFIG_HOME/mcp-tasks/tokens/ (else ~/.config/mcp-tasks/tokens/), one file per server, \
readable by you alone; later commands against the server use them and refresh them. Without \
a login, a command against a server that asks to sign in starts one itself, unless \
--no-login (or MCP_TASKS_NO_LOGIN=1) is given: it then fails with exit status 5.")]
    Login {
        /// The server: a name of a config file (NAME or @NAME), or a URL.
        #[arg(value_name = "SERVER")]
        server: String,
        /// Open the authorization URL in the browser as well.
        #[arg(long)]
        open: bool,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Forget the tokens kept for a server.
    Logout {
        /// The server: a name of a config file (NAME or @NAME), or a URL.
        #[arg(value_name = "SERVER")]
        server: String,
        #[command(flatten)]
        config: ConfigArgs,
    },
    /// Print the completion script of a shell (bash, elvish, fish,
    /// powershell, zsh) on stdout.
    #[command(after_help = "\
For example, bash: `mcp-tasks completions bash > ~/.local/share/bash-completion/completions/mcp-tasks`; \
zsh: `mcp-tasks completions zsh > \"${fpath[1]}/_mcp-tasks\"`; \
fish: `mcp-tasks completions fish > ~/.config/fish/completions/mcp-tasks.fish`.")]
    Completions {
        /// The shell to complete in.
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) on stdout: `mcp-tasks man | man -l -`.
    Man,
    /// Serve the task inbox: web pages where people see the tracked tasks,
    /// cancel them and answer their questions.
    #[command(after_help = "\
Serves the task list of `call --detach` unless --store names another store (the one a \
tracker's workers share). Pages: /tasks, /tasks/ID, /questions, and /metrics in the \
Prometheus format. Answers and cancels are written to the store; a worker (or `mcp-tasks wait \
NAME`, for the task list) sends them to the server.

It listens on loopback unless --listen names another address, which needs an access token: \
$MCP_TASKS_INBOX_TOKEN, else one made for the run and printed once. A browser gives it once as \
?token=…, then carries it in a cookie; other clients send it as a bearer token.")]
    Serve(serve::ServeArgs),
    #[command(flatten)]
    Catalog(catalog::Command),
    /// The task store of an application's workers: `store migrate URL`
    /// sets up a Postgres task store's tables.
    #[command(subcommand)]
    Store(store::Command),
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
    ///
    /// Refused, with exit status 2, for a task no later command could
    /// follow: on a server run after `--`, or on an HTTP server of the
    /// initialize era (its tasks may belong to the session, which ends
    /// with this command).
    #[arg(long)]
    detach: bool,
    /// --detach, even for a task that no later command may be able to
    /// follow (a server run after `--`, an initialize-era HTTP session):
    /// for a server that keeps its tasks beyond this command.
    #[arg(long)]
    detach_anyway: bool,
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
        Command::Tools { json, .. }
        | Command::List { json }
        | Command::Watch { json }
        | Command::Questions { json }
        | Command::Servers { json, .. } => *json,
        Command::Answer(a) => a.json(),
        Command::Login { .. } | Command::Logout { .. } => false,
        Command::Call(c) => c.output.json,
        Command::Status(r) | Command::Wait(r) | Command::Cancel(r) => r.output.json,
        Command::Completions { .. } | Command::Man | Command::Store(_) | Command::Serve(_) => false,
        Command::Forget(_) | Command::Prune(_) => false,
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
                    out!(
                        "{}",
                        json!({
                            "type": "error", "message": text, "exit": code,
                            "reference": report::task_reference(),
                        })
                    );
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
        Command::Tools {
            at,
            json,
            mut server,
        } => {
            let at = match at.as_deref().map(|a| a.strip_prefix('@')) {
                None => None,
                Some(Some(name)) if !name.is_empty() => Some(name),
                Some(_) => bail!(Failure::usage(
                    "`tools` takes a server as @NAME (or --server NAME)"
                )),
            };
            server.resolve(at)?;
            tools(&server, json).await
        }
        Command::List { json } => list(json).await,
        Command::Watch { json } => watch_all::watch_all(json).await,
        Command::Servers { json, config } => servers(config.config.as_deref(), json),
        Command::Login {
            server,
            open,
            config,
        } => login::login(&server, config.config.as_deref(), open).await,
        Command::Logout { server, config } => login::logout(&server, config.config.as_deref()),
        Command::Completions { shell } => {
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut Cli::command(), "mcp-tasks", &mut script);
            stdout::bytes(&script);
            Ok(exit::OK)
        }
        Command::Man => {
            let mut page = Vec::new();
            clap_mangen::Man::new(Cli::command())
                .render(&mut page)
                .context("cannot render the manual page")?;
            stdout::bytes(&page);
            Ok(exit::OK)
        }
        Command::Call(args) => call(args).await,
        Command::Questions { json } => questions::list(json).await,
        Command::Answer(args) => questions::answer(args).await,
        Command::Status(args) => on_task(args, Action::Status).await,
        Command::Wait(args) => on_task(args, Action::Wait).await,
        Command::Cancel(args) => on_task(args, Action::Cancel).await,
        Command::Forget(args) => forget::forget(args).await,
        Command::Prune(args) => prune::prune(args).await,
        Command::Catalog(command) => catalog::run(command).await,
        Command::Store(command) => store::run(command).await,
        Command::Serve(args) => serve::serve(args).await,
    }
}

/// `mcp-tasks call`: a `--detach` that no later command could follow is
/// refused before the tool is called (a server run after `--` before it
/// is started; an HTTP server once its era is known).
async fn call(mut args: CallArgs) -> anyhow::Result<u8> {
    if let Some(name) = args.tool.strip_prefix('@').map(str::to_owned) {
        if args.arguments.is_empty() {
            bail!(Failure::usage(format!(
                "name the tool to call after @{name}"
            )));
        }
        args.tool = args.arguments.remove(0);
        args.server.resolve(Some(&name))?;
    } else {
        args.server.resolve(None)?;
    }
    let detach = match (args.detach || args.detach_anyway, args.detach_anyway) {
        (false, _) => Detach::No,
        (true, false) => Detach::IfFollowable,
        (true, true) => Detach::Anyway,
    };
    if detach == Detach::IfFollowable
        && let Some(why) = args.server.unfollowable(None)
    {
        bail!(refuse_detach(&why));
    }
    let (mut watch, client) = Watch::start(&args.server, args.output.json).await?;
    let unfollowable = args.server.unfollowable(Some(&client.protocol_version()));
    if detach == Detach::IfFollowable
        && let Some(why) = &unfollowable
    {
        watch.clear();
        return close(client, Err(refuse_detach(why).into())).await;
    }
    let outcome = watch
        .call(&client, &args.tool, &args.arguments, detach)
        .await;
    if let Some(detached) = watch.take_detached() {
        let name = keep(&args, &detached).await;
        watch.announce(&detached.reference, name, unfollowable.as_deref());
    }
    close(client, outcome).await
}

/// The usage error of a `--detach` no later command could follow.
fn refuse_detach(why: &str) -> Failure {
    Failure::usage(format!(
        "--detach refused: {why}, so no later command could follow the task. \
         Call without --detach to follow it now, or use --detach-anyway if the \
         server keeps its tasks beyond this command"
    ))
}

/// Records a detached task in the task list and gives its short name. A
/// list that cannot take it is a note, not a failure: the reference
/// printed next still finds the task.
async fn keep(args: &CallArgs, detached: &watch::Detached) -> Option<RecordId> {
    let endpoint = args.server.endpoint()?;
    let kept = async {
        let records = Records::open().await?;
        let name = records
            .record(
                &detached.reference,
                &args.tool,
                &endpoint,
                detached.status,
                detached.status_message.clone(),
            )
            .await?;
        anyhow::Ok((records, name))
    };
    match kept.await {
        Ok((records, name)) => {
            // A task that asks at once: its questions go in the record too.
            if detached.asked.is_some() {
                let seen = records::Seen {
                    status: Some((detached.status, detached.status_message.clone())),
                    asked: detached.asked.clone(),
                    ..Default::default()
                };
                if let Err(e) = records.write_back(name, &seen).await {
                    eprintln!(
                        "mcp-tasks: the task's questions were not recorded: {}",
                        chain(&e)
                    );
                }
            }
            Some(name)
        }
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
    /// Send the answers kept in the task list (`mcp-tasks answer`).
    Deliver,
}

/// `status`, `wait` and `cancel`: the task by its short name (its server
/// from the task list unless the command line names one) or by its
/// reference; what the command saw is written back to the task list.
async fn on_task(mut args: RefArgs, action: Action) -> anyhow::Result<u8> {
    args.server.resolve(None)?;
    let mut stored = mcp_tasks::protocol::InputResponses::new();
    let (task, server, kept) = match records::parse_name(&args.reference) {
        Some(name) => {
            let records = Records::open().await?;
            let found = records.find(name).await?;
            let server = args.server.or_recorded(found.endpoint.as_ref())?;
            stored = records::stored_answers(&found.record);
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
    watch.send_first(stored);
    let outcome = match action {
        Action::Status => watch.status(&client, &task).await,
        Action::Wait => watch.wait(&client, &task).await,
        Action::Cancel => watch.cancel_by_reference(&client, &task).await,
        Action::Deliver => watch.deliver(&client, &task).await,
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

/// `mcp-tasks servers`.
fn servers(file: Option<&std::path::Path>, json: bool) -> anyhow::Result<u8> {
    let catalog = config::Catalog::load(file)?;
    for problem in &catalog.problems {
        eprintln!("mcp-tasks: {problem}");
    }
    if json {
        for server in catalog.servers.values() {
            let mut line = json!({
                "name": server.name,
                "kind": server.kind_name(),
                "file": server.source.display().to_string(),
                "timeoutMs": server.timeout.map(|t| t.as_millis() as u64),
                "disabled": server.disabled,
            });
            match &server.kind {
                config::Kind::Stdio { env, .. } => {
                    line["command"] = json!(server.redacted_command());
                    line["env"] = json!(env.iter().map(|(k, _)| k).collect::<Vec<_>>());
                }
                config::Kind::Http { url, headers, .. } => {
                    line["url"] = json!(config::redact_url(url));
                    line["headers"] = json!(headers.iter().map(|(k, _)| k).collect::<Vec<_>>());
                }
            }
            out!("{line}");
        }
        return Ok(exit::OK);
    }
    if catalog.servers.is_empty() {
        let files: Vec<String> = catalog
            .searched
            .iter()
            .map(|f| f.display().to_string())
            .collect();
        eprintln!("no servers in {}", files.join(", "));
        return Ok(exit::OK);
    }
    let width = catalog
        .servers
        .keys()
        .map(|n| n.chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    out!("{:<width$}  {:<5}  SERVER", "NAME", "KIND");
    for server in catalog.servers.values() {
        out!(
            "{:<width$}  {:<5}  {}",
            server.name,
            server.kind_name(),
            server.redacted()
        );
        let disabled = if server.disabled { " (disabled)" } else { "" };
        out!(
            "{:<width$}         from {}{disabled}",
            "",
            server.source.display()
        );
    }
    Ok(exit::OK)
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
            out!(
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
    out!(
        "{:>4}  {:<tool_width$}  {:<status_width$}  {:>7}  {:<9}  SERVER",
        "NAME",
        "TOOL",
        "STATUS",
        "CREATED",
        "TASK"
    );
    for task in &listed {
        let r = &task.record;
        let server = task
            .endpoint
            .as_ref()
            .map_or_else(|| "?".to_owned(), ToString::to_string);
        out!(
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
    out!("{:<width$}  {:<9}  DESCRIPTION", "TOOL", "TASK");
    for tool in &tools {
        let about = one_line_about(tool["description"].as_str().unwrap_or(""), room);
        let support = task_column(tool, info.tasks, modern);
        out!(
            "{:<width$}  {:<9}  {about}",
            tool["name"].as_str().unwrap_or("?"),
            support
        );
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
fn task_column(tool: &Value, tasks: bool, modern: bool) -> &str {
    match (tasks, modern) {
        (false, _) => "no",
        (true, true) => "maybe",
        (true, false) => tool["execution"]["taskSupport"]
            .as_str()
            .unwrap_or("forbidden"),
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
