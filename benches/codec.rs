//! Decode and encode costs of the messages a waiting client handles most.
//!
//! ```text
//! cargo bench --bench codec
//! ```

use mcp_tasks::fuzzing::{self, CallToolResponse, Message};
use mcp_tasks::protocol::DetailedTask;

fn main() {
    divan::main();
}

const TASK_GET: &str = include_str!("../tests/fixtures/task_completed.json");
const TASK_WORKING: &str = include_str!("../tests/fixtures/task_working.json");
const CREATED: &str = include_str!("../tests/fixtures/result_task.json");
const PUSH: &str = include_str!("../tests/fixtures/notification_tasks.json");

/// A `tasks/get` result (completed, with its result inline).
#[divan::bench]
fn decode_tasks_get_completed() -> DetailedTask {
    serde_json::from_str(divan::black_box(TASK_GET)).unwrap()
}

/// A `tasks/get` result while the task works (the common poll).
#[divan::bench]
fn decode_tasks_get_working() -> DetailedTask {
    serde_json::from_str(divan::black_box(TASK_WORKING)).unwrap()
}

/// A creation result (`resultType: "task"`), through the resultType dispatch.
#[divan::bench]
fn decode_creation_result() -> CallToolResponse {
    fuzzing::call_tool_response(divan::black_box(CREATED), true).unwrap()
}

/// A `notifications/tasks` push: envelope, then the snapshot.
#[divan::bench]
fn decode_push() -> DetailedTask {
    let Message::Notification { params, .. } = fuzzing::message(divan::black_box(PUSH)).unwrap()
    else {
        unreachable!()
    };
    serde_json::from_str(params.unwrap().get()).unwrap()
}

/// Encoding a snapshot (what a server, or the test kit, writes).
#[divan::bench]
fn encode_tasks_get_completed(bencher: divan::Bencher<'_, '_>) {
    let task: DetailedTask = serde_json::from_str(TASK_GET).unwrap();
    bencher.bench_local(|| serde_json::to_string(divan::black_box(&task)).unwrap());
}
