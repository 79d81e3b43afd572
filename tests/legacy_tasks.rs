//! Tasks on a 2025-11-25 server (the experimental tasks of the initialize
//! era) behind the same typestate API as on 2026-07-28: the same test body
//! runs against both eras, and the era's own wire (the `task` opt-in,
//! `tasks/get` without payload, `tasks/result` that blocks and carries
//! the input requests, `tasks/cancel` returning the task) is checked, with
//! the ways a server can get it wrong. Paused time throughout.

mod support;

use std::time::Duration;

use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{CallToolResult, ElicitResult, InputResponses, TaskStatus};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::{Client, InputMode, Outcome, TaskState};
use serde_json::json;
use support::*;
use tokio::time::Instant;

async fn legacy_client(server: &LegacyServer, handlers: InputHandlers) -> Client {
    Client::builder()
        .input_handlers(handlers)
        .protocol_version("2025-11-25")
        .connect(server.connect().await)
        .await
        .expect("connect")
}

fn export_steps() -> Vec<Step> {
    vec![
        Step::Work(300, "exporting"),
        Step::Ask("Export 42 rows?"),
        Step::Work(300, "writing"),
    ]
}

/// One body for both eras: a task that works, asks a question the
/// handlers answer, and completes; followed with `next()` and `finish()`.
async fn export_runs_to_its_result(client: Client) {
    let state = client
        .task()
        .with_ttl(Duration::from_secs(120))
        .call_tool("export", json!({"table": "orders"}))
        .await
        .unwrap();
    let TaskState::Pending(task) = state else {
        panic!("the call becomes a task");
    };
    let parked = task.reference();
    let finished = task.finish().await.unwrap();
    assert_eq!(finished.snapshot().status, TaskStatus::Completed);
    assert_eq!(
        finished.outcome().result().unwrap().joined_text(),
        "exported"
    );
    // The reference still names the task.
    assert!(parked.task_id().expose().len() > 3);
}

#[tokio::test(start_paused = true)]
async fn the_same_body_runs_on_2026_07_28() {
    let server = support::export(
        TaskScript::new()
            .working(ms(300), "exporting")
            .input(ms(10), requests(&["confirm"]))
            .working(ms(300), "writing")
            .complete(ms(10), CallToolResult::text("exported")),
    );
    export_runs_to_its_result(client_with(&server, accept_forms()).await).await;
}

#[tokio::test(start_paused = true)]
async fn the_same_body_runs_on_2025_11_25() {
    let server = LegacyServer::new(vec![export()], Knobs::default());
    export_runs_to_its_result(legacy_client(&server, accept_forms()).await).await;
    // The era's wire: the listing, the opt-in with the TTL, the question
    // on `tasks/result`, answered under the server's request id.
    assert_eq!(
        server.seen("tools/list").len(),
        1,
        "listed once for the opt-in"
    );
    let call = &server.seen("tools/call")[0].message;
    assert_eq!(call["params"]["task"], json!({"ttl": 120_000}));
    assert!(call["params"].get("_meta").is_none());
    assert_eq!(server.seen("tasks/result").len(), 1, "one fetch per task");
    let answers = server.answers();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["result"]["action"], "accept");
    assert_eq!(answers[0]["result"]["content"], json!({"ok": true}));
    // A response to a request tied to a task carries the task too.
    assert!(
        answers[0]["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"]
            .as_str()
            .is_some_and(|id| id.starts_with("legacy-task-")),
        "{answers:?}"
    );
}

/// Manual input: the question surfaces as `Task<InputRequired>::requests()`
/// keyed by the server's request id, and `respond` answers it as a JSON-RPC
/// response.
#[tokio::test(start_paused = true)]
async fn manual_input_is_answered_with_respond() {
    let server = LegacyServer::new(vec![export()], Knobs::default());
    let client = legacy_client(&server, accept_forms()).await;
    let state = start_by_hand(&client, "export").await;
    let asked = until_asked(state).await;
    let (key, request) = asked.requests().iter().next().expect("one question");
    let (key, request) = (key.clone(), request.clone());
    assert!(
        key.starts_with("s-"),
        "keyed by the server's request id: {key}"
    );
    assert_eq!(request.method(), "elicitation/create");
    assert!(
        server.answers().is_empty(),
        "manual: the handlers do not answer"
    );
    let mut responses = InputResponses::new();
    responses.insert(
        key.clone(),
        ElicitResult::accept(json!({"ok": false})).into(),
    );
    let state = asked.respond(responses).await.unwrap();
    let finished = state.finish().await.unwrap();
    assert_eq!(
        finished.outcome().result().unwrap().joined_text(),
        "exported"
    );
    let answers = server.answers();
    assert_eq!(answers.len(), 1);
    assert_eq!(answers[0]["id"], json!(key));
    assert_eq!(answers[0]["result"]["content"], json!({"ok": false}));
}

/// A required task tool that works, asks one question, works and completes
/// with "exported".
fn export() -> LegacyTool {
    LegacyTool::new("export", "required", export_steps(), End::Text("exported"))
}

/// Starts `tool` (no arguments) with its questions left to the caller.
async fn start_by_hand(client: &Client, tool: &str) -> TaskState {
    client
        .task()
        .input(InputMode::Manual)
        .call_tool(tool, json!({}))
        .await
        .unwrap()
}

/// Follows a task with `next()` until it asks (it must ask before it ends).
async fn until_asked(mut state: TaskState) -> mcp_tasks::Task<mcp_tasks::InputRequired> {
    loop {
        state = match state {
            TaskState::Pending(task) => task.next().await.unwrap(),
            TaskState::InputRequired(task) => return task,
            TaskState::Finished(_) => panic!("the task asks first"),
        };
    }
}

/// A required task tool that works 100 ms and completes with "done".
fn quick() -> LegacyTool {
    one_step("quick", 100, "on it", End::Text("done"))
}

fn server_with(tools: Vec<LegacyTool>, knobs: Knobs) -> LegacyServer {
    LegacyServer::new(tools, knobs)
}

/// A server with these tools and knobs, and a client of its era with no handlers.
async fn connect_plain(tools: Vec<LegacyTool>, knobs: Knobs) -> (LegacyServer, Client) {
    let server = server_with(tools, knobs);
    let client = legacy_client(&server, InputHandlers::new()).await;
    (server, client)
}

/// A required task tool that works `work_ms` with `status`, then ends with `end`.
fn one_step(name: &'static str, work_ms: u64, status: &'static str, end: End) -> LegacyTool {
    LegacyTool::new(name, "required", vec![Step::Work(work_ms, status)], end)
}

/// A required task tool named "forever" that never ends.
fn forever() -> LegacyTool {
    LegacyTool::new("forever", "required", vec![], End::Forever)
}

/// Knobs of a server whose `tasks/result` never answers.
fn result_never_returns() -> Knobs {
    Knobs {
        result_never_returns: true,
        ..Knobs::default()
    }
}

/// Asserts that every `tools/call` the server saw carried the `task` opt-in.
fn assert_every_call_opts_in(server: &LegacyServer) {
    let calls = server.seen("tools/call");
    assert!(
        calls
            .iter()
            .all(|c| c.message["params"]["task"].is_object())
    );
}

async fn start(client: &Client, tool: &str) -> mcp_tasks::Task<mcp_tasks::Pending> {
    match client.task().call_tool(tool, json!({})).await.unwrap() {
        TaskState::Pending(task) => task,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// The era reports a tool error (`isError: true`) as `failed`, and the
/// stated status decides: `Outcome::Failed`, with the task's status
/// message (or the tool's text) as the message and the tool's result as
/// the error's data. A JSON-RPC error is `Outcome::Failed` with that error.
#[tokio::test(start_paused = true)]
async fn a_failed_task_fails_with_its_tool_error_or_its_json_rpc_error() {
    let (_server, client) = connect_plain(
        vec![
            one_step("broken", 100, "trying", End::ToolError("disk full")),
            LegacyTool::new(
                "down",
                "required",
                vec![],
                End::Error(-32001, "backend down"),
            ),
        ],
        Knobs::default(),
    )
    .await;
    let finished = start(&client, "broken").await.finish().await.unwrap();
    let Outcome::Failed(error) = finished.outcome() else {
        panic!("{:?}", finished.outcome());
    };
    assert_eq!(error.message, "disk full");
    let data: CallToolResult = serde_json::from_value(error.data.clone().unwrap()).unwrap();
    assert!(data.is_error);
    assert_eq!(data.joined_text(), "disk full");
    assert!(
        client
            .call_tool("broken", json!({}))
            .await
            .unwrap_err()
            .rpc_error()
            .is_some_and(|e| e.message == "disk full")
    );
    let finished = start(&client, "down").await.finish().await.unwrap();
    let Outcome::Failed(error) = finished.outcome() else {
        panic!("{:?}", finished.outcome());
    };
    assert_eq!(
        (error.code, error.message.as_str()),
        (-32001, "backend down")
    );
}

#[tokio::test(start_paused = true)]
async fn cancel_and_wait_ends_cancelled_and_an_ended_task_reads_its_outcome() {
    let (server, client) = connect_plain(vec![forever(), quick()], Knobs::default()).await;
    let task = start(&client, "forever").await;
    let id = task.id().expose().to_owned();
    let finished = task.cancel_and_wait().await.unwrap();
    assert_eq!(finished.outcome(), &Outcome::Cancelled);
    assert_eq!(server.status(&id), Some("cancelled"));
    assert_eq!(server.seen("tasks/cancel").len(), 1);

    // Cancelling a task that has ended: -32602, then its outcome is read.
    let task = start(&client, "quick").await;
    tokio::time::sleep(ms(1_000)).await;
    let finished = task.cancel_and_wait().await.unwrap();
    assert_eq!(finished.outcome().result().unwrap().joined_text(), "done");
}

/// A `forbidden` tool is called without the opt-in; a server that makes a
/// task of it anyway is followed to its end rather than losing the task.
#[tokio::test(start_paused = true)]
async fn a_task_for_a_forbidden_tool_is_followed_not_lost() {
    let tools = vec![LegacyTool::new(
        "plain",
        "forbidden",
        vec![Step::Work(200, "hm")],
        End::Text("plain"),
    )];
    let (server, client) = connect_plain(tools.clone(), Knobs::default()).await;
    let state = client.task().call_tool("plain", json!({})).await.unwrap();
    assert!(state.is_finished(), "a plain result at once");
    assert!(
        server.seen("tools/call")[0].message["params"]
            .get("task")
            .is_none()
    );

    let (_server, client) = connect_plain(
        tools,
        Knobs {
            task_for_every_call: true,
            ..Knobs::default()
        },
    )
    .await;
    let finished = start(&client, "plain").await.finish().await.unwrap();
    assert_eq!(finished.outcome().result().unwrap().joined_text(), "plain");
}

/// `tasks/result` that never answers: the wait reaches its own deadline
/// and hands the task back; it is never lost.
#[tokio::test(start_paused = true)]
async fn a_result_that_never_comes_ends_the_wait_at_its_deadline_with_the_handle() {
    let (server, client) = connect_plain(vec![quick()], result_never_returns()).await;
    let task = start(&client, "quick").await;
    let started = Instant::now();
    let err = task.finish_within(ms(5_000)).await.unwrap_err();
    assert!(err.error().is_deadline(), "{}", err.error());
    assert_eq!(started.elapsed(), ms(5_000));
    assert!(
        err.into_task().try_into_pending().is_ok(),
        "the handle comes back"
    );
    assert_eq!(server.seen("tasks/result").len(), 1, "one fetch, kept open");
}

/// The connection drops while `tasks/result` is open: the wait fails at
/// once as a transport error, with the handle.
#[tokio::test(start_paused = true)]
async fn a_connection_dropped_during_the_result_fails_the_wait_at_once() {
    let (_server, client) = connect_plain(
        vec![quick()],
        Knobs {
            drop_on_result: true,
            ..Knobs::default()
        },
    )
    .await;
    let task = start(&client, "quick").await;
    let started = Instant::now();
    let err = task.finish_within(ms(60_000)).await.unwrap_err();
    assert!(err.error().is_transport(), "{}", err.error());
    assert!(started.elapsed() < ms(2_000), "{:?}", started.elapsed());
}

/// A request tagged with a task the client does not follow is still
/// answered: by the handlers, or with `-32601` when none answers it.
#[tokio::test(start_paused = true)]
async fn a_request_for_an_unknown_task_is_answered_never_left_waiting() {
    let server = server_with(vec![], Knobs::default());
    let related = json!({"io.modelcontextprotocol/related-task": {"taskId": "not-ours"}});
    let ask = json!({"message": "ok?", "requestedSchema": {"type": "object",
        "properties": {"ok": {"type": "boolean"}}}, "_meta": related});
    let _with = legacy_client(&server, accept_forms()).await;
    server
        .ask_client("q-1", "elicitation/create", ask.clone())
        .await;
    let server2 = server_with(vec![], Knobs::default());
    let _without = legacy_client(&server2, InputHandlers::new()).await;
    server2.ask_client("q-2", "elicitation/create", ask).await;
    tokio::time::sleep(ms(100)).await;
    assert_eq!(server.answers()[0]["result"]["action"], "accept");
    assert_eq!(server2.answers()[0]["error"]["code"], -32601);
}

/// No `tasks/get` beyond the server's `pollInterval`.
#[tokio::test(start_paused = true)]
async fn reads_follow_the_poll_interval() {
    let (server, client) = connect_plain(
        vec![one_step("slow", 5_000, "slow", End::Text("done"))],
        Knobs {
            poll_interval: 500,
            ..Knobs::default()
        },
    )
    .await;
    let finished = start(&client, "slow").await.finish().await.unwrap();
    assert!(finished.outcome().result().is_some());
    let at: Vec<_> = server.seen("tasks/get").iter().map(|s| s.at).collect();
    assert!(at.len() >= 9 && at.len() <= 11, "{} reads in 5 s", at.len());
    for gap in at.windows(2).map(|w| w[1] - w[0]) {
        assert!(gap >= ms(500), "a read came {gap:?} after the last");
    }
}

/// With `listen()`, `notifications/tasks/status` makes the handle read at
/// once instead of at the next poll (10 s here); without it, the poll.
#[tokio::test(start_paused = true)]
async fn a_status_notification_wakes_a_listening_wait() {
    for listen in [true, false] {
        let (_server, client) = connect_plain(
            vec![one_step("job", 1_000, "busy", End::Text("done"))],
            Knobs {
                poll_interval: 10_000,
                status_notifications: true,
                ..Knobs::default()
            },
        )
        .await;
        let started = Instant::now();
        let state = client
            .task()
            .listen_if(listen)
            .call_tool("job", json!({}))
            .await
            .unwrap();
        let finished = state.finish().await.unwrap();
        assert_eq!(finished.outcome().result().unwrap().joined_text(), "done");
        let took = started.elapsed();
        if listen {
            assert!(took < ms(2_000), "woken by the notification: {took:?}");
        } else {
            assert!(took >= ms(10_000), "read at the poll: {took:?}");
        }
    }
}

#[tokio::test(start_paused = true)]
async fn tasks_are_listed_on_this_era_only() {
    let (_server, client) = connect_plain(vec![forever()], Knobs::default()).await;
    let a = start(&client, "forever").await;
    let b = start(&client, "forever").await;
    let page = client.list_tasks(None).await.unwrap();
    let ids: Vec<&str> = page.tasks.iter().map(|t| t.task_id.expose()).collect();
    assert_eq!(ids, [a.id().expose(), b.id().expose()]);
    assert!(
        page.tasks
            .iter()
            .all(|t| t.info.status == TaskStatus::Working)
    );

    let modern = TestServer::new();
    let err = client_with(&modern, InputHandlers::new())
        .await
        .list_tasks(None)
        .await
        .unwrap_err();
    assert!(err.is_builder(), "{err}");
}

/// A plain `call_tool` of a `required` tool: listed once for the opt-in,
/// driven to its result.
#[tokio::test(start_paused = true)]
async fn a_plain_call_of_a_required_tool_is_driven_to_its_result() {
    let server = server_with(
        vec![
            export(),
            LegacyTool::new(
                "maybe",
                "optional",
                vec![Step::Work(100, "x")],
                End::Text("maybe"),
            ),
        ],
        Knobs::default(),
    );
    let client = legacy_client(&server, accept_forms()).await;
    let result = client.call_tool("export", json!({})).await.unwrap();
    assert_eq!(result.joined_text(), "exported");
    let result = client.call_tool("maybe", json!({})).await.unwrap();
    assert_eq!(result.joined_text(), "maybe");
    assert_every_call_opts_in(&server);
    assert_eq!(server.seen("tools/list").len(), 1);
}

/// Dropping a handle that holds a question answers it with an error (the
/// server never waits on silence) and stops the fetch.
#[tokio::test(start_paused = true)]
async fn dropping_a_handle_refuses_the_questions_it_held() {
    let server = server_with(vec![export()], Knobs::default());
    let client = legacy_client(&server, accept_forms()).await;
    let state = start_by_hand(&client, "export").await;
    let asked = until_asked(state).await;
    drop(asked);
    tokio::time::sleep(ms(100)).await;
    let answers = server.answers();
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(answers[0]["error"]["code"], -32603);
}

/// On this era a call's `progressToken` stays valid for the task's life:
/// the reports sent while the task runs reach `on_progress` too.
#[tokio::test(start_paused = true)]
async fn progress_goes_on_for_the_task_s_life() {
    let (server, client) = connect_plain(
        vec![LegacyTool::new(
            "steps",
            "required",
            vec![
                Step::Work(200, "one"),
                Step::Work(200, "two"),
                Step::Work(200, "three"),
            ],
            End::Text("done"),
        )],
        Knobs::default(),
    )
    .await;
    let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let record = seen.clone();
    let state = client
        .task()
        .on_progress(move |p| record.lock().unwrap().push(p.progress))
        .call_tool("steps", json!({}))
        .await
        .unwrap();
    let task = state.try_into_pending().expect("a task");
    tokio::time::sleep(ms(1_000)).await;
    assert_eq!(*seen.lock().unwrap(), vec![1.0, 2.0, 3.0]);
    let finished = task.finish().await.unwrap();
    assert_eq!(finished.outcome().result().unwrap().joined_text(), "done");
    let call = &server.seen("tools/call")[0].message;
    assert!(
        call["params"]["_meta"]["progressToken"].is_string(),
        "{call}"
    );
}

/// A `list_changed` that arrives between the listing made for the opt-in
/// and the call (server-everything sends bursts after the handshake) does
/// not cost the call its opt-in: the call uses the listing it just made.
#[tokio::test(start_paused = true)]
async fn a_list_changed_right_after_the_listing_keeps_the_opt_in() {
    let (server, client) = connect_plain(
        vec![one_step("export", 100, "x", End::Text("exported"))],
        Knobs {
            list_changed_after_list: true,
            ..Knobs::default()
        },
    )
    .await;
    for _ in 0..3 {
        let result = client.call_tool("export", json!({})).await.unwrap();
        assert_eq!(result.joined_text(), "exported");
        tokio::time::sleep(ms(50)).await;
    }
    assert_every_call_opts_in(&server);
}

/// A reference records the era: it resumes on a client of the same era
/// (here the same session) and is refused, naming both revisions, by a
/// 2026-07-28 client, without a read the server could not answer.
#[tokio::test(start_paused = true)]
async fn a_reference_resumes_in_its_own_era_only() {
    let (_server, client) = connect_plain(
        vec![one_step("job", 500, "busy", End::Text("done"))],
        Knobs::default(),
    )
    .await;
    let task = start(&client, "job").await;
    let reference = task.reference();
    assert_eq!(reference.protocol_version(), Some("2025-11-25"));
    drop(task);
    let resumed = client.task().resume(&reference).await.unwrap();
    let finished = resumed.finish().await.unwrap();
    assert_eq!(finished.outcome().result().unwrap().joined_text(), "done");

    // Named like the first server, so only the era tells them apart.
    let modern = TestServer::new();
    let other = Client::builder()
        .server_id("legacy")
        .connect(modern.connect())
        .await
        .unwrap();
    let err = other.task().resume(&reference).await.unwrap_err();
    assert!(err.is_builder(), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("2025-11-25") && text.contains("2026-07-28"),
        "{text}"
    );
    assert_eq!(modern.count("tasks/get"), 0);
}

/// This era answers `-32602` to a cancel of an ended task and of an
/// unknown one alike: the low-level `cancel_task` tells them apart (an
/// ended task has nothing left to cancel; an unknown one is not found).
#[tokio::test(start_paused = true)]
async fn cancel_task_of_an_ended_task_is_ok_and_of_an_unknown_one_not_found() {
    let (_server, client) = connect_plain(vec![quick()], Knobs::default()).await;
    let task = start(&client, "quick").await;
    let id = task.id().clone();
    let finished = task.finish().await.unwrap();
    assert!(finished.outcome().result().is_some());
    client.cancel_task(&id).await.unwrap();
    client.cancel_task(&id).await.unwrap();
    let err = client
        .cancel_task(&mcp_tasks::protocol::TaskId::new("nope"))
        .await
        .unwrap_err();
    assert!(err.is_task_not_found(), "{err}");
}

/// Calls started together on a fresh client list the tools once for the
/// `task` opt-in.
#[tokio::test(start_paused = true)]
async fn calls_started_together_list_once() {
    let (server, client) = connect_plain(vec![quick()], Knobs::default()).await;
    let (a, b, c) = tokio::join!(
        client.call_tool("quick", json!({})),
        client.call_tool("quick", json!({})),
        client.call_tool("quick", json!({})),
    );
    for r in [a, b, c] {
        assert_eq!(r.unwrap().joined_text(), "done");
    }
    assert_eq!(server.seen("tools/list").len(), 1);
}

/// A listing for the `task` opt-in that does not end (every page comes
/// just within the request timeout, each with a cursor to another) is
/// given up at the call's timeout, and the call goes without the opt-in:
/// it does not wait out the listing's own bound of five minutes.
#[tokio::test(start_paused = true)]
async fn a_listing_that_never_ends_is_given_up_at_the_call_s_timeout() {
    let timeout = Duration::from_secs(10);
    let knobs = Knobs {
        endless_listing_every: Some(Duration::from_secs(6)),
        ..Knobs::default()
    };
    let tool = LegacyTool::new(
        "quick",
        "optional",
        vec![Step::Work(100, "on it")],
        End::Text("done"),
    );
    let server = server_with(vec![tool], knobs);
    let client = Client::builder()
        .protocol_version("2025-11-25")
        .request_timeout(timeout)
        .connect(server.connect().await)
        .await
        .expect("connect");
    let started = Instant::now();
    let result = client.call_tool("quick", json!({})).await.unwrap();
    assert_eq!(result.joined_text(), "done");
    // The listing's page under way when it was given up is answered
    // before the server reads the call: at most one more page's wait.
    assert!(started.elapsed() < 2 * timeout, "{:?}", started.elapsed());
    let calls = server.seen("tools/call");
    assert_eq!(calls.len(), 1);
    assert!(calls[0].message["params"].get("task").is_none());
}

/// A server that says `working` again after a task completed: the handle
/// that saw the end keeps it (a finished handle never reads again), and a
/// handle resumed later, while the first still lives, follows what the
/// server says now, to the same result (the answer of the task's one
/// `tasks/result` serves every read; it was taken by the first read once,
/// and the second handle waited for it until its timeout).
#[tokio::test(start_paused = true)]
async fn a_task_that_goes_back_to_working_after_completed_keeps_its_first_end() {
    let (server, client) = connect_plain(
        vec![one_step("job", 100, "busy", End::Text("done"))],
        Knobs {
            working_after_completed: true,
            poll_interval: 100,
            ..Knobs::default()
        },
    )
    .await;
    let task = start(&client, "job").await;
    let reference = task.reference();
    let finished = task.finish().await.unwrap();
    // The first read after the end says `working` (the server lies once);
    // the handle waits on and sees `completed` again.
    assert_eq!(finished.outcome().result().unwrap().joined_text(), "done");
    let reads = server.seen("tasks/get").len();
    tokio::time::sleep(ms(5_000)).await;
    assert_eq!(
        server.seen("tasks/get").len(),
        reads,
        "a finished handle never reads"
    );
    let again = client.task().resume(&reference).await.unwrap();
    let finished = again.finish().await.unwrap();
    assert_eq!(finished.outcome().result().unwrap().joined_text(), "done");
}

/// Many random tasks (seeded, so a failure replays): any mix of work and
/// questions, any ending, polled or listening, with or without the
/// server's interval and status notifications. Each ends with the outcome
/// its script says, each question is answered exactly once, and each task
/// gets exactly one `tasks/result`.
#[tokio::test(start_paused = true)]
async fn random_tasks_end_right_with_every_question_answered_once() {
    for seed in 1..=40u64 {
        let mut rng = Rng(seed * 0x9e37_79b9);
        let mut steps = Vec::new();
        let mut asks = 0;
        for _ in 0..rng.below(5) {
            if rng.below(3) == 0 {
                steps.push(Step::Ask("Go on?"));
                asks += 1;
            } else {
                steps.push(Step::Work(rng.below(400), "working on it"));
            }
        }
        let end = match rng.below(3) {
            0 => End::Text("done"),
            1 => End::ToolError("it broke"),
            _ => End::Error(-32001, "backend down"),
        };
        let knobs = Knobs {
            poll_interval: [0, 50, 500][rng.below(3) as usize],
            status_notifications: rng.below(2) == 0,
            ..Knobs::default()
        };
        let server = server_with(
            vec![LegacyTool::new("job", "required", steps, end.clone())],
            knobs,
        );
        let client = legacy_client(&server, accept_forms()).await;
        let state = client
            .task()
            .listen_if(rng.below(2) == 0)
            .call_tool("job", json!({}))
            .await
            .unwrap();
        let finished = state
            .finish()
            .await
            .unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        match (&end, finished.outcome()) {
            (End::Text(t), Outcome::Completed(r)) => assert_eq!(r.joined_text(), *t, "seed {seed}"),
            (End::ToolError(t), Outcome::Failed(e)) => assert_eq!(e.message, *t, "seed {seed}"),
            (End::Error(code, _), Outcome::Failed(e)) => assert_eq!(e.code, *code, "seed {seed}"),
            (end, outcome) => panic!("seed {seed}: {end:?} ended {outcome:?}"),
        }
        let answers = server.answers();
        assert_eq!(answers.len(), asks, "seed {seed}: {answers:?}");
        let mut ids: Vec<String> = answers.iter().map(|a| a["id"].to_string()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), asks, "seed {seed}: a question answered twice");
        assert_eq!(
            server.seen("tasks/result").len(),
            1,
            "seed {seed}: one fetch per task"
        );
    }
}
// ---------------------------------------------------------------------------
// Tasks the client hosts: the 2025-11-25 server sends an elicitation or a
// sampling request as a task (`params.task`) and polls the client for it.
// ---------------------------------------------------------------------------

mod hosted {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use mcp_tasks::protocol::{CreateMessageResult, META_CLIENT_CAPABILITIES, META_RELATED_TASK};
    use serde_json::Value;
    use tokio::sync::Notify;

    use super::*;

    fn form_params(task: Option<Value>) -> Value {
        let mut params = json!({
            "message": "Your name?",
            "requestedSchema": {"type": "object",
                "properties": {"name": {"type": "string"}}, "required": ["name"]}
        });
        if let Some(task) = task {
            params["task"] = task;
        }
        params
    }

    fn sampling_params(task: Option<Value>) -> Value {
        let mut params = json!({
            "messages": [{"role": "user", "content": {"type": "text", "text": "hi"}}],
            "maxTokens": 10
        });
        if let Some(task) = task {
            params["task"] = task;
        }
        params
    }

    fn sampler() -> InputHandlers {
        InputHandlers::new().sampling(|_req| async {
            Ok(CreateMessageResult {
                role: "assistant".into(),
                content: json!({"type": "text", "text": "hello"}),
                model: "m".into(),
                stop_reason: None,
            })
        })
    }

    /// A form handler that answers the name at once.
    fn named() -> InputHandlers {
        InputHandlers::new()
            .elicitation_form(|_req| async { Ok(ElicitResult::accept(json!({"name": "Ada"}))) })
    }

    /// A form handler that answers once `gate` is notified.
    fn gated(gate: Arc<Notify>) -> InputHandlers {
        InputHandlers::new().elicitation_form(move |_req| {
            let gate = gate.clone();
            async move {
                gate.notified().await;
                Ok(ElicitResult::accept(json!({"name": "Ada"})))
            }
        })
    }

    /// A form handler that never answers and counts its calls and the
    /// times its future was dropped.
    fn stuck(calls: Arc<AtomicUsize>, dropped: Arc<AtomicUsize>) -> InputHandlers {
        struct OnDrop(Arc<AtomicUsize>);
        impl Drop for OnDrop {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        InputHandlers::new().elicitation_form(move |_req| {
            calls.fetch_add(1, Ordering::SeqCst);
            let guard = OnDrop(dropped.clone());
            async move {
                let _guard = guard;
                std::future::pending::<()>().await;
                Ok(ElicitResult::decline())
            }
        })
    }

    async fn connect(server: &LegacyServer, handlers: InputHandlers, version: &str) -> Client {
        Client::builder()
            .input_handlers(handlers)
            .protocol_version(version)
            .connect(server.connect().await)
            .await
            .expect("connect")
    }

    fn empty_server() -> LegacyServer {
        LegacyServer::new(Vec::new(), Knobs::default())
    }

    async fn create(server: &LegacyServer, task: Value) -> String {
        let created = server
            .request_client("elicitation/create", form_params(Some(task)))
            .await;
        created["result"]["task"]["taskId"]
            .as_str()
            .unwrap_or_else(|| panic!("a creation result: {created}"))
            .to_owned()
    }

    async fn tasks(server: &LegacyServer, method: &str, id: &str) -> Value {
        server.request_client(method, json!({"taskId": id})).await
    }

    fn code(response: &Value) -> i64 {
        response["error"]["code"]
            .as_i64()
            .unwrap_or_else(|| panic!("an error: {response}"))
    }

    fn initialize_capabilities(server: &LegacyServer) -> Value {
        server.seen("initialize")[0].message["params"]["capabilities"].clone()
    }

    #[tokio::test(start_paused = true)]
    async fn tasks_are_declared_per_handler_on_2025_11_25_only() {
        let both = || sampler().elicitation_form(|_| async { Ok(ElicitResult::decline()) });
        let cases: Vec<(InputHandlers, Option<Value>)> = vec![
            (
                accept_forms(),
                Some(
                    json!({"requests": {"elicitation": {"create": {}}}, "list": {}, "cancel": {}}),
                ),
            ),
            (
                sampler(),
                Some(json!({"requests": {"sampling": {"createMessage": {}}},
                    "list": {}, "cancel": {}})),
            ),
            (
                both(),
                Some(json!({"requests": {"elicitation": {"create": {}},
                    "sampling": {"createMessage": {}}}, "list": {}, "cancel": {}})),
            ),
            (
                InputHandlers::new().roots(|_| async { unreachable!() }),
                None,
            ),
            (InputHandlers::new(), None),
        ];
        for (handlers, expected) in cases {
            let server = empty_server();
            let _client = connect(&server, handlers, "2025-11-25").await;
            let caps = initialize_capabilities(&server);
            assert_eq!(caps.get("tasks").cloned(), expected, "{caps}");
        }
        // Never on 2025-06-18: no declaration, and `params.task` is ignored
        // (a plain answer, no task).
        let server = empty_server();
        let client = connect(&server, both(), "2025-06-18").await;
        assert_eq!(client.protocol_version().as_ref(), "2025-06-18");
        assert!(initialize_capabilities(&server).get("tasks").is_none());
        let answer = server
            .request_client(
                "elicitation/create",
                form_params(Some(json!({"ttl": 5000}))),
            )
            .await;
        assert_eq!(answer["result"]["action"], "decline", "{answer}");
        assert!(answer["result"].get("task").is_none());
        let get = tasks(&server, "tasks/get", "anything").await;
        assert_eq!(code(&get), -32601, "no hosted tasks on this era");
        assert_eq!(client.stats().hosted_tasks, 0);
        // Never in a 2026-07-28 `_meta`: the capabilities there are the
        // handlers' own, plus the Tasks extension where a method needs it.
        let modern = TestServer::new().tool(ScriptedTool::immediate("ping", text("pong")));
        let handlers = both();
        let own = serde_json::to_value(handlers.capabilities()).unwrap();
        let client = client_with(&modern, handlers).await;
        client.call_tool("ping", json!({})).await.unwrap();
        client.list_tools().await.unwrap();
        let recorded = modern.requests();
        assert!(recorded.len() >= 2);
        for request in recorded.iter().filter(|r| !r.is_notification()) {
            let mut caps = request.params["_meta"][META_CLIENT_CAPABILITIES].clone();
            assert!(caps.get("tasks").is_none(), "{caps}");
            if let Some(map) = caps.as_object_mut() {
                map.remove("extensions");
            }
            assert_eq!(caps, own, "{}", request.method);
        }
    }

    #[tokio::test(start_paused = true)]
    async fn an_async_elicitation_is_created_polled_and_read() {
        let server = empty_server();
        let gate = Arc::new(Notify::new());
        let client = connect(&server, gated(gate.clone()), "2025-11-25").await;
        let created = server
            .request_client(
                "elicitation/create",
                form_params(Some(json!({"ttl": 30_000}))),
            )
            .await;
        let task = &created["result"]["task"];
        assert_eq!(created["result"].as_object().unwrap().len(), 1, "{created}");
        let id = task["taskId"].as_str().unwrap().to_owned();
        assert_eq!(id.len(), 32);
        assert_eq!(task["status"], "working");
        assert_eq!(task["ttl"], 30_000);
        assert_eq!(task["pollInterval"], 1000);
        assert!(task["createdAt"].as_str().unwrap().ends_with('Z'));
        assert!(task["lastUpdatedAt"].is_string());
        assert_eq!(client.stats().hosted_tasks, 1);

        let got = tasks(&server, "tasks/get", &id).await;
        assert_eq!(got["result"]["taskId"], id.as_str());
        assert_eq!(got["result"]["status"], "working");
        assert!(got["result"].get("_meta").is_none());

        gate.notify_one();
        tokio::time::sleep(ms(10)).await;
        let got = tasks(&server, "tasks/get", &id).await;
        assert_eq!(got["result"]["status"], "completed", "{got}");

        let result = tasks(&server, "tasks/result", &id).await;
        assert_eq!(result["result"]["action"], "accept");
        assert_eq!(result["result"]["content"], json!({"name": "Ada"}));
        assert_eq!(
            result["result"]["_meta"][META_RELATED_TASK],
            json!({"taskId": id})
        );
        // Read again: the same answer, as long as the task is kept.
        let again = tasks(&server, "tasks/result", &id).await;
        assert_eq!(again["result"], result["result"]);
    }

    #[tokio::test(start_paused = true)]
    async fn an_async_sampling_request_is_a_task_too() {
        let server = empty_server();
        let _client = connect(&server, sampler(), "2025-11-25").await;
        let created = server
            .request_client("sampling/createMessage", sampling_params(Some(json!({}))))
            .await;
        let task = &created["result"]["task"];
        assert_eq!(task["status"], "working");
        assert_eq!(task["ttl"], 60_000, "the default ttl");
        let id = task["taskId"].as_str().unwrap();
        let result = tasks(&server, "tasks/result", id).await;
        assert_eq!(result["result"]["model"], "m", "{result}");
        assert_eq!(result["result"]["_meta"][META_RELATED_TASK]["taskId"], id);
        let got = tasks(&server, "tasks/get", id).await;
        assert_eq!(got["result"]["status"], "completed");
    }

    #[tokio::test(start_paused = true)]
    async fn tasks_result_waits_for_the_handler_while_tasks_get_is_answered() {
        let server = empty_server();
        let gate = Arc::new(Notify::new());
        let _client = connect(&server, gated(gate.clone()), "2025-11-25").await;
        let id = create(&server, json!({"ttl": 30_000})).await;
        let waiting = {
            let server = server.clone();
            let id = id.clone();
            tokio::spawn(async move { tasks(&server, "tasks/result", &id).await })
        };
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert!(
            !waiting.is_finished(),
            "tasks/result blocks while the task works"
        );
        // Polling goes on beside it.
        let got = tasks(&server, "tasks/get", &id).await;
        assert_eq!(got["result"]["status"], "working");
        gate.notify_one();
        let result = waiting.await.unwrap();
        assert_eq!(result["result"]["action"], "accept", "{result}");
        assert_eq!(
            result["result"]["_meta"][META_RELATED_TASK]["taskId"],
            id.as_str()
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_running_task_is_cancelled_and_its_handler_stopped() {
        let server = empty_server();
        let (calls, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let client = connect(&server, stuck(calls.clone(), dropped.clone()), "2025-11-25").await;
        let id = create(&server, json!({"ttl": 30_000})).await;
        let waiting = {
            let server = server.clone();
            let id = id.clone();
            tokio::spawn(async move { tasks(&server, "tasks/result", &id).await })
        };
        tokio::time::sleep(ms(100)).await;
        assert_eq!(calls.load(Ordering::SeqCst), 1);
        assert_eq!(dropped.load(Ordering::SeqCst), 0);

        let cancelled = tasks(&server, "tasks/cancel", &id).await;
        assert_eq!(cancelled["result"]["taskId"], id.as_str());
        assert_eq!(cancelled["result"]["status"], "cancelled", "{cancelled}");
        assert!(cancelled["result"]["statusMessage"].is_string());
        let got = tasks(&server, "tasks/get", &id).await;
        assert_eq!(got["result"]["status"], "cancelled");
        // The waiting tasks/result ends with an error, not a result.
        let result = waiting.await.unwrap();
        assert_eq!(code(&result), -32603, "{result}");
        tokio::time::sleep(ms(10)).await;
        assert_eq!(dropped.load(Ordering::SeqCst), 1, "the handler was stopped");
        // Cancelled for good.
        let again = tasks(&server, "tasks/cancel", &id).await;
        assert_eq!(code(&again), -32602);
        assert_eq!(client.stats().hosted_tasks, 1, "kept until its ttl");
    }

    #[tokio::test(start_paused = true)]
    async fn unknown_ids_and_a_cancel_after_the_end_are_invalid_params() {
        let server = empty_server();
        let client = connect(&server, named(), "2025-11-25").await;
        for method in ["tasks/get", "tasks/result", "tasks/cancel"] {
            let answer = tasks(&server, method, "no-such-task").await;
            assert_eq!(code(&answer), -32602, "{method}: {answer}");
        }
        let missing = server.request_client("tasks/get", json!({})).await;
        assert_eq!(code(&missing), -32602);
        let id = create(&server, json!({"ttl": 2_000})).await;
        let result = tasks(&server, "tasks/result", &id).await;
        assert_eq!(result["result"]["action"], "accept");
        let cancel = tasks(&server, "tasks/cancel", &id).await;
        assert_eq!(code(&cancel), -32602, "{cancel}");
        let got = tasks(&server, "tasks/get", &id).await;
        assert_eq!(got["result"]["status"], "completed");
        // Past its ttl (counted from its end) the task is gone.
        tokio::time::sleep(Duration::from_millis(2_001)).await;
        let gone = tasks(&server, "tasks/get", &id).await;
        assert_eq!(code(&gone), -32602, "{gone}");
        assert_eq!(client.stats().hosted_tasks, 0);
    }

    #[tokio::test(start_paused = true)]
    async fn tasks_list_pages_with_a_cursor() {
        let server = empty_server();
        let _client = connect(&server, named(), "2025-11-25").await;
        let mut created = Vec::new();
        for _ in 0..45 {
            created.push(create(&server, json!({"ttl": 60_000})).await);
        }
        let mut listed = Vec::new();
        let mut pages = 0;
        let mut cursor: Option<String> = None;
        loop {
            let params = match &cursor {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let page = server.request_client("tasks/list", params).await;
            pages += 1;
            let tasks = page["result"]["tasks"].as_array().unwrap();
            assert!(tasks.len() <= 20);
            for t in tasks {
                assert!(t["status"].is_string() && t["createdAt"].is_string());
                listed.push(t["taskId"].as_str().unwrap().to_owned());
            }
            match page["result"].get("nextCursor").and_then(Value::as_str) {
                Some(next) => cursor = Some(next.to_owned()),
                None => break,
            }
        }
        assert_eq!(pages, 3);
        assert_eq!(listed, created, "every task once, in creation order");
        for bad in [json!({"cursor": "not-a-cursor"}), json!({"cursor": 7})] {
            let answer = server.request_client("tasks/list", bad).await;
            assert_eq!(code(&answer), -32602, "{answer}");
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_flood_of_task_requests_is_bounded() {
        let server = empty_server();
        let (calls, dropped) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
        let client = connect(&server, stuck(calls.clone(), dropped.clone()), "2025-11-25").await;
        let mut ids = Vec::new();
        let mut refused = 0;
        for _ in 0..100 {
            let answer = server
                .request_client(
                    "elicitation/create",
                    form_params(Some(json!({"ttl": 1_000}))),
                )
                .await;
            match answer["result"]["task"]["taskId"].as_str() {
                Some(id) => ids.push(id.to_owned()),
                None => {
                    assert_eq!(code(&answer), -32603, "{answer}");
                    refused += 1;
                }
            }
        }
        assert_eq!((ids.len(), refused), (64, 36));
        assert_eq!(client.stats().hosted_tasks, 64);
        tokio::time::sleep(ms(10)).await;
        assert_eq!(
            calls.load(Ordering::SeqCst),
            64,
            "refused requests never run"
        );
        // Running tasks hold their place past their ttl.
        tokio::time::sleep(Duration::from_secs(5)).await;
        assert_eq!(client.stats().hosted_tasks, 64);
        let refused_still = server
            .request_client("elicitation/create", form_params(Some(json!({}))))
            .await;
        assert_eq!(code(&refused_still), -32603);
        // A cancelled one is dropped after its ttl, and its place reused.
        let cancel = tasks(&server, "tasks/cancel", &ids[0]).await;
        assert_eq!(cancel["result"]["status"], "cancelled");
        assert_eq!(client.stats().hosted_tasks, 64);
        tokio::time::sleep(Duration::from_millis(1_001)).await;
        assert_eq!(client.stats().hosted_tasks, 63);
        let id = create(&server, json!({})).await;
        assert!(!ids.contains(&id));
        assert_eq!(client.stats().hosted_tasks, 64);
        // A plain request is still answered (here: never, by this handler;
        // a roots request without a handler is refused at once).
        let roots = server.request_client("roots/list", json!({})).await;
        assert_eq!(code(&roots), -32601);
    }

    #[tokio::test(start_paused = true)]
    async fn a_handler_error_fails_the_task_with_that_error() {
        let server = empty_server();
        let handlers = InputHandlers::new()
            .elicitation_form(|_req| async { Err("nobody at the keyboard".into()) })
            .sampling(|_req| async {
                // Not a valid answer: no model.
                Ok(CreateMessageResult {
                    role: "assistant".into(),
                    content: json!({"type": "text", "text": "x"}),
                    model: String::new(),
                    stop_reason: None,
                })
            });
        let _client = connect(&server, handlers, "2025-11-25").await;
        let id = create(&server, json!({"ttl": 10_000})).await;
        let result = tasks(&server, "tasks/result", &id).await;
        assert_eq!(code(&result), -32603);
        let message = result["error"]["message"].as_str().unwrap();
        assert!(message.contains("nobody at the keyboard"), "{message}");
        let got = tasks(&server, "tasks/get", &id).await;
        assert_eq!(got["result"]["status"], "failed");
        assert_eq!(got["result"]["statusMessage"], message);
        // An answer that fails validation fails its task the same way.
        let created = server
            .request_client("sampling/createMessage", sampling_params(Some(json!({}))))
            .await;
        let id = created["result"]["task"]["taskId"].as_str().unwrap();
        let result = tasks(&server, "tasks/result", id).await;
        assert_eq!(code(&result), -32603, "{result}");
        assert_eq!(
            tasks(&server, "tasks/get", id).await["result"]["status"],
            "failed"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn without_a_handler_a_task_request_is_method_not_found_and_plain_ones_work() {
        let server = empty_server();
        let client = connect(&server, accept_forms(), "2025-11-25").await;
        let sampling = server
            .request_client("sampling/createMessage", sampling_params(Some(json!({}))))
            .await;
        assert_eq!(code(&sampling), -32601, "{sampling}");
        // A plain elicitation is answered as before.
        let plain = server
            .request_client(
                "elicitation/create",
                json!({"message": "ok?", "requestedSchema": {"type": "object",
                    "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}),
            )
            .await;
        assert_eq!(plain["result"]["action"], "accept", "{plain}");
        assert!(plain["result"].get("task").is_none());
        // A `task` that is not an object is invalid.
        let bad = server
            .request_client("elicitation/create", form_params(Some(json!(5))))
            .await;
        assert_eq!(code(&bad), -32602, "{bad}");
        assert_eq!(client.stats().hosted_tasks, 0);
    }
}

/// A bare `get_task` (no handle follows the task) starts nothing it would
/// not end: no `tasks/result` for a task that asks (its questions would
/// be held for no one), and an ended task's result read inline, each time.
#[tokio::test(start_paused = true)]
async fn a_bare_read_starts_no_fetch_and_reads_an_ended_task_inline() {
    let server = server_with(vec![export(), quick()], Knobs::default());
    let client = legacy_client(&server, accept_forms()).await;
    let task = start(&client, "export").await;
    let id = task.id().clone();
    drop(task);
    tokio::time::sleep(ms(1_000)).await;
    let read = client.get_task(&id).await.unwrap();
    assert_eq!(read.status(), TaskStatus::InputRequired);
    assert!(
        server.seen("tasks/result").is_empty(),
        "no fetch for no one"
    );
    assert!(server.answers().is_empty());

    let task = start(&client, "quick").await;
    let id = task.id().clone();
    drop(task);
    tokio::time::sleep(ms(1_000)).await;
    for _ in 0..2 {
        let read = client.get_task(&id).await.unwrap();
        assert_eq!(read.status(), TaskStatus::Completed);
    }
    assert_eq!(server.seen("tasks/result").len(), 2, "inline, each time");
}

/// Bounds too long to count are no bounds: `Duration::MAX` as the request
/// timeout or the wait's bound works (it used to overflow an `Instant`).
#[tokio::test(start_paused = true)]
async fn bounds_too_long_to_count_do_not_panic() {
    let server = server_with(vec![quick()], Knobs::default());
    let client = Client::builder()
        .protocol_version("2025-11-25")
        .request_timeout(Duration::MAX)
        .connect(server.connect().await)
        .await
        .unwrap();
    let state = client
        .task()
        .timeout(Duration::MAX)
        .on_progress(|_| {})
        .call_tool("quick", json!({}))
        .await
        .unwrap();
    let id = state.try_into_pending().expect("a task").id().clone();
    tokio::time::sleep(ms(1_000)).await;
    let read = client.get_task(&id).await.unwrap();
    assert_eq!(read.status(), TaskStatus::Completed);
}

/// A server that floods questions for one task gets the ones past 64
/// refused at once; none waits on silence, and memory stays bounded.
#[tokio::test(start_paused = true)]
async fn a_flood_of_questions_for_one_task_is_bounded() {
    let server = server_with(vec![forever()], Knobs::default());
    let client = legacy_client(&server, accept_forms()).await;
    let task = start_by_hand(&client, "forever").await;
    let TaskState::Pending(task) = task else {
        panic!("a task")
    };
    let related = json!({"io.modelcontextprotocol/related-task": {"taskId": task.id().expose()}});
    for n in 0..70 {
        let ask = json!({"message": "ok?", "requestedSchema": {"type": "object",
            "properties": {"ok": {"type": "boolean"}}}, "_meta": related});
        server
            .ask_client(&format!("q-{n}"), "elicitation/create", ask)
            .await;
    }
    tokio::time::sleep(ms(100)).await;
    let refused = server
        .answers()
        .iter()
        .filter(|a| a["error"]["code"] == -32603)
        .count();
    assert_eq!(refused, 6, "{:?}", server.answers());
    drop(task);
}

/// A question the server withdraws (`notifications/cancelled`) after the
/// handle took it is not answered: `respond` is refused and nothing is
/// sent to the server.
#[tokio::test(start_paused = true)]
async fn a_question_the_server_withdraws_is_not_answered() {
    let server = server_with(vec![export()], Knobs::default());
    let client = legacy_client(&server, accept_forms()).await;
    let state = start_by_hand(&client, "export").await;
    let asked = until_asked(state).await;
    let key = asked.requests().keys().next().unwrap().clone();
    server
        .notify_client(
            "notifications/cancelled",
            json!({"requestId": key, "reason": "no longer needed"}),
        )
        .await;
    tokio::time::sleep(ms(10)).await;
    let err = asked
        .respond_one(key, ElicitResult::accept(json!({"ok": true})).into())
        .await
        .unwrap_err();
    assert!(err.error().is_builder(), "{}", err.error());
    assert!(server.answers().is_empty(), "{:?}", server.answers());
}

/// On 2025-11-25 a question lives only while the client holds the
/// `tasks/result` request that carries it. A tracked task's question that
/// no handler answers is refused when the worker's step lets go of the
/// task, so its record closes it: an answer given later from elsewhere is
/// refused at once, never kept to be lost.
#[tokio::test]
async fn a_tracked_question_of_2025_11_25_closes_when_its_request_ends() {
    use mcp_tasks::store::{MemoryStore, Refusal, TaskStore, Tracker};
    let server = LegacyServer::new(vec![export()], Knobs::default());
    let client = legacy_client(&server, InputHandlers::new()).await;
    let tracker = Tracker::builder(MemoryStore::new(), client.clone())
        .worker("w")
        .min_poll_interval(ms(20))
        .build();
    let id = tracker
        .call_tool(client.task(), "export", json!({"table": "orders"}))
        .await
        .unwrap()
        .record()
        .expect("a task");
    let mut asked = None;
    for _ in 0..300 {
        tracker.pass(|_| async { true }).await.unwrap();
        let record = tracker.store().get(id).await.unwrap().unwrap();
        if let Some((key, question)) = record.questions.into_iter().next() {
            asked = Some((key, question));
            break;
        }
        tokio::time::sleep(ms(20)).await;
    }
    let (key, question) = asked.expect("the question is recorded");
    assert_eq!(question.message(), Some("Export 42 rows?"));
    assert!(
        question.is_closed(),
        "its request ended with the step: {question:?}"
    );
    let late = tracker
        .answer(id, &key, ElicitResult::accept(json!({"ok": true})))
        .await
        .unwrap_err();
    assert!(
        matches!(late.refusal(), Some(Refusal::Closed { .. })),
        "{late}"
    );
}

/// A task `tasks/get` states `failed` has failed, whatever `tasks/result`
/// does: when the fetch never answers, the wait still ends `Failed` (with
/// the status message, all the server said), soon after the status was
/// read, not at the wait's deadline; the same for a bare read, and for
/// every way the task can fail.
#[tokio::test(start_paused = true)]
async fn a_failed_task_whose_result_never_comes_still_fails() {
    for end in [
        End::ToolError("disk full"),
        End::Error(-32001, "backend down"),
    ] {
        let (_server, client) = connect_plain(
            vec![one_step("broken", 100, "trying", end.clone())],
            result_never_returns(),
        )
        .await;
        let task = start(&client, "broken").await;
        let id = task.id().clone();
        let started = Instant::now();
        let finished = task
            .finish()
            .await
            .unwrap_or_else(|e| panic!("{end:?}: {}", e.error()));
        let Outcome::Failed(error) = finished.outcome() else {
            panic!("{end:?}: {:?}", finished.outcome());
        };
        assert_eq!(error.message, "trying", "{end:?}");
        assert_eq!(finished.snapshot().status, TaskStatus::Failed);
        assert!(started.elapsed() <= ms(10_000), "{:?}", started.elapsed());

        drop(finished);

        // A bare read of the same task says so too.
        let read = client.get_task(&id).await.unwrap();
        assert_eq!(read.status(), TaskStatus::Failed, "{end:?}");
    }

    // The other end that needs no result: `cancelled`.
    let (_server, client) = connect_plain(vec![forever()], result_never_returns()).await;
    let finished = start(&client, "forever")
        .await
        .cancel_and_wait()
        .await
        .unwrap();
    assert_eq!(finished.outcome(), &Outcome::Cancelled);
}
