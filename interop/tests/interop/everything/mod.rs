//! The official reference server, `@modelcontextprotocol/server-everything`
//! 2026.8.31 (TypeScript SDK 1.x, initialize era), over stdio and over
//! Streamable HTTP (with its session): the client negotiates the era by
//! itself, then lists and calls its tools and answers its elicitation,
//! sampling and roots requests with the same handlers it uses on
//! 2026-07-28.

use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use mcp_tasks::Client;
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{CreateMessageResult, ElicitResult, ListRootsResult, Root};
use mcp_tasks::transport::{Http, Stderr, Stdio, Transport};
use serde_json::json;

mod catalog;
use catalog::{
    a_subscribed_resource_s_update_is_heard, completes_arguments_and_variables,
    lists_and_gets_prompts, lists_its_static_resources, lists_its_templates, reads_text_and_blob,
};

pub(crate) const EVERYTHING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
);

pub(crate) fn installed() {
    assert!(
        Path::new(EVERYTHING).exists(),
        "server-everything is not installed: run `npm ci --prefix interop/everything`"
    );
}

fn handlers() -> InputHandlers {
    InputHandlers::new()
        .elicitation_form(|req| async move {
            // The research task's clarification gets its first choice;
            // anything else is declined.
            if req.requested_schema["properties"]["interpretation"].is_object() {
                let choice = first_choice(&req.requested_schema);
                return Ok(ElicitResult::accept(json!({"interpretation": choice})));
            }
            Ok(ElicitResult::decline())
        })
        .sampling(|_req| async {
            Ok(CreateMessageResult {
                role: "assistant".into(),
                content: json!({"type": "text", "text": "a sampled answer"}),
                model: "interop-model".into(),
                stop_reason: Some("endTurn".into()),
            })
        })
        .roots(|_req| async {
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///interop/root".into(),
                    name: Some("interop".into()),
                }],
            })
        })
}

async fn client<T: Transport>(transport: T) -> Client {
    Client::builder()
        .input_handlers(handlers())
        .connect(transport)
        .await
        .expect("connect to server-everything")
}

async fn negotiates_the_initialize_era_and_lists_its_tools(client: Client) {
    assert_eq!(&*client.protocol_version(), "2025-11-25");
    assert!(client.server_id().is_some_and(|n| n.contains("everything")));
    let tools = client.list_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in [
        "echo",
        "get-sum",
        "trigger-elicitation-request",
        "get-roots-list",
    ] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
}

async fn echo_and_get_sum(client: Client) {
    let echo = client
        .call_tool("echo", json!({"message": "hello"}))
        .await
        .unwrap();
    assert_eq!(echo.joined_text(), "Echo: hello");
    let sum = client
        .call_tool("get-sum", json!({"a": 2, "b": 40}))
        .await
        .unwrap();
    assert!(sum.joined_text().contains("is 42"), "{}", sum.joined_text());
}

/// `trigger-long-running-operation` reports each of its steps with
/// `notifications/progress`; the caller sees every one, in order, then
/// the result.
async fn a_long_operation_reports_every_step(client: Client) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    let state = client
        .task()
        .on_progress(move |p| record.lock().unwrap().push((p.progress, p.total)))
        .call_tool(
            "trigger-long-running-operation",
            json!({"duration": 1, "steps": 4}),
        )
        .await
        .unwrap();
    let result = state.finish().await.unwrap().into_result().unwrap();
    assert!(
        result.joined_text().contains("completed"),
        "{}",
        result.joined_text()
    );
    let seen = seen.lock().unwrap().clone();
    let expected: Vec<_> = (1..=4).map(|s| (f64::from(s), Some(4.0))).collect();
    assert_eq!(seen, expected);
}

/// The weather the server's `get-structured-content` reports.
#[derive(Debug, serde::Deserialize)]
struct Weather {
    temperature: f64,
    conditions: String,
    humidity: f64,
}

/// `get-structured-content` returns `structuredContent` beside its text;
/// `structured::<T>()` decodes it.
async fn structured_content_decodes(client: Client) {
    let state = client
        .task()
        .call_tool("get-structured-content", json!({"location": "Chicago"}))
        .await
        .unwrap();
    let finished = state.finish().await.unwrap();
    let weather: Weather = finished.structured().unwrap();
    assert!(weather.conditions.contains("rain"), "{weather:?}");
    assert!(
        weather.temperature > 0.0 && weather.humidity > 0.0,
        "{weather:?}"
    );
}

/// A handler that fails answers the server with a JSON-RPC error, never
/// silence: the tool call ends (with the server's report of the error)
/// instead of hanging.
async fn a_failing_handler_is_answered_with_an_error() {
    let handlers = InputHandlers::new().elicitation_form(|_req| async {
        Err::<ElicitResult, _>("no one is at the keyboard".into())
    });
    let client = Client::builder()
        .input_handlers(handlers)
        .connect(stdio::command())
        .await
        .unwrap();
    let outcome = client
        .call_tool("trigger-elicitation-request", json!({}))
        .await;
    match outcome {
        Ok(result) => assert!(result.is_error, "{}", result.joined_text()),
        Err(e) => assert!(e.is_rpc(), "{e}"),
    }
}

/// `toggle-simulated-logging` starts the server's log messages (one at
/// once, then one every 5 s, at random levels, filtered by the level the
/// client set): they reach the builder's `on_log`.
async fn log_messages_reach_the_caller<T: Transport>(transport: T) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let client = Client::builder()
        .input_handlers(handlers())
        .on_log(move |msg: mcp_tasks::protocol::LogMessage| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(msg);
            }
        })
        .connect(transport)
        .await
        .unwrap();
    client
        .set_log_level(mcp_tasks::protocol::LogLevel::Debug)
        .await
        .unwrap();
    let started = client
        .call_tool("toggle-simulated-logging", json!({}))
        .await
        .unwrap();
    assert!(
        started.joined_text().starts_with("Started"),
        "{}",
        started.joined_text()
    );
    // The server logs other things too (over HTTP, "Roots updated" once
    // the roots arrive on its GET stream): wait for a simulated line.
    loop {
        let msg = rx.recv().await.expect("a log message");
        let text = msg.data.as_str().unwrap_or_default().to_owned();
        if text.contains("-level message") || text.contains("level-message") {
            break;
        }
    }
    let stopped = client
        .call_tool("toggle-simulated-logging", json!({}))
        .await
        .unwrap();
    assert!(
        stopped.joined_text().starts_with("Stopped"),
        "{}",
        stopped.joined_text()
    );
}

/// `trigger-url-elicitation`: a 2025-11-25 URL elicitation with its
/// `elicitationId` reaches the URL handler, whose answer the server reports.
async fn a_url_elicitation_reaches_the_url_handler<T: Transport>(transport: T) {
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
    let handlers = handlers().elicitation_url(move |req: mcp_tasks::input::UrlRequest| {
        let tx = tx.clone();
        async move {
            let _ = tx.send((req.url, req.elicitation_id));
            Ok(ElicitResult::accept_empty())
        }
    });
    let client = Client::builder()
        .input_handlers(handlers)
        .connect(transport)
        .await
        .unwrap();
    let result = client
        .call_tool(
            "trigger-url-elicitation",
            json!({"url": "https://example.com/consent", "elicitationId": "interop-1"}),
        )
        .await
        .unwrap();
    assert!(
        result
            .joined_text()
            .contains("completed the URL elicitation"),
        "{}",
        result.joined_text()
    );
    let (url, id) = rx.recv().await.unwrap();
    assert_eq!(url, "https://example.com/consent");
    assert_eq!(id.as_deref(), Some("interop-1"));
}

/// `trigger-elicitation-request-async` and `trigger-sampling-request-async`:
/// the server asks the client to run the request as a task (2025-11-25,
/// the client declares `tasks.requests` for its handlers), polls it with
/// `tasks/get` and reads it with `tasks/result`.
async fn the_server_s_async_requests_run_as_client_hosted_tasks(client: Client) {
    let names: Vec<String> = client
        .list_tools()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for tool in [
        "trigger-elicitation-request-async",
        "trigger-sampling-request-async",
    ] {
        assert!(
            names.iter().any(|n| n == tool),
            "{tool} is listed: {names:?}"
        );
    }
    let elicited = client
        .call_tool("trigger-elicitation-request-async", json!({}))
        .await
        .unwrap();
    let text = elicited.joined_text();
    assert!(text.contains("completed"), "{text}");
    let sampled = client
        .call_tool(
            "trigger-sampling-request-async",
            json!({"prompt": "say something", "maxTokens": 20}),
        )
        .await
        .unwrap();
    let text = sampled.joined_text();
    assert!(
        text.contains("completed") && text.contains("a sampled answer"),
        "{text}"
    );
    assert!(client.stats().hosted_tasks >= 2, "kept for their ttl");
}

/// The first interpretation the server offers in a form's `oneOf`.
fn first_choice(schema: &serde_json::Value) -> String {
    schema["properties"]["interpretation"]["oneOf"][0]["const"]
        .as_str()
        .unwrap_or("technical")
        .to_owned()
}

/// `simulate-research-query`, a 2025-11-25 task (`taskSupport: required`):
/// four stages seen as status messages, then the report. With
/// `ambiguous`, the server asks for a clarification during the task (on
/// `tasks/result`), answered by the form handler.
async fn a_research_task_runs_its_stages(client: Client, ambiguous: bool) {
    let mut state = client
        .task()
        .call_tool(
            "simulate-research-query",
            json!({"topic": "rust", "ambiguous": ambiguous}),
        )
        .await
        .unwrap();
    let mut messages = Vec::new();
    let finished = loop {
        state = match state {
            mcp_tasks::TaskState::Pending(task) => {
                messages.extend(task.status_message().map(str::to_owned));
                task.next().await.unwrap()
            }
            mcp_tasks::TaskState::InputRequired(task) => {
                // `next()` shows the question; `finish()` has the
                // handlers answer it and waits for the end.
                assert!(ambiguous, "asked: {:?}", task.requests().keys());
                break task.finish().await.unwrap();
            }
            mcp_tasks::TaskState::Finished(task) => break task,
        };
    };
    messages.dedup();
    let stages = messages.iter().filter(|m| m.ends_with("...")).count();
    // Asked for a clarification, the task may ask after its first stage:
    // the stages after the answer run inside `finish`, unseen here (the
    // run without a question sees them all).
    let least = if ambiguous { 1 } else { 2 };
    assert!(stages >= least, "too few stages seen: {messages:?}");
    let report = finished.into_result().unwrap().joined_text();
    assert!(report.contains("Research Report: rust"), "{report}");
    if ambiguous {
        assert!(report.contains("Clarification"), "{report}");
    }
}

/// The same clarification answered by hand: `InputMode::Manual` stops at
/// `Task<InputRequired>`, and `respond` answers the server's request.
async fn a_research_clarification_is_answered_by_hand(client: Client) {
    use mcp_tasks::protocol::InputRequest;
    let mut state = client
        .task()
        .input(mcp_tasks::InputMode::Manual)
        .call_tool(
            "simulate-research-query",
            json!({"topic": "rust", "ambiguous": true}),
        )
        .await
        .unwrap();
    let asked = loop {
        state = match state {
            mcp_tasks::TaskState::Pending(task) => task.next().await.unwrap(),
            mcp_tasks::TaskState::InputRequired(task) => break task,
            mcp_tasks::TaskState::Finished(_) => panic!("the server asks first"),
        };
    };
    let (key, request) = asked.requests().iter().next().unwrap();
    let InputRequest::Elicitation(mcp_tasks::protocol::ElicitRequest::Form {
        requested_schema,
        ..
    }) = request
    else {
        panic!("a form: {request:?}");
    };
    let choice = first_choice(requested_schema);
    let key = key.clone();
    let state = asked
        .respond_one(
            key,
            ElicitResult::accept(json!({"interpretation": choice.clone()})).into(),
        )
        .await
        .unwrap();
    let report = state
        .finish()
        .await
        .unwrap()
        .into_result()
        .unwrap()
        .joined_text();
    assert!(
        report.contains(&choice),
        "the answer reached the server: {report}"
    );
}

/// `roots`: whether to ask for the roots too (over HTTP the server sends
/// `roots/list` on its own GET stream).
async fn its_requests_are_answered_by_the_handlers(client: Client, roots: bool) {
    let elicited = client
        .call_tool("trigger-elicitation-request", json!({}))
        .await
        .unwrap();
    assert!(
        elicited.joined_text().to_lowercase().contains("decline"),
        "{}",
        elicited.joined_text()
    );
    let sampled = client
        .call_tool(
            "trigger-sampling-request",
            json!({"prompt": "say something", "maxTokens": 20}),
        )
        .await
        .unwrap();
    assert!(
        sampled.joined_text().contains("a sampled answer"),
        "{}",
        sampled.joined_text()
    );
    if !roots {
        return;
    }
    let roots = client.call_tool("get-roots-list", json!({})).await.unwrap();
    assert!(
        roots.joined_text().contains("file:///interop/root"),
        "{}",
        roots.joined_text()
    );
}

/// A research task tracked by a worker, its clarification asked on
/// `tasks/result` (this era's only way). With `handlers`, the worker
/// answers it within its step and the report carries the clarification.
/// Without (a person who never answers in time: the client declares
/// elicitation, so the server asks), nobody can answer while the request
/// is open: the question is recorded, closes when the step lets go of the
/// task (the request is refused), an answer given afterwards is refused as
/// closed, and the task ends with the server's own outcome, printed.
async fn a_tracked_clarification(client: Client, handlers: bool) {
    use mcp_tasks::store::{Ending, MemoryStore, Refusal, TaskStore, Tracker};
    let tracker = Tracker::builder(MemoryStore::new(), client.clone())
        .worker("w")
        .min_poll_interval(Duration::from_millis(50))
        .answer_within(Duration::from_millis(300))
        .build();
    let id = tracker
        .call_tool(
            client.task(),
            "simulate-research-query",
            json!({"topic": "rust", "ambiguous": true}),
        )
        .await
        .unwrap()
        .record()
        .expect("a task");
    let mut ending: Option<Ending> = None;
    while ending.is_none() {
        tracker
            .pass(|d| {
                ending = Some(d.ending().clone());
                async { true }
            })
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let ending = ending.unwrap();
    let record = tracker.store().get(id).await.unwrap().unwrap();
    let (key, question) = record
        .questions
        .iter()
        .next()
        .expect("the clarification is recorded");
    assert!(question.is_closed(), "{question:?}");
    if handlers {
        let report = ending.outcome().unwrap().into_result().unwrap();
        assert!(report.joined_text().contains("Clarification"), "{report:?}");
    } else {
        // What this server does with a refused question: it goes on with a
        // default interpretation and completes.
        let report = ending.outcome().unwrap().into_result().unwrap();
        assert!(
            report
                .joined_text()
                .contains("default - elicitation unavailable"),
            "{report:?}"
        );
    }
    let late = tracker
        .answer(
            id,
            key,
            ElicitResult::accept(json!({"interpretation": "x"})),
        )
        .await
        .unwrap_err();
    assert!(
        matches!(
            late.refusal(),
            Some(Refusal::Closed { .. } | Refusal::Answered { .. })
        ),
        "{late}"
    );
}

/// One test per scenario, in the module that invokes it: each starts that
/// module's `server()` and gives the scenario a client connected to it
/// (`client`) or the transport to it (`transport`), then any further
/// arguments.
macro_rules! scenario_tests {
    ($($name:ident = $scenario:ident($with:ident $(, $arg:expr)*);)*) => {$(
        #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
        async fn $name() {
            crate::support::bounded(async {
                let server = server().await;
                super::$scenario(server.$with().await $(, $arg)*).await;
            })
            .await;
        }
    )*};
}

/// The scenarios that run alike over stdio and over HTTP.
macro_rules! over_either_transport {
    () => {
        scenario_tests! {
            negotiates_the_initialize_era_and_lists_its_tools =
                negotiates_the_initialize_era_and_lists_its_tools(client);
            echo_and_get_sum = echo_and_get_sum(client);
            a_long_operation_reports_every_step = a_long_operation_reports_every_step(client);
            structured_content_decodes = structured_content_decodes(client);
            a_research_task_runs_its_stages = a_research_task_runs_its_stages(client, false);
            a_research_clarification_is_answered_by_the_handler =
                a_research_task_runs_its_stages(client, true);
            a_research_clarification_is_answered_by_hand =
                a_research_clarification_is_answered_by_hand(client);
            the_server_s_async_requests_run_as_client_hosted_tasks =
                the_server_s_async_requests_run_as_client_hosted_tasks(client);
            its_elicitation_sampling_and_roots_requests_are_answered_by_the_handlers =
                its_requests_are_answered_by_the_handlers(client, true);
            log_messages_reach_the_caller = log_messages_reach_the_caller(transport);
            a_url_elicitation_reaches_the_url_handler =
                a_url_elicitation_reaches_the_url_handler(transport);
            lists_its_static_resources = lists_its_static_resources(client);
            reads_text_and_blob = reads_text_and_blob(client);
            lists_its_templates = lists_its_templates(client);
            a_subscribed_resource_s_update_is_heard =
                a_subscribed_resource_s_update_is_heard(transport);
            lists_and_gets_prompts = lists_and_gets_prompts(client);
            completes_arguments_and_variables = completes_arguments_and_variables(client);
        }
    };
}

mod stdio {
    use super::*;
    use crate::support::bounded;

    over_either_transport!();

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tracked_clarification_is_answered_by_the_workers_handler() {
        bounded(async { super::a_tracked_clarification(client(command()).await, true).await })
            .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_tracked_clarification_nobody_answers_closes_with_the_step() {
        bounded(async {
            // A person who never answers within the worker's bound.
            let never = InputHandlers::new().elicitation_form(|_| async {
                std::future::pending::<()>().await;
                Ok(ElicitResult::decline())
            });
            let slow = Client::builder()
                .input_handlers(never)
                .connect(command())
                .await
                .expect("connect to server-everything");
            super::a_tracked_clarification(slow, false).await
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_handler_is_answered_with_an_error() {
        bounded(super::a_failing_handler_is_answered_with_an_error()).await;
    }

    /// The command that serves it over stdio.
    pub(super) fn command() -> Stdio {
        installed();
        Stdio::command("node")
            .args([EVERYTHING, "stdio"])
            .stderr(Stderr::Null)
    }

    /// The server over stdio: each transport to it starts a process of
    /// its own.
    struct Server;

    async fn server() -> Server {
        Server
    }

    impl Server {
        async fn transport(&self) -> Stdio {
            command()
        }

        async fn client(&self) -> Client {
            client(command()).await
        }
    }
}

mod http {
    use super::*;
    use crate::support::bounded;

    over_either_transport!();

    /// The TypeScript SDK scopes a 2025-11-25 task to the HTTP session
    /// that made it: the same client resumes it, a new client (a new
    /// session) is told the task is unknown.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_task_resumes_in_its_session_only() {
        bounded(async {
            let server = server().await;
            let first = server.client().await;
            let state = first
                .task()
                .call_tool("simulate-research-query", json!({"topic": "rust"}))
                .await
                .unwrap();
            let reference = state.try_into_pending().expect("a task").reference();
            let again = first.task().resume(&reference).await.unwrap();
            let report = again.finish().await.unwrap().into_result().unwrap();
            assert!(report.joined_text().contains("Research Report"));
            let second = server.client().await;
            let err = second.task().resume(&reference).await.unwrap_err();
            assert!(err.is_task_not_found(), "{err}");
        })
        .await;
    }

    /// The server in `streamableHttp` mode on a free loopback port; killed
    /// when dropped.
    struct Server {
        _child: tokio::process::Child,
        url: String,
    }

    async fn server() -> Server {
        installed();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = tokio::process::Command::new("node")
            .args([EVERYTHING, "streamableHttp"])
            .env("PORT", port.to_string())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts");
        // Ready once it accepts connections (bounded by the scenario).
        while tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_err()
        {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Server {
            _child: child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }

    impl Server {
        async fn transport(&self) -> Http {
            Http::new(&self.url)
        }

        async fn client(&self) -> Client {
            client(self.transport().await).await
        }
    }
}
