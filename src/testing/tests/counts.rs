//! Tasks written from their call's arguments, and the counts of what
//! clients asked about each task.

use serde_json::{Value, json};
use tokio::time::sleep;

use super::{Wire, accept, code, ms, requests};
use crate::protocol::CallToolResult;
use crate::testing::*;

/// A task that works `ms` (default 300) milliseconds, then returns its
/// arguments; and one that asks `q` first.
fn server() -> TestServer {
    TestServer::new()
        .tool(ScriptedTool::task_from_arguments("job", |arguments| {
            let length = arguments["ms"].as_u64().unwrap_or(300);
            TaskScript::new().complete(
                ms(length),
                CallToolResult::text("done").with_structured(arguments.clone()),
            )
        }))
        .tool(ScriptedTool::task(
            "ask",
            TaskScript::new()
                .input(ms(0), requests(&["q"]))
                .complete_with_inputs(ms(100)),
        ))
}

async fn start(wire: &mut Wire, tool: &str, arguments: Value) -> String {
    let r = wire
        .call(
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            true,
        )
        .await;
    assert_eq!(r["result"]["resultType"], "task", "{r}");
    r["result"]["taskId"].as_str().unwrap().to_owned()
}

async fn get(wire: &mut Wire, id: &str) -> Value {
    wire.call("tasks/get", json!({"taskId": id}), true)
        .await
        .get("result")
        .cloned()
        .unwrap_or_default()
}

#[tokio::test(start_paused = true)]
async fn a_task_written_from_its_arguments_lasts_and_returns_what_they_say() {
    let server = server();
    let mut wire = Wire::open(&server).await;
    let long = start(&mut wire, "job", json!({"ms": 500, "n": 17})).await;
    let short = start(&mut wire, "job", json!({"ms": 100, "n": 18})).await;
    sleep(ms(200)).await;
    let t = get(&mut wire, &short).await;
    assert_eq!(t["status"], "completed");
    assert_eq!(
        t["result"]["structuredContent"],
        json!({"ms": 100, "n": 18})
    );
    assert_eq!(get(&mut wire, &long).await["status"], "working");
    sleep(ms(300)).await;
    let t = get(&mut wire, &long).await;
    assert_eq!(t["status"], "completed");
    assert_eq!(
        t["result"]["structuredContent"],
        json!({"ms": 500, "n": 17})
    );

    // No arguments: the script is written for `{}`.
    let r = wire.call("tools/call", json!({"name": "job"}), true).await;
    let bare = r["result"]["taskId"].as_str().unwrap().to_owned();
    sleep(ms(300)).await;
    assert_eq!(
        get(&mut wire, &bare).await["result"]["structuredContent"],
        json!({})
    );
    // Like any task tool, it needs the Tasks extension declared.
    let r = wire.call("tools/call", json!({"name": "job"}), false).await;
    assert_eq!(code(&r), -32021);
}

#[tokio::test(start_paused = true)]
async fn reads_answers_and_cancels_are_counted_per_task() {
    let server = server();
    let mut wire = Wire::open(&server).await;
    let job = start(&mut wire, "job", json!({"ms": 1000})).await;
    let ask = start(&mut wire, "ask", json!({})).await;
    assert_eq!(server.task_counts(&job), Some(TaskCounts::default()));

    for _ in 0..3 {
        get(&mut wire, &job).await;
    }
    assert_eq!(get(&mut wire, &ask).await["status"], "input_required");
    let answer = json!({"q": accept(1)});
    for _ in 0..2 {
        // The second answer is one too many: counted all the same.
        wire.call(
            "tasks/update",
            json!({"taskId": ask, "inputResponses": answer}),
            true,
        )
        .await;
    }
    wire.call("tasks/cancel", json!({"taskId": job}), true)
        .await;
    // A task this server never made: counted apart.
    let r = wire
        .call("tasks/get", json!({"taskId": "task-99-gone"}), true)
        .await;
    assert_eq!(code(&r), -32602);

    let counters = server.counters();
    let job_counts = &counters.tasks[&job];
    assert_eq!(
        (job_counts.reads, job_counts.overlapping_reads),
        (3, 0),
        "one client reading in turn never overlaps"
    );
    assert_eq!(job_counts.cancels, 1);
    assert!(job_counts.answers.is_empty());
    let ask_counts = server.task_counts(&ask).unwrap();
    assert_eq!(ask_counts.reads, 1);
    assert_eq!(ask_counts.answers.get("q"), Some(&2));
    let totals = &counters.totals;
    assert_eq!(
        (totals.tasks, totals.reads, totals.answers, totals.cancels),
        (2, 4, 2, 1)
    );
    assert_eq!(totals.unknown_task_requests, 1);
    assert_eq!(server.task_counts("task-99-gone"), None);

    // The shape a test reads as JSON.
    let json = serde_json::to_value(&counters).unwrap();
    assert_eq!(
        json["tasks"][&ask],
        json!({"reads": 1, "overlapping_reads": 0, "answers": {"q": 2}, "cancels": 0})
    );
    assert_eq!(json["totals"]["unknown_task_requests"], 1);
}

#[tokio::test(start_paused = true)]
async fn reads_of_one_task_at_once_overlap_when_replies_are_held() {
    let server = server().read_delay(ms(100));
    let mut first = Wire::open(&server).await;
    let mut second = Wire::open(&server).await;
    let job = start(&mut first, "job", json!({"ms": 10_000})).await;
    let other = start(&mut first, "job", json!({"ms": 10_000})).await;

    // Two clients read the same task at the same moment.
    let a = first
        .request("tasks/get", json!({"taskId": job}), true)
        .await;
    let b = second
        .request("tasks/get", json!({"taskId": job}), true)
        .await;
    // A read of another task at the same time overlaps nothing.
    let c = second
        .request("tasks/get", json!({"taskId": other}), true)
        .await;
    assert_eq!(first.response_to(a).await["result"]["status"], "working");
    assert_eq!(second.response_to(b).await["result"]["status"], "working");
    second.response_to(c).await;
    assert_eq!(server.task_counts(&job).unwrap().overlapping_reads, 1);
    assert_eq!(server.task_counts(&other).unwrap().overlapping_reads, 0);

    // Reads in turn, each answered before the next: no overlap.
    get(&mut first, &job).await;
    get(&mut second, &job).await;
    let counts = server.task_counts(&job).unwrap();
    assert_eq!((counts.reads, counts.overlapping_reads), (4, 1));

    // A read whose client goes away before the reply is over all the same.
    first
        .request("tasks/get", json!({"taskId": job}), true)
        .await;
    sleep(ms(10)).await;
    drop(first);
    sleep(ms(10)).await;
    get(&mut second, &job).await;
    let counts = server.task_counts(&job).unwrap();
    assert_eq!((counts.reads, counts.overlapping_reads), (6, 1));
}

#[tokio::test(start_paused = true)]
async fn a_server_that_keeps_no_requests_still_counts_them() {
    let server = server().keep_requests(false);
    let mut wire = Wire::open(&server).await;
    let job = start(&mut wire, "job", json!({})).await;
    get(&mut wire, &job).await;
    get(&mut wire, &job).await;
    assert!(server.requests().is_empty());
    assert_eq!(server.count("tools/call"), 1);
    assert_eq!(server.count("tasks/get"), 2);
    assert_eq!(server.task_counts(&job).unwrap().reads, 2);
}
