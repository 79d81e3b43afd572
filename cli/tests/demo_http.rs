//! The demo server's HTTP mode, as the tests of a task tracker use it:
//! `mcp-tasks-demo --http 127.0.0.1:0` in a process of its own, library
//! clients over `transport::Http`, and `GET /counters` to check what they
//! asked. Everything is on loopback and bounded (each test by `LIMIT`,
//! each read of the server by a socket timeout); nothing asserts how long
//! anything took.

use std::time::Duration;

use mcp_tasks::protocol::ElicitResult;
use mcp_tasks::{Client, InputHandlers, Outcome, TaskState, transport::Http};
use serde_json::{Value, json};

#[path = "support/http_demo.rs"]
mod http_demo;
use http_demo::HttpDemo;

/// The bound on each test.
const LIMIT: Duration = Duration::from_secs(60);

/// A client of `demo`, answering every question with `reply to
/// <question>`.
async fn client(demo: &HttpDemo) -> Client {
    let answers = InputHandlers::new().elicitation_form(|question| async move {
        Ok(ElicitResult::accept(
            json!({ "answer": format!("reply to {}", question.message) }),
        ))
    });
    Client::builder()
        .input_handlers(answers)
        .connect(Http::new(demo.url()).connect_timeout(Duration::from_secs(5)))
        .await
        .expect("connect to the demo")
}

async fn bounded<F: Future>(test: F) -> F::Output {
    tokio::time::timeout(LIMIT, test)
        .await
        .expect("the test ends in time")
}

#[tokio::test]
async fn a_job_an_answered_question_and_a_cancel_are_counted() {
    let demo = HttpDemo::start_on("127.0.0.1:0", &[]);
    bounded(async {
        let client = client(&demo).await;

        // A job: its result is its arguments.
        let state = client
            .task()
            .call_tool("job", json!({"n": 17, "ms": 200}))
            .await
            .unwrap();
        let job = state.finish().await.unwrap();
        let job_id = job.id().unwrap().expose().to_owned();
        assert_eq!(
            job.structured::<Value>().unwrap(),
            json!({"n": 17, "ms": 200})
        );

        // An ask: the handler's answer comes back in the result.
        let state = client
            .task()
            .call_tool("ask", json!({"n": 18}))
            .await
            .unwrap();
        let ask = state.finish().await.unwrap();
        let ask_id = ask.id().unwrap().expose().to_owned();
        let answered = ask.structured::<Value>().unwrap();
        let answer = answered["inputResponses"]["answer"]["content"]["answer"]
            .as_str()
            .unwrap_or_default();
        assert!(answer.starts_with("reply to "), "{answered}");
        assert!(answer.contains("n=18"), "{answered}");

        // A long task, cancelled.
        let TaskState::Pending(long) = client.task().call_tool("long", json!({})).await.unwrap()
        else {
            panic!("the long task is running");
        };
        let long_id = long.id().expose().to_owned();
        let cancelled = long.cancel_and_wait().await.unwrap();
        assert!(matches!(cancelled.outcome(), Outcome::Cancelled));

        let counters = demo.counters();
        let tasks = &counters["tasks"];
        assert!(tasks[&job_id]["reads"].as_u64().unwrap() >= 1, "{counters}");
        assert!(tasks[&ask_id]["reads"].as_u64().unwrap() >= 1, "{counters}");
        assert_eq!(tasks[&ask_id]["answers"], json!({"answer": 1}));
        assert_eq!(tasks[&long_id]["cancels"], 1);
        assert_eq!(tasks[&job_id]["cancels"], 0);
        let totals = &counters["totals"];
        assert_eq!(totals["tasks"], 3);
        assert_eq!(totals["answers"], 1);
        assert_eq!(totals["cancels"], 1);
        assert_eq!(
            totals["overlapping_reads"], 0,
            "one client reads each task in turn: {counters}"
        );
        assert_eq!(totals["unknown_task_requests"], 0);
    })
    .await;
}

#[tokio::test]
async fn two_clients_reading_one_task_at_once_overlap() {
    let demo = HttpDemo::start_on("127.0.0.1:0", &["--read-delay", "500"]);
    bounded(async {
        let (first, second) = (client(&demo).await, client(&demo).await);
        let TaskState::Pending(mine) = first.task().call_tool("long", json!({})).await.unwrap()
        else {
            panic!("the long task is running");
        };
        let id = mine.id().expose().to_owned();
        let TaskState::Pending(theirs) = second.task().resume(&mine.reference()).await.unwrap()
        else {
            panic!("the long task is still running");
        };
        // One read each, in turn: no overlap yet.
        let before = demo.counters();
        assert_eq!(before["tasks"][&id]["overlapping_reads"], 0, "{before}");

        // Both read at once; each reply is held half a second.
        let (mine, theirs) = tokio::join!(mine.refresh(), theirs.refresh());
        let (mine, _theirs) = (mine.unwrap(), theirs.unwrap());

        let after = demo.counters();
        let task = &after["tasks"][&id];
        assert!(task["overlapping_reads"].as_u64().unwrap() >= 1, "{after}");
        assert!(task["reads"].as_u64().unwrap() >= 3, "{after}");
        drop(mine);
    })
    .await;
}

#[tokio::test]
async fn a_restarted_server_has_the_same_port_and_forgot_its_tasks() {
    let demo = HttpDemo::start_on("127.0.0.1:0", &[]);
    let addr = demo.addr.clone();
    let reference = bounded(async {
        let client = client(&demo).await;
        let state = client.task().call_tool("long", json!({})).await.unwrap();
        let TaskState::Pending(task) = state else {
            panic!("the long task is running");
        };
        task.detach()
    })
    .await;
    // Killed, and started again at once on the same port.
    drop(demo);
    let demo = HttpDemo::start_on(&addr, &[]);
    assert_eq!(demo.addr, addr);
    bounded(async {
        let client = client(&demo).await;
        let e = client.task().resume(&reference).await.unwrap_err();
        assert!(e.is_task_not_found(), "{e}");
        let counters = demo.counters();
        assert_eq!(counters["totals"]["tasks"], 0, "{counters}");
        assert!(
            counters["totals"]["unknown_task_requests"]
                .as_u64()
                .unwrap()
                >= 1,
            "{counters}"
        );
    })
    .await;
}
