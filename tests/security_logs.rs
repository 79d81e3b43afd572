//! Logs never carry a task id, at any level.
//!
//! Alone in its binary: `tracing` caches per call site whether anyone
//! listens, and another test thread logging without a subscriber at the
//! same moment could make this one miss events.

mod support;

use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use mcp_tasks::protocol::TaskId;
use mcp_tasks::testing::{Faults, ScriptedTool, TaskScript};
use mcp_tasks::{Client, TaskState};
use serde_json::json;
use support::*;

/// The part of a test-server task id that makes it unguessable: everything
/// after `task-N-`.
fn secret(id: &TaskId) -> &str {
    id.expose().rsplit('-').next().unwrap()
}

/// A `tracing` subscriber that keeps every event and span, with its
/// fields, as text.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Vec<String>>>);

struct Fields(String);

impl tracing::field::Visit for Fields {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, "{}={:?} ", field.name(), value);
    }
}

impl tracing::Subscriber for Capture {
    fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
        true
    }
    fn new_span(&self, span: &tracing::span::Attributes<'_>) -> tracing::span::Id {
        let mut fields = Fields(format!("span {} ", span.metadata().name()));
        span.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
        tracing::span::Id::from_u64(1)
    }
    fn record(&self, _: &tracing::span::Id, values: &tracing::span::Record<'_>) {
        let mut fields = Fields(String::new());
        values.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
    fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
    fn event(&self, event: &tracing::Event<'_>) {
        let mut fields = Fields(format!("{} ", event.metadata().level()));
        event.record(&mut fields);
        self.0.lock().unwrap().push(fields.0);
    }
    fn enter(&self, _: &tracing::span::Id) {}
    fn exit(&self, _: &tracing::span::Id) {}
}

#[tokio::test(start_paused = true)]
async fn logs_at_every_level_never_carry_a_task_id() {
    let capture = Capture::default();
    let _guard = tracing::subscriber::set_default(capture.clone());

    // Every path that logs about a task: creation, a lost and retried read,
    // pushes for a task nobody watches, falling back from listening to
    // polling, and cancelling on drop.
    let script = |end| {
        TaskScript::new()
            .poll_interval(ms(100))
            .working(ms(150), "half")
            .complete(ms(end), text("done"))
    };
    let server = export(script(150))
        .tool(ScriptedTool::task("slow", script(60_000)))
        .faults(Faults::new().stray_pushes().duplicate_pushes());
    let client = Client::connect(Lossy(server.connect(), "tasks/get"))
        .await
        .unwrap();
    let done = run_task(client.task().listen(), "export").await.unwrap();
    let id = done.id().unwrap().clone();
    let mut ids = vec![id.clone()];
    // A second task: the stream ends under it, its wait falls back to
    // polling and times out, then its handle is dropped.
    let state = client
        .task()
        .listen()
        .cancel_on_drop()
        .timeout(ms(500))
        .call_tool("slow", json!({}))
        .await
        .unwrap();
    ids.push(state.id().unwrap().clone());
    let TaskState::Pending(task) = state else {
        panic!("expected a pending task")
    };
    let TaskState::Pending(task) = task.next().await.unwrap() else {
        panic!("still working")
    };
    server.end_subscriptions();
    let err = task.finish().await.unwrap_err();
    assert!(err.error().is_deadline());
    drop(err);
    tokio::time::sleep(ms(10)).await;
    drop(client);
    tokio::time::sleep(ms(10)).await;

    let logs = capture.0.lock().unwrap().clone();
    let all = logs.join("\n");
    for path in [
        "became a task",
        "retrying",
        "a push for a task nobody watches",
        "polling instead",
        "cancelling the task",
    ] {
        assert!(
            logs.iter()
                .any(|l| l.contains(path) && l.contains("task=TaskId(#")),
            "nothing logged for {path:?}:\n{all}"
        );
    }
    assert!(server.count("tasks/cancel") >= 1, "cancel on drop ran");
    for id in &ids {
        assert!(
            !all.contains(secret(id)),
            "a task id leaked into the logs:\n{all}"
        );
    }
}
