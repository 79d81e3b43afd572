//! One task lifecycle — `tools/call` → task → 3 × `tasks/get` → completed —
//! against the same rmcp peer server, driven by `mcp-tasks` and by rmcp's
//! own client, in one run.
//!
//! ```text
//! cargo bench -p mcp-tasks-interop --bench side_by_side              # wall time (divan)
//! cargo bench -p mcp-tasks-interop --bench side_by_side -- --cpu     # CPU time per lifecycle
//! ```
//!
//! Each client gets its own peer process (`rmcp-peer --bench`, over stdio)
//! and calls its `bench` tool: a task with no `pollIntervalMs` that
//! completes on its third read, so every lifecycle is exactly one
//! `tools/call` and three `tasks/get` whatever the client's pace. Both
//! clients poll with a zero interval. Before measuring, each benchmark
//! checks that count on the peer's counters.
//!
//! - `mcp_tasks`: `client.task().poll_interval(0).min_poll_interval(0)
//!   .call_tool("bench", {}).await?.await?`, then the typed result.
//! - `rmcp_discover`: rmcp's client in its 2026-07-28 mode
//!   (`serve_with_lifecycle(…, Discover)`, so every request carries the
//!   per-request `_meta`, Tasks extension included), then the loop its task
//!   example shows: `call_tool_once`, `peer().get_task(…)` until the status
//!   is terminal, and the completed `result` object parsed into a
//!   `CallToolResult`.
//! - `rmcp_initialize`: the same loop after the legacy `initialize`
//!   handshake, as in rmcp's example (`ClientConfig::serve`); its requests
//!   carry no per-request `_meta`, so they are smaller.
//!
//! Divan's figures are wall time on a current-thread runtime: they include
//! four round trips through pipes and the peer's own work. `--cpu` measures
//! what each client costs: `/proc/self/stat` user + system time (and this
//! thread's `/proc/thread-self/schedstat`, in ns) over many lifecycles, with
//! the peer's CPU alongside.

use std::time::Instant;

use mcp_tasks::Client;
use mcp_tasks::transport::{Stderr, Stdio};
use rmcp::model::{
    CallToolRequestParams, ClientCapabilities, ClientConfig, Implementation, ProtocolVersion,
};
use rmcp::service::RunningService;
use rmcp::{ClientLifecycleMode, ClientServiceExt, RoleClient, ServiceExt};
use serde_json::{Value, json};
use support::{
    TICKS_PER_SECOND, children, mcp_tasks_lifecycle, median, process_ticks, rmcp_lifecycle,
    runtime, thread_ns,
};

const PEER: &str = env!("CARGO_BIN_EXE_rmcp-peer");

mod support;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--cpu") {
        let number = |k: usize, default: u32| {
            args.get(i + k)
                .and_then(|a| a.parse().ok())
                .unwrap_or(default)
        };
        cpu::run(number(1, 20_000), number(2, 5));
        return;
    }
    divan::main();
}

/// What the peer has seen: from its `stats` tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Counts {
    calls: u64,
    gets: u64,
    bytes_in: u64,
    bytes_out: u64,
}

impl Counts {
    fn from_stats(stats: &Value) -> Counts {
        let n = |key: &str| {
            stats[key]
                .as_u64()
                .unwrap_or_else(|| panic!("stats has no {key}: is the peer in --bench mode?"))
        };
        Counts {
            calls: n("benchCalls"),
            gets: n("benchGets"),
            bytes_in: n("bytesIn"),
            bytes_out: n("bytesOut"),
        }
    }

    fn since(self, before: Counts) -> Counts {
        Counts {
            calls: self.calls - before.calls,
            gets: self.gets - before.gets,
            bytes_in: self.bytes_in - before.bytes_in,
            bytes_out: self.bytes_out - before.bytes_out,
        }
    }
}

/// A client of one kind, with its own peer process.
// Three of them, made once: no box on either client's path.
#[allow(clippy::large_enum_variant)]
enum Driver {
    McpTasks(Client),
    /// rmcp's client, and its peer (killed when dropped).
    Rmcp {
        client: RunningService<RoleClient, ClientConfig>,
        _peer: tokio::process::Child,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    McpTasks,
    RmcpDiscover,
    RmcpInitialize,
}

impl Kind {
    const ALL: [Kind; 3] = [Kind::McpTasks, Kind::RmcpDiscover, Kind::RmcpInitialize];

    fn name(self) -> &'static str {
        match self {
            Kind::McpTasks => "mcp_tasks",
            Kind::RmcpDiscover => "rmcp_discover",
            Kind::RmcpInitialize => "rmcp_initialize",
        }
    }
}

impl Driver {
    /// Starts a peer and connects a client of `kind` to it.
    async fn start(kind: Kind) -> Driver {
        match kind {
            Kind::McpTasks => {
                let peer = Stdio::command(PEER).arg("--bench").stderr(Stderr::Null);
                let client = Client::builder()
                    .client_info("mcp-tasks-bench", env!("CARGO_PKG_VERSION"))
                    .connect(peer)
                    .await
                    .expect("start the peer");
                Driver::McpTasks(client)
            }
            Kind::RmcpDiscover | Kind::RmcpInitialize => {
                // rmcp's `TokioChildProcess` is this same `AsyncRwTransport`
                // over the child's stdout and stdin (plus process-group
                // handling that is not on the request path).
                let mut child = tokio::process::Command::new(PEER)
                    .arg("--bench")
                    .stdin(std::process::Stdio::piped())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::null())
                    .kill_on_drop(true)
                    .spawn()
                    .expect("start the peer");
                let stdout = child.stdout.take().expect("piped");
                let stdin = child.stdin.take().expect("piped");
                // Declares the Tasks extension, as rmcp's task example does.
                let config = ClientConfig::new(
                    ClientCapabilities::builder().enable_tasks().build(),
                    Implementation::new("rmcp-bench", env!("CARGO_PKG_VERSION")),
                );
                let client = if kind == Kind::RmcpDiscover {
                    let modern = ClientLifecycleMode::Discover {
                        preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                    };
                    config.serve_with_lifecycle((stdout, stdin), modern).await
                } else {
                    config.serve((stdout, stdin)).await
                };
                Driver::Rmcp {
                    client: client.expect("connect rmcp's client"),
                    _peer: child,
                }
            }
        }
    }

    /// One lifecycle, to the typed result.
    async fn lifecycle(&self) {
        match self {
            Driver::McpTasks(client) => mcp_tasks_lifecycle(client, &json!({})).await,
            Driver::Rmcp { client, .. } => rmcp_lifecycle(client, None).await,
        }
    }

    async fn counts(&self) -> Counts {
        let stats = match self {
            Driver::McpTasks(client) => {
                client
                    .call_tool("stats", json!({}))
                    .await
                    .expect("stats")
                    .structured_content
            }
            Driver::Rmcp { client, .. } => {
                client
                    .call_tool(CallToolRequestParams::new("stats"))
                    .await
                    .expect("stats")
                    .structured_content
            }
        };
        Counts::from_stats(&stats.expect("structured stats"))
    }

    /// Checks that one lifecycle is one `tools/call` and three `tasks/get`,
    /// and returns the bytes it moved (to and from the peer). Bytes are
    /// the difference between runs of one and two lifecycles, which cancels
    /// the `stats` calls around them up to a few digits.
    async fn check(&self) -> (u64, u64) {
        let s0 = self.counts().await;
        self.lifecycle().await;
        let s1 = self.counts().await;
        self.lifecycle().await;
        self.lifecycle().await;
        let s2 = self.counts().await;
        let one = s1.since(s0);
        let two = s2.since(s1);
        assert_eq!(
            (one.calls, one.gets),
            (1, 3),
            "one lifecycle is 1 tools/call + 3 tasks/get"
        );
        assert_eq!((two.calls, two.gets), (2, 6));
        (
            two.bytes_in.saturating_sub(one.bytes_in),
            two.bytes_out.saturating_sub(one.bytes_out),
        )
    }
}

fn bench(bencher: divan::Bencher<'_, '_>, kind: Kind) {
    let rt = runtime();
    let driver = rt.block_on(async {
        let driver = Driver::start(kind).await;
        driver.check().await;
        driver
    });
    let before = rt.block_on(driver.counts());
    bencher.bench_local(|| rt.block_on(driver.lifecycle()));
    let during = rt.block_on(driver.counts()).since(before);
    assert_eq!(during.gets, 3 * during.calls, "3 tasks/get per tools/call");
}

#[divan::bench(sample_size = 20)]
fn mcp_tasks(bencher: divan::Bencher<'_, '_>) {
    bench(bencher, Kind::McpTasks);
}

#[divan::bench(sample_size = 20)]
fn rmcp_discover(bencher: divan::Bencher<'_, '_>) {
    bench(bencher, Kind::RmcpDiscover);
}

#[divan::bench(sample_size = 20)]
fn rmcp_initialize(bencher: divan::Bencher<'_, '_>) {
    bench(bencher, Kind::RmcpInitialize);
}

/// CPU time per lifecycle, from the kernel's accounting.
mod cpu {
    use super::*;

    struct Sample {
        client_user_us: f64,
        client_sys_us: f64,
        client_process_us: f64,
        client_thread_us: f64,
        peer_us: f64,
        wall_us: f64,
    }

    pub fn run(n: u32, rounds: u32) {
        let rt = runtime();
        let mut drivers = Vec::new();
        for kind in Kind::ALL {
            let before = children("self");
            let driver = rt.block_on(Driver::start(kind));
            let peer = children("self")
                .difference(&before)
                .next()
                .cloned()
                .expect("the peer's pid");
            let (bytes_in, bytes_out) = rt.block_on(driver.check());
            println!(
                "{:<16} wire per lifecycle: ≈{bytes_in} bytes to the peer, ≈{bytes_out} back \
                 (1 tools/call + 3 tasks/get, checked)",
                kind.name()
            );
            // Warm up: allocator, caches, the peer's threads.
            rt.block_on(async {
                for _ in 0..n / 10 {
                    driver.lifecycle().await;
                }
            });
            drivers.push((kind, driver, peer, Vec::new()));
        }
        // Rounds alternate the clients, so a change in the machine's load
        // touches every client alike.
        for _ in 0..rounds {
            for (_, driver, peer, samples) in &mut drivers {
                let (p0, t0, q0, w0) = (
                    process_ticks("self"),
                    thread_ns(),
                    process_ticks(peer),
                    Instant::now(),
                );
                rt.block_on(async {
                    for _ in 0..n {
                        driver.lifecycle().await;
                    }
                });
                let wall = w0.elapsed();
                let (p1, t1, q1) = (process_ticks("self"), thread_ns(), process_ticks(peer));
                let per = |ticks: u64| ticks as f64 / TICKS_PER_SECOND * 1e6 / f64::from(n);
                samples.push(Sample {
                    client_user_us: per(p1.0 - p0.0),
                    client_sys_us: per(p1.1 - p0.1),
                    client_process_us: per(p1.0 + p1.1 - p0.0 - p0.1),
                    client_thread_us: (t1 - t0) as f64 / 1e3 / f64::from(n),
                    peer_us: per(q1.0 + q1.1 - q0.0 - q0.1),
                    wall_us: wall.as_secs_f64() * 1e6 / f64::from(n),
                });
            }
        }
        println!(
            "\n{n} lifecycles per round, {rounds} rounds; medians, µs per lifecycle\n\n\
             | client | client CPU: user | sys | total (process) | total (thread) | peer CPU | wall |\n\
             |---|---|---|---|---|---|---|"
        );
        for (kind, _, _, samples) in &drivers {
            let m = |f: fn(&Sample) -> f64| median(samples.iter().map(f).collect());
            println!(
                "| `{}` | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} |",
                kind.name(),
                m(|s| s.client_user_us),
                m(|s| s.client_sys_us),
                m(|s| s.client_process_us),
                m(|s| s.client_thread_us),
                m(|s| s.peer_us),
                m(|s| s.wall_us),
            );
        }
        println!();
        let ours = &drivers[0].3;
        for (kind, _, _, theirs) in drivers.iter().skip(1) {
            // Per round, so that both sides of each ratio saw the same load.
            let ratio = |f: fn(&Sample) -> f64| {
                median(ours.iter().zip(theirs).map(|(a, b)| f(a) / f(b)).collect())
            };
            println!(
                "client CPU, mcp_tasks / {}: {:.2} (total), {:.2} (user only); median of per-round ratios",
                kind.name(),
                ratio(|s| s.client_process_us),
                ratio(|s| s.client_user_us),
            );
        }
    }
}
