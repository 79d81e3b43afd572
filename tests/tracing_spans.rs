//! The tracing spans of a task's life: one `mcp_tasks.task` span per
//! handle, the `mcp_tasks.request` spans of its requests inside it, status
//! changes and input rounds as its events, the outcome and counts recorded
//! at its end, and never a whole task id anywhere.
//!
//! Task ids here are long opaque handles (a gateway in front of the
//! scripted server rewrites them), so a leak of any part past the redacted
//! prefix shows.

mod support;

use std::collections::BTreeMap;
use std::fmt;
use std::io;
use std::sync::{Arc, Mutex};

use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{ElicitResult, RpcError, TaskId};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use mcp_tasks::transport::{
    Closed, Inbound, MessageSink, MessageStream, Outbound, Transport, memory,
};
use mcp_tasks::{Client, TaskRef, TaskState};
use serde_json::json;
use support::*;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::{Event, Subscriber};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::{Context, SubscriberExt};
use tracing_subscriber::registry::LookupSpan;

// ---- a capturing layer ------------------------------------------------

/// One span as recorded: its name, fields (as text, last value wins), its
/// parent (an index into `Captured::spans`) and whether it closed.
#[derive(Debug, Clone)]
struct SpanRec {
    name: &'static str,
    parent: Option<usize>,
    fields: BTreeMap<String, String>,
    closed: bool,
}

#[derive(Debug, Clone)]
struct EventRec {
    /// The span the event is in (an index into `Captured::spans`).
    span: Option<usize>,
    fields: BTreeMap<String, String>,
}

impl EventRec {
    fn message(&self) -> &str {
        self.fields.get("message").map_or("", String::as_str)
    }
}

#[derive(Debug, Default)]
struct Captured {
    spans: Vec<SpanRec>,
    events: Vec<EventRec>,
}

impl Captured {
    fn named(&self, name: &str) -> Vec<usize> {
        (0..self.spans.len())
            .filter(|&i| self.spans[i].name == name)
            .collect()
    }

    fn tasks(&self) -> Vec<usize> {
        self.named("mcp_tasks.task")
    }

    fn field(&self, span: usize, name: &str) -> Option<&str> {
        self.spans[span].fields.get(name).map(String::as_str)
    }

    /// The request spans whose parent is `span`, by method.
    fn requests_in(&self, span: usize) -> Vec<(usize, &str)> {
        self.named("mcp_tasks.request")
            .into_iter()
            .filter(|&i| self.spans[i].parent == Some(span))
            .map(|i| (i, self.field(i, "method").unwrap_or("")))
            .collect()
    }

    fn events_in(&self, span: usize) -> Vec<&EventRec> {
        self.events
            .iter()
            .filter(|e| e.span == Some(span))
            .collect()
    }

    /// Every recorded name and value, one per line.
    fn all_text(&self) -> String {
        let mut out = String::new();
        let spans = self.spans.iter().map(|s| (s.name, &s.fields));
        let events = self.events.iter().map(|e| ("event", &e.fields));
        for (name, fields) in spans.chain(events) {
            out.push_str(name);
            for (k, v) in fields {
                out.push_str(&format!(" {k}={v}"));
            }
            out.push('\n');
        }
        out
    }
}

/// Records spans and events as text, with their parents.
#[derive(Clone, Default)]
struct Capture(Arc<Mutex<Captured>>);

/// A span's index in `Captured::spans`, kept in the registry's extensions
/// (registry ids are reused once a span closes).
struct Index(usize);

struct Fields<'a>(&'a mut BTreeMap<String, String>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().to_owned(), value.to_owned());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.0.insert(field.name().to_owned(), format!("{value:?}"));
    }
}

impl<S: Subscriber + for<'a> LookupSpan<'a>> Layer<S> for Capture {
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let span = ctx.span(id).expect("a new span is in the registry");
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<Index>().map(|i| i.0));
        let mut fields = BTreeMap::new();
        attrs.record(&mut Fields(&mut fields));
        let mut c = self.0.lock().unwrap();
        c.spans.push(SpanRec {
            name: attrs.metadata().name(),
            parent,
            fields,
            closed: false,
        });
        span.extensions_mut().insert(Index(c.spans.len() - 1));
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        let Some(i) = ctx
            .span(id)
            .and_then(|s| s.extensions().get::<Index>().map(|i| i.0))
        else {
            return;
        };
        values.record(&mut Fields(&mut self.0.lock().unwrap().spans[i].fields));
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let span = ctx
            .event_span(event)
            .and_then(|s| s.extensions().get::<Index>().map(|i| i.0));
        let mut fields = BTreeMap::new();
        event.record(&mut Fields(&mut fields));
        self.0
            .lock()
            .unwrap()
            .events
            .push(EventRec { span, fields });
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        if let Some(i) = ctx
            .span(&id)
            .and_then(|s| s.extensions().get::<Index>().map(|i| i.0))
        {
            self.0.lock().unwrap().spans[i].closed = true;
        }
    }
}

/// Installs a capturing subscriber on this thread (the test's runtime is
/// current-thread, so everything the client does is seen).
fn capture() -> (Capture, tracing::subscriber::DefaultGuard) {
    let capture = Capture::default();
    let subscriber = tracing_subscriber::registry().with(capture.clone());
    let guard = tracing::subscriber::set_default(subscriber);
    (capture, guard)
}

// ---- a gateway that makes task ids long and opaque ----------------------

const OPAQUE: &str = "opaque~";
const PADDING: &str = "Zq9/x+Wm";

/// The long id the client sees for the server's `id`.
fn long_id(id: &str) -> String {
    format!("{OPAQUE}{id}~{}", PADDING.repeat(32))
}

/// Rewrites the scripted server's ids (`task-N-<16 hex>`) into long ones.
fn to_client(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("task-") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + "task-".len()..];
        let digits = tail.chars().take_while(char::is_ascii_digit).count();
        let hex = tail[digits..].strip_prefix('-').map(|h| {
            h.chars()
                .take(16)
                .take_while(char::is_ascii_hexdigit)
                .count()
        });
        match hex {
            Some(16) if digits > 0 => {
                let len = "task-".len() + digits + 1 + 16;
                out.push_str(&long_id(&rest[at..at + len]));
                rest = &rest[at + len..];
            }
            _ => {
                out.push_str("task-");
                rest = tail;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Turns long ids back into the server's.
fn to_server(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    let padding = format!("~{}", PADDING.repeat(32));
    while let Some(at) = rest.find(OPAQUE) {
        out.push_str(&rest[..at]);
        let tail = &rest[at + OPAQUE.len()..];
        let end = tail.find(&padding).expect("a whole long id");
        out.push_str(&tail[..end]);
        rest = &tail[end + padding.len()..];
    }
    out.push_str(rest);
    out
}

struct Gateway(memory::MemoryTransport);
struct GatewaySink(memory::MemorySink);
struct GatewayStream(memory::MemoryStream);

impl Transport for Gateway {
    type Sink = GatewaySink;
    type Stream = GatewayStream;
    async fn connect(self) -> io::Result<(GatewaySink, GatewayStream)> {
        let (sink, stream) = self.0.connect().await?;
        Ok((GatewaySink(sink), GatewayStream(stream)))
    }
}

impl MessageSink for GatewaySink {
    async fn send(&mut self, mut m: Outbound) -> io::Result<()> {
        m.json = to_server(&m.json);
        m.name = m.name.map(|n| to_server(&n));
        self.0.send(m).await
    }
    async fn close(&mut self) -> io::Result<Closed> {
        self.0.close().await
    }
}

impl MessageStream for GatewayStream {
    async fn recv(&mut self) -> io::Result<Option<Inbound>> {
        Ok(match self.0.recv().await? {
            Some(Inbound::Message(text)) => Some(Inbound::Message(to_client(&text))),
            other => other,
        })
    }
}

async fn gateway_client(server: &TestServer, handlers: InputHandlers) -> Client {
    Client::builder()
        .input_handlers(handlers)
        .connect(Gateway(server.connect()))
        .await
        .expect("connect")
}

/// Checks that nothing recorded holds a task id past its redacted prefix:
/// not the long id, not the part after its first characters, not the
/// server's own id.
fn assert_no_task_id(captured: &Captured, long: &TaskId) {
    let all = captured.all_text();
    let server_id = to_server(long.expose());
    let secret = server_id.rsplit('-').next().unwrap();
    for leak in [long.expose(), &long.expose()[4..20], &server_id, secret] {
        assert!(
            !all.contains(leak),
            "a task id ({leak:?}) leaked into the spans or events:\n{all}"
        );
    }
}

fn confirm_handlers() -> InputHandlers {
    InputHandlers::new()
        .elicitation_form(|_| async { Ok(ElicitResult::accept(json!({ "ok": true }))) })
}

// ---- the tests -----------------------------------------------------------

#[tokio::test(start_paused = true)]
async fn a_task_is_one_span_with_its_requests_and_events_inside() {
    let (capture, _guard) = capture();
    let server = TestServer::new().tool(ScriptedTool::task(
        "export",
        TaskScript::new()
            .poll_interval(ms(100))
            .working(ms(150), "counting rows")
            .input(ms(100), requests(&["confirm"]))
            .complete(ms(100), text("42 rows")),
    ));
    let client = gateway_client(&server, confirm_handlers()).await;
    let done = client
        .task()
        .call_tool("export", json!({ "table": "orders" }))
        .await
        .unwrap()
        .await
        .unwrap();
    let id = done.id().unwrap().clone();
    assert!(id.expose().len() > 256, "the gateway gave a long id");
    assert!(done.outcome().is_completed());
    // The span ended with the finished handle, not with its drop.
    {
        let c = capture.0.lock().unwrap();
        let task = c.tasks()[0];
        assert!(c.spans[task].closed, "the span closes when the task ends");
        assert_eq!(c.field(task, "outcome"), Some("completed"));
    }
    drop(done);
    drop(client);

    let c = capture.0.lock().unwrap();
    let all = c.all_text();
    let tasks = c.tasks();
    assert_eq!(tasks.len(), 1, "one task span:\n{all}");
    let task = tasks[0];
    assert_eq!(c.spans[task].parent, None);
    assert_eq!(c.field(task, "tool"), Some("export"));
    assert_eq!(c.field(task, "task_id"), Some(id.redacted().as_str()));
    assert!(!all.contains(OPAQUE), "{all}");
    assert_eq!(c.field(task, "protocol_version"), Some("2026-07-28"));
    assert_eq!(c.field(task, "era"), Some("modern"));
    assert_eq!(c.field(task, "resumed"), Some("false"));
    let gets = server.count("tasks/get");
    assert!(gets >= 3, "{gets} reads");
    assert_eq!(c.field(task, "reads"), Some(gets.to_string().as_str()));
    assert_eq!(c.field(task, "input_rounds"), Some("1"));
    assert_eq!(c.field(task, "error"), None);

    // Every request of the task is a child of its span, in order.
    let requests = c.requests_in(task);
    let methods: Vec<&str> = requests.iter().map(|(_, m)| *m).collect();
    assert_eq!(methods[0], "tools/call");
    assert_eq!(methods.iter().filter(|m| **m == "tasks/get").count(), gets);
    assert_eq!(methods.iter().filter(|m| **m == "tasks/update").count(), 1);
    assert_eq!(requests.len(), server.requests().len() - 1, "{methods:?}");
    for (i, _) in &requests {
        let r = &c.spans[*i];
        assert!(r.closed);
        assert!(
            r.fields["request_id"].parse::<u64>().is_ok(),
            "{:?}",
            r.fields
        );
        assert!(r.fields.contains_key("duration_us"));
        assert!(!r.fields.contains_key("error"));
    }
    // Requests outside a task (discovery) are not in its span.
    let discover: Vec<_> = c
        .named("mcp_tasks.request")
        .into_iter()
        .filter(|&i| c.field(i, "method") == Some("server/discover"))
        .collect();
    assert_eq!(discover.len(), 1);
    assert_eq!(c.spans[discover[0]].parent, None);

    // The events of the task: created, every change of status, the round.
    let events: Vec<(&str, Option<&str>, Option<&str>)> = c
        .events_in(task)
        .into_iter()
        .filter(|e| e.message() != "tools/call became a task")
        .map(|e| {
            (
                e.message(),
                e.fields.get("from").map(String::as_str),
                e.fields.get("to").map(String::as_str),
            )
        })
        .collect();
    assert_eq!(
        events,
        [
            ("task created", None, None),
            ("status changed", Some("working"), Some("input_required")),
            ("input answered", None, None),
            ("status changed", Some("input_required"), Some("working")),
            ("status changed", Some("working"), Some("completed")),
        ],
        "{all}"
    );
    let asked = c
        .events_in(task)
        .into_iter()
        .find(|e| e.fields.get("to").map(String::as_str) == Some("input_required"))
        .unwrap();
    assert_eq!(asked.fields["requests"], "1");
    let answered = c
        .events_in(task)
        .into_iter()
        .find(|e| e.message() == "input answered")
        .unwrap();
    assert_eq!(answered.fields["round"], "1");
    assert_eq!(answered.fields["answers"], "1");

    assert_no_task_id(&c, &id);
}

#[tokio::test(start_paused = true)]
async fn the_span_records_how_the_handle_ended() {
    let (capture, _guard) = capture();
    let slow = || {
        TaskScript::new()
            .poll_interval(ms(100))
            .complete(ms(60_000), text("late"))
    };
    let server = TestServer::new()
        .tool(ScriptedTool::task("drop", slow()))
        .tool(ScriptedTool::task("drop_cancel", slow()))
        .tool(ScriptedTool::task("detach", slow()))
        .tool(ScriptedTool::task("cancel", slow()))
        .tool(ScriptedTool::task("cancel_and_wait", slow()))
        .tool(ScriptedTool::task("expire", slow()))
        .tool(ScriptedTool::task(
            "fail",
            TaskScript::new()
                .poll_interval(ms(100))
                .fail(ms(150), RpcError::new(-32000, "disk full")),
        ))
        .tool(ScriptedTool::immediate("now", text("at once")));
    let client = gateway_client(&server, InputHandlers::new()).await;
    let pending = |state: TaskState| match state {
        TaskState::Pending(t) => t,
        other => panic!("expected a pending task, got {other:?}"),
    };
    let mut ids = Vec::new();

    let task = pending(client.task().call_tool("drop", ()).await.unwrap());
    ids.push(task.id().clone());
    drop(task);

    // Dropped with cancel_on_drop: the cancel sent afterwards is in the span.
    let task = pending(
        client
            .task()
            .cancel_on_drop()
            .call_tool("drop_cancel", ())
            .await
            .unwrap(),
    );
    ids.push(task.id().clone());
    drop(task);
    tokio::time::sleep(ms(10)).await;
    assert_eq!(server.count("tasks/cancel"), 1);

    let task = pending(client.task().call_tool("detach", ()).await.unwrap());
    ids.push(task.id().clone());
    let reference: TaskRef = task.detach();

    let task = pending(client.task().call_tool("cancel", ()).await.unwrap());
    ids.push(task.id().clone());
    task.cancel().await.unwrap();

    let task = pending(
        client
            .task()
            .call_tool("cancel_and_wait", ())
            .await
            .unwrap(),
    );
    ids.push(task.id().clone());
    let done = task.cancel_and_wait().await.unwrap();
    assert!(matches!(done.outcome(), mcp_tasks::Outcome::Cancelled));

    let state = client
        .task()
        .with_ttl(ms(250))
        .call_tool("expire", ())
        .await
        .unwrap();
    ids.push(state.id().unwrap().clone());
    let done = state.finish().await.unwrap();
    assert!(matches!(done.outcome(), mcp_tasks::Outcome::Expired));

    let done = client.task().call_tool("fail", ()).await.unwrap();
    ids.push(done.id().unwrap().clone());
    let done = done.finish().await.unwrap();
    assert!(matches!(done.outcome(), mcp_tasks::Outcome::Failed(_)));

    let now = client.task().call_tool("now", ()).await.unwrap();
    assert!(now.is_finished() && now.id().is_none());
    drop(now);

    // A resumed task gets a span of its own.
    let resumed = client.task().resume(&reference).await.unwrap();
    drop(resumed);
    drop(done);
    drop(client);

    let c = capture.0.lock().unwrap();
    let all = c.all_text();
    let ended: Vec<(Option<&str>, Option<&str>, Option<&str>)> = c
        .tasks()
        .into_iter()
        .map(|t| {
            assert!(c.spans[t].closed, "{all}");
            (
                c.field(t, "tool"),
                c.field(t, "resumed"),
                c.field(t, "outcome"),
            )
        })
        .collect();
    assert_eq!(
        ended,
        [
            (Some("drop"), Some("false"), Some("dropped")),
            (Some("drop_cancel"), Some("false"), Some("dropped")),
            (Some("detach"), Some("false"), Some("detached")),
            (Some("cancel"), Some("false"), Some("cancel_requested")),
            (Some("cancel_and_wait"), Some("false"), Some("cancelled")),
            (Some("expire"), Some("false"), Some("expired")),
            (Some("fail"), Some("false"), Some("failed")),
            (Some("now"), Some("false"), Some("completed")),
            (None, Some("true"), Some("dropped")),
        ],
        "{all}"
    );
    let tasks = c.tasks();
    let methods: Vec<&str> = c.requests_in(tasks[1]).iter().map(|(_, m)| *m).collect();
    assert_eq!(methods, ["tools/call", "tasks/cancel"]);
    // An immediate answer has no task id and no reads.
    assert_eq!(c.field(tasks[7], "task_id"), None);
    assert_eq!(c.field(tasks[7], "reads"), Some("0"));
    // A resumed task: its id, the read that found it, and its first status.
    let resumed = tasks[8];
    assert_eq!(
        c.field(resumed, "task_id"),
        Some(ids[2].redacted().as_str())
    );
    assert_eq!(c.field(resumed, "reads"), Some("1"));
    let methods: Vec<&str> = c.requests_in(resumed).iter().map(|(_, m)| *m).collect();
    assert_eq!(methods, ["tasks/get"]);
    let first = c.events_in(resumed);
    assert_eq!(first[0].message(), "task resumed");
    assert_eq!(first[0].fields["status"], "working");
    // Cancels are in their task's span, with an event once acknowledged.
    for t in [tasks[3], tasks[4], tasks[5]] {
        let methods: Vec<&str> = c.requests_in(t).iter().map(|(_, m)| *m).collect();
        assert!(methods.contains(&"tasks/cancel"), "{methods:?}");
        assert!(
            c.events_in(t).iter().any(|e| e.message() == "cancel sent"),
            "{all}"
        );
    }
    for id in &ids {
        assert_no_task_id(&c, id);
    }
}

#[tokio::test(start_paused = true)]
async fn a_failed_request_records_its_error_kind() {
    let (capture, _guard) = capture();
    let server = TestServer::new().tool(ScriptedTool::task(
        "export",
        TaskScript::new().complete(ms(100), text("done")),
    ));
    let client = gateway_client(&server, InputHandlers::new()).await;
    let unknown = TaskId::new(long_id("task-99-0123456789abcdef"));
    let err = client
        .task()
        .resume(&TaskRef::new(unknown.clone(), None))
        .await
        .unwrap_err();
    assert!(err.is_task_not_found());
    drop(client);

    let c = capture.0.lock().unwrap();
    let all = c.all_text();
    let task = c.tasks()[0];
    assert!(c.spans[task].closed);
    assert_eq!(c.field(task, "outcome"), Some("error"), "{all}");
    assert_eq!(c.field(task, "error"), Some("rpc"));
    assert_eq!(c.field(task, "resumed"), Some("true"));
    assert_eq!(c.field(task, "reads"), Some("1"));
    let requests = c.requests_in(task);
    assert_eq!(requests.len(), 1);
    let (get, method) = requests[0];
    assert_eq!(method, "tasks/get");
    assert_eq!(c.field(get, "error"), Some("rpc"));
    assert_eq!(c.field(get, "rpc_code"), Some("-32602"));
    assert!(c.spans[get].fields.contains_key("duration_us"));
    assert_no_task_id(&c, &unknown);
}

// ---- the tracker's logs ------------------------------------------------

/// Every event at `INFO` or louder, as `LEVEL message`.
#[derive(Clone, Default)]
struct Loud(Arc<Mutex<Vec<String>>>);

struct Message(String);

impl tracing::field::Visit for Message {
    fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = format!("{value:?}");
        }
    }
}

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for Loud {
    fn on_event(&self, event: &tracing::Event<'_>, _: tracing_subscriber::layer::Context<'_, S>) {
        let level = *event.metadata().level();
        if level <= tracing::Level::INFO {
            let mut message = Message(String::new());
            event.record(&mut message);
            self.0
                .lock()
                .unwrap()
                .push(format!("{level} {}", message.0));
        }
    }
}

/// (In this binary, where every test installs a subscriber: a callsite
/// first met on a thread with none may be cached as disabled.)
///
/// A worker reading a task many times says so at `DEBUG` only: `INFO`
/// carries what an operator wants once per task (created, tracked, ended,
/// delivered), however often each was read. (Each read used to log
/// `task resumed` at `INFO`.)
#[tokio::test]
async fn reads_are_quiet_and_each_task_is_told_at_info_once() {
    use tracing_subscriber::layer::SubscriberExt;
    let loud = Loud::default();
    let _guard =
        tracing::subscriber::set_default(tracing_subscriber::registry().with(loud.clone()));
    let server = tracker_server();
    let client = client(&server).await;
    let tracker =
        mcp_tasks::store::Tracker::builder(mcp_tasks::store::MemoryStore::new(), client.clone())
            .worker("w1")
            .min_poll_interval(ms(5))
            .build();
    let long = tracker
        .call_tool(client.task(), "long", json!({}))
        .await
        .unwrap()
        .record()
        .unwrap();
    tracker
        .call_tool(client.task(), "export", json!({}))
        .await
        .unwrap();
    let mut delivered = 0;
    for _ in 0..2_000 {
        let pass = tracker.pass(|_| async { true }).await.unwrap();
        delivered += pass.delivered;
        if delivered == 1 && server.count("tasks/get") >= 40 {
            break;
        }
        tokio::time::sleep(ms(5)).await;
    }
    assert_eq!(delivered, 1, "the export was delivered");
    assert!(
        server.count("tasks/get") >= 40,
        "the long task was read often"
    );
    let record = mcp_tasks::store::TaskStore::get(tracker.store(), long)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status, mcp_tasks::protocol::TaskStatus::Working);
    let lines = loud.0.lock().unwrap().clone();
    let told = |what: &str| lines.iter().filter(|l| l.contains(what)).count();
    assert_eq!(told("task created"), 2, "the call itself: {lines:#?}");
    assert_eq!(told("a task is tracked"), 2, "{lines:#?}");
    assert_eq!(told("a tracked task ended"), 1, "{lines:#?}");
    assert_eq!(told("ending was delivered"), 1, "{lines:#?}");
    assert_eq!(lines.len(), 6, "nothing else at INFO or louder: {lines:#?}");
}
