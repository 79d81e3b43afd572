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

fn accept() -> InputHandlers {
    InputHandlers::new()
        .elicitation_form(|_req| async { Ok(ElicitResult::accept(json!({"ok": true}))) })
}

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
    let server = TestServer::new().tool(ScriptedTool::task(
        "export",
        TaskScript::new()
            .working(ms(300), "exporting")
            .input(ms(10), requests(&["confirm"]))
            .working(ms(300), "writing")
            .complete(ms(10), CallToolResult::text("exported")),
    ));
    export_runs_to_its_result(client_with(&server, accept()).await).await;
}

#[tokio::test(start_paused = true)]
async fn the_same_body_runs_on_2025_11_25() {
    let server = LegacyServer::new(
        vec![LegacyTool::new(
            "export",
            "required",
            export_steps(),
            End::Text("exported"),
        )],
        Knobs::default(),
    );
    export_runs_to_its_result(legacy_client(&server, accept()).await).await;
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
}

/// Manual input: the question surfaces as `Task<InputRequired>::requests()`
/// keyed by the server's request id, and `respond` answers it as a JSON-RPC
/// response.
#[tokio::test(start_paused = true)]
async fn manual_input_is_answered_with_respond() {
    let server = LegacyServer::new(
        vec![LegacyTool::new(
            "export",
            "required",
            export_steps(),
            End::Text("exported"),
        )],
        Knobs::default(),
    );
    let client = legacy_client(&server, accept()).await;
    let state = client
        .task()
        .input(InputMode::Manual)
        .call_tool("export", json!({}))
        .await
        .unwrap();
    let mut state = state;
    let asked = loop {
        state = match state {
            TaskState::Pending(task) => task.next().await.unwrap(),
            TaskState::InputRequired(task) => break task,
            TaskState::Finished(_) => panic!("the task asks first"),
        };
    };
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

fn server_with(tools: Vec<LegacyTool>, knobs: Knobs) -> LegacyServer {
    LegacyServer::new(tools, knobs)
}

async fn start(client: &Client, tool: &str) -> mcp_tasks::Task<mcp_tasks::Pending> {
    match client.task().call_tool(tool, json!({})).await.unwrap() {
        TaskState::Pending(task) => task,
        other => panic!("expected a task, got {other:?}"),
    }
}

/// The era reports a tool error (`isError: true`) as `failed`; the client
/// shows it as on 2026-07-28: `Outcome::Completed` with `is_error` kept.
/// A JSON-RPC error is `Outcome::Failed`.
#[tokio::test(start_paused = true)]
async fn a_tool_error_completes_and_a_json_rpc_error_fails_as_on_2026() {
    let server = server_with(
        vec![
            LegacyTool::new(
                "broken",
                "required",
                vec![Step::Work(100, "trying")],
                End::ToolError("disk full"),
            ),
            LegacyTool::new(
                "down",
                "required",
                vec![],
                End::Error(-32001, "backend down"),
            ),
        ],
        Knobs::default(),
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
    let finished = start(&client, "broken").await.finish().await.unwrap();
    let Outcome::Completed(result) = finished.outcome() else {
        panic!("{:?}", finished.outcome());
    };
    assert!(result.is_error);
    assert_eq!(result.joined_text(), "disk full");
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
    let server = server_with(
        vec![
            LegacyTool::new("forever", "required", vec![], End::Forever),
            LegacyTool::new(
                "quick",
                "required",
                vec![Step::Work(100, "on it")],
                End::Text("done"),
            ),
        ],
        Knobs::default(),
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
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
    let server = server_with(tools.clone(), Knobs::default());
    let client = legacy_client(&server, InputHandlers::new()).await;
    let state = client.task().call_tool("plain", json!({})).await.unwrap();
    assert!(state.is_finished(), "a plain result at once");
    assert!(
        server.seen("tools/call")[0].message["params"]
            .get("task")
            .is_none()
    );

    let server = server_with(
        tools,
        Knobs {
            task_for_every_call: true,
            ..Knobs::default()
        },
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
    let finished = start(&client, "plain").await.finish().await.unwrap();
    assert_eq!(finished.outcome().result().unwrap().joined_text(), "plain");
}

/// `tasks/result` that never answers: the wait reaches its own deadline
/// and hands the task back; it is never lost.
#[tokio::test(start_paused = true)]
async fn a_result_that_never_comes_ends_the_wait_at_its_deadline_with_the_handle() {
    let server = server_with(
        vec![LegacyTool::new(
            "quick",
            "required",
            vec![Step::Work(100, "on it")],
            End::Text("done"),
        )],
        Knobs {
            result_never_returns: true,
            ..Knobs::default()
        },
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
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
    let server = server_with(
        vec![LegacyTool::new(
            "quick",
            "required",
            vec![Step::Work(100, "on it")],
            End::Text("done"),
        )],
        Knobs {
            drop_on_result: true,
            ..Knobs::default()
        },
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
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
    let _with = legacy_client(&server, accept()).await;
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
    let server = server_with(
        vec![LegacyTool::new(
            "slow",
            "required",
            vec![Step::Work(5_000, "slow")],
            End::Text("done"),
        )],
        Knobs {
            poll_interval: 500,
            ..Knobs::default()
        },
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
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
        let server = server_with(
            vec![LegacyTool::new(
                "job",
                "required",
                vec![Step::Work(1_000, "busy")],
                End::Text("done"),
            )],
            Knobs {
                poll_interval: 10_000,
                status_notifications: true,
                ..Knobs::default()
            },
        );
        let client = legacy_client(&server, InputHandlers::new()).await;
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
    let server = server_with(
        vec![LegacyTool::new("forever", "required", vec![], End::Forever)],
        Knobs::default(),
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
    let a = start(&client, "forever").await;
    let b = start(&client, "forever").await;
    let page = client.list_tasks(None).await.unwrap();
    let ids: Vec<&str> = page.tasks.iter().map(|t| t.task_id.expose()).collect();
    assert_eq!(ids, [a.id().expose(), b.id().expose()]);
    assert!(page.tasks.iter().all(|t| t.status == TaskStatus::Working));

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
            LegacyTool::new("export", "required", export_steps(), End::Text("exported")),
            LegacyTool::new(
                "maybe",
                "optional",
                vec![Step::Work(100, "x")],
                End::Text("maybe"),
            ),
        ],
        Knobs::default(),
    );
    let client = legacy_client(&server, accept()).await;
    let result = client.call_tool("export", json!({})).await.unwrap();
    assert_eq!(result.joined_text(), "exported");
    let result = client.call_tool("maybe", json!({})).await.unwrap();
    assert_eq!(result.joined_text(), "maybe");
    let calls = server.seen("tools/call");
    assert!(
        calls
            .iter()
            .all(|c| c.message["params"]["task"].is_object())
    );
    assert_eq!(server.seen("tools/list").len(), 1);
}

/// Dropping a handle that holds a question answers it with an error (the
/// server never waits on silence) and stops the fetch.
#[tokio::test(start_paused = true)]
async fn dropping_a_handle_refuses_the_questions_it_held() {
    let server = server_with(
        vec![LegacyTool::new(
            "export",
            "required",
            export_steps(),
            End::Text("exported"),
        )],
        Knobs::default(),
    );
    let client = legacy_client(&server, accept()).await;
    let mut state = client
        .task()
        .input(InputMode::Manual)
        .call_tool("export", json!({}))
        .await
        .unwrap();
    let asked = loop {
        state = match state {
            TaskState::Pending(task) => task.next().await.unwrap(),
            TaskState::InputRequired(task) => break task,
            TaskState::Finished(_) => panic!("the task asks first"),
        };
    };
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
    let server = server_with(
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
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
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
    let server = server_with(
        vec![LegacyTool::new(
            "export",
            "required",
            vec![Step::Work(100, "x")],
            End::Text("exported"),
        )],
        Knobs {
            list_changed_after_list: true,
            ..Knobs::default()
        },
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
    for _ in 0..3 {
        let result = client.call_tool("export", json!({})).await.unwrap();
        assert_eq!(result.joined_text(), "exported");
        tokio::time::sleep(ms(50)).await;
    }
    let calls = server.seen("tools/call");
    assert!(
        calls
            .iter()
            .all(|c| c.message["params"]["task"].is_object())
    );
}

/// A reference records the era: it resumes on a client of the same era
/// (here the same session) and is refused, naming both revisions, by a
/// 2026-07-28 client, without a read the server could not answer.
#[tokio::test(start_paused = true)]
async fn a_reference_resumes_in_its_own_era_only() {
    let server = server_with(
        vec![LegacyTool::new(
            "job",
            "required",
            vec![Step::Work(500, "busy")],
            End::Text("done"),
        )],
        Knobs::default(),
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
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
    let server = server_with(
        vec![LegacyTool::new(
            "quick",
            "required",
            vec![Step::Work(100, "x")],
            End::Text("done"),
        )],
        Knobs::default(),
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
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
    let server = server_with(
        vec![LegacyTool::new(
            "quick",
            "required",
            vec![Step::Work(100, "x")],
            End::Text("done"),
        )],
        Knobs::default(),
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
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

/// A server that says `working` again after a task completed: the handle
/// that saw the end keeps it (a finished handle never reads again), and a
/// handle resumed later, while the first still lives, follows what the
/// server says now, to the same result (the answer of the task's one
/// `tasks/result` serves every read; it was taken by the first read once,
/// and the second handle waited for it until its timeout).
#[tokio::test(start_paused = true)]
async fn a_task_that_goes_back_to_working_after_completed_keeps_its_first_end() {
    let server = server_with(
        vec![LegacyTool::new(
            "job",
            "required",
            vec![Step::Work(100, "busy")],
            End::Text("done"),
        )],
        Knobs {
            working_after_completed: true,
            poll_interval: 100,
            ..Knobs::default()
        },
    );
    let client = legacy_client(&server, InputHandlers::new()).await;
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
        let client = legacy_client(&server, accept()).await;
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
            (End::ToolError(_), Outcome::Completed(r)) => assert!(r.is_error, "seed {seed}"),
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
