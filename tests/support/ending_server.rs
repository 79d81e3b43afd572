//! A server whose one tool becomes a task that ends the way a test says:
//! a stated terminal status (`completed`, `failed`, `cancelled`) with one
//! of the payload shapes servers send for it, in either era.
//!
//! - 2026-07-28: `tasks/get` carries the payload inline (`result`,
//!   `error`, a bare `_meta` result, or nothing).
//! - 2025-11-25: `tasks/get` states the status only and `tasks/result`
//!   carries the payload, as the Python SDK 1.30's default task handlers
//!   do (a failed task's result holds only `_meta`), or as other servers
//!   do (an `isError` result, a JSON-RPC error, `null`).
//!
//! The server is plain JSON in, JSON out ([`EndingServer::handle`]), with
//! two fronts that need nothing but std: [`serve_stdio`] (a child process
//! on its stdin and stdout) and [`serve_http`] (Streamable HTTP on a
//! loopback port, JSON replies, one request per connection). The library's
//! tests and the command-line client's both use it.
#![allow(
    dead_code,
    reason = "the library's and the command-line client's tests use different parts"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// The protocol era the server speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Era {
    /// 2026-07-28 with the Tasks extension (`server/discover`).
    Modern,
    /// 2025-11-25 (`initialize`, experimental tasks).
    Legacy,
}

/// What the server sends with the terminal status.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Payload {
    /// A tool result with text content.
    Content,
    /// A tool result with `isError: true`.
    ToolError,
    /// A result that holds only `_meta`.
    BareMeta,
    /// A JSON-RPC error (code -32001, "backend down").
    RpcError,
    /// Nothing: no `result` or `error` (2026-07-28), a `null` result
    /// (2025-11-25).
    Nothing,
}

pub const STATUSES: [&str; 3] = ["completed", "failed", "cancelled"];
pub const PAYLOADS: [Payload; 5] = [
    Payload::Content,
    Payload::ToolError,
    Payload::BareMeta,
    Payload::RpcError,
    Payload::Nothing,
];
pub const ERAS: [Era; 2] = [Era::Modern, Era::Legacy];

/// The status message every ended task carries.
pub const STATUS_MESSAGE: &str = "the work raised";
/// The text of the tool results.
pub const RESULT_TEXT: &str = "fail: the work raised";
/// The code of the JSON-RPC error payload.
pub const ERROR_CODE: i64 = -32001;

/// One way for a task to end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ending {
    pub era: Era,
    pub status: &'static str,
    pub payload: Payload,
}

impl Ending {
    /// Every combination of era, status and payload.
    pub fn all() -> Vec<Ending> {
        let mut all = Vec::new();
        for era in ERAS {
            for status in STATUSES {
                for payload in PAYLOADS {
                    all.push(Ending {
                        era,
                        status,
                        payload,
                    });
                }
            }
        }
        all
    }

    /// The words a child server is started with (`--serve-ending …`).
    pub fn args(&self) -> Vec<String> {
        vec![
            "--serve-ending".into(),
            match self.era {
                Era::Modern => "modern",
                Era::Legacy => "legacy",
            }
            .into(),
            self.status.into(),
            format!("{:?}", self.payload),
        ]
    }

    /// The ending named by [`Ending::args`] (after `--serve-ending`).
    pub fn parse(words: &[String]) -> Ending {
        let era = match words[0].as_str() {
            "modern" => Era::Modern,
            _ => Era::Legacy,
        };
        let status = STATUSES
            .into_iter()
            .find(|s| *s == words[1])
            .expect("a terminal status");
        let payload = PAYLOADS
            .into_iter()
            .find(|p| format!("{p:?}") == words[2])
            .expect("a payload shape");
        Ending {
            era,
            status,
            payload,
        }
    }
}

/// The server's state: the ending, and the tasks created so far.
pub struct EndingServer {
    ending: Ending,
    tasks: u64,
}

impl EndingServer {
    pub fn new(ending: Ending) -> Self {
        EndingServer { ending, tasks: 0 }
    }

    /// The answer to one message (`None` for notifications and responses).
    pub fn handle(&mut self, message: &Value) -> Option<Value> {
        let id = message.get("id")?.clone();
        let method = message.get("method")?.as_str()?;
        let params = message.get("params").cloned().unwrap_or(Value::Null);
        let reply = match (self.ending.era, method) {
            (_, "ping") => Ok(json!({})),
            (Era::Modern, "server/discover") => Ok(json!({
                "resultType": "complete",
                "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "extensions": {"io.modelcontextprotocol/tasks": {}}},
                "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "ending", "version": "1.0.0"}}
            })),
            (Era::Legacy, "initialize") => Ok(json!({
                "protocolVersion": "2025-11-25",
                "capabilities": {"tools": {}, "tasks": {"list": {}, "cancel": {},
                    "requests": {"tools": {"call": {}}}}},
                "serverInfo": {"name": "ending", "version": "1.0.0"}
            })),
            (_, "tools/list") => Ok(json!({
                "resultType": "complete",
                "tools": [{"name": "work", "inputSchema": {"type": "object"},
                    "execution": {"taskSupport": "required"}}]
            })),
            (_, "tools/call") => Ok(self.create()),
            (_, "tasks/get") => Ok(self.task(&params)),
            (Era::Legacy, "tasks/result") => self.result(&params),
            (_, "tasks/cancel") => Ok(json!({})),
            _ => Err(json!({"code": -32601, "message": format!("no method {method}")})),
        };
        Some(match reply {
            Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
            Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
        })
    }

    fn create(&mut self) -> Value {
        self.tasks += 1;
        let id = format!("ending-{}", self.tasks);
        match self.ending.era {
            Era::Modern => json!({"resultType": "task", "taskId": id, "status": "working",
                "ttlMs": 60000, "pollIntervalMs": 10}),
            Era::Legacy => json!({"task": {"taskId": id, "status": "working", "ttl": 60000,
                "pollInterval": 10, "createdAt": "2026-12-01T10:00:00Z",
                "lastUpdatedAt": "2026-12-01T10:00:00Z"}}),
        }
    }

    fn task(&self, params: &Value) -> Value {
        let id = params["taskId"].clone();
        let status = self.ending.status;
        match self.ending.era {
            Era::Legacy => json!({"taskId": id, "status": status, "statusMessage": STATUS_MESSAGE,
                "ttl": 60000, "pollInterval": 10, "createdAt": "2026-12-01T10:00:00Z",
                "lastUpdatedAt": "2026-12-01T10:00:01Z"}),
            Era::Modern => {
                let mut task = json!({"resultType": "complete", "taskId": id, "status": status,
                    "statusMessage": STATUS_MESSAGE, "ttlMs": 60000, "pollIntervalMs": 10});
                match self.payload(&id) {
                    Ok(Value::Null) => {}
                    Ok(result) => task["result"] = result,
                    Err(error) => task["error"] = error,
                }
                task
            }
        }
    }

    /// `tasks/result` (2025-11-25): the payload, tied to the task.
    fn result(&self, params: &Value) -> Result<Value, Value> {
        self.payload(&params["taskId"])
    }

    /// The payload: a result (`Null` for none) or a JSON-RPC error.
    fn payload(&self, id: &Value) -> Result<Value, Value> {
        let meta = json!({"io.modelcontextprotocol/related-task": {"taskId": id}});
        let text = json!([{"type": "text", "text": RESULT_TEXT}]);
        match self.ending.payload {
            Payload::Content => Ok(json!({"content": text, "_meta": meta})),
            Payload::ToolError => Ok(json!({"content": text, "isError": true, "_meta": meta})),
            Payload::BareMeta => Ok(json!({"_meta": meta})),
            Payload::RpcError => Err(json!({"code": ERROR_CODE, "message": "backend down"})),
            Payload::Nothing => Ok(Value::Null),
        }
    }
}

/// Serves `ending` on this process's stdin and stdout until stdin closes.
pub fn serve_stdio(ending: Ending) {
    let mut server = EndingServer::new(ending);
    let mut stdout = std::io::stdout().lock();
    for line in std::io::stdin().lock().lines() {
        let Ok(line) = line else { return };
        let Ok(message) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        if let Some(reply) = server.handle(&message) {
            let _ = writeln!(stdout, "{reply}");
            let _ = stdout.flush();
        }
    }
}

/// Serves `ending` over Streamable HTTP on a loopback port (in a thread of
/// this process) and returns the server's URL. Each connection carries one
/// request and is closed after its answer; `GET` is refused with `405` (no
/// stream), `DELETE` accepted.
pub fn serve_http(ending: Ending) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let server = Arc::new(Mutex::new(EndingServer::new(ending)));
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let server = server.clone();
            std::thread::spawn(move || answer_http(stream, &server));
        }
    });
    url
}

fn answer_http(stream: TcpStream, server: &Mutex<EndingServer>) {
    let mut reader = BufReader::new(stream.try_clone().expect("a socket"));
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut length = 0;
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 {
            return;
        }
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let (status, reply) = match request_line.split(' ').next() {
        Some("POST") => match serde_json::from_slice::<Value>(&body) {
            Ok(message) => match server.lock().unwrap().handle(&message) {
                Some(reply) => ("200 OK", Some(reply)),
                None => ("202 Accepted", None),
            },
            Err(_) => ("400 Bad Request", None),
        },
        Some("DELETE") => ("200 OK", None),
        _ => ("405 Method Not Allowed", None),
    };
    let body = reply.map(|r| r.to_string()).unwrap_or_default();
    let mut stream = stream;
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.flush();
}
