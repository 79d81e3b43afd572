//! The small things a first user reaches for: settings chosen at run time
//! in one call chain, a bound on one wait, answers decoded from JSON, and
//! one answer without building a map.

mod support;

use mcp_tasks::protocol::{ElicitResult, InputResponse};
use mcp_tasks::testing::TaskScript;
use mcp_tasks::{InputMode, Outcome, TaskState};
use serde_json::json;
use support::*;
use tokio::time::Instant;

#[tokio::test(start_paused = true)]
async fn settings_chosen_at_run_time_fit_one_call_chain() {
    for (listen, ttl) in [
        (false, None),
        (true, None),
        (false, Some(ms(350))),
        (true, Some(ms(350))),
    ] {
        let server = polled_export(ms(100), ms(1_000), "done");
        let client = client(&server).await;
        let done = client
            .task()
            .listen_if(listen)
            .maybe_with_ttl(ttl)
            .maybe_poll_interval(None)
            .maybe_timeout(Some(ms(5_000)))
            .cancel_on_drop_if(false)
            .call_tool("export", json!({}))
            .await
            .unwrap()
            .await
            .unwrap();
        let expired = matches!(done.outcome(), Outcome::Expired);
        assert_eq!(expired, ttl.is_some(), "listen {listen}, ttl {ttl:?}");
        assert_eq!(
            server.count("subscriptions/listen") > 0,
            listen,
            "listen {listen}, ttl {ttl:?}"
        );
    }
}

#[tokio::test(start_paused = true)]
async fn finish_within_bounds_one_wait_and_keeps_the_builders_for_the_next() {
    let server = polled_export(ms(100), ms(3_000), "done");
    let client = client(&server).await;
    let state = start_export_within(&client, ms(60_000)).await;
    let TaskState::Pending(task) = state else {
        panic!("expected a pending task")
    };
    let started = Instant::now();
    let err = task.finish_within(ms(1_000)).await.unwrap_err();
    assert!(err.error().is_deadline(), "{err}");
    assert_eq!(Instant::now() - started, ms(1_000));
    let TaskState::Pending(task) = err.into_task() else {
        panic!("still pending")
    };
    // The next wait has the builder's 60 s again.
    let done = task.finish().await.unwrap();
    assert!(done.outcome().is_completed());
}

async fn answer_from_json(
    task: mcp_tasks::Task<mcp_tasks::InputRequired>,
    answers: serde_json::Value,
) -> Result<TaskState, Box<dyn std::error::Error>> {
    // The answer type is inferred from `respond`'s parameter.
    Ok(task.respond(serde_json::from_value(answers)?).await?)
}

#[tokio::test(start_paused = true)]
async fn answers_decoded_from_json_and_one_key_answers() {
    for one_key in [false, true] {
        let server = export(
            TaskScript::new()
                .poll_interval(ms(100))
                .input(ms(10), requests(&["confirm"]))
                .complete_with_inputs(ms(10)),
        );
        let client = client(&server).await;
        let task = start_pending(client.task().input(InputMode::Manual), "export").await;
        let TaskState::InputRequired(task) = task.finish().await.unwrap_err().into_task() else {
            panic!("expected input_required")
        };
        let next = if one_key {
            let answer = InputResponse::Elicit(ElicitResult::accept(json!({"ok": true})));
            task.respond_one("confirm", answer).await.unwrap()
        } else {
            let answers = json!({"confirm": {"action": "accept", "content": {"ok": true}}});
            answer_from_json(task, answers).await.unwrap()
        };
        let TaskState::Pending(task) = next else {
            panic!("every key answered")
        };
        let result = task.finish().await.unwrap().into_result().unwrap();
        let inputs = &result.structured_content.unwrap()["inputResponses"];
        assert_eq!(inputs["confirm"]["action"], "accept", "one_key {one_key}");
    }
}
