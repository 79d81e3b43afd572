//! How a task ends, as the server stated it: every terminal status ×
//! every payload shape servers send with it × both eras × stdio and HTTP,
//! through the typestate API and `Client::call_tool` (RELIABILITY.md,
//! "the stated status decides the outcome"; the command-line client's exit
//! status over the same matrix is in `cli/tests/ended_tasks.rs`).
//!
//! The rule: `cancelled` is cancelled; `failed` is a failure whatever the
//! payload (a 2025-11-25 server's `tasks/result` may hold only `_meta`);
//! only `completed` turns a result into a completion, and a completed task
//! that carries only a JSON-RPC error is a failure, never a success.
//!
//! This test binary is also the server: `--serve-ending ERA STATUS
//! PAYLOAD` serves one ending on stdin and stdout.

#[path = "support/ending_server.rs"]
mod ending_server;
#[path = "support/runner.rs"]
mod runner;
#[path = "support/time.rs"]
#[allow(dead_code, reason = "the runner uses only its bound")]
mod time;

use std::time::Duration;

use ending_server::{Ending, Era, PAYLOADS, Payload, STATUSES};
use mcp_tasks::protocol::error_codes;
use mcp_tasks::transport::{Http, Stderr, Stdio};
use mcp_tasks::{Client, Error, Outcome};
use serde_json::json;

/// What a user must see for an ending.
#[derive(Debug, Clone, PartialEq)]
enum Seen {
    /// A completion: with the tool's text or empty, a tool error or not.
    Completed {
        is_error: bool,
        text: String,
    },
    /// A failure with this code and message.
    Failed {
        code: i64,
        message: String,
    },
    Cancelled,
    /// No outcome: the server sent a malformed answer (a protocol error).
    Malformed,
    /// Any other error (none is expected).
    Other(String),
}

fn expected(ending: Ending) -> Seen {
    let text = ending_server::RESULT_TEXT.to_owned();
    let stated = Seen::Failed {
        code: error_codes::INTERNAL_ERROR,
        message: ending_server::STATUS_MESSAGE.to_owned(),
    };
    let rpc = Seen::Failed {
        code: ending_server::ERROR_CODE,
        message: "backend down".to_owned(),
    };
    let tool_said = Seen::Failed {
        code: error_codes::INTERNAL_ERROR,
        message: text.clone(),
    };
    match (ending.status, ending.payload) {
        ("cancelled", _) => Seen::Cancelled,
        ("failed", Payload::RpcError) => rpc,
        ("failed", Payload::Content | Payload::ToolError) => tool_said,
        ("failed", _) => stated,
        (_, Payload::Content) => Seen::Completed {
            is_error: false,
            text,
        },
        (_, Payload::ToolError) => Seen::Completed {
            is_error: true,
            text,
        },
        (_, Payload::BareMeta) => Seen::Completed {
            is_error: false,
            text: String::new(),
        },
        (_, Payload::RpcError) => rpc,
        (_, Payload::Nothing) => Seen::Malformed,
    }
}

fn seen_outcome(outcome: &Outcome) -> Seen {
    match outcome {
        Outcome::Completed(r) => Seen::Completed {
            is_error: r.is_error,
            text: r.joined_text(),
        },
        Outcome::Failed(e) => Seen::Failed {
            code: e.code,
            message: e.message.clone(),
        },
        Outcome::Cancelled => Seen::Cancelled,
        other => panic!("unexpected outcome {other:?}"),
    }
}

fn seen_error(e: &Error) -> Seen {
    if e.is_protocol() {
        return Seen::Malformed;
    }
    // What `Outcome::into_result` makes of an ended task, as its text says.
    let text = e.to_string();
    if text.contains("the task was cancelled") {
        return Seen::Cancelled;
    }
    match e.rpc_error() {
        Some(rpc) if text.contains("the task failed") => Seen::Failed {
            code: rpc.code,
            message: rpc.message.clone(),
        },
        _ => Seen::Other(e.to_string()),
    }
}

#[derive(Debug, Clone, Copy)]
enum Over {
    Stdio,
    Http,
}

async fn connect(ending: Ending, over: Over) -> Client {
    let builder = Client::builder().request_timeout(Duration::from_secs(5));
    let connected = match over {
        Over::Stdio => {
            let child = Stdio::command(std::env::current_exe().unwrap())
                .args(ending.args())
                .stderr(Stderr::Null);
            builder.connect(child).await
        }
        Over::Http => {
            builder
                .connect(Http::new(ending_server::serve_http(ending)))
                .await
        }
    };
    connected.unwrap_or_else(|e| panic!("connect to {ending:?} over {over:?}: {e}"))
}

/// Through the typestate API: the call's state, driven to its end.
async fn typestate(client: &Client) -> Seen {
    let state = client
        .task()
        .timeout(Duration::from_secs(5))
        .call_tool("work", json!({}))
        .await;
    let state = match state {
        Ok(state) => state,
        Err(e) => return seen_error(&e),
    };
    let finished = match state {
        mcp_tasks::TaskState::Pending(t) => t.finish().await,
        mcp_tasks::TaskState::InputRequired(t) => t.finish().await,
        mcp_tasks::TaskState::Finished(t) => Ok(t),
    };
    match finished {
        Ok(task) => seen_outcome(task.outcome()),
        Err(e) => seen_error(e.error()),
    }
}

/// Through `Client::call_tool`: a completion is `Ok`, anything else `Err`.
async fn plain(client: &Client) -> Seen {
    match client.call_tool("work", json!({})).await {
        Ok(r) => Seen::Completed {
            is_error: r.is_error,
            text: r.joined_text(),
        },
        Err(e) => seen_error(&e),
    }
}

/// Every status × payload of one era over one transport; the mismatches
/// are listed together.
async fn matrix(era: Era, over: Over) {
    let mut wrong = Vec::new();
    for status in STATUSES {
        for payload in PAYLOADS {
            let ending = Ending {
                era,
                status,
                payload,
            };
            let want = expected(ending);
            let client = connect(ending, over).await;
            let by_state = typestate(&client).await;
            let by_call = plain(&client).await;
            for (api, got) in [("typestate", by_state), ("call_tool", by_call)] {
                if got != want {
                    wrong.push(format!(
                        "{status} + {payload:?} via {api}: {got:?}, want {want:?}"
                    ));
                }
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "{era:?} over {over:?}:\n{}",
        wrong.join("\n")
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--serve-ending") {
        ending_server::serve_stdio(Ending::parse(&args[i + 1..]));
        return;
    }
    let cases = runner::cases![
        modern_over_stdio => matrix(Era::Modern, Over::Stdio),
        modern_over_http => matrix(Era::Modern, Over::Http),
        legacy_over_stdio => matrix(Era::Legacy, Over::Stdio),
        legacy_over_http => matrix(Era::Legacy, Over::Http),
    ];
    runner::run(&args, &cases);
}
