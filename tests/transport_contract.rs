//! The contract between the client and a transport a user writes: each
//! message states its kind, method and routing name; the protocol version
//! is told once, after negotiation, through `MessageSink::negotiated`,
//! which a transport that carries messages as they are need not implement.

mod support;

use std::io;
use std::sync::{Arc, Mutex};

use mcp_tasks::transport::{Inbound, MessageSink, MessageStream, Outbound, Transport};
use mcp_tasks::{Client, Outcome};
use serde_json::json;
use support::*;

/// What a recording sink saw, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    /// A message went out: its method and routing name.
    Sent(String, Option<String>),
    /// The client told the version.
    Negotiated(String),
}

type Log = Arc<Mutex<Vec<Event>>>;

/// Wraps a transport; its sink records what it is given (wrapped in
/// [`Hears`] it also hears the version, in [`Ignores`] it keeps the
/// trait's default).
struct Recording<T> {
    inner: T,
    log: Log,
}

/// A sink that hears the version.
struct Hearing<S> {
    inner: S,
    log: Log,
}

/// A sink that keeps `MessageSink::negotiated` as the trait gives it: a
/// transport written before the method existed.
struct Deaf<S> {
    inner: S,
    log: Log,
}

struct Stream<S>(S);

impl<S: MessageStream> MessageStream for Stream<S> {
    async fn recv(&mut self) -> io::Result<Option<Inbound>> {
        self.0.recv().await
    }
}

fn record(log: &Log, m: &Outbound) {
    log.lock()
        .unwrap()
        .push(Event::Sent(m.method.clone(), m.name.clone()));
}

impl<S: MessageSink> MessageSink for Hearing<S> {
    async fn send(&mut self, message: Outbound) -> io::Result<()> {
        record(&self.log, &message);
        self.inner.send(message).await
    }

    fn negotiated(&mut self, version: &str) {
        self.log
            .lock()
            .unwrap()
            .push(Event::Negotiated(version.to_owned()));
    }

    async fn close(&mut self) -> io::Result<()> {
        self.inner.close().await
    }
}

impl<S: MessageSink> MessageSink for Deaf<S> {
    async fn send(&mut self, message: Outbound) -> io::Result<()> {
        record(&self.log, &message);
        self.inner.send(message).await
    }

    async fn close(&mut self) -> io::Result<()> {
        self.inner.close().await
    }
}

/// A transport whose sink hears the version.
struct Hears<T>(Recording<T>);
/// A transport whose sink keeps the default.
struct Ignores<T>(Recording<T>);

impl<T: Transport> Transport for Hears<T> {
    type Sink = Hearing<T::Sink>;
    type Stream = Stream<T::Stream>;

    async fn connect(self) -> io::Result<(Self::Sink, Self::Stream)> {
        let (sink, stream) = self.0.inner.connect().await?;
        let log = self.0.log;
        Ok((Hearing { inner: sink, log }, Stream(stream)))
    }
}

impl<T: Transport> Transport for Ignores<T> {
    type Sink = Deaf<T::Sink>;
    type Stream = Stream<T::Stream>;

    async fn connect(self) -> io::Result<(Self::Sink, Self::Stream)> {
        let (sink, stream) = self.0.inner.connect().await?;
        let log = self.0.log;
        Ok((Deaf { inner: sink, log }, Stream(stream)))
    }
}

fn recording<T>(inner: T) -> (Recording<T>, Log) {
    let log = Log::default();
    (
        Recording {
            inner,
            log: log.clone(),
        },
        log,
    )
}

fn sent(method: &str) -> Event {
    Event::Sent(method.to_owned(), None)
}

fn negotiated(version: &str) -> Event {
    Event::Negotiated(version.to_owned())
}

#[tokio::test(start_paused = true)]
async fn a_transport_that_ignores_the_version_still_runs_a_task_to_its_end() {
    bounded(async {
        let server = export(
            mcp_tasks::testing::TaskScript::new()
                .poll_interval(ms(300))
                .complete(ms(850), text("done")),
        );
        let (transport, log) = recording(server.connect());
        let client = Client::connect(Ignores(transport)).await.expect("connect");
        let state = client.task().call_tool("export", json!({})).await.unwrap();
        let finished = match state {
            mcp_tasks::TaskState::Pending(task) => task.finish().await.unwrap(),
            other => panic!("a working task first, got {other:?}"),
        };
        assert!(
            matches!(finished.outcome(), Outcome::Completed(_)),
            "{:?}",
            finished.outcome()
        );
        assert_eq!(finished.outcome().result().unwrap().joined_text(), "done");
        let log = log.lock().unwrap();
        assert!(
            !log.iter().any(|e| matches!(e, Event::Negotiated(_))),
            "{log:?}"
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_modern_session_tells_its_version_once_after_discovery() {
    bounded(async {
        let server = export(mcp_tasks::testing::TaskScript::new().complete(ms(100), text("done")));
        let (transport, log) = recording(server.connect());
        let client = Client::connect(Hears(transport)).await.expect("connect");
        let finished = client.task().call_tool("export", json!({})).await.unwrap();
        let finished = match finished {
            mcp_tasks::TaskState::Pending(task) => task.finish().await.unwrap(),
            mcp_tasks::TaskState::Finished(task) => task,
            other => panic!("{other:?}"),
        };
        let id = finished.id().expect("a task").expose().to_owned();
        let log = log.lock().unwrap().clone();
        assert_eq!(log[0], sent("server/discover"), "{log:?}");
        assert_eq!(log[1], negotiated("2026-07-28"), "{log:?}");
        assert_eq!(
            log.iter()
                .filter(|e| matches!(e, Event::Negotiated(_)))
                .count(),
            1,
            "{log:?}"
        );
        // Every request states what it acts on.
        assert_eq!(
            log[2],
            Event::Sent("tools/call".into(), Some("export".into()))
        );
        assert!(
            log.contains(&Event::Sent("tasks/get".into(), Some(id))),
            "{log:?}"
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn an_initialize_era_session_tells_the_version_the_server_chose_before_initialized() {
    bounded(async {
        let server = LegacyServer::new(Vec::new(), Knobs::default());
        let (transport, log) = recording(server.connect().await);
        let client = Client::connect(Hears(transport)).await.expect("connect");
        assert_eq!(&*client.protocol_version(), "2025-11-25");
        // A round trip: the log then holds all that went before.
        client.list_tools().await.unwrap();
        let log = log.lock().unwrap().clone();
        assert_eq!(
            log[..5],
            [
                sent("server/discover"),
                sent("initialize"),
                negotiated("2025-11-25"),
                sent("notifications/initialized"),
                sent("tools/list"),
            ],
            "{log:?}"
        );
        assert_eq!(log.len(), 5, "{log:?}");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_pinned_version_is_told_before_the_first_request() {
    bounded(async {
        let server = export(mcp_tasks::testing::TaskScript::new().complete(ms(100), text("done")));
        let (transport, log) = recording(server.connect());
        let client = Client::builder()
            .protocol_version("2026-07-28")
            .connect(Hears(transport))
            .await
            .expect("connect");
        client.list_tools().await.unwrap();
        let log = log.lock().unwrap().clone();
        assert_eq!(
            log[..2],
            [negotiated("2026-07-28"), sent("tools/list")],
            "{log:?}"
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_request_sent_by_hand_states_its_routing_name() {
    bounded(async {
        let server = export(mcp_tasks::testing::TaskScript::new().complete(ms(100), text("done")));
        let (transport, log) = recording(server.connect());
        let client = Client::connect(Hears(transport)).await
            .expect("connect");
        let _ = client.request("prompts/get", json!({"name": "greet"})).await;
        let _ = client.request("tasks/get", json!({"taskId": 7})).await;
        let _ = client.request("tools/list", json!({"name": "ignored"})).await;
        let log = log.lock().unwrap().clone();
        let by_hand: Vec<_> = log
            .iter()
            .filter(|e| {
                matches!(e, Event::Sent(m, _) if ["prompts/get", "tasks/get", "tools/list"].contains(&m.as_str()))
            })
            .cloned()
            .collect();
        assert_eq!(
            by_hand,
            [
                Event::Sent("prompts/get".into(), Some("greet".into())),
                Event::Sent("tasks/get".into(), Some("7".into())),
                Event::Sent("tools/list".into(), None),
            ]
        );
    })
    .await;
}
