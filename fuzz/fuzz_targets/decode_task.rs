//! The task snapshot decoder: `tasks/get` results, `notifications/tasks`
//! params and creation results.
//!
//! Properties: nothing panics; a decoded snapshot or creation result
//! re-encodes and decodes to the same value; a `completed` snapshot always
//! carries its result and a `failed` one its error; a status the crate does
//! not know keeps its name.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_tasks::fuzzing::{self, CallToolResponse, CreateTaskResult};
use mcp_tasks::protocol::{DetailedTask, TaskPayload, TaskStatus};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(task) = serde_json::from_str::<DetailedTask>(text) {
        assert!(!task.task_id.expose().is_empty(), "an empty id decoded");
        match (&task.payload, task.status()) {
            (TaskPayload::Completed(_), TaskStatus::Completed)
            | (TaskPayload::Failed(_), TaskStatus::Failed)
            | (TaskPayload::Working, TaskStatus::Working)
            | (TaskPayload::InputRequired(_), TaskStatus::InputRequired)
            | (TaskPayload::Cancelled, TaskStatus::Cancelled)
            | (TaskPayload::Unknown(_), TaskStatus::Unknown) => {}
            (payload, status) => panic!("{status} with payload {payload:?}"),
        }
        let again = serde_json::to_string(&task).expect("a decoded snapshot encodes");
        let back: DetailedTask = serde_json::from_str(&again).expect("an encoded snapshot decodes");
        assert_eq!(back, task);
    }
    if let Ok(created) = serde_json::from_str::<CreateTaskResult>(text) {
        let again = serde_json::to_string(&created).expect("a creation result encodes");
        let back: CreateTaskResult = serde_json::from_str(&again).expect("and decodes");
        assert_eq!(back, created);
    }
    if let Ok(CallToolResponse::Task(created)) = fuzzing::call_tool_response(text, true) {
        assert!(!created.task_id.expose().is_empty());
    }
});
