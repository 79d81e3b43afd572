//! The cost of one task lifecycle (call → task → 3 polls → completed),
//! against a floor measured in the same run: the same bytes written and
//! parsed by a bare loop doing only serde_json and the transport.
//!
//! ```text
//! cargo bench --bench lifecycle
//! ```
//!
//! Both sides talk to the same replay server, which answers from canned
//! JSON (its cost is in both figures), so the difference between
//! `lifecycle_*` and `floor_*` is what the client adds: building `_meta`,
//! the pending table, resultType dispatch, typed decoding, the state
//! machine and the poll schedule. Intervals are zero so no time is slept.
//!
//! For an instruction profile, `--profile lifecycle N` and `--profile
//! floor N` run N memory-transport lifecycles without divan, e.g.
//!
//! ```text
//! valgrind --tool=callgrind target/release/deps/lifecycle-HASH --profile lifecycle 2000
//! ```
//!
//! and the difference of two counts (N and 2N) divided by N is the cost of
//! one lifecycle, setup excluded.

use std::io;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks::Client;
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::transport::{
    Closed, Inbound, LineTransport, MessageSink, MessageStream, Outbound, Stdio, Transport, memory,
};
use serde_json::{Value, json};

#[cfg(feature = "http")]
#[path = "lifecycle/http.rs"]
mod http;

const CREATED: &str = r#"{"resultType":"task","taskId":"bench-task-7f3a9c","status":"working","createdAt":"2026-08-01T09:00:00Z","lastUpdatedAt":"2026-08-01T09:00:00Z","ttlMs":60000}"#;
const WORKING: &str = r#"{"resultType":"complete","taskId":"bench-task-7f3a9c","status":"working","statusMessage":"exporting","createdAt":"2026-08-01T09:00:00Z","lastUpdatedAt":"2026-08-01T09:00:01Z","ttlMs":60000}"#;
const COMPLETED: &str = r#"{"resultType":"complete","taskId":"bench-task-7f3a9c","status":"completed","createdAt":"2026-08-01T09:00:00Z","lastUpdatedAt":"2026-08-01T09:00:02Z","ttlMs":60000,"result":{"content":[{"type":"text","text":"42 rows exported"}],"structuredContent":{"rows":42}}}"#;

fn main() {
    #[cfg(feature = "http")]
    if std::env::args().any(|a| a == "--replay-http") {
        http::replay_server();
        return;
    }
    #[cfg(feature = "http")]
    if let Some(at) = std::env::args().position(|a| a == "--cpu-http") {
        let args: Vec<String> = std::env::args().skip(at + 1).collect();
        let n = args.first().and_then(|a| a.parse().ok()).unwrap_or(300);
        let rounds = args.get(1).and_then(|a| a.parse().ok()).unwrap_or(5);
        http::cpu(n, rounds);
        return;
    }
    if std::env::args().any(|a| a == "--replay") {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let transport = LineTransport::new(tokio::io::stdin(), tokio::io::stdout());
        rt.block_on(replay(transport)).unwrap();
        return;
    }
    let args: Vec<String> = std::env::args().collect();
    if let Some(at) = args.iter().position(|a| a == "--profile") {
        let what = args.get(at + 1).map(String::as_str).unwrap_or("lifecycle");
        let n = args
            .get(at + 2)
            .and_then(|a| a.parse().ok())
            .unwrap_or(1000);
        profile(what, n);
        return;
    }
    divan::main();
}

/// N lifecycles (or N floors) over the memory transport, for a profiler.
fn profile(what: &str, n: usize) {
    let rt = runtime();
    match what {
        #[cfg(feature = "http")]
        "http_floor" | "http_lifecycle" | "http_floor_paced" | "http_lifecycle_paced" => {
            http::profile(what, n)
        }
        "floor" => {
            let requests = captured_requests();
            let (mut sink, mut stream) = rt.block_on(async {
                let (ours, theirs) = memory::pair();
                tokio::spawn(replay(theirs));
                ours.connect().await.unwrap()
            });
            for _ in 0..n {
                rt.block_on(floor(&mut sink, &mut stream, &requests));
            }
        }
        _ => {
            let client = rt.block_on(async {
                let (ours, theirs) = memory::pair();
                tokio::spawn(replay(theirs));
                Client::connect(ours).await.unwrap()
            });
            for _ in 0..n {
                rt.block_on(lifecycle(&client));
            }
        }
    }
}

/// Answers tools/call with a task, then two `working` reads and a
/// `completed` one, over and over.
async fn replay<T: Transport>(transport: T) -> io::Result<()> {
    let (mut sink, mut stream) = transport.connect().await?;
    let mut gets = 0;
    while let Some(msg) = stream.recv().await? {
        let Inbound::Message(text) = msg else {
            continue;
        };
        let request: Value = serde_json::from_str(&text).unwrap();
        let Some(reply) = answer(&request, &mut gets) else {
            continue;
        };
        sink.send(Outbound::new(reply, "reply")).await?;
    }
    Ok(())
}

/// The replay's answer to one message (`None` for a notification):
/// `gets` counts the reads since the last `tools/call`.
fn answer(request: &Value, gets: &mut usize) -> Option<String> {
    let id = request.get("id")?;
    let result = match request["method"].as_str().unwrap() {
        "tools/call" => {
            *gets = 0;
            CREATED
        }
        "tasks/get" => {
            *gets += 1;
            if *gets < 3 { WORKING } else { COMPLETED }
        }
        _ => r#"{"resultType":"complete"}"#,
    };
    Some(format!(
        r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#
    ))
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

async fn lifecycle(client: &Client) {
    lifecycle_every(client, Duration::ZERO).await;
}

/// One lifecycle whose reads are `interval` apart (the replay gives no
/// `pollIntervalMs`, so the builder's interval is the schedule).
async fn lifecycle_every(client: &Client, interval: Duration) {
    let done = client
        .task()
        .poll_interval(interval)
        .min_poll_interval(Duration::ZERO)
        .call_tool("export", json!({ "table": "orders" }))
        .await
        .unwrap()
        .await
        .unwrap();
    assert!(done.outcome().is_completed());
}

/// Records what the client sends, so the floor can replay the same bytes.
struct Recording<T>(T, Arc<Mutex<Vec<Outbound>>>);
struct RecordingSink<S>(S, Arc<Mutex<Vec<Outbound>>>);

impl<T: Transport> Transport for Recording<T> {
    type Sink = RecordingSink<T::Sink>;
    type Stream = T::Stream;
    async fn connect(self) -> io::Result<(Self::Sink, Self::Stream)> {
        let (sink, stream) = self.0.connect().await?;
        Ok((RecordingSink(sink, self.1), stream))
    }
}

impl<S: MessageSink> MessageSink for RecordingSink<S> {
    async fn send(&mut self, m: Outbound) -> io::Result<()> {
        self.1.lock().unwrap().push(m.clone());
        self.0.send(m).await
    }
    async fn close(&mut self) -> io::Result<Closed> {
        self.0.close().await
    }
}

/// The four requests of one lifecycle, exactly as the client writes them.
fn captured_requests() -> Vec<Outbound> {
    let rt = runtime();
    rt.block_on(async {
        let (ours, theirs) = memory::pair();
        tokio::spawn(replay(theirs));
        let log = Arc::new(Mutex::new(Vec::new()));
        let client = Client::connect(Recording(ours, log.clone())).await.unwrap();
        // The connect probe (`server/discover`) is not part of a lifecycle.
        log.lock().unwrap().clear();
        lifecycle(&client).await;
        let sent = log.lock().unwrap().clone();
        assert_eq!(sent.len(), 4, "1 tools/call + 3 tasks/get");
        sent
    })
}

/// The bare loop: write each captured request, parse each reply with serde_json.
async fn floor<S: MessageSink, R: MessageStream>(
    sink: &mut S,
    stream: &mut R,
    requests: &[Outbound],
) {
    for request in requests {
        sink.send(request.clone()).await.unwrap();
        let Some(Inbound::Message(reply)) = stream.recv().await.unwrap() else {
            panic!()
        };
        divan::black_box(serde_json::from_str::<Value>(&reply).unwrap());
    }
}

#[divan::bench]
fn lifecycle_memory(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    let client = rt.block_on(async {
        let (ours, theirs) = memory::pair();
        tokio::spawn(replay(theirs));
        Client::connect(ours).await.unwrap()
    });
    bencher.bench_local(|| rt.block_on(lifecycle(&client)));
}

#[divan::bench]
fn floor_memory(bencher: divan::Bencher<'_, '_>) {
    let requests = captured_requests();
    let rt = runtime();
    let (mut sink, mut stream) = rt.block_on(async {
        let (ours, theirs) = memory::pair();
        tokio::spawn(replay(theirs));
        ours.connect().await.unwrap()
    });
    bencher.bench_local(|| rt.block_on(floor(&mut sink, &mut stream, &requests)));
}

fn replay_child() -> Stdio {
    Stdio::command(std::env::current_exe().unwrap()).arg("--replay")
}

#[divan::bench]
fn lifecycle_stdio(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    let client = rt.block_on(Client::connect(replay_child())).unwrap();
    bencher.bench_local(|| rt.block_on(lifecycle(&client)));
}

#[divan::bench]
fn floor_stdio(bencher: divan::Bencher<'_, '_>) {
    let requests = captured_requests();
    let rt = runtime();
    let (mut sink, mut stream) = rt.block_on(replay_child().connect()).unwrap();
    bencher.bench_local(|| rt.block_on(floor(&mut sink, &mut stream, &requests)));
}

/// Listen: the cost of one push, from the server's write to the update
/// stream yielding it (100 pushes per iteration; divide by 100).
#[divan::bench(sample_count = 20)]
fn listen_100_pushes(bencher: divan::Bencher<'_, '_>) {
    use futures_core::Stream;
    // The first step waits for the stream to be acknowledged (registrations
    // are gathered for 10 ms), so every later step arrives as a push.
    let mut script = TaskScript::new()
        .poll_interval(Duration::from_secs(600))
        .working(Duration::from_millis(20), "started");
    for i in 0..99 {
        script = script.working(Duration::from_millis(1), format!("step {i}"));
    }
    let script = script.complete(
        Duration::from_millis(1),
        mcp_tasks::protocol::CallToolResult::text("done"),
    );
    let server = TestServer::new().tool(ScriptedTool::task("steps", script));
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
        .unwrap();
    let client = rt.block_on(async { Client::connect(server.connect()).await.unwrap() });
    bencher.bench_local(|| {
        rt.block_on(async {
            let state = client
                .task()
                .listen()
                .call_tool("steps", json!({}))
                .await
                .unwrap();
            let mcp_tasks::TaskState::Pending(task) = state else {
                panic!()
            };
            let mut updates = task.updates();
            let mut seen = 0;
            while let Some(s) =
                std::future::poll_fn(|cx| std::pin::Pin::new(&mut updates).poll_next(cx)).await
            {
                s.unwrap();
                seen += 1;
            }
            assert!(seen >= 100, "saw {seen} updates");
        })
    });
}
