//! The demo server in HTTP mode on a loopback port, for the CLI's tests:
//! started, asked where it listens, and killed when dropped.
#![allow(dead_code, reason = "each test binary uses a different part")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

const DEMO: &str = env!("CARGO_BIN_EXE_mcp-tasks-demo");

/// `mcp-tasks-demo --http ADDR …`, killed when dropped.
pub struct HttpDemo {
    child: Child,
    /// Where it listens: `127.0.0.1:PORT`.
    pub addr: String,
}

impl HttpDemo {
    /// The demo on a free loopback port.
    pub fn start() -> HttpDemo {
        HttpDemo::start_on("127.0.0.1:0", &[])
    }

    /// The demo on `addr`, with `extra` arguments, once it said where it
    /// listens (within 30 s).
    pub fn start_on(addr: &str, extra: &[&str]) -> HttpDemo {
        let mut child = Command::new(DEMO)
            .arg("--http")
            .arg(addr)
            .args(extra)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start mcp-tasks-demo --http");
        let stdout = child.stdout.take().expect("its stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let _ = BufReader::new(stdout).read_line(&mut line);
            let _ = tx.send(line);
        });
        let line = rx
            .recv_timeout(Duration::from_secs(30))
            .expect("the demo says where it listens");
        let addr = line
            .trim()
            .strip_prefix("listening on http://")
            .and_then(|rest| rest.strip_suffix("/mcp"))
            .unwrap_or_else(|| panic!("an endpoint, got {line:?}"))
            .to_owned();
        HttpDemo { child, addr }
    }

    /// Its MCP endpoint.
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// `GET /counters`: what the server saw (reads, overlapping reads,
    /// answers and cancels per task).
    pub fn counters(&self) -> serde_json::Value {
        let mut stream = TcpStream::connect(&self.addr).expect("connect for the counters");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        write!(
            stream,
            "GET /counters HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        )
        .unwrap();
        let mut text = String::new();
        stream.read_to_string(&mut text).expect("the counters");
        let (head, body) = text.split_once("\r\n\r\n").expect("an HTTP reply");
        assert!(head.starts_with("HTTP/1.1 200"), "{head}");
        serde_json::from_str(body).expect("counters as JSON")
    }
}

impl Drop for HttpDemo {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
