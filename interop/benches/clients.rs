//! CPU per task lifecycle of `mcp-tasks` against the clients people use
//! instead, each against the same server in the same run, on both eras.
//!
//! ```text
//! cargo bench -p mcp-tasks-interop --bench clients -- --cpu [N] [ROUNDS=5] [SCENARIO…]
//! ```
//!
//! Scenarios (all by default):
//!
//! | scenario | server | lifecycle | clients |
//! |---|---|---|---|
//! | `legacy-stdio` | `legacy-peer/server.mjs --bench` (TypeScript SDK 1.32), one per client | 2025-11-25: `tools/call` with `task`, 3 × `tasks/get`, `tasks/result` | `mcp_tasks`, `ts_sdk` |
//! | `legacy-http` | the same over Streamable HTTP, one process for all | the same | `mcp_tasks`, `ts_sdk` |
//! | `modern-http` | `rmcp-peer --http --bench` (rmcp 3.11, SSE replies), one for all | 2026-07-28: `tools/call`, 3 × `tasks/get` (no `pollIntervalMs`) | `mcp_tasks`, `rmcp` |
//! | `modern-http-paced` | the same | the same with `pollIntervalMs: 10` (`bench {"poll_ms": 10}`) | `mcp_tasks`, `rmcp`, `ext_tasks` |
//!
//! The clients:
//!
//! - `mcp_tasks`: `client.task().poll_interval(0).min_poll_interval(0)
//!   .call_tool("bench", args).await?.await?`, then the typed result, on a
//!   current-thread tokio runtime in this process.
//! - `ts_sdk`: the TypeScript SDK 1.32 client, `node-clients/ts-sdk-legacy.mjs`
//!   (its wait helper `experimental.tasks.callToolStream`), its own process.
//! - `rmcp`: rmcp 3.11's client over its Streamable HTTP transport (reqwest),
//!   2026-07-28 mode (`ClientLifecycleMode::Discover`), driving the task the
//!   way its task example does (`call_tool_once`, `get_task` until terminal,
//!   sleeping `pollIntervalMs` when there is one), in this process.
//! - `ext_tasks`: `@modelcontextprotocol/ext-tasks` 0.2.2 on the TypeScript
//!   SDK 2.4 client, `node-clients/ext-tasks.mjs`, its own process. It polls
//!   at the server's hint floored at 10 ms (1 s without one), hence the paced
//!   scenario.
//!
//! Before measuring, each client runs a lifecycle (some do one-time work on
//! their first call), then one and two lifecycles between
//! reads of the server's `stats` tool, and the difference of the two windows
//! (one lifecycle, the `stats` calls cancelled) must be exactly the
//! lifecycle's requests: on the legacy peer 1 `tools/call`, 3 `tasks/get`, 1
//! `tasks/result` and no other JSON-RPC request; on the rmcp peer 1 bench
//! call, 3 reads and 4 HTTP requests in all.
//!
//! Then each client warms up with N/10 lifecycles (at least 200), and ROUNDS rounds of N
//! lifecycles per client follow, the clients alternating within each round
//! so that changes in the machine's load touch all alike. Per round and
//! client: the client process's CPU from the kernel (the sum of its threads'
//! `/proc/<pid>/task/*/schedstat` run time, in ns; and `utime`/`stime` from
//! `/proc/<pid>/stat`, in 10 ms ticks, for the user/system split), a Node
//! client's own `process.cpuUsage()` besides, the server's CPU (schedstat
//! again) and the wall time. Medians per lifecycle, and per-round ratios.
//! `BENCH_CLIENTS=mcp_tasks` (a comma-separated list) runs only those
//! clients, to trace or profile one.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio as StdStdio};
use std::time::{Duration, Instant};

use mcp_tasks::transport::{Http, Stderr, Stdio};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::RunningService;
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient};
use serde_json::{Value, json};
use support::{
    TICKS_PER_SECOND, children, mcp_tasks_lifecycle, median, process_ns, process_ticks,
    rmcp_lifecycle, runtime,
};

mod support;

const RMCP_PEER: &str = env!("CARGO_BIN_EXE_rmcp-peer");
const LEGACY_PEER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/legacy-peer/server.mjs");
const NODE_CLIENTS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/node-clients");

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scenario {
    LegacyStdio,
    LegacyHttp,
    ModernHttp,
    ModernHttpPaced,
}

impl Scenario {
    const ALL: [Scenario; 4] = [
        Scenario::LegacyStdio,
        Scenario::LegacyHttp,
        Scenario::ModernHttp,
        Scenario::ModernHttpPaced,
    ];

    fn name(self) -> &'static str {
        match self {
            Scenario::LegacyStdio => "legacy-stdio",
            Scenario::LegacyHttp => "legacy-http",
            Scenario::ModernHttp => "modern-http",
            Scenario::ModernHttpPaced => "modern-http-paced",
        }
    }

    fn clients(self) -> &'static [Kind] {
        match self {
            Scenario::LegacyStdio | Scenario::LegacyHttp => &[Kind::McpTasks, Kind::TsSdk],
            Scenario::ModernHttp => &[Kind::McpTasks, Kind::Rmcp],
            Scenario::ModernHttpPaced => &[Kind::McpTasks, Kind::Rmcp, Kind::ExtTasks],
        }
    }

    fn legacy(self) -> bool {
        matches!(self, Scenario::LegacyStdio | Scenario::LegacyHttp)
    }

    /// The `bench` tool's arguments.
    fn arguments(self) -> Value {
        match self {
            Scenario::ModernHttpPaced => json!({ "poll_ms": 10 }),
            _ => json!({}),
        }
    }

    /// Lifecycles per round when none is given: a paced lifecycle takes at
    /// least 30 ms of wall time.
    fn default_n(self) -> u32 {
        match self {
            Scenario::ModernHttpPaced => 300,
            _ => 2_000,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    McpTasks,
    TsSdk,
    Rmcp,
    ExtTasks,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::McpTasks => "mcp_tasks",
            Kind::TsSdk => "ts_sdk",
            Kind::Rmcp => "rmcp",
            Kind::ExtTasks => "ext_tasks",
        }
    }
}

/// A server of one scenario's kind, over HTTP, killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start(scenario: Scenario) -> HttpServer {
        let mut command = if scenario.legacy() {
            let mut c = Command::new("node");
            c.arg(LEGACY_PEER);
            c
        } else {
            Command::new(RMCP_PEER)
        };
        let mut child = command
            .args(["--http", "127.0.0.1:0", "--bench"])
            .stdout(StdStdio::piped())
            .stderr(StdStdio::null())
            .spawn()
            .expect("start the HTTP server");
        let mut url = String::new();
        BufReader::new(child.stdout.take().expect("piped"))
            .read_line(&mut url)
            .expect("the server prints its endpoint");
        let url = url.trim().to_owned();
        assert!(url.starts_with("http://127.0.0.1:"), "{url:?}");
        HttpServer { child, url }
    }

    fn pid(&self) -> String {
        self.child.id().to_string()
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Node client: its script runs the lifecycles on command. Driven from
/// the runtime, so that the Rust clients' connections stay serviced while
/// it runs (a parked runtime would not see a server close an idle
/// keep-alive connection, and its next request would go out on it).
struct NodeClient {
    child: tokio::process::Child,
    stdin: tokio::process::ChildStdin,
    stdout: tokio::io::BufReader<tokio::process::ChildStdout>,
}

impl NodeClient {
    fn start(script: &str, args: &[&str]) -> NodeClient {
        let path = format!("{NODE_CLIENTS}/{script}");
        assert!(
            std::path::Path::new(NODE_CLIENTS)
                .join("node_modules/@modelcontextprotocol")
                .is_dir(),
            "the Node clients are not installed: run `npm ci --prefix interop/node-clients`"
        );
        // Its stderr goes to a file: the SDK 1.32 HTTP transport warns
        // about its abort listeners on every request once they pass 1,500.
        let log = std::env::temp_dir().join(format!("clients-bench-{script}.stderr"));
        let stderr = std::fs::File::create(&log).expect("the Node client's stderr file");
        let mut child = tokio::process::Command::new("node")
            .arg(path)
            .args(args)
            .stdin(StdStdio::piped())
            .stdout(StdStdio::piped())
            .stderr(stderr)
            .kill_on_drop(true)
            .spawn()
            .expect("start the Node client");
        let stdin = child.stdin.take().expect("piped");
        let stdout = tokio::io::BufReader::new(child.stdout.take().expect("piped"));
        NodeClient {
            child,
            stdin,
            stdout,
        }
    }

    fn pid(&self) -> String {
        self.child.id().expect("running").to_string()
    }

    /// Sends one command, returns its answer.
    async fn ask(&mut self, command: &str) -> Value {
        use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
        let line = format!("{command}\n");
        self.stdin
            .write_all(line.as_bytes())
            .await
            .expect("write to the Node client");
        self.stdin.flush().await.expect("flush");
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .await
            .expect("read the Node client");
        let answer: Value = serde_json::from_str(&line).unwrap_or_else(|e| {
            panic!(
                "the Node client answered {line:?}: {e} (its stderr is in the temporary directory)"
            )
        });
        assert!(answer.get("error").is_none(), "{answer}");
        answer
    }
}

// Made once per scenario and client: no box on any client's path.
#[allow(clippy::large_enum_variant)]
enum Driver {
    McpTasks(mcp_tasks::Client),
    Rmcp(RunningService<RoleClient, ClientConfig>),
    Node(NodeClient),
}

struct Client {
    kind: Kind,
    driver: Driver,
    /// The client's process (`self` for the clients in this one).
    pid: String,
    /// Its server's process.
    server: String,
    samples: Vec<Sample>,
}

impl Client {
    async fn start(kind: Kind, scenario: Scenario, server: Option<&HttpServer>) -> Client {
        let url = server.map(|s| s.url.as_str());
        let before = children("self");
        let (driver, pid) = match kind {
            Kind::McpTasks => {
                let builder = mcp_tasks::Client::builder().client_info("mcp-tasks-bench", "0.0.0");
                let client = match url {
                    Some(url) => builder.connect(Http::new(url)).await,
                    None => {
                        let peer = Stdio::command("node")
                            .arg(LEGACY_PEER)
                            .arg("--bench")
                            .stderr(Stderr::Null);
                        builder.connect(peer).await
                    }
                };
                (
                    Driver::McpTasks(client.expect("connect mcp-tasks")),
                    "self".to_owned(),
                )
            }
            Kind::Rmcp => {
                let transport = StreamableHttpClientTransport::from_uri(url.expect("HTTP only"));
                let config = ClientConfig::new(
                    ClientCapabilities::builder().enable_tasks().build(),
                    Implementation::new("rmcp-bench", "0.0.0"),
                );
                let modern = ClientLifecycleMode::Discover {
                    preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                };
                let client = config
                    .serve_with_lifecycle(transport, modern)
                    .await
                    .expect("connect rmcp's client");
                (Driver::Rmcp(client), "self".to_owned())
            }
            Kind::TsSdk => {
                let node = match url {
                    Some(url) => NodeClient::start("ts-sdk-legacy.mjs", &["--http", url]),
                    None => NodeClient::start("ts-sdk-legacy.mjs", &["--stdio"]),
                };
                let pid = node.pid();
                (Driver::Node(node), pid)
            }
            Kind::ExtTasks => {
                let arguments = scenario.arguments().to_string();
                let node = NodeClient::start(
                    "ext-tasks.mjs",
                    &["--http", url.expect("HTTP only"), "--arguments", &arguments],
                );
                let pid = node.pid();
                (Driver::Node(node), pid)
            }
        };
        let server = match server {
            Some(s) => s.pid(),
            None => {
                // Over stdio the server is the client's child: this
                // process's, or the Node client's (once it has connected).
                let mut found = None;
                for _ in 0..200 {
                    found = if pid == "self" {
                        children("self").difference(&before).next().cloned()
                    } else {
                        children(&pid).into_iter().next()
                    };
                    if found.is_some() {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
                found.expect("the server's pid")
            }
        };
        Client {
            kind,
            driver,
            pid,
            server,
            samples: Vec::new(),
        }
    }

    /// Runs `n` lifecycles; a Node client answers with its own measurement.
    fn run(&mut self, rt: &tokio::runtime::Runtime, scenario: Scenario, n: u32) -> Option<Value> {
        let arguments = scenario.arguments();
        match &mut self.driver {
            Driver::McpTasks(client) => {
                rt.block_on(async {
                    for _ in 0..n {
                        mcp_tasks_lifecycle(client, &arguments).await;
                    }
                });
                None
            }
            Driver::Rmcp(client) => {
                let Value::Object(arguments) = arguments else {
                    unreachable!("arguments are an object")
                };
                rt.block_on(async {
                    for _ in 0..n {
                        rmcp_lifecycle(client, Some(&arguments)).await;
                    }
                });
                None
            }
            Driver::Node(node) => Some(rt.block_on(node.ask(&format!("run {n}")))),
        }
    }

    /// The server's `stats` before, between and after one and two
    /// lifecycles (after a first one, which may do one-time work: the
    /// ext-tasks session sends one more request on its first call).
    fn check(&mut self, rt: &tokio::runtime::Runtime, scenario: Scenario) -> [Value; 3] {
        let arguments = scenario.arguments();
        match &mut self.driver {
            Driver::Node(node) => {
                let answer = rt.block_on(node.ask("check"));
                let stats = answer["stats"].as_array().expect("stats").clone();
                [stats[0].clone(), stats[1].clone(), stats[2].clone()]
            }
            Driver::McpTasks(client) => rt.block_on(async {
                let stats = async || {
                    client
                        .call_tool("stats", json!({}))
                        .await
                        .expect("stats")
                        .structured_content
                        .expect("structured stats")
                };
                mcp_tasks_lifecycle(client, &arguments).await;
                let s0 = stats().await;
                mcp_tasks_lifecycle(client, &arguments).await;
                let s1 = stats().await;
                mcp_tasks_lifecycle(client, &arguments).await;
                mcp_tasks_lifecycle(client, &arguments).await;
                [s0, s1, stats().await]
            }),
            Driver::Rmcp(client) => rt.block_on(async {
                let Value::Object(arguments) = arguments else {
                    unreachable!("arguments are an object")
                };
                let stats = async || {
                    client
                        .call_tool(CallToolRequestParams::new("stats"))
                        .await
                        .expect("stats")
                        .structured_content
                        .expect("structured stats")
                };
                rmcp_lifecycle(client, Some(&arguments)).await;
                let s0 = stats().await;
                rmcp_lifecycle(client, Some(&arguments)).await;
                let s1 = stats().await;
                rmcp_lifecycle(client, Some(&arguments)).await;
                rmcp_lifecycle(client, Some(&arguments)).await;
                [s0, s1, stats().await]
            }),
        }
    }
}

/// The numbers in a `stats` answer, nested ones as `outer.inner`.
fn counters(stats: &Value) -> BTreeMap<String, i64> {
    let mut out = BTreeMap::new();
    for (key, value) in stats.as_object().expect("stats object") {
        match value {
            Value::Number(n) => {
                out.insert(key.clone(), n.as_i64().expect("a count"));
            }
            Value::Object(inner) => {
                for (k, v) in inner {
                    if let Some(n) = v.as_i64() {
                        out.insert(format!("{key}.{k}"), n);
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn delta(a: &BTreeMap<String, i64>, b: &BTreeMap<String, i64>) -> BTreeMap<String, i64> {
    b.iter()
        .map(|(k, v)| (k.clone(), v - a.get(k).copied().unwrap_or(0)))
        .filter(|(_, v)| *v != 0)
        .collect()
}

/// Checks that one lifecycle is the scenario's requests, and returns what
/// it moved (the two-lifecycle window less the one-lifecycle window).
fn check_wire(scenario: Scenario, kind: Kind, stats: &[Value; 3]) -> BTreeMap<String, i64> {
    let [s0, s1, s2] = stats.each_ref().map(counters);
    let one = delta(&s0, &s1);
    let two = delta(&s1, &s2);
    let lifecycle = delta(&one, &two);
    let get = |m: &BTreeMap<String, i64>, k: &str| m.get(k).copied().unwrap_or(0);
    let name = kind.name();
    assert_eq!(get(&one, "benchCalls"), 1, "{name}: {one:?}");
    assert_eq!(get(&two, "benchCalls"), 2, "{name}: {two:?}");
    assert_eq!(get(&lifecycle, "benchGets"), 3, "{name}: {lifecycle:?}");
    if scenario.legacy() {
        assert_eq!(get(&lifecycle, "benchResults"), 1, "{name}: {lifecycle:?}");
        let requests: BTreeMap<&str, i64> = lifecycle
            .iter()
            .filter_map(|(k, v)| Some((k.strip_prefix("requests.")?, *v)))
            .collect();
        let expected = BTreeMap::from([("tasks/get", 3), ("tasks/result", 1), ("tools/call", 1)]);
        assert_eq!(
            requests, expected,
            "{name}: JSON-RPC requests per lifecycle"
        );
    } else {
        assert_eq!(get(&lifecycle, "gets"), 3, "{name}: {lifecycle:?}");
        assert_eq!(
            get(&lifecycle, "httpRequests"),
            4,
            "{name}: HTTP requests per lifecycle: {lifecycle:?}"
        );
    }
    lifecycle
}

struct Sample {
    user_us: f64,
    sys_us: f64,
    total_us: f64,
    /// A Node client's own `process.cpuUsage()`, user + system.
    node_us: Option<f64>,
    server_us: f64,
    wall_us: f64,
}

fn run_scenario(rt: &tokio::runtime::Runtime, scenario: Scenario, n: u32, rounds: u32) {
    println!(
        "\n## {} ({n} lifecycles per round, {rounds} rounds)\n",
        scenario.name()
    );
    let server = (scenario != Scenario::LegacyStdio).then(|| HttpServer::start(scenario));
    let mut clients = Vec::new();
    // `BENCH_CLIENTS=mcp_tasks,…` runs only those (to trace or profile one).
    let only = std::env::var("BENCH_CLIENTS").ok();
    let wanted = |kind: Kind| {
        only.as_deref()
            .is_none_or(|list| list.split(',').any(|k| k == kind.name()))
    };
    for &kind in scenario.clients().iter().filter(|k| wanted(**k)) {
        let mut client = rt.block_on(Client::start(kind, scenario, server.as_ref()));
        let stats = client.check(rt, scenario);
        let wire = check_wire(scenario, kind, &stats);
        let shown: Vec<String> = wire.iter().map(|(k, v)| format!("{k} {v}")).collect();
        println!(
            "{:<10} one lifecycle on the server: {}",
            kind.name(),
            shown.join(", ")
        );
        // Warm-up: the allocator, the caches, Node's JIT, the connections.
        client.run(rt, scenario, (n / 10).max(200));
        clients.push(client);
    }
    for _ in 0..rounds {
        for client in &mut clients {
            let (t0, c0, s0, w0) = (
                process_ticks(&client.pid),
                process_ns(&client.pid),
                process_ns(&client.server),
                Instant::now(),
            );
            let own = client.run(rt, scenario, n);
            let wall = w0.elapsed();
            let (t1, c1, s1) = (
                process_ticks(&client.pid),
                process_ns(&client.pid),
                process_ns(&client.server),
            );
            let n = f64::from(n);
            let ticks = |t: u64| t as f64 / TICKS_PER_SECOND * 1e6 / n;
            let node_us = own.map(|m| {
                let us = m["userUs"].as_f64().unwrap() + m["sysUs"].as_f64().unwrap();
                us / m["n"].as_f64().unwrap()
            });
            client.samples.push(Sample {
                user_us: ticks(t1.0 - t0.0),
                sys_us: ticks(t1.1 - t0.1),
                total_us: (c1 - c0) as f64 / 1e3 / n,
                node_us,
                server_us: (s1 - s0) as f64 / 1e3 / n,
                wall_us: wall.as_secs_f64() * 1e6 / n,
            });
        }
    }
    println!(
        "\nmedians, µs per lifecycle\n\n\
         | client | client user | client sys | client total | Node's own count | server CPU | wall |\n\
         |---|---|---|---|---|---|---|"
    );
    for client in &clients {
        let m = |f: fn(&Sample) -> f64| median(client.samples.iter().map(f).collect());
        let node = if client.samples[0].node_us.is_some() {
            format!("{:.1}", m(|s| s.node_us.unwrap()))
        } else {
            "—".to_owned()
        };
        println!(
            "| `{}` | {:.1} | {:.1} | **{:.1}** | {node} | {:.1} | {:.1} |",
            client.kind.name(),
            m(|s| s.user_us),
            m(|s| s.sys_us),
            m(|s| s.total_us),
            m(|s| s.server_us),
            m(|s| s.wall_us),
        );
    }
    println!();
    if clients.first().is_none_or(|c| c.kind != Kind::McpTasks) {
        return;
    }
    let ours = &clients[0].samples;
    for theirs in clients.iter().skip(1) {
        // Per round, so that both sides of each ratio saw the same load.
        let ratios = |f: fn(&Sample) -> f64| {
            let mut v: Vec<f64> = ours
                .iter()
                .zip(&theirs.samples)
                .map(|(a, b)| f(a) / f(b))
                .collect();
            v.sort_by(f64::total_cmp);
            v
        };
        let total = ratios(|s| s.total_us);
        let user = ratios(|s| s.user_us);
        println!(
            "client CPU, mcp_tasks / {}: {:.2} total (rounds {:.2}–{:.2}), {:.2} user only; \
             median of per-round ratios",
            theirs.kind.name(),
            median(total.clone()),
            total[0],
            total[total.len() - 1],
            median(user),
        );
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let Some(i) = args.iter().position(|a| a == "--cpu") else {
        println!(
            "usage: cargo bench -p mcp-tasks-interop --bench clients -- --cpu [N] [ROUNDS] [SCENARIO…]\n\
             scenarios: legacy-stdio legacy-http modern-http modern-http-paced (default: all)"
        );
        return;
    };
    let rest = &args[i + 1..];
    let numbers: Vec<u32> = rest.iter().map_while(|a| a.parse().ok()).collect();
    let names: Vec<&str> = rest[numbers.len()..]
        .iter()
        .map(String::as_str)
        .filter(|a| !a.starts_with("--"))
        .collect();
    let scenarios: Vec<Scenario> = if names.is_empty() {
        Scenario::ALL.to_vec()
    } else {
        names
            .iter()
            .map(|name| {
                *Scenario::ALL
                    .iter()
                    .find(|s| s.name() == *name)
                    .unwrap_or_else(|| panic!("no scenario {name:?}"))
            })
            .collect()
    };
    let rounds = numbers.get(1).copied().unwrap_or(5);
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("load average at start: {}", load.trim());
    let rt = runtime();
    for scenario in scenarios {
        let n = numbers.first().copied().unwrap_or(scenario.default_n());
        run_scenario(&rt, scenario, n, rounds);
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    println!("\nload average at the end: {}", load.trim());
}
