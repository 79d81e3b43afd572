//! `mcp-tasks`: call a tool on any MCP server from the command line, watch
//! it run, answer its questions, press Ctrl-C to cancel it.

// Every write to stdout goes through `stdout`, which ends the command
// quietly when the reader goes away.
#![deny(clippy::print_stdout)]

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};
use serde_json::json;

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
mod commands;
mod config;
mod failure;
mod follow;
mod records;
mod reference;
mod report;
mod roots;
mod server;
mod sign_in;
mod stdout;

use commands::on_task::{Action, RefArgs};
use commands::{
    call, catalog, completions, forget, history, list, login, man, on_task, prune, questions,
    serve, servers, store, tools, watch,
};
pub use failure::{Failure, chain, exit, one_line};
use server::{ConfigArgs, ServerArgs};

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
    Call(call::CallArgs),
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
    Status(history::StatusArgs),
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
        Command::Call(c) => c.json(),
        Command::Status(history::StatusArgs { task: r, .. })
        | Command::Wait(r)
        | Command::Cancel(r) => r.output.json,
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

async fn run(cli: Cli) -> anyhow::Result<u8> {
    match cli.command {
        Command::Tools { at, json, server } => tools::run(at.as_deref(), json, server).await,
        Command::List { json } => list::run(json).await,
        Command::Watch { json } => watch::run(json).await,
        Command::Servers { json, config } => servers::run(config.config.as_deref(), json),
        Command::Login {
            server,
            open,
            config,
        } => login::login(&server, config.config.as_deref(), open).await,
        Command::Logout { server, config } => login::logout(&server, config.config.as_deref()),
        Command::Completions { shell } => completions::run(shell, Cli::command()),
        Command::Man => man::run(Cli::command()),
        Command::Call(args) => call::run(args).await,
        Command::Questions { json } => questions::list(json).await,
        Command::Answer(args) => questions::answer(args).await,
        Command::Status(args) => history::run(args).await,
        Command::Wait(args) => on_task::run(args, Action::Wait).await,
        Command::Cancel(args) => on_task::run(args, Action::Cancel).await,
        Command::Forget(args) => forget::run(args).await,
        Command::Prune(args) => prune::run(args).await,
        Command::Catalog(command) => catalog::run(command).await,
        Command::Store(command) => store::run(command).await,
        Command::Serve(args) => serve::run(args).await,
    }
}
