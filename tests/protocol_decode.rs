//! Decoding every golden fixture in `tests/fixtures/`: each result kind,
//! each task status, and the quirks real peers send.

use std::cell::RefCell;
use std::collections::BTreeSet;

use mcp_tasks::fuzzing::{
    self, CallToolResponse, ListToolsResult, Message, ResultType, SubscriptionAcknowledged,
};
use mcp_tasks::protocol::{
    ContentBlock, DetailedTask, DiscoverResult, ElicitRequest, InputRequest, TaskId, TaskPayload,
    TaskStatus,
};

thread_local! {
    /// The fixtures read on this thread, for `every_fixture_is_exercised`.
    static READ: RefCell<BTreeSet<String>> = const { RefCell::new(BTreeSet::new()) };
}

fn fixture(name: &str) -> String {
    READ.with(|read| read.borrow_mut().insert(format!("{name}.json")));
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn call(name: &str) -> CallToolResponse {
    fuzzing::call_tool_response(&fixture(name), true).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn task(name: &str) -> DetailedTask {
    serde_json::from_str(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

#[test]
fn a_complete_result_with_every_content_kind() {
    let CallToolResponse::Complete(r) = call("result_complete") else {
        panic!()
    };
    assert_eq!(r.content.len(), 6);
    assert!(matches!(&r.content[0], ContentBlock::Text { text, .. } if text == "42 rows exported"));
    assert!(
        matches!(&r.content[1], ContentBlock::Image { mime_type, .. } if mime_type == "image/png")
    );
    assert!(matches!(&r.content[2], ContentBlock::Audio { .. }));
    assert!(matches!(
        &r.content[3],
        ContentBlock::ResourceLink {
            size: Some(2048),
            ..
        }
    ));
    assert!(
        matches!(&r.content[4], ContentBlock::Resource { resource, .. } if resource.text.as_deref() == Some("ok"))
    );
    assert!(
        matches!(&r.content[5], ContentBlock::Resource { resource, .. } if resource.blob.is_some())
    );
    assert_eq!(r.structured_content.unwrap()["rows"], 42);
    assert!(!r.is_error);
}

#[test]
fn a_legacy_result_without_result_type_is_complete() {
    assert_eq!(
        fuzzing::result_type(&fixture("result_legacy_no_result_type")).unwrap(),
        ResultType::Complete
    );
    let CallToolResponse::Complete(r) = call("result_legacy_no_result_type") else {
        panic!()
    };
    assert_eq!(r.joined_text(), "hello");
}

#[test]
fn a_tool_error_is_a_complete_result() {
    let CallToolResponse::Complete(r) = call("result_tool_error") else {
        panic!()
    };
    assert!(r.is_error);
}

#[test]
fn unknown_content_blocks_do_not_break_the_result() {
    let CallToolResponse::Complete(r) = call("result_unknown_content") else {
        panic!()
    };
    assert!(matches!(&r.content[0], ContentBlock::Unknown(v) if v.is_object()));
    assert_eq!(r.joined_text(), "still here");
}

#[test]
fn input_required_with_every_request_kind() {
    let CallToolResponse::InputRequired(r) = call("result_input_required") else {
        panic!()
    };
    assert_eq!(r.request_state.as_deref(), Some("opaque+/=state"));
    let reqs = r.input_requests.unwrap();
    assert!(
        matches!(&reqs["confirm"], InputRequest::Elicitation(ElicitRequest::Form { message, .. }) if message == "Deploy to prod?")
    );
    assert!(
        matches!(&reqs["login"], InputRequest::Elicitation(ElicitRequest::Url { url, .. }) if url.starts_with("https://"))
    );
    assert!(
        matches!(&reqs["summarise"], InputRequest::Sampling(s) if s.max_tokens == 200 && s.extra["temperature"] == 0.2)
    );
    assert!(matches!(&reqs["where"], InputRequest::Roots(_)));
    let CallToolResponse::InputRequired(r) = call("result_input_required_state_only") else {
        panic!()
    };
    assert!(r.input_requests.is_none());
}

#[test]
fn a_creation_result() {
    let CallToolResponse::Task(t) = call("result_task") else {
        panic!()
    };
    assert_eq!(t.task_id.expose(), "9f4c1e0a-6f53-4b8e-9f77-2d1f2b4e8a10");
    assert_eq!(t.info.status, TaskStatus::Working);
    assert_eq!(
        (t.info.ttl_ms, t.info.poll_interval_ms),
        (Some(3_600_000), Some(2000))
    );
    assert_eq!(t.info.created_at.as_deref(), Some("2026-08-01T09:00:00Z"));
    // Without the extension declared, a task is invalid.
    assert!(fuzzing::call_tool_response(&fixture("result_task"), false).is_err());
}

#[test]
fn peer_quirks_in_creation_results() {
    // TypeScript SDK: extra `content: []`, `ttlMs: null`, serverInfo in _meta.
    let CallToolResponse::Task(t) = call("result_task_ts_sdk") else {
        panic!()
    };
    assert_eq!(t.info.ttl_ms, None);
    assert_eq!(t.info.status_message.as_deref(), Some("Task accepted"));
    // Nanosecond timestamps stay as sent; a negative interval reads as absent;
    // a terminal seed is kept for the client to read again.
    let CallToolResponse::Task(t) = call("result_task_nanos_negative_interval") else {
        panic!()
    };
    assert_eq!(
        t.info.created_at.as_deref(),
        Some("2026-08-01T09:00:00.123456789+00:00")
    );
    assert_eq!(t.info.poll_interval_ms, None);
    assert_eq!(t.info.status, TaskStatus::Completed);
}

#[test]
fn an_unknown_result_type_is_rejected() {
    let e = fuzzing::call_tool_response(&fixture("result_unknown_type"), true).unwrap_err();
    assert!(e.to_string().contains("later"), "{e}");
}

#[test]
fn each_task_status_decodes_with_its_payload() {
    let t = task("task_working");
    assert_eq!(
        (t.status(), t.info.poll_interval_ms),
        (TaskStatus::Working, Some(500))
    );
    assert_eq!(t.info.status_message.as_deref(), Some("Exporting 3/10"));

    let t = task("task_input_required");
    let TaskPayload::InputRequired(reqs) = &t.payload else {
        panic!()
    };
    let (key, req) = reqs.iter().next().unwrap();
    assert_eq!(key, "6f1c2a9e-1111-4c4c-9d9d-000000000001");
    assert!(
        matches!(req, InputRequest::Elicitation(ElicitRequest::Form { .. })),
        "no mode means form"
    );

    let t = task("task_completed");
    assert!(matches!(&t.payload, TaskPayload::Completed(r) if r.joined_text() == "done"));

    let t = task("task_completed_with_result_type");
    assert!(matches!(&t.payload, TaskPayload::Completed(r) if r.structured_content.is_some()));
    assert_eq!(t.info.ttl_ms, None);

    let t = task("task_completed_tool_error");
    assert!(matches!(&t.payload, TaskPayload::Completed(r) if r.is_error));

    let t = task("task_failed");
    let TaskPayload::Failed(e) = &t.payload else {
        panic!()
    };
    assert_eq!(
        (e.code, e.data.as_ref().unwrap()["attempt"].as_i64()),
        (-32603, Some(3))
    );

    let t = task("task_cancelled");
    assert_eq!(
        (t.status(), t.info.ttl_ms),
        (TaskStatus::Cancelled, Some(0))
    );
}

#[test]
fn tasks_get_with_result_type_task_is_accepted() {
    // One example in the specification shows it; the status decides.
    assert_eq!(
        fuzzing::result_type(&fixture("task_get_result_type_task")).unwrap(),
        ResultType::Task
    );
    assert_eq!(
        task("task_get_result_type_task").status(),
        TaskStatus::Working
    );
}

#[test]
fn malformed_snapshots_are_errors_not_panics() {
    let e = serde_json::from_str::<DetailedTask>(&fixture("task_completed_missing_result"))
        .unwrap_err();
    assert!(e.to_string().contains("result"), "{e}");
}

#[test]
fn an_unknown_status_is_kept_not_an_error() {
    // A later revision's status must not lose the task.
    let t = task("task_unknown_status");
    assert_eq!(t.status(), TaskStatus::Unknown);
    assert_eq!(t.task_id.expose(), "t-1");
    assert_eq!(t.payload, TaskPayload::Unknown("paused".into()));
}

#[test]
fn a_task_push_decodes_and_an_acknowledgement_accepts_only_the_tasks_it_lists() {
    let Message::Notification { method, params } =
        fuzzing::message(&fixture("notification_tasks")).unwrap()
    else {
        panic!()
    };
    assert_eq!(method, "notifications/tasks");
    let t: DetailedTask = serde_json::from_str(params.unwrap().get()).unwrap();
    assert!(matches!(t.payload, TaskPayload::Completed(_)));

    let ack = |name: &str| -> SubscriptionAcknowledged {
        let Message::Notification { params, .. } = fuzzing::message(&fixture(name)).unwrap() else {
            panic!()
        };
        serde_json::from_str(params.unwrap().get()).unwrap()
    };
    let accepts = |name: &str| {
        ack(name)
            .notifications
            .task_ids
            .is_some_and(|ids| ids.contains(&TaskId::new("t-1")))
    };
    assert!(accepts("notification_acknowledged"));
    assert!(!accepts("notification_acknowledged_without_task_ids"));
}

#[test]
fn discover_and_tools_list_results_decode_with_the_schema_kept_as_sent() {
    let d: DiscoverResult = serde_json::from_str(&fixture("discover")).unwrap();
    assert!(d.capabilities.supports_tasks());
    assert_eq!(d.server_info().unwrap().name, "srv");

    let page: ListToolsResult = serde_json::from_str(&fixture("tools_list")).unwrap();
    assert_eq!(page.next_cursor.as_deref(), Some("page-2"));
    let tool = &page.tools[0];
    // The schema is kept exactly as sent: `$ref` is not resolved, keywords survive.
    assert_eq!(tool.input_schema["properties"]["ref"]["$ref"], "#/$defs/r");
    assert_eq!(
        tool.input_schema["properties"]["table"]["x-mcp-header"],
        "Table"
    );
    assert_eq!(
        tool.annotations.as_ref().unwrap().read_only_hint,
        Some(true)
    );
}

#[test]
fn error_responses_keep_their_id_code_and_data() {
    for (name, code) in [
        ("error_unsupported_version", -32022),
        ("error_missing_capability", -32021),
    ] {
        let Message::Error { id, error } = fuzzing::message(&fixture(name)).unwrap() else {
            panic!()
        };
        assert!(id.is_some());
        assert_eq!(error.code, code);
        assert!(error.data.is_some());
    }
}

/// Every decoding test above; `every_fixture_is_exercised` runs them all.
const DECODING_TESTS: &[fn()] = &[
    a_complete_result_with_every_content_kind,
    a_legacy_result_without_result_type_is_complete,
    a_tool_error_is_a_complete_result,
    unknown_content_blocks_do_not_break_the_result,
    input_required_with_every_request_kind,
    a_creation_result,
    peer_quirks_in_creation_results,
    an_unknown_result_type_is_rejected,
    each_task_status_decodes_with_its_payload,
    tasks_get_with_result_type_task_is_accepted,
    malformed_snapshots_are_errors_not_panics,
    an_unknown_status_is_kept_not_an_error,
    a_task_push_decodes_and_an_acknowledgement_accepts_only_the_tasks_it_lists,
    discover_and_tools_list_results_decode_with_the_schema_kept_as_sent,
    error_responses_keep_their_id_code_and_data,
];

#[test]
fn every_fixture_is_exercised() {
    // Runs the decoding tests on this thread and compares the fixtures they
    // actually read with the files on disk: a name in a comment, or a
    // helper that is never called, does not count.
    for test in DECODING_TESTS {
        test();
    }
    let read = READ.with(|read| read.borrow().clone());
    let dir = format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let on_disk: BTreeSet<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .collect();
    let unread: Vec<_> = on_disk.difference(&read).collect();
    assert!(
        unread.is_empty(),
        "no test decodes these fixtures: {unread:?}"
    );
}
