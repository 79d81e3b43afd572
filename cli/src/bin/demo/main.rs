//! `mcp-tasks-demo`: a small MCP 2026-07-28 server with the Tasks
//! extension, to try `mcp-tasks` without a server of one's own.
//!
//! ```text
//! mcp-tasks tools -- mcp-tasks-demo
//! mcp-tasks call export table=orders -- mcp-tasks-demo
//! ```
//!
//! It is the library's scripted test server (`mcp_tasks::testing`) with a
//! few tools whose calls become tasks, served over stdin and stdout.
//!
//! It also offers three resources (`demo://readme` in Markdown, a JSON
//! summary, a one-pixel PNG), a resource template
//! (`demo://tables/{table}/summary`), and a prompt, `review` (`file`
//! required, `focus` optional), with completions for its arguments and
//! for the template's `table`:
//!
//! ```text
//! mcp-tasks resources -- mcp-tasks-demo
//! mcp-tasks read demo://readme -- mcp-tasks-demo
//! mcp-tasks prompt review file=src/lib.rs focus=speed -- mcp-tasks-demo
//! mcp-tasks complete --prompt review focus=s -- mcp-tasks-demo
//! ```
//!
//! Over plain stdio every command starts a server of its own, which knows
//! none of the tasks of the last one. To detach from a task and wait for
//! it from another process, share one server: `--shared PATH` connects
//! stdin and stdout to a server listening on the Unix socket `PATH`,
//! starting it in the background first when none listens there (it stops
//! by itself after ten minutes without a connection).
//!
//! ```text
//! mcp-tasks call export --detach -- mcp-tasks-demo --shared /tmp/demo.sock
//! mcp-tasks wait REF -- mcp-tasks-demo --shared /tmp/demo.sock
//! ```
//!
//! For many clients at once, each in a process of its own, serve
//! Streamable HTTP on a loopback port instead:
//!
//! ```text
//! mcp-tasks-demo --http 127.0.0.1:PORT [--read-delay MS]
//! ```
//!
//! The first line on stdout is the endpoint, as
//! `listening on http://127.0.0.1:43121/mcp` (port 0 picks a free port).
//! `POST /mcp` takes one JSON-RPC message and answers with JSON; there
//! are no listen streams, so clients poll. `GET /counters` answers with
//! what clients asked about each task so far (JSON, task ids in full:
//! loopback only):
//!
//! ```text
//! {"tasks": {"task-1-…": {"reads": 3, "overlapping_reads": 0,
//!                         "answers": {"answer": 1}, "cancels": 0}, …},
//!  "totals": {"tasks": 1, "reads": 3, "overlapping_reads": 0, "answers": 1,
//!             "cancels": 0, "unknown_task_requests": 0}}
//! ```
//!
//! `--read-delay MS` holds every `tasks/get` reply that long, so that two
//! clients reading the same task at once show as `overlapping_reads`. The
//! tasks live as long as the process: killed and started again on the
//! same port (which it binds again at once), the server has forgotten
//! them. Besides the tools above it has three for such tests: `job`
//! (works `ms` milliseconds, 300 by default, then returns its arguments
//! as its structured result), `ask` (asks one question, key `answer`,
//! then returns the answer) and `long` (works ten minutes, unless
//! cancelled).

mod http;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use mcp_tasks::protocol::{
    CallToolResult, Completion, CompletionRef, GetPromptResult, InputRequest, Prompt,
    PromptArgument, PromptMessage, Resource, ResourceContents, ResourceTemplate, Role, RpcError,
};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::transport::LineTransport;
use serde_json::{Value, json};
use tokio::net::{UnixListener, UnixStream};

const USAGE: &str = "usage: mcp-tasks-demo \
    [--shared SOCKET | --serve-socket SOCKET | --http 127.0.0.1:PORT [--read-delay MS]]";

/// What `--help` says of the ways to run the demo.
const ABOUT: &str = "\
Without options it serves one client over stdin and stdout, as a command after `--`:
  --shared SOCKET        relay stdin and stdout to one server on the Unix socket SOCKET,
                         started in the background when none listens there, so that tasks
                         outlive the command that started them (for --detach-anyway, wait)
  --serve-socket SOCKET  be that server (it stops after ten minutes without a connection)
  --http ADDR            serve Streamable HTTP on a loopback ADDR (127.0.0.1:0 picks a port);
                         --read-delay MS holds every tasks/get reply that long";

/// The examples `--help` ends with.
const EXAMPLES: &str = "\
Try:
  mcp-tasks tools -- mcp-tasks-demo
  mcp-tasks call export table=orders -- mcp-tasks-demo
  mcp-tasks call deploy -- mcp-tasks-demo
  mcp-tasks call index --detach-anyway -- mcp-tasks-demo --shared /tmp/demo.sock";

/// How long a `job` works when its arguments do not say.
const JOB_MS: u64 = 300;

/// How long a shared server waits for a connection before it stops.
const IDLE: Duration = Duration::from_secs(600);

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// The demo server: its tools, resources and prompt.
fn server() -> TestServer {
    tools()
        .into_iter()
        .fold(catalog(TestServer::new()), TestServer::tool)
}

/// `--help`: what the demo is, how to run it, and its tools with what
/// each does.
fn help() -> String {
    let tools = tools();
    let width = tools.iter().map(|t| t.name().len()).max().unwrap_or(4);
    let mut text = format!(
        "mcp-tasks-demo: a small MCP server (protocol 2026-07-28, with tasks), \
         to try mcp-tasks on.\n\n{USAGE}\n\n{ABOUT}\n\nTools:\n"
    );
    for tool in &tools {
        let about = tool.tool().description.as_deref().unwrap_or("");
        text.push_str(&format!("  {:<width$}  {about}\n", tool.name()));
    }
    text.push('\n');
    text.push_str(EXAMPLES);
    text
}

/// The demo tools.
fn tools() -> Vec<ScriptedTool> {
    let export = ScriptedTool::task(
        "export",
        TaskScript::new()
            .poll_interval(ms(200))
            .status_message("queued")
            .working(ms(700), "reading 1,204 orders")
            .working(ms(700), "writing orders.csv")
            .working(ms(700), "compressing")
            .complete(
                ms(700),
                CallToolResult::text("exported 1,204 rows to orders.csv.gz")
                    .with_structured(json!({ "rows": 1204, "file": "orders.csv.gz" })),
            ),
    )
    .description("Export a table to a compressed CSV file (a task of a few seconds)")
    .input_schema(json!({
        "type": "object",
        "properties": { "table": { "type": "string", "description": "The table to export" } },
    }));

    let question = InputRequest::form(
        "Deploy to which environment?",
        json!({
            "type": "object",
            "properties": {
                "environment": {
                    "type": "string",
                    "title": "Environment",
                    "enum": ["staging", "production"],
                },
                "replicas": {
                    "type": "integer",
                    "title": "Replicas",
                    "minimum": 1,
                    "default": 2,
                },
                "note": { "type": "string", "title": "Release note" },
            },
            "required": ["environment", "replicas"],
        }),
    );
    let deploy = ScriptedTool::task(
        "deploy",
        TaskScript::new()
            .poll_interval(ms(200))
            .status_message("building the release")
            .working(ms(600), "release built")
            .input(ms(200), [("target".to_owned(), question)].into())
            .working(ms(0), "rolling out")
            .working(ms(800), "checking health")
            .complete_with_inputs(ms(600)),
    )
    .description("Build and roll out a release; asks where to deploy it")
    .input_schema(json!({
        "type": "object",
        "properties": {
            "version": { "type": "string" },
            "dry_run": { "type": "boolean" },
        },
    }));

    let index = ScriptedTool::task("index", {
        let mut script = TaskScript::new()
            .poll_interval(ms(250))
            .status_message("starting")
            .cancel_delay(ms(300));
        for n in 1..=120 {
            script = script.working(ms(1000), format!("indexed {n} of 120 files"));
        }
        script.complete(ms(1000), CallToolResult::text("indexed 120 files"))
    })
    .description("Index 120 files, one a second (two minutes: try Ctrl-C)")
    .input_schema(json!({
        "type": "object",
        "properties": { "path": { "type": "string" } },
    }));

    let archive = ScriptedTool::task("archive", {
        let mut script = TaskScript::new()
            .poll_interval(ms(250))
            .status_message("starting")
            .ignore_cancel();
        for n in 1..=60 {
            script = script.working(ms(1000), format!("archived {n} of 60 months"));
        }
        script.complete(ms(1000), CallToolResult::text("archived 60 months"))
    })
    .description("Archive five years of records (a minute; it cannot be cancelled)");

    let migrate = ScriptedTool::task(
        "migrate",
        TaskScript::new()
            .poll_interval(ms(200))
            .status_message("locking tables")
            .working(ms(500), "applying migration 3 of 7")
            .fail(
                ms(500),
                RpcError::new(-32000, "migration 4 of 7 failed: column \"email\" exists"),
            ),
    )
    .description("Apply database migrations (fails on the fourth)");

    let hello =
        ScriptedTool::immediate("hello", CallToolResult::text("hello from the demo server"))
            .description("Answer at once, without a task");

    vec![
        export,
        deploy,
        index,
        archive,
        migrate,
        hello,
        job(),
        ask(),
        long(),
    ]
}

/// A 1x1 PNG, the demo's one binary resource.
const LOGO: [u8; 69] = [
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 2, 0,
    0, 0, 144, 119, 83, 222, 0, 0, 0, 12, 73, 68, 65, 84, 120, 156, 99, 248, 63, 147, 1, 0, 4, 51,
    1, 153, 220, 31, 132, 141, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

/// The demo's resources, resource template, prompt and completions, for
/// `mcp-tasks resources`, `read`, `templates`, `prompts`, `prompt` and
/// `complete`.
fn catalog(server: TestServer) -> TestServer {
    const README: &str = "demo://readme";
    const ORDERS: &str = "demo://tables/orders/summary";
    const LOGO_URI: &str = "demo://logo.png";
    const TABLES: &str = "demo://tables/{table}/summary";
    let readme = "# The demo server\n\nTools that become tasks: export, deploy, index, archive, \
                  migrate.\nTry `mcp-tasks call export -- mcp-tasks-demo`.\n";
    let orders = json!({ "table": "orders", "rows": 1204, "columns": ["id", "customer", "total"] });
    let mut readme_entry = Resource::new(README, "readme");
    readme_entry.title = Some("About this server".into());
    readme_entry.description = Some("What the demo server offers, in Markdown".into());
    readme_entry.mime_type = Some("text/markdown".into());
    readme_entry.size = Some(readme.len() as u64);
    let mut orders_entry = Resource::new(ORDERS, "orders-summary");
    orders_entry.description = Some("The orders table: rows and columns".into());
    orders_entry.mime_type = Some("application/json".into());
    let mut logo_entry = Resource::new(LOGO_URI, "logo");
    logo_entry.description = Some("The demo's logo, one pixel".into());
    logo_entry.mime_type = Some("image/png".into());
    logo_entry.size = Some(LOGO.len() as u64);
    let mut tables = ResourceTemplate::new(TABLES, "table-summary");
    tables.description = Some("A table's rows and columns".into());
    tables.mime_type = Some("application/json".into());

    let mut file = PromptArgument::new("file", true);
    file.description = Some("The file to review".into());
    let mut focus = PromptArgument::new("focus", false);
    focus.description = Some("What to look at first: security, speed or style".into());
    let mut review = Prompt::new("review").argument(file).argument(focus);
    review.description = Some("Ask for a review of one file, with a focus".into());
    let mut rendered = GetPromptResult::new([
        PromptMessage::text(
            Role::User,
            "Please review {file}, looking first at {focus}.",
        ),
        PromptMessage::text(
            Role::Assistant,
            "I will read {file} and start with {focus}.",
        ),
    ]);
    rendered.description = Some("A review request".into());

    server
        .resource(
            readme_entry,
            ResourceContents::text(README, readme).with_mime_type("text/markdown"),
        )
        .resource(
            orders_entry,
            ResourceContents::text(ORDERS, orders.to_string()).with_mime_type("application/json"),
        )
        .resource(
            logo_entry,
            ResourceContents::blob(LOGO_URI, &LOGO).with_mime_type("image/png"),
        )
        .resource_template(tables)
        .prompt(review, rendered)
        .completion(
            CompletionRef::prompt("review"),
            "focus",
            Completion::new(["security", "speed", "style"]),
        )
        .completion(
            CompletionRef::prompt("review"),
            "file",
            Completion::new(["src/lib.rs", "src/main.rs", "README.md"]),
        )
        .completion(
            CompletionRef::resource_template(TABLES),
            "table",
            Completion::new(["orders", "order_items", "customers"]),
        )
}

/// A quick task whose result is its arguments, so that each outcome can
/// be matched to its call.
fn job() -> ScriptedTool {
    ScriptedTool::task_from_arguments("job", |arguments| {
        let length = arguments
            .get("ms")
            .and_then(Value::as_u64)
            .unwrap_or(JOB_MS);
        TaskScript::new()
            .poll_interval(ms(100))
            .status_message("working")
            .complete(
                ms(length),
                CallToolResult::text(format!("done: {arguments}"))
                    .with_structured(arguments.clone()),
            )
    })
    .description("Work `ms` milliseconds (default 300), then return the arguments")
    .input_schema(json!({
        "type": "object",
        "properties": {
            "ms": { "type": "integer", "minimum": 0, "description": "How long to work" },
        },
    }))
}

/// A task that asks one question (key `answer`, its message naming the
/// arguments as `key=value`), then returns the answer.
fn ask() -> ScriptedTool {
    ScriptedTool::task_from_arguments("ask", |arguments| {
        let question = InputRequest::form(
            match pairs(arguments) {
                pairs if pairs.is_empty() => "Your answer?".to_owned(),
                pairs => format!("Your answer for {pairs}?"),
            },
            json!({
                "type": "object",
                "properties": { "answer": { "type": "string", "title": "Answer" } },
                "required": ["answer"],
            }),
        );
        TaskScript::new()
            .poll_interval(ms(100))
            .status_message("about to ask")
            .input(ms(100), [("answer".to_owned(), question)].into())
            .complete_with_inputs(ms(100))
    })
    .description("Ask one question, then return the answer")
}

/// `arguments` as the command line gives them: `key=value` pairs, a
/// string without its quotes; empty for none.
fn pairs(arguments: &Value) -> String {
    let Some(object) = arguments.as_object() else {
        return String::new();
    };
    object
        .iter()
        .map(|(key, value)| match value {
            Value::String(text) => format!("{key}={text}"),
            other => format!("{key}={other}"),
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// A task that works ten minutes: one to cancel.
fn long() -> ScriptedTool {
    ScriptedTool::task(
        "long",
        TaskScript::new()
            .poll_interval(ms(200))
            .status_message("working")
            .complete(
                Duration::from_secs(600),
                CallToolResult::text("worked ten minutes"),
            ),
    )
    .description("Work ten minutes (cancel it)")
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let result = match args.as_slice() {
        [] => server().serve_stdio().await.map_err(|e| e.to_string()),
        [flag, path] if flag == "--shared" => relay(Path::new(path)).await,
        [flag, path] if flag == "--serve-socket" => serve_socket(Path::new(path)).await,
        [flag, addr, options @ ..] if flag == "--http" => serve_http(addr, options).await,
        [flag] if flag == "--help" || flag == "-h" => {
            println!("{}", help());
            Ok(())
        }
        _ => Err(USAGE.to_owned()),
    };
    if let Err(e) = result {
        eprintln!("mcp-tasks-demo: {e}");
        std::process::exit(2);
    }
}

/// Serves Streamable HTTP on `addr` (a loopback address and port);
/// `options` may hold `--read-delay MS`.
async fn serve_http(addr: &str, options: &[String]) -> Result<(), String> {
    let addr: SocketAddr = addr
        .parse()
        .map_err(|_| format!("--http wants an address and a port (127.0.0.1:0), not {addr:?}"))?;
    let delay = match options {
        [] => Duration::ZERO,
        [flag, n] if flag == "--read-delay" => ms(n
            .parse()
            .map_err(|_| format!("--read-delay wants milliseconds, not {n:?}"))?),
        _ => return Err(USAGE.to_owned()),
    };
    // Listen streams need SSE replies, which this front does not write:
    // clients are told the method does not exist, and poll.
    // Many clients for long: the counts are kept, not every request.
    let server = server()
        .listen_supported(false)
        .read_delay(delay)
        .keep_requests(false);
    http::serve(server, addr).await
}

/// Serves every connection to the socket at `path` with one server, so
/// that tasks outlive the connection that made them.
async fn serve_socket(path: &Path) -> Result<(), String> {
    // A socket file left by a server that is gone would refuse the bind.
    if UnixStream::connect(path).await.is_err() {
        let _ = std::fs::remove_file(path);
    }
    let listener = UnixListener::bind(path)
        .map_err(|e| format!("cannot listen on {}: {e}", path.display()))?;
    let server = server();
    loop {
        let accepted = tokio::time::timeout(IDLE, listener.accept()).await;
        let Ok(Ok((stream, _))) = accepted else { break };
        let server = server.clone();
        tokio::spawn(async move {
            let (read, write) = stream.into_split();
            let _ = server.serve(LineTransport::new(read, write)).await;
        });
    }
    let _ = std::fs::remove_file(path);
    Ok(())
}

/// Connects stdin and stdout to the shared server at `path`, starting it
/// first when none listens there.
async fn relay(path: &Path) -> Result<(), String> {
    let stream = match UnixStream::connect(path).await {
        Ok(stream) => stream,
        Err(_) => {
            start_shared(path.to_path_buf())?;
            connect_soon(path).await?
        }
    };
    let (mut from_server, mut to_server) = stream.into_split();
    let up = async {
        let _ = tokio::io::copy(&mut tokio::io::stdin(), &mut to_server).await;
    };
    let down = async {
        let _ = tokio::io::copy(&mut from_server, &mut tokio::io::stdout()).await;
    };
    // Either side closing ends the relay.
    tokio::select! {
        () = up => {}
        () = down => {}
    }
    Ok(())
}

fn start_shared(path: PathBuf) -> Result<(), String> {
    use std::os::unix::process::CommandExt;
    use std::process::{Command, Stdio};
    let exe = std::env::current_exe().map_err(|e| format!("cannot find this program: {e}"))?;
    Command::new(exe)
        .arg("--serve-socket")
        .arg(path)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        // Its own process group: a Ctrl-C in the terminal is not for it.
        .process_group(0)
        .spawn()
        .map(drop)
        .map_err(|e| format!("cannot start the shared server: {e}"))
}

async fn connect_soon(path: &Path) -> Result<UnixStream, String> {
    let mut last = None;
    for _ in 0..50 {
        match UnixStream::connect(path).await {
            Ok(stream) => return Ok(stream),
            Err(e) => last = Some(e),
        }
        tokio::time::sleep(ms(100)).await;
    }
    Err(format!(
        "the shared server at {} does not answer: {}",
        path.display(),
        last.map(|e| e.to_string()).unwrap_or_default()
    ))
}
