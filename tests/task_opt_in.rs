//! The legacy `params.task` opt-in: sent on a `tools/call` only for a tool
//! the last `list_tools()` listed with `execution.taskSupport` `optional`
//! or `required`, and a hint when a server that wants it is called blind.

mod support;

use std::time::Duration;

use mcp_tasks::TaskState;
use mcp_tasks::protocol::{TaskSupport, Tool};
use mcp_tasks::testing::{Faults, ScriptedTool, TaskScript, TestServer};
use serde_json::{Value, json};
use support::*;

/// A neva-like server: `export` runs as a task only when the call carries
/// `params.task`, and says so in `tools/list`.
fn legacy_server() -> TestServer {
    TestServer::new().tool(
        ScriptedTool::task(
            "export",
            TaskScript::new()
                .poll_interval(ms(50))
                .complete(ms(120), text("exported")),
        )
        .task_support(TaskSupport::Required)
        .require_task_param(),
    )
}

/// The `params.task` of each `tools/call` the server received, as bytes
/// (`None` when absent).
fn task_params(server: &TestServer) -> Vec<Option<String>> {
    of(server, "tools/call")
        .iter()
        .map(|r| r.params.get("task").map(Value::to_string))
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_listed_required_tool_gets_the_opt_in_and_runs_as_a_task() {
    let server = legacy_server();
    let client = client(&server).await;
    client.list_tools().await.unwrap();
    let state = client.task().call_tool("export", json!({})).await.unwrap();
    assert!(matches!(state, TaskState::Pending(_)), "{state:?}");
    let finished = state.await.unwrap();
    assert_eq!(
        finished.outcome().result().unwrap().joined_text(),
        "exported"
    );
    // The plain call goes through the same path and drives the task too.
    let plain = client.call_tool("export", json!({})).await.unwrap();
    assert_eq!(plain.joined_text(), "exported");
    assert_eq!(
        task_params(&server),
        [Some("{}".to_owned()), Some("{}".to_owned())]
    );
    // The rest of the params is unchanged by the opt-in.
    let call = &of(&server, "tools/call")[0];
    let mut keys: Vec<_> = call.params.as_object().unwrap().keys().cloned().collect();
    keys.sort();
    assert_eq!(keys, ["_meta", "arguments", "name", "task"]);
    assert_eq!(
        server.count("tools/list"),
        1,
        "no listing behind the caller's back"
    );
}

#[tokio::test(start_paused = true)]
async fn the_opt_in_carries_the_builders_ttl() {
    let server = legacy_server();
    let client = client(&server).await;
    client.list_tools().await.unwrap();
    let state = client
        .task()
        .with_ttl(Duration::from_millis(1500))
        .call_tool("export", json!({}))
        .await
        .unwrap();
    let finished = state.await.unwrap();
    assert!(finished.outcome().is_completed());
    assert_eq!(task_params(&server), [Some(r#"{"ttl":1500}"#.to_owned())]);
}

#[tokio::test(start_paused = true)]
async fn the_opt_in_is_sent_only_for_listed_optional_or_required_tools() {
    let done = || TaskScript::new().complete(ms(10), text("done"));
    let server = TestServer::new()
        .tool(ScriptedTool::task("required", done()).task_support(TaskSupport::Required))
        .tool(ScriptedTool::task("optional", done()).task_support(TaskSupport::Optional))
        .tool(ScriptedTool::task("forbidden", done()).task_support(TaskSupport::Forbidden))
        .tool(
            ScriptedTool::task("odd", done()).task_support(TaskSupport::Other("sometimes".into())),
        )
        .tool(ScriptedTool::task("plain", done()));
    let names = ["required", "optional", "forbidden", "odd", "plain"];
    let client = client(&server).await;
    // Before any listing: never.
    for name in names {
        client.call_tool(name, json!({})).await.unwrap();
    }
    assert_eq!(task_params(&server), [None, None, None, None, None]);
    // After it: only for `optional` and `required`.
    let tools = client.list_tools().await.unwrap();
    assert_eq!(
        tools.iter().map(Tool::task_support).collect::<Vec<_>>(),
        [
            Some(&TaskSupport::Required),
            Some(&TaskSupport::Optional),
            Some(&TaskSupport::Forbidden),
            Some(&TaskSupport::Other("sometimes".into())),
            None
        ]
    );
    for name in names {
        client.call_tool(name, json!({})).await.unwrap();
    }
    let empty = Some("{}".to_owned());
    assert_eq!(
        task_params(&server)[5..],
        [empty.clone(), empty, None, None, None]
    );
    // The raw request is sent as given.
    client
        .request("tools/call", json!({ "name": "required", "arguments": {} }))
        .await
        .unwrap();
    assert_eq!(task_params(&server)[10], None);
}

#[tokio::test(start_paused = true)]
async fn a_failed_listing_keeps_what_the_client_knew() {
    let server = TestServer::new().tool(
        ScriptedTool::task("export", TaskScript::new().complete(ms(10), text("done")))
            .task_support(TaskSupport::Optional),
    );
    let client = client(&server).await;
    client.list_tools().await.unwrap();
    // The server now answers tools/list with a task, which it cannot be.
    let _ = server
        .clone()
        .faults(Faults::new().task_result_for("tools/list"));
    assert!(client.list_tools().await.unwrap_err().is_protocol());
    client.call_tool("export", json!({})).await.unwrap();
    assert_eq!(task_params(&server), [Some("{}".to_owned())]);
}

#[tokio::test(start_paused = true)]
async fn the_opt_in_is_kept_on_input_rounds() {
    let server = TestServer::new().tool(
        ScriptedTool::input_required("ask", requests(&["confirm"]), None, text("ok"))
            .task_support(TaskSupport::Optional),
    );
    let handlers = mcp_tasks::input::InputHandlers::new().elicitation_form(|_| async {
        Ok(mcp_tasks::protocol::ElicitResult::accept(
            json!({ "ok": true }),
        ))
    });
    let client = client_with(&server, handlers).await;
    client.list_tools().await.unwrap();
    client.call_tool("ask", json!({})).await.unwrap();
    let empty = Some("{}".to_owned());
    assert_eq!(task_params(&server), [empty.clone(), empty]);
}

#[tokio::test(start_paused = true)]
async fn a_blind_call_to_a_legacy_required_tool_says_to_list_tools_first() {
    let server = legacy_server();
    let client = client(&server).await;
    let err = client
        .task()
        .call_tool("export", json!({}))
        .await
        .unwrap_err();
    assert!(err.is_missing_capability(), "{err}");
    assert!(err.is_rpc());
    assert_eq!(err.rpc_error().map(|e| e.code), Some(-32601));
    assert_eq!(
        err.to_string(),
        "tools/call: the server answered with an error: Tool required task augmented call \
         (code -32601); the server wants the 2025-11-25 `task` opt-in for this tool: \
         call list_tools() first so the client knows the tool wants a task"
    );
    assert!(format!("{err:?}").contains("list_tools()"));
    let err = client.call_tool("export", json!({})).await.unwrap_err();
    assert!(err.is_missing_capability(), "{err}");
    assert_eq!(task_params(&server), [None, None]);
    // Following the hint works.
    client.list_tools().await.unwrap();
    let result = client.call_tool("export", json!({})).await.unwrap();
    assert_eq!(result.joined_text(), "exported");
}

#[tokio::test(start_paused = true)]
async fn no_hint_once_the_tool_was_listed() {
    // The server wants the opt-in but does not advertise it: the listing
    // shows no task support, so the client has nothing to suggest.
    let server = TestServer::new()
        .tool(ScriptedTool::task("export", TaskScript::new()).require_task_param());
    let client = client(&server).await;
    client.list_tools().await.unwrap();
    let err = client.call_tool("export", json!({})).await.unwrap_err();
    assert!(!err.is_missing_capability(), "{err}");
    assert!(!err.to_string().contains("list_tools"), "{err}");
    assert_eq!(err.rpc_error().map(|e| e.code), Some(-32601));
    // Another -32601 on tools/call gets no hint either.
    let err = client.call_tool("missing", json!({})).await.unwrap_err();
    assert!(!err.is_missing_capability(), "{err}");
}
