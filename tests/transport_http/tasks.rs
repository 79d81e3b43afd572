//! Tasks over HTTP: the typestate API end to end, `Mcp-Name` on every
//! `tasks/*` request, lost reads retried, listen over SSE.

use super::*;

fn slow() -> TestServer {
    TestServer::new().tool(ScriptedTool::task(
        "export",
        TaskScript::new()
            .poll_interval(ms(20))
            .working(ms(10), "exporting")
            .complete(ms(150), CallToolResult::text("exported")),
    ))
}

/// Every `tasks/*` POST names its task in `Mcp-Name`, and carries the
/// user's headers like the call that created the task.
fn assert_task_routing(front: &Front, task_id: &str) {
    let task_posts: Vec<_> = front
        .seen()
        .into_iter()
        .filter(|s| s.method.starts_with("tasks/"))
        .collect();
    assert!(!task_posts.is_empty());
    for s in &task_posts {
        assert_eq!(s.body["params"]["taskId"], task_id, "{}", s.method);
        assert_eq!(s.header("mcp-name"), Some(task_id), "{}", s.method);
        assert_eq!(s.header("authorization"), Some("Bearer tok-123"));
        assert_eq!(s.header("x-team"), Some("data-platform"));
    }
}

#[tokio::test]
async fn a_task_with_input_runs_to_completion() {
    bounded(async {
        let server = approval();
        let front = Front::start(&server, Mode::Sse).await;
        let client = Client::builder()
            .input_handlers(yes())
            .connect(http(&front))
            .await
            .unwrap();
        let state = client
            .task()
            .call_tool("approve", json!({"doc": 7}))
            .await
            .unwrap();
        let TaskState::Pending(task) = state else {
            panic!("a task")
        };
        let id = task.id().expose().to_owned();
        let done = task.finish().await.unwrap();
        let result = done.outcome().result().expect("completed");
        assert_eq!(
            result.structured_content.as_ref().unwrap()["inputResponses"]["confirm"]["action"],
            "accept"
        );
        assert_eq!(rejected(&front), []);
        assert!(front.seen_of("tasks/update").len() == 1 && front.seen_of("tasks/get").len() >= 2);
        assert_eq!(server.task_ids()[0].expose(), id);
        assert_task_routing(&front, &id);
    })
    .await;
}

#[tokio::test]
async fn input_answered_by_hand_then_cancelled() {
    bounded(async {
        let server = TestServer::new().tool(ScriptedTool::task(
            "approve",
            TaskScript::new()
                .poll_interval(ms(20))
                .input(ms(10), [("confirm".to_string(), confirm())].into())
                .working(ms(20), "applying")
                .complete(ms(5000), CallToolResult::text("never")),
        ));
        let front = Front::start(&server, Mode::Json).await;
        let client = connect(&front).await;
        let state = client.task().call_tool("approve", json!({})).await.unwrap();
        // No handler answers: the wait stops at the input request.
        let err = state.finish().await.unwrap_err();
        assert!(err.error().is_input_required(), "{}", err.error());
        let TaskState::InputRequired(task) = err.into_task() else {
            panic!("input first")
        };
        let id = task.id().expose().to_owned();
        let answer: InputResponses = [(
            "confirm".to_string(),
            ElicitResult::accept(json!({"ok": true})).into(),
        )]
        .into();
        let state = task.respond(answer).await.unwrap();
        let finished = match state {
            TaskState::Pending(t) => t.cancel_and_wait().await.unwrap(),
            TaskState::InputRequired(t) => t.cancel_and_wait().await.unwrap(),
            TaskState::Finished(_) => panic!("still running"),
        };
        assert!(
            matches!(finished.outcome(), Outcome::Cancelled),
            "{:?}",
            finished.outcome()
        );
        assert_eq!(front.seen_of("tasks/cancel").len(), 1);
        assert_eq!(rejected(&front), []);
        assert_task_routing(&front, &id);
    })
    .await;
}

#[tokio::test]
async fn a_broken_read_is_sent_again_with_a_new_id() {
    bounded(async {
        let server = slow();
        let front = Front::start(&server, Mode::Sse).await;
        front.script(|s, n| (s.method == "tasks/get" && n == 1).then_some(Scripted::Break));
        let client = connect(&front).await;
        let done = client
            .task()
            .call_tool("export", json!({}))
            .await
            .unwrap()
            .finish()
            .await
            .unwrap();
        assert_eq!(done.outcome().result().unwrap().joined_text(), "exported");
        let gets = front.seen_of("tasks/get");
        assert!(gets.len() >= 3, "{}", gets.len());
        let mut ids: Vec<_> = gets.iter().map(|s| s.id.to_string()).collect();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), gets.len(), "every read has its own id");
    })
    .await;
}

#[tokio::test]
async fn listen_over_sse_with_keep_alives() {
    bounded(async {
        let server = slow();
        let front = Front::start(&server, Mode::Json).await;
        // Shorter than the task: the listen stream must outlive it.
        let client = Client::connect(http(&front).timeout(ms(100)))
            .await
            .unwrap();
        let state = client
            .task()
            .listen()
            .call_tool("export", json!({}))
            .await
            .unwrap();
        let done = state.finish().await.unwrap();
        assert_eq!(done.outcome().result().unwrap().joined_text(), "exported");
        assert!(server.pushes() >= 1, "the result came by push");
        let listens = front.seen_of("subscriptions/listen");
        assert_eq!(listens.len(), 1);
        assert_eq!(
            listens[0].body["params"]["notifications"]["taskIds"][0],
            server.task_ids()[0].expose()
        );
        assert_eq!(rejected(&front), []);
        // Nothing left to watch: the client closes the stream, and the
        // server ends the subscription.
        let mut waited = 0;
        while server.open_subscriptions() > 0 && waited < 100 {
            tokio::time::sleep(ms(20)).await;
            waited += 1;
        }
        assert_eq!(server.open_subscriptions(), 0);
        assert_eq!(front.dropped_streams(), 1);
    })
    .await;
}
