//! Starting peers and connecting clients to them.

use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{ElicitResult, TaskId, TaskStatus};
use mcp_tasks::transport::{Stderr, Stdio};
use mcp_tasks::{Client, Error, Finished, Pending, Task, TaskState};
use serde_json::{Value, json};

/// The bound on one scenario: none may hang the suite.
pub const SCENARIO_LIMIT: Duration = Duration::from_secs(30);

/// Runs a scenario, failing it if it has not ended within [`SCENARIO_LIMIT`].
pub async fn bounded(scenario: impl Future<Output = ()>) {
    if tokio::time::timeout(SCENARIO_LIMIT, scenario)
        .await
        .is_err()
    {
        panic!("the scenario did not end within {SCENARIO_LIMIT:?}");
    }
}

/// How a client reaches a peer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transport {
    /// The peer is a child process spoken to over stdin/stdout; each client
    /// starts its own.
    Stdio,
    /// The peer serves Streamable HTTP on a loopback port; every client of
    /// a [`Peer`] talks to the same server, which answers with SSE streams,
    /// or with plain JSON when `json` is set.
    Http { json: bool },
}

/// Which server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sdk {
    /// `src/bin/rmcp-peer.rs`.
    Rmcp,
    /// `src/bin/neva-peer.rs`.
    Neva,
    /// `ts-peer/server.mjs`, run by `node`.
    Ts,
    /// `legacy-peer/server.mjs` (TypeScript SDK 1.32, 2025-11-25 tasks), run
    /// by `node`, with these options.
    Legacy(LegacyOptions),
}

/// The legacy peer's command-line options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LegacyOptions {
    /// `--ttl`: the server keeps each task this long from its creation,
    /// then forgets it (default 60 s).
    pub ttl_ms: Option<u64>,
    /// `--session-tasks`: over HTTP, a task is seen only by the session
    /// that created it.
    pub session_tasks: bool,
}

impl LegacyOptions {
    /// The arguments, with `--log FILE` when `LEGACY_PEER_LOG` names a file
    /// (every JSON-RPC message the peer receives and sends is appended to it).
    fn args(self) -> Vec<String> {
        let mut args = Vec::new();
        if let Some(ttl) = self.ttl_ms {
            args.extend(["--ttl".to_owned(), ttl.to_string()]);
        }
        if self.session_tasks {
            args.push("--session-tasks".to_owned());
        }
        if let Some(log) = std::env::var_os("LEGACY_PEER_LOG") {
            args.push("--log".to_owned());
            args.push(log.to_string_lossy().into_owned());
        }
        args
    }
}

/// The legacy peer with its defaults.
pub const LEGACY: Sdk = Sdk::Legacy(LegacyOptions {
    ttl_ms: None,
    session_tasks: false,
});

/// The TypeScript peer's directory.
const TS_PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/ts-peer");

/// The TypeScript peer's script, once its SDK is installed.
fn ts_peer() -> PathBuf {
    let sdk = Path::new(TS_PEER).join("node_modules/@modelcontextprotocol/server");
    assert!(
        sdk.is_dir(),
        "the TypeScript peer is not installed: run `npm ci --prefix interop/ts-peer` (Node 20 or later)"
    );
    Path::new(TS_PEER).join("server.mjs")
}

/// The legacy peer's directory.
const LEGACY_PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/legacy-peer");

/// The legacy peer's script, once its SDK is installed.
fn legacy_peer() -> PathBuf {
    let sdk = Path::new(LEGACY_PEER).join("node_modules/@modelcontextprotocol/sdk");
    assert!(
        sdk.is_dir(),
        "the legacy peer is not installed: run `npm ci --prefix interop/legacy-peer` (Node 20 or later)"
    );
    Path::new(LEGACY_PEER).join("server.mjs")
}

impl Sdk {
    /// The command that serves this peer over stdio.
    fn stdio(self) -> Stdio {
        let command = match self {
            Sdk::Rmcp => Stdio::command(env!("CARGO_BIN_EXE_rmcp-peer")),
            Sdk::Neva => Stdio::command(env!("CARGO_BIN_EXE_neva-peer")),
            Sdk::Ts => Stdio::command("node").arg(ts_peer()),
            Sdk::Legacy(options) => Stdio::command("node")
                .arg(legacy_peer())
                .args(options.args()),
        };
        command.stderr(Stderr::Null)
    }
}

/// A peer server, and the way to connect clients to it.
#[derive(Debug)]
pub struct Peer {
    sdk: Sdk,
    transport: Transport,
    /// The HTTP server all clients share (HTTP only).
    http: Option<HttpServer>,
}

impl Peer {
    /// Prepares the peer (over stdio, each client starts its own process).
    pub async fn start(sdk: Sdk, transport: Transport) -> Peer {
        let http = match transport {
            Transport::Stdio => None,
            Transport::Http { json } => Some(HttpServer::start(sdk, json).await),
        };
        Peer {
            sdk,
            transport,
            http,
        }
    }

    /// Whether every client of this peer talks to the same server process
    /// (so a task outlives the client that created it).
    pub fn shared(&self) -> bool {
        match self.transport {
            Transport::Stdio => false,
            Transport::Http { .. } => true,
        }
    }

    /// A client with no input handlers.
    pub async fn client(&self) -> Client {
        self.client_with(InputHandlers::new()).await
    }

    /// A client with these input handlers.
    pub async fn client_with(&self, handlers: InputHandlers) -> Client {
        let builder = Client::builder()
            .client_info("mcp-tasks-interop", env!("CARGO_PKG_VERSION"))
            .request_timeout(Duration::from_secs(10))
            .input_handlers(handlers);
        let connected = match self.transport {
            Transport::Stdio => builder.connect(self.sdk.stdio()).await,
            Transport::Http { .. } => {
                let url = &self.http.as_ref().expect("started").url;
                builder.connect(mcp_tasks::transport::Http::new(url)).await
            }
        };
        connected.expect("connect to the peer")
    }
}

/// A peer serving Streamable HTTP on a free loopback port, stopped when
/// dropped.
#[derive(Debug)]
pub struct HttpServer {
    _child: tokio::process::Child,
    /// The endpoint, `http://127.0.0.1:<port>/mcp`.
    pub url: String,
}

impl HttpServer {
    /// Starts `sdk`'s peer on `127.0.0.1:0`. The rmcp peer answers with SSE
    /// streams, or with plain JSON when `json` is set; the TypeScript SDK
    /// chooses for itself.
    pub async fn start(sdk: Sdk, json: bool) -> HttpServer {
        use tokio::io::{AsyncBufReadExt, BufReader};
        let mut command = match sdk {
            Sdk::Rmcp => {
                let mut c = tokio::process::Command::new(env!("CARGO_BIN_EXE_rmcp-peer"));
                c.args(["--http", "127.0.0.1:0"]);
                if json {
                    c.arg("--json");
                }
                c
            }
            Sdk::Ts => {
                let mut c = tokio::process::Command::new("node");
                c.arg(ts_peer()).args(["--http", "127.0.0.1:0"]);
                c
            }
            Sdk::Legacy(options) => {
                let mut c = tokio::process::Command::new("node");
                c.arg(legacy_peer())
                    .args(["--http", "127.0.0.1:0"])
                    .args(options.args());
                c
            }
            Sdk::Neva => panic!("the neva peer serves stdio only"),
        };
        let mut child = command
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("start the HTTP peer");
        let stdout = child.stdout.take().expect("piped");
        let mut url = String::new();
        tokio::time::timeout(
            Duration::from_secs(10),
            BufReader::new(stdout).read_line(&mut url),
        )
        .await
        .expect("the peer prints its endpoint")
        .expect("read the endpoint");
        let url = url.trim().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
        HttpServer { _child: child, url }
    }
}

/// A form handler that accepts every form, filling its first required
/// field (`approved: true`, or a text), and logs each request's message.
pub fn answering(log: Arc<Mutex<Vec<String>>>) -> InputHandlers {
    InputHandlers::new().elicitation_form(move |req| {
        let log = log.clone();
        async move {
            log.lock().unwrap().push(req.message.clone());
            let field = req.requested_schema["required"][0]
                .as_str()
                .unwrap_or_default()
                .to_owned();
            let value = match req.requested_schema["properties"][&field]["type"].as_str() {
                Some("boolean") => json!(true),
                _ => json!("checked by interop"),
            };
            Ok(ElicitResult::accept(json!({ field: value })))
        }
    })
}

/// A form handler that declines every form.
pub fn declining() -> InputHandlers {
    InputHandlers::new().elicitation_form(|_req| async { Ok(ElicitResult::decline()) })
}

/// The text of a finished state's completed result.
pub fn finished_text(state: TaskState) -> String {
    text(&state.try_into_finished().expect("finished"))
}

/// The text of a finished task's completed result.
pub fn text(finished: &Task<Finished>) -> String {
    finished
        .outcome()
        .result()
        .expect("completed")
        .joined_text()
}

/// The text of a call that became a task, once the task has finished.
pub async fn task_text(state: TaskState) -> String {
    assert!(state.id().is_some(), "a task: {state:?}");
    text(&state.await.expect("finish"))
}

/// Calls `tool` as a task and waits for its end.
pub async fn finish(client: &Client, tool: &str, arguments: Value) -> Task<Finished> {
    client
        .task()
        .call_tool(tool, arguments)
        .await
        .expect("tools/call")
        .await
        .expect("finish")
}

/// Calls `tool` as a task that is still running when the call returns.
pub async fn start(client: &Client, tool: &str, arguments: Value) -> Task<Pending> {
    client
        .task()
        .call_tool(tool, arguments)
        .await
        .expect("tools/call")
        .try_into_pending()
        .expect("a running task")
}

/// Runs `tool` once per set of arguments, all at once on clones of
/// `client`; the texts of the results, in the order of `arguments`.
pub async fn finish_concurrently(
    client: &Client,
    tool: &'static str,
    arguments: impl IntoIterator<Item = Value>,
) -> Vec<String> {
    let joins: Vec<_> = arguments
        .into_iter()
        .map(|arguments| {
            let client = client.clone();
            tokio::spawn(async move { text(&finish(&client, tool, arguments).await) })
        })
        .collect();
    let mut texts = Vec::new();
    for join in joins {
        texts.push(join.await.expect("the task's caller"));
    }
    texts
}

/// The status `tasks/get` reads once it is terminal (at most 50 reads,
/// 50 ms apart; the last status read if it never is).
pub async fn settled_status(client: &Client, id: &TaskId) -> TaskStatus {
    let mut status = TaskStatus::Working;
    for _ in 0..50 {
        status = client.get_task(id).await.expect("tasks/get").status();
        if status.is_terminal() {
            break;
        }
        tokio::time::sleep(ms(50)).await;
    }
    status
}

/// The names of the peer's tools, sorted.
pub async fn tool_names(client: &Client) -> Vec<String> {
    let mut names: Vec<_> = client
        .list_tools()
        .await
        .expect("tools/list")
        .into_iter()
        .map(|t| t.name)
        .collect();
    names.sort();
    names
}

/// `_meta` that declares no client capability, the Tasks extension
/// included.
pub fn no_capabilities() -> Value {
    json!({ "io.modelcontextprotocol/clientCapabilities": {} })
}

/// Calls `tool` and reads a task, both without declaring the Tasks
/// extension: each must be refused as a missing capability (`-32021`).
/// The error of the call.
pub async fn refused_without_extension(client: &Client, tool: &str) -> Error {
    let no_caps = no_capabilities();
    let err = client
        .request(
            "tools/call",
            json!({ "name": tool, "arguments": {}, "_meta": no_caps }),
        )
        .await
        .unwrap_err();
    assert!(err.is_missing_capability(), "{err}");
    let read = client
        .request("tasks/get", json!({ "taskId": "x", "_meta": no_caps }))
        .await
        .unwrap_err();
    assert!(read.is_missing_capability(), "{read}");
    err
}

/// Milliseconds.
pub fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}
