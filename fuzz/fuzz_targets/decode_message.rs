//! The incoming message decoder: one JSON-RPC message as the client's read
//! loop sees it, then every decoder the client applies to its payload.
//!
//! Properties: nothing panics; whatever decodes re-encodes and decodes to
//! the same value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_tasks::fuzzing::{self, CallToolResponse, Message, SubscriptionAcknowledged};
use mcp_tasks::protocol::DetailedTask;

fuzz_target!(|data: &[u8]| {
    // The line transport hands the client UTF-8 text only.
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The payload decoders also run on the whole input, so that bare
    // results (such as the fixtures used as seeds) reach them directly.
    payload(text);
    let Ok(message) = fuzzing::message(text) else {
        return;
    };
    match message {
        Message::Response { result, .. } => payload(result.get()),
        Message::Notification {
            params: Some(params),
            ..
        }
        | Message::Request {
            params: Some(params),
            ..
        } => payload(params.get()),
        Message::Error { error, .. } => {
            let _ = error.to_string();
        }
        Message::Notification { params: None, .. } | Message::Request { params: None, .. } => {}
    }
});

/// What the client may do with a result or notification payload.
fn payload(json: &str) {
    let _ = fuzzing::result_type(json);
    let _ = fuzzing::call_tool_response(json, true);
    // Without the Tasks extension declared, a task is never accepted.
    if let Ok(response) = fuzzing::call_tool_response(json, false) {
        assert!(!matches!(response, CallToolResponse::Task(_)));
    }
    if let Ok(task) = serde_json::from_str::<DetailedTask>(json) {
        let again = serde_json::to_string(&task).expect("a decoded snapshot encodes");
        let back: DetailedTask = serde_json::from_str(&again).expect("an encoded snapshot decodes");
        assert_eq!(back, task);
    }
    if let Ok(ack) = serde_json::from_str::<SubscriptionAcknowledged>(json) {
        let again = serde_json::to_string(&ack).expect("an acknowledgement encodes");
        let back: SubscriptionAcknowledged = serde_json::from_str(&again).expect("and decodes");
        assert_eq!(back, ack);
    }
}
