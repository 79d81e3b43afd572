//! Requests that wait on something other than the server's work (an
//! initialize-era `tasks/result`, open until its task ends; a call whose
//! stream asked the client a question) must not hold the slots of
//! [`Http::max_in_flight`] that the other requests need.

use std::sync::Arc;

use asking_server::AskingServer;
use mcp_tasks::protocol::ElicitResult;
use session_server::SessionServer;
use tokio::sync::Notify;

use super::*;

fn answer_yes() -> InputHandlers {
    InputHandlers::new()
        .elicitation_form(|_| async { Ok(ElicitResult::accept(json!({"ok": true}))) })
}

async fn legacy_client(url: &str, most: usize, handlers: InputHandlers) -> Client {
    Client::builder()
        .client_info("http-tests", "1.0")
        .protocol_version(asking_server::VERSION)
        .input_handlers(handlers)
        .connect(Http::new(url).max_in_flight(most))
        .await
        .expect("connect")
}

/// Starts a `job` task and follows it to its end in the background.
fn follow(client: &Client, arguments: serde_json::Value) -> tokio::task::JoinHandle<String> {
    let client = client.clone();
    tokio::spawn(async move {
        let state = client.task().call_tool("job", arguments).await.unwrap();
        let finished = state.finish().await.unwrap();
        finished.outcome().result().unwrap().joined_text()
    })
}

/// Waits (polling the server) until `done` holds.
async fn until(done: impl Fn() -> bool) {
    while !done() {
        tokio::time::sleep(ms(10)).await;
    }
}

/// `held` tasks have asked their question, been answered, and work on for
/// an hour, each keeping its `tasks/result` open; with a bound of `most`
/// (at most `held`), a short task started then still runs to its end.
async fn a_short_task_ends_beside_held_results(most: usize, held: usize) {
    let server = AskingServer::start(ms(20), ms(20)).await;
    let client = legacy_client(&server.url, most, answer_yes()).await;
    let long: Vec<_> = (0..held)
        .map(|_| follow(&client, json!({"ask": true, "after_ms": 3_600_000})))
        .collect();
    until(|| server.results_open() == held && server.posts("") == held).await;
    let short = follow(&client, json!({"ask": false}));
    assert_eq!(short.await.unwrap(), "done", "bound {most}, {held} held");
    for task in long {
        task.abort();
    }
}

#[tokio::test]
async fn open_task_results_do_not_take_the_slots_other_tasks_need() {
    bounded(a_short_task_ends_beside_held_results(2, 2)).await;
}

/// The class: whatever the bound, and however many more results are held
/// than there are slots, the other requests go through.
#[tokio::test]
async fn no_number_of_held_results_starves_the_other_requests() {
    bounded(async {
        for (most, held) in [(1, 1), (1, 3), (3, 3), (3, 5)] {
            a_short_task_ends_beside_held_results(most, held).await;
        }
    })
    .await;
}

/// A question asked on a call's own response stream waits for its
/// answer, which may wait on other requests of the application: with one
/// slot, the call must not keep it while it waits.
#[tokio::test]
async fn a_call_waiting_on_its_question_keeps_no_slot_from_other_requests() {
    bounded(async {
        let server = SessionServer::start().await;
        server.ask_in_calls();
        let go = Arc::new(Notify::new());
        let gate = go.clone();
        // The answer waits until the application's other request is done.
        let handlers = InputHandlers::new().elicitation_form(move |_| {
            let gate = gate.clone();
            async move {
                gate.notified().await;
                Ok(ElicitResult::accept(json!({"ok": true})))
            }
        });
        let client = Client::builder()
            .client_info("http-tests", "1.0")
            .protocol_version(session_server::VERSION)
            .input_handlers(handlers)
            .connect(Http::new(&server.url).max_in_flight(1))
            .await
            .expect("connect");
        let caller = client.clone();
        let call = tokio::spawn(async move { caller.call_tool("echo", json!({})).await });
        let asked = || server.hits_of("tools/call").len() == 1;
        until(asked).await;
        let tools = client.list_tools().await.unwrap();
        assert!(!tools.is_empty());
        go.notify_one();
        assert_eq!(call.await.unwrap().unwrap().joined_text(), "echoed");
    })
    .await;
}
