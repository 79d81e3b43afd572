//! HTTP faults: server errors (5xx) and connection resets on `tasks/get`
//! and `tools/call`.
//!
//! A small HTTP/1.1 front on a loopback port (127.0.0.1 only) relays each
//! POST to a `TestServer`, or misbehaves on the requests a test names: it
//! answers with a status and no body, or resets the connection (before
//! or after the server did the work). One request per connection, so a
//! reset hits exactly one exchange. Real sockets mean real time: waits are
//! short and every test is bounded.

mod support;

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::transport::{Http, Inbound, MessageSink, MessageStream, Outbound, Transport};
use mcp_tasks::{Client, TaskState};
use serde_json::{Value, json};
use support::*;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Mutex as AsyncMutex, oneshot};

/// What the front does with one POST.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Fate {
    /// Relays it and returns the server's reply.
    Relay,
    /// Answers with this status and an empty body, without relaying.
    Status(u16),
    /// Resets the connection without relaying (the server never sees it).
    Reset,
    /// Relays it, so the server does the work, then resets the connection.
    ResetAfterRelay,
}

type Rule = Box<dyn Fn(&str, usize) -> Fate + Send + Sync>;

struct Front {
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
    accept: tokio::task::JoinHandle<()>,
}

impl Drop for Front {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

impl Front {
    /// Starts a front for `server`; `rule` decides the fate of the n-th
    /// (0-based) POST of each method.
    async fn start(
        server: &TestServer,
        rule: impl Fn(&str, usize) -> Fate + Send + Sync + 'static,
    ) -> Front {
        let bridge = Bridge::open(server).await;
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/mcp", listener.local_addr().unwrap());
        let seen = Arc::new(Mutex::new(Vec::new()));
        let rule: Arc<Rule> = Arc::new(Box::new(rule));
        let accept = tokio::spawn({
            let seen = seen.clone();
            async move {
                while let Ok((socket, _)) = listener.accept().await {
                    let (bridge, seen, rule) = (bridge.clone(), seen.clone(), rule.clone());
                    tokio::spawn(async move {
                        let _ = serve(socket, &bridge, &seen, &rule).await;
                    });
                }
            }
        });
        Front { url, seen, accept }
    }

    fn count(&self, method: &str) -> usize {
        self.seen
            .lock()
            .unwrap()
            .iter()
            .filter(|m| *m == method)
            .count()
    }
}

/// Serves one POST on `socket`, then closes it.
async fn serve(
    mut socket: TcpStream,
    bridge: &Bridge,
    seen: &Mutex<Vec<String>>,
    rule: &Rule,
) -> std::io::Result<()> {
    let body = read_request(&mut socket).await?;
    let message: Value = serde_json::from_str(&body).unwrap_or_default();
    let method = message["method"].as_str().unwrap_or_default().to_owned();
    let fate = {
        let mut seen = seen.lock().unwrap();
        let n = seen.iter().filter(|m| **m == method).count();
        seen.push(method.clone());
        rule(&method, n)
    };
    let reset = |socket: TcpStream| {
        // SO_LINGER 0: closing sends a TCP reset, not an orderly FIN.
        let _ = socket.set_zero_linger();
        drop(socket);
    };
    if message.get("id").is_none() {
        // A notification: accepted, nothing to answer.
        return write_status(&mut socket, 202).await;
    }
    match fate {
        Fate::Status(code) => write_status(&mut socket, code).await,
        Fate::Reset => {
            reset(socket);
            Ok(())
        }
        Fate::ResetAfterRelay => {
            let _ = bridge.call(&message).await;
            reset(socket);
            Ok(())
        }
        Fate::Relay => {
            let reply = bridge.call(&message).await;
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                reply.len()
            );
            socket.write_all(head.as_bytes()).await?;
            socket.write_all(reply.as_bytes()).await?;
            socket.shutdown().await
        }
    }
}

async fn write_status(socket: &mut TcpStream, code: u16) -> std::io::Result<()> {
    let head = format!("HTTP/1.1 {code} Fault\r\ncontent-length: 0\r\nconnection: close\r\n\r\n");
    socket.write_all(head.as_bytes()).await?;
    socket.shutdown().await
}

/// Reads one request (headers, then `content-length` bytes) and returns its body.
async fn read_request(socket: &mut TcpStream) -> std::io::Result<String> {
    let mut data = Vec::new();
    let mut chunk = [0u8; 4096];
    let head_end = loop {
        if let Some(i) = data.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        data.extend_from_slice(&chunk[..n]);
    };
    let head = String::from_utf8_lossy(&data[..head_end]).to_ascii_lowercase();
    let length: usize = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    while data.len() < head_end + length {
        let n = socket.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        data.extend_from_slice(&chunk[..n]);
    }
    Ok(String::from_utf8_lossy(&data[head_end..head_end + length]).into_owned())
}

/// The front's connection to the scripted server: requests out, replies
/// routed back by id.
#[derive(Clone)]
struct Bridge {
    sink: Arc<AsyncMutex<mcp_tasks::transport::memory::MemorySink>>,
    waiting: Arc<Mutex<HashMap<String, oneshot::Sender<String>>>>,
}

impl Bridge {
    async fn open(server: &TestServer) -> Bridge {
        let (sink, mut stream) = server.connect().connect().await.unwrap();
        let waiting: Arc<Mutex<HashMap<String, oneshot::Sender<String>>>> = Arc::default();
        tokio::spawn({
            let waiting = waiting.clone();
            async move {
                while let Ok(Some(Inbound::Message(text))) = stream.recv().await {
                    let v: Value = serde_json::from_str(&text).unwrap_or_default();
                    let waiter = waiting.lock().unwrap().remove(&v["id"].to_string());
                    if let Some(tx) = waiter {
                        let _ = tx.send(text);
                    }
                }
            }
        });
        Bridge {
            sink: Arc::new(AsyncMutex::new(sink)),
            waiting,
        }
    }

    async fn call(&self, message: &Value) -> String {
        let (tx, rx) = oneshot::channel();
        self.waiting
            .lock()
            .unwrap()
            .insert(message["id"].to_string(), tx);
        self.sink
            .lock()
            .await
            .send(Outbound::new(message.to_string(), "relay"))
            .await
            .unwrap();
        rx.await.unwrap()
    }
}

async fn bounded<F: Future<Output = ()>>(body: F) {
    tokio::time::timeout(Duration::from_secs(20), body)
        .await
        .expect("the test did not finish in 20 s");
}

fn export(done_after: u64) -> TestServer {
    TestServer::new().tool(ScriptedTool::task(
        "export",
        TaskScript::new()
            .poll_interval(ms(20))
            .complete(ms(done_after), text("exported")),
    ))
}

async fn connect(front: &Front) -> Client {
    Client::builder()
        .request_timeout(Duration::from_secs(5))
        .connect(Http::new(&front.url).bearer_token("tok-secret"))
        .await
        .unwrap()
}

#[tokio::test]
async fn server_errors_and_resets_on_tasks_get_are_retried_within_the_deadline() {
    bounded(async {
        let server = export(150);
        let front = Front::start(&server, |method, n| match (method, n) {
            ("tasks/get", 0) => Fate::Status(503),
            ("tasks/get", 1) => Fate::Reset,
            ("tasks/get", 2) => Fate::Status(500),
            ("tasks/get", 3) => Fate::ResetAfterRelay,
            _ => Fate::Relay,
        })
        .await;
        let client = connect(&front).await;
        let done = client
            .task()
            .timeout(Duration::from_secs(10))
            .call_tool("export", json!({}))
            .await
            .unwrap()
            .await
            .unwrap();
        assert_eq!(done.into_result().unwrap().joined_text(), "exported");
        assert!(
            front.count("tasks/get") >= 5,
            "{}",
            front.count("tasks/get")
        );
        assert_eq!(front.count("tools/call"), 1);
        assert_eq!(client.pending_requests(), 0);
        assert!(
            client.closed_reason().is_none(),
            "one bad exchange does not close the client"
        );
    })
    .await;
}

#[tokio::test]
async fn a_tasks_get_that_always_fails_ends_at_the_deadline_with_the_handle() {
    bounded(async {
        let server = export(60_000);
        let front = Front::start(&server, |method, n| match method {
            "tasks/get" if n % 2 == 0 => Fate::Status(502),
            "tasks/get" => Fate::Reset,
            _ => Fate::Relay,
        })
        .await;
        let client = connect(&front).await;
        let err = client
            .task()
            .timeout(Duration::from_secs(1))
            .call_tool("export", json!({}))
            .await
            .unwrap()
            .await
            .unwrap_err();
        assert!(err.error().is_deadline(), "{}", err.error());
        assert!(matches!(err.into_task(), TaskState::Pending(_)));
        // Retries back off (100 ms, then the poll interval's floor of
        // 100 ms): a handful of reads in one second, not a storm.
        let gets = front.count("tasks/get");
        assert!((2..=12).contains(&gets), "{gets} reads");
        assert_eq!(client.pending_requests(), 0);
    })
    .await;
}

#[tokio::test]
async fn a_reset_on_tools_call_is_outcome_unknown_and_not_retried() {
    bounded(async {
        let server = export(60_000);
        let front = Front::start(&server, |method, n| match (method, n) {
            ("tools/call", 0) => Fate::ResetAfterRelay,
            _ => Fate::Relay,
        })
        .await;
        let client = connect(&front).await;
        let e = client.call_tool("export", json!({})).await.unwrap_err();
        assert!(e.is_outcome_unknown() && e.is_transport(), "{e}");
        assert_eq!(front.count("tools/call"), 1, "never retried");
        assert_eq!(
            server.task_ids().len(),
            1,
            "the server started the work the client cannot see"
        );
        assert_eq!(client.pending_requests(), 0);
    })
    .await;
}

#[tokio::test]
async fn a_server_error_on_tools_call_is_outcome_unknown_and_not_retried() {
    bounded(async {
        let server = export(50);
        let front = Front::start(&server, |method, n| match (method, n) {
            ("tools/call", 0) => Fate::Status(500),
            ("tools/call", 1) => Fate::Reset,
            _ => Fate::Relay,
        })
        .await;
        let client = connect(&front).await;
        for _ in 0..2 {
            let e = client.call_tool("export", json!({})).await.unwrap_err();
            assert!(e.is_outcome_unknown(), "{e}");
        }
        assert_eq!(front.count("tools/call"), 2, "one POST per call");
        // The third call goes through: the client is still usable.
        let r = client.call_tool("export", json!({})).await.unwrap();
        assert_eq!(r.joined_text(), "exported");
        assert_eq!(front.count("tools/call"), 3);
    })
    .await;
}
