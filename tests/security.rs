//! Security properties: task ids (which may act as bearer tokens) never
//! appear in full in `Debug` or `Display`; URL elicitations are only ever
//! handed to a handler; sampling and roots requests are never answered
//! without one. (Logs: `security_logs.rs`; size limits: `faults_wire.rs`;
//! child processes that would outlive the client: `faults_stdio.rs`.)

mod support;

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use mcp_tasks::input::{InputHandlers, UrlRequest};
use mcp_tasks::protocol::{
    CreateMessageResult, ElicitResult, InputRequest, InputRequests, ListRootsResult,
    META_CLIENT_CAPABILITIES, Root, TaskId,
};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::transport::{Inbound, Outbound, Stdio};
use mcp_tasks::{Client, InputRequired, Task, TaskRef, TaskState};
use serde_json::json;
use support::*;

/// The part of a test-server task id that makes it unguessable: everything
/// after `task-N-`.
fn secret(id: &TaskId) -> &str {
    id.expose().rsplit('-').next().unwrap()
}

/// Calls `export` and checks the wait stops at `input_required`; the handle.
async fn export_stops_at_input(client: &Client) -> Task<InputRequired> {
    let err = call_and_wait(client, "export").await.unwrap_err();
    assert!(err.error().is_input_required(), "{}", err.error());
    let TaskState::InputRequired(task) = err.into_task() else {
        panic!("expected input_required")
    };
    task
}

/// Calls the `input_required` tool `deploy` (the second `tools/call`) and
/// checks it fails as input required with no retry sent.
async fn assert_deploy_is_left_to_the_caller(client: &Client, server: &TestServer) {
    let e = client.call_tool("deploy", json!({})).await.unwrap_err();
    assert!(e.is_input_required(), "{e}");
    assert_eq!(server.count("tools/call"), 2, "no MRTR retry was sent");
}

#[tokio::test(start_paused = true)]
async fn task_ids_are_redacted_in_debug_and_display() {
    let server = polled_export(ms(100), ms(10_000), "done");
    let client = client(&server).await;
    let state = start_export_within(&client, ms(300)).await;
    let id = state.id().unwrap().clone();
    let hidden = secret(&id).to_owned();
    assert!(hidden.len() >= 16, "{hidden}");
    let snapshot = client.get_task(&id).await.unwrap();
    let reference = TaskRef::new(id.clone(), Some("srv".into()));
    let err = state.await.unwrap_err();
    assert!(err.error().is_deadline());
    let outbound = {
        let mut o = Outbound::new(
            json!({"jsonrpc": "2.0", "id": 7, "method": "tasks/get", "params": {"taskId": id.expose()}})
                .to_string(),
            "tasks/get",
        );
        o.name = Some(id.expose().to_owned());
        o
    };
    let inbound = Inbound::Message(serde_json::to_string(&snapshot).unwrap());
    let stdio = Stdio::command("server").env("API_TOKEN", &hidden);

    let mut shown = String::new();
    write!(shown, "{} {id:?} {reference:?} {snapshot:?}", id.redacted()).unwrap();
    write!(shown, " {} {:?} {err:?}", err.error(), err.error()).unwrap();
    write!(shown, " {:?}", err.error().task_id()).unwrap();
    write!(shown, " {outbound:?} {inbound:?} {stdio:?}").unwrap();
    let task = err.into_task();
    write!(shown, " {task:?}").unwrap();
    assert!(!shown.contains(&hidden), "a task id leaked: {shown}");
    assert!(!shown.contains(id.expose()));
    // What is shown is enough to tell tasks apart in a log.
    assert!(shown.contains(&id.redacted()), "{shown}");
    assert!(shown.contains("API_TOKEN"), "{shown}");
    // Serialization, for storage, keeps the id.
    assert!(
        serde_json::to_string(&reference)
            .unwrap()
            .contains(id.expose())
    );
}

fn url_request() -> InputRequests {
    [(
        "login".to_owned(),
        InputRequest::url("Sign in to continue", "https://example.com/login?state=s1"),
    )]
    .into()
}

/// A server whose `export` task asks `requests` once and completes with
/// the answers, and whose `deploy` tool asks them as `input_required`.
fn asking(requests: InputRequests) -> TestServer {
    export(
        TaskScript::new()
            .poll_interval(ms(100))
            .input(ms(50), requests.clone())
            .complete_with_inputs(ms(50)),
    )
    .tool(ScriptedTool::input_required(
        "deploy",
        requests,
        None,
        text("deployed"),
    ))
}

fn caps_sent(server: &TestServer, method: &str) -> serde_json::Value {
    of(server, method)[0].params["_meta"][META_CLIENT_CAPABILITIES].clone()
}

#[tokio::test(start_paused = true)]
async fn a_url_elicitation_is_only_handed_to_a_url_handler() {
    let server = asking(url_request());

    // A client that answers forms only does not declare URL mode, and leaves
    // the URL to its caller.
    let client = client_with(&server, accept_forms()).await;
    let task = export_stops_at_input(&client).await;
    assert!(task.requests().contains_key("login"));
    assert_eq!(server.count("tasks/update"), 0);
    let caps = caps_sent(&server, "tools/call");
    assert!(caps["elicitation"]["form"].is_object(), "{caps}");
    assert!(caps["elicitation"].get("url").is_none(), "{caps}");
    assert_deploy_is_left_to_the_caller(&client, &server).await;

    // With a URL handler, the handler gets the URL exactly as sent, and
    // decides; the client only relays its answer.
    let seen: Arc<Mutex<Vec<UrlRequest>>> = Arc::default();
    let urls = InputHandlers::new().elicitation_url({
        let seen = seen.clone();
        move |req| {
            seen.lock().unwrap().push(req);
            async { Ok(ElicitResult::accept_empty()) }
        }
    });
    let client = client_with(&server, urls).await;
    let done = finish_call(&client, "export").await;
    let inputs = done.into_result().unwrap().structured_content.unwrap();
    assert_eq!(
        inputs["inputResponses"]["login"],
        json!({"action": "accept"})
    );
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].url, "https://example.com/login?state=s1");
    assert_eq!(seen[0].message, "Sign in to continue");
}

fn sampling_and_roots() -> InputRequests {
    let sampling: InputRequest = serde_json::from_value(json!({
        "method": "sampling/createMessage",
        "params": {"messages": [{"role": "user", "content": {"type": "text", "text": "Summarise"}}], "maxTokens": 50}
    }))
    .unwrap();
    let roots: InputRequest = serde_json::from_value(json!({"method": "roots/list"})).unwrap();
    [
        ("summary".to_owned(), sampling),
        ("where".to_owned(), roots),
    ]
    .into()
}

#[tokio::test(start_paused = true)]
async fn sampling_and_roots_are_never_answered_without_a_handler() {
    let server = asking(sampling_and_roots());
    let client = client_with(&server, accept_forms()).await;
    let task = export_stops_at_input(&client).await;
    assert_eq!(task.requests().len(), 2);
    assert_eq!(server.count("tasks/update"), 0);
    let caps = caps_sent(&server, "tools/call");
    assert!(
        caps.get("sampling").is_none() && caps.get("roots").is_none(),
        "{caps}"
    );
    assert_deploy_is_left_to_the_caller(&client, &server).await;

    // Installed handlers answer them.
    let both = InputHandlers::new()
        .sampling(|_| async {
            Ok(CreateMessageResult {
                role: "assistant".into(),
                content: json!({"type": "text", "text": "short"}),
                model: "local".into(),
                stop_reason: None,
            })
        })
        .roots(|_| async {
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///work".into(),
                    name: None,
                }],
            })
        });
    let client = client_with(&server, both).await;
    let done = finish_call(&client, "export").await;
    let inputs = done.into_result().unwrap().structured_content.unwrap();
    assert_eq!(inputs["inputResponses"]["summary"]["model"], "local");
    assert_eq!(
        inputs["inputResponses"]["where"]["roots"][0]["uri"],
        "file:///work"
    );
    assert_eq!(call_text(&client, "deploy").await, "deployed");
}
