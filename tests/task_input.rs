//! Input inside tasks: handlers, manual answers, the ledger, validation.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{ElicitResult, InputResponses, TaskStatus};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::{InputMode, TaskState};
use serde_json::json;
use support::*;

fn approval() -> TestServer {
    TestServer::new().tool(ScriptedTool::task(
        "approve",
        TaskScript::new()
            .poll_interval(ms(100))
            .input(ms(50), requests(&["first", "second"]))
            .complete_with_inputs(ms(50)),
    ))
}

#[tokio::test(start_paused = true)]
async fn handlers_answer_each_key_once_across_repeated_snapshots() {
    let server = approval();
    let calls = Arc::new(AtomicUsize::new(0));
    let client = client_with(&server, counting_forms(calls.clone())).await;
    let done = finish_call(&client, "approve").await;
    let structured = structured(&done);
    assert_eq!(structured["inputResponses"]["first"]["action"], "accept");
    assert_eq!(
        structured["inputResponses"]["second"]["content"]["ok"],
        true
    );
    assert_eq!(calls.load(Ordering::SeqCst), 2, "one handler call per key");
    let updates = of(&server, "tasks/update");
    assert_eq!(updates.len(), 1, "one tasks/update for both keys");
}

#[tokio::test(start_paused = true)]
async fn each_round_of_input_sends_only_its_new_keys() {
    // Two rounds of input: each tasks/update carries only the new key.
    let server = TestServer::new().tool(ScriptedTool::task(
        "approve",
        TaskScript::new()
            .poll_interval(ms(100))
            .input(ms(50), requests(&["first"]))
            .input(ms(0), requests(&["second"]))
            .complete_with_inputs(ms(50)),
    ));
    let calls = Arc::new(AtomicUsize::new(0));
    let client = client_with(&server, counting_forms(calls.clone())).await;
    let _done = finish_call(&client, "approve").await;
    assert_eq!(calls.load(Ordering::SeqCst), 2);
    let answered: Vec<Vec<String>> = of(&server, "tasks/update")
        .iter()
        .map(|u| {
            u.params["inputResponses"]
                .as_object()
                .unwrap()
                .keys()
                .cloned()
                .collect()
        })
        .collect();
    assert_eq!(
        answered,
        [vec!["first".to_string()], vec!["second".to_string()]]
    );
}

#[tokio::test(start_paused = true)]
async fn without_a_handler_the_wait_stops_at_input_required() {
    let server = approval();
    let client = client(&server).await;
    let err = call_and_wait(&client, "approve").await.unwrap_err();
    assert!(err.error().is_input_required(), "{}", err.error());
    let TaskState::InputRequired(task) = err.into_task() else {
        panic!("expected input_required")
    };
    let keys: Vec<_> = task.requests().keys().cloned().collect();
    assert_eq!(keys, ["first", "second"]);
    assert_eq!(server.count("tasks/update"), 0);
}

#[tokio::test(start_paused = true)]
async fn manual_mode_stops_even_with_handlers_and_respond_accepts_partial_answers() {
    let server = approval();
    let calls = Arc::new(AtomicUsize::new(0));
    let client = client_with(&server, counting_forms(calls.clone())).await;
    let state = client
        .task()
        .input(InputMode::Manual)
        .call_tool("approve", json!({}))
        .await
        .unwrap();
    let err = state.finish().await.unwrap_err();
    let TaskState::InputRequired(task) = err.into_task() else {
        panic!()
    };
    assert_eq!(calls.load(Ordering::SeqCst), 0);

    let first: InputResponses = [(
        "first".to_string(),
        ElicitResult::accept(json!({"ok": true})).into(),
    )]
    .into();
    let TaskState::InputRequired(task) = task.respond(first.clone()).await.unwrap() else {
        panic!("one key is still open")
    };
    assert_eq!(task.requests().keys().collect::<Vec<_>>(), ["second"]);

    // Answering `first` again is refused locally.
    let err = task.respond(first).await.unwrap_err();
    assert!(err.error().is_builder(), "{}", err.error());
    let task = err.into_task();

    let second: InputResponses = [("second".to_string(), ElicitResult::decline().into())].into();
    let state = task.respond(second).await.unwrap();
    assert!(matches!(state, TaskState::Pending(_)));
    let done = state.await.unwrap();
    let s = structured(&done);
    assert_eq!(s["inputResponses"]["second"]["action"], "decline");
    assert_eq!(server.count("tasks/update"), 2);
}

#[tokio::test(start_paused = true)]
async fn invalid_manual_answers_are_not_sent() {
    let server = approval();
    let client = client(&server).await;
    let err = call_and_wait(&client, "approve").await.unwrap_err();
    let TaskState::InputRequired(task) = err.into_task() else {
        panic!()
    };
    // Missing the schema's required field.
    let bad: InputResponses =
        [("first".to_string(), ElicitResult::accept(json!({})).into())].into();
    let err = task.respond(bad).await.unwrap_err();
    assert!(
        err.error().is_builder() && err.to_string().contains("required"),
        "{}",
        err.error()
    );
    let unknown: InputResponses = [("nope".to_string(), ElicitResult::decline().into())].into();
    let err = err.into_task().respond(unknown).await.unwrap_err();
    assert!(err.to_string().contains("not outstanding"));
    assert_eq!(server.count("tasks/update"), 0);
}

#[tokio::test(start_paused = true)]
async fn a_failing_handler_returns_a_clear_error_with_the_handle() {
    let server = approval();
    let handlers = InputHandlers::new()
        .elicitation_form(|_| async { Err("the user closed the dialog".into()) });
    let client = client_with(&server, handlers).await;
    let err = call_and_wait(&client, "approve").await.unwrap_err();
    assert!(err.error().is_input(), "{}", err.error());
    assert!(err.to_string().contains("closed the dialog"));
    assert!(err.error().task_id().is_some());
    assert!(matches!(err.into_task(), TaskState::InputRequired(_)));
    assert_eq!(server.count("tasks/update"), 0);
}

#[tokio::test(start_paused = true)]
async fn an_invalid_handler_answer_is_an_error_not_a_send() {
    let server = approval();
    let handlers = InputHandlers::new()
        .elicitation_form(|_| async { Ok(ElicitResult::accept(json!({"ok": {"nested": 1}}))) });
    let client = client_with(&server, handlers).await;
    let err = call_and_wait(&client, "approve").await.unwrap_err();
    assert!(
        err.error().is_input() && err.to_string().contains("invalid"),
        "{}",
        err.error()
    );
    assert_eq!(server.count("tasks/update"), 0);
}

#[tokio::test(start_paused = true)]
async fn an_input_required_seed_is_read_at_once() {
    let server = TestServer::new().tool(ScriptedTool::task(
        "approve",
        TaskScript::new()
            .initial_status(TaskStatus::InputRequired)
            .input(ms(0), requests(&["first"]))
            .complete_with_inputs(ms(10)),
    ));
    let client = client(&server).await;
    let state = client.task().call_tool("approve", json!({})).await.unwrap();
    let TaskState::InputRequired(task) = state else {
        panic!("expected input_required, got {state:?}")
    };
    assert_eq!(task.requests().len(), 1);
    assert_eq!(server.count("tasks/get"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_stale_snapshot_after_the_update_is_not_answered_again() {
    // tasks/update is eventually consistent: the next read may still list
    // the key just answered. It must not be answered twice.
    let asking = |status: &str| {
        json!({
            "resultType": "complete", "taskId": "t-9", "status": status, "ttlMs": null,
            "pollIntervalMs": 100,
            "inputRequests": {"first": {"method": "elicitation/create",
                "params": {"message": "OK?", "requestedSchema": {"type": "object"}}}}
        })
    };
    let (canned, transport) = CannedPeer::start(vec![
        (
            "tools/call",
            json!({"resultType": "task", "taskId": "t-9", "status": "working", "ttlMs": null, "pollIntervalMs": 100}),
        ),
        ("tasks/get", asking("input_required")),
        ("tasks/update", json!({"resultType": "complete"})),
        ("tasks/get", asking("input_required")),
        ("tasks/get", asking("input_required")),
        (
            "tasks/get",
            json!({"resultType": "complete", "taskId": "t-9", "status": "completed", "ttlMs": null,
            "result": {"content": [{"type": "text", "text": "done"}]}}),
        ),
    ]);
    let calls = Arc::new(AtomicUsize::new(0));
    let client = mcp_tasks::Client::builder()
        .input_handlers(counting_forms(calls.clone()))
        .connect(transport)
        .await
        .unwrap();
    let done = finish_call(&client, "approve").await;
    assert_eq!(done.into_result().unwrap().joined_text(), "done");
    assert_eq!(calls.load(Ordering::SeqCst), 1, "the handler ran once");
    assert_eq!(
        canned.methods(),
        [
            "tools/call",
            "tasks/get",
            "tasks/update",
            "tasks/get",
            "tasks/get",
            "tasks/get"
        ]
    );
}
