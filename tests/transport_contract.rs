//! The contract between the client and a transport a user writes: each
//! message states its kind, method, routing name and, once negotiation
//! settled it, the protocol version it is in. A wrapper that passes
//! messages on (and `close`) has nothing else to forward.

mod support;

use std::io;
use std::sync::{Arc, Mutex};

use mcp_tasks::transport::{Closed, Inbound, MessageSink, MessageStream, Outbound, Transport};
use mcp_tasks::{Client, Outcome};
use serde_json::json;
use support::*;

/// What went out: the method, the routing name, the version stated.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Sent {
    method: String,
    name: Option<String>,
    version: Option<String>,
}

type Log = Arc<Mutex<Vec<Sent>>>;

/// Wraps a transport; its sink records what it is given and passes it on.
struct Recording<T> {
    inner: T,
    log: Log,
}

/// The recording sink: `send` and `close`, nothing else.
struct Sink<S> {
    inner: S,
    log: Log,
}

struct Stream<S>(S);

impl<S: MessageStream> MessageStream for Stream<S> {
    async fn recv(&mut self) -> io::Result<Option<Inbound>> {
        self.0.recv().await
    }
}

impl<S: MessageSink> MessageSink for Sink<S> {
    async fn send(&mut self, message: Outbound) -> io::Result<()> {
        self.log.lock().unwrap().push(Sent {
            method: message.method.clone(),
            name: message.name.clone(),
            version: message.protocol_version.as_deref().map(str::to_owned),
        });
        self.inner.send(message).await
    }

    async fn close(&mut self) -> io::Result<Closed> {
        self.inner.close().await
    }
}

impl<T: Transport> Transport for Recording<T> {
    type Sink = Sink<T::Sink>;
    type Stream = Stream<T::Stream>;

    async fn connect(self) -> io::Result<(Self::Sink, Self::Stream)> {
        let (sink, stream) = self.inner.connect().await?;
        let log = self.log;
        Ok((Sink { inner: sink, log }, Stream(stream)))
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

/// `method` sent without a routing name, in `version`.
fn sent(method: &str, version: Option<&str>) -> Sent {
    Sent {
        method: method.to_owned(),
        name: None,
        version: version.map(str::to_owned),
    }
}

#[tokio::test(start_paused = true)]
async fn a_transport_that_ignores_the_version_still_runs_a_task_to_its_end() {
    bounded(async {
        let server = export(
            mcp_tasks::testing::TaskScript::new()
                .poll_interval(ms(300))
                .complete(ms(850), text("done")),
        );
        let (transport, _log) = recording(server.connect());
        let client = Client::connect(transport).await.expect("connect");
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
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_modern_session_states_its_version_on_every_message_after_discovery() {
    bounded(async {
        let server = export(mcp_tasks::testing::TaskScript::new().complete(ms(100), text("done")));
        let (transport, log) = recording(server.connect());
        let client = Client::connect(transport).await.expect("connect");
        let finished = client.task().call_tool("export", json!({})).await.unwrap();
        let finished = match finished {
            mcp_tasks::TaskState::Pending(task) => task.finish().await.unwrap(),
            mcp_tasks::TaskState::Finished(task) => task,
            other => panic!("{other:?}"),
        };
        let id = finished.id().expect("a task").expose().to_owned();
        let log = log.lock().unwrap().clone();
        // The probe is the negotiation's own: it states no version.
        assert_eq!(log[0], sent("server/discover", None), "{log:?}");
        assert!(
            log[1..]
                .iter()
                .all(|s| s.version.as_deref() == Some("2026-07-28")),
            "{log:?}"
        );
        // Every request states what it acts on.
        assert_eq!(
            (log[1].method.as_str(), log[1].name.as_deref()),
            ("tools/call", Some("export"))
        );
        assert!(
            log.iter()
                .any(|s| s.method == "tasks/get" && s.name.as_deref() == Some(id.as_str())),
            "{log:?}"
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn an_initialize_era_session_states_the_version_the_server_chose_from_initialized_on() {
    bounded(async {
        let server = LegacyServer::new(Vec::new(), Knobs::default());
        let (transport, log) = recording(server.connect().await);
        let client = Client::connect(transport).await.expect("connect");
        assert_eq!(&*client.protocol_version(), "2025-11-25");
        // A round trip: the log then holds all that went before.
        client.list_tools().await.unwrap();
        let log = log.lock().unwrap().clone();
        assert_eq!(
            log,
            [
                sent("server/discover", None),
                sent("initialize", None),
                sent("notifications/initialized", Some("2025-11-25")),
                sent("tools/list", Some("2025-11-25")),
            ],
        );
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_pinned_version_is_stated_from_the_first_request() {
    bounded(async {
        let server = export(mcp_tasks::testing::TaskScript::new().complete(ms(100), text("done")));
        let (transport, log) = recording(server.connect());
        let client = Client::builder()
            .protocol_version("2026-07-28")
            .connect(transport)
            .await
            .expect("connect");
        client.list_tools().await.unwrap();
        let log = log.lock().unwrap().clone();
        assert_eq!(log, [sent("tools/list", Some("2026-07-28"))], "{log:?}");
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_request_sent_by_hand_states_its_routing_name() {
    bounded(async {
        let server = export(mcp_tasks::testing::TaskScript::new().complete(ms(100), text("done")));
        let (transport, log) = recording(server.connect());
        let client = Client::connect(transport).await.expect("connect");
        let _ = client
            .request("prompts/get", json!({"name": "greet"}))
            .await;
        let _ = client.request("tasks/get", json!({"taskId": 7})).await;
        let _ = client
            .request("tools/list", json!({"name": "ignored"}))
            .await;
        let log = log.lock().unwrap().clone();
        let by_hand: Vec<_> = log
            .iter()
            .filter(|s| ["prompts/get", "tasks/get", "tools/list"].contains(&s.method.as_str()))
            .map(|s| (s.method.as_str(), s.name.as_deref()))
            .collect();
        assert_eq!(
            by_hand,
            [
                ("prompts/get", Some("greet")),
                ("tasks/get", Some("7")),
                ("tools/list", None),
            ]
        );
    })
    .await;
}
