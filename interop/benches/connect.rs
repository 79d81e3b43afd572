//! What negotiating the era costs on a connect, against real servers over
//! Streamable HTTP on loopback: server-everything 2026.8.31 (initialize era)
//! with the client probing first (`server/discover`, refused, then
//! `initialize`) and with the era pinned (`initialize` at once).
//!
//! ```text
//! npm ci --prefix interop/everything
//! cargo bench -p mcp-tasks-interop --bench connect
//! ```
//!
//! One server process serves every connect (each is its own HTTP session).
//! A connect ends once the handshake is done and the tools are listed, so
//! both sides do the same work but the probe; the difference between the
//! two figures is the fallback's extra round trip.

use std::path::Path;
use std::time::Duration;

use mcp_tasks::Client;
use mcp_tasks::transport::Http;
use support::runtime;

mod support;

const EVERYTHING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
);

fn main() {
    divan::main();
}

/// The server, started once for the whole run; killed when the run ends.
struct Server {
    _child: std::process::Child,
    url: String,
}

fn server() -> &'static Server {
    static SERVER: std::sync::OnceLock<Server> = std::sync::OnceLock::new();
    SERVER.get_or_init(|| {
        assert!(
            Path::new(EVERYTHING).exists(),
            "server-everything is not installed: run `npm ci --prefix interop/everything`"
        );
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = std::process::Command::new("node")
            .args([EVERYTHING, "streamableHttp"])
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("node starts");
        let started = std::time::Instant::now();
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "server-everything did not start"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Server {
            _child: child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    })
}

async fn connect_and_list(pin: Option<&str>) {
    let client = Client::builder()
        .maybe_protocol_version(pin)
        .connect(Http::new(&server().url))
        .await
        .expect("connect");
    assert_eq!(&*client.protocol_version(), "2025-11-25");
    let tools = client.list_tools().await.expect("tools/list");
    assert!(!tools.is_empty());
}

/// Probe, refusal, `initialize`, `notifications/initialized`, `tools/list`.
#[divan::bench(sample_size = 20, sample_count = 50)]
fn probe_then_initialize(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    bencher.bench_local(|| rt.block_on(connect_and_list(None)));
}

/// `initialize`, `notifications/initialized`, `tools/list`.
#[divan::bench(sample_size = 20, sample_count = 50)]
fn pinned_initialize(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    bencher.bench_local(|| rt.block_on(connect_and_list(Some("2025-11-25"))));
}
