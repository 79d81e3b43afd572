//! The notifications a server sends outside any request, in both eras:
//! the connection hands over those no table of its own claims (see
//! `Connection::notifications`), and one task per client dispatches them.
//!
//! - `notifications/message` becomes a `tracing` event (target
//!   [`SERVER_LOG_TARGET`]) and goes to the builder's `on_log` callback.
//! - `notifications/tools/list_changed` drops what the client remembers of
//!   the last `tools/list` (the legacy task opt-in of each tool), so the
//!   next call does not act on a stale listing; it and the prompts and
//!   resources `list_changed` go to the builder's `on_list_changed`.
//! - `notifications/elicitation/complete` goes to
//!   [`InputHandlers::on_elicitation_complete`](crate::input::InputHandlers::on_elicitation_complete).
//! - `notifications/tasks/status` (2025-11-25) makes the handles that
//!   listen to the task read it at once (it carries no payload).
//! - `notifications/resources/updated` goes to the builder's
//!   `on_resource_updated` (on 2026-07-28 it comes on the listen stream of
//!   the resource subscriptions, forwarded here), when its URI is one the
//!   client subscribed to, or under one (the specification lets an update
//!   name a sub-resource): see [`Heard::covers`](crate::client::wire::Heard::covers). Others are skipped.
//! - Anything else (unknown methods) is skipped with a debug log.
//!
//! Nothing here ever makes the reader wait. The connection's queue holds at
//! most 64 notifications, and each user callback runs on its own task
//! behind its own queue of 64: a callback that is slow or stuck drops what
//! does not fit (counted in
//! [`ClientStats::dropped_notifications`](crate::ClientStats::dropped_notifications))
//! and delays neither the connection nor the other callbacks. Malformed
//! params are skipped and counted in
//! [`ClientStats::discarded_messages`](crate::ClientStats::discarded_messages).

pub(crate) mod observers;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::client::connection::{Notification, WeakConnection};
use crate::client::wire::{Heard, KnownTools, Registry};
use crate::input::{Callback, InputHandlers};
use crate::protocol::method;
use crate::protocol::{LogLevel, LogMessage, ResourceUpdated, TaskId};

/// The `tracing` target of the events that carry the server's log
/// messages: filter on it to show or hide them (for example
/// `RUST_LOG=mcp_tasks::server_log=warn` with `tracing-subscriber`).
pub const SERVER_LOG_TARGET: &str = "mcp_tasks::server_log";

/// How many notifications may wait for one callback before more are
/// dropped.
pub(crate) const CALLBACK_CAPACITY: usize = 64;

/// The longest rendering of a log message's `data` put in a `tracing`
/// event (the callback gets it whole).
const MAX_TRACED_CHARS: usize = 4096;

/// Which of the server's lists changed (a `notifications/*/list_changed`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ListChanged {
    /// `notifications/tools/list_changed`: the client has already
    /// forgotten what the last [`Client::list_tools`](crate::Client::list_tools) said; call it again
    /// to know the tools (and which want a task).
    Tools,
    /// `notifications/prompts/list_changed`.
    Prompts,
    /// `notifications/resources/list_changed`.
    Resources,
}

/// The callbacks a builder installs for notifications.
#[derive(Default)]
pub(crate) struct Observers {
    pub(crate) log: Option<Callback<LogMessage>>,
    pub(crate) list_changed: Option<Callback<ListChanged>>,
    pub(crate) resource_updated: Option<Callback<ResourceUpdated>>,
}

/// What the dispatcher acts on.
pub(crate) struct Dispatch {
    pub(crate) conn: WeakConnection,
    pub(crate) tools: Arc<Mutex<KnownTools>>,
    pub(crate) observers: Observers,
    pub(crate) handlers: InputHandlers,
    /// Notifications dropped because a callback was behind.
    pub(crate) dropped: Arc<AtomicU64>,
    /// The tasks a 2025-11-25 session follows, woken by
    /// `notifications/tasks/status`.
    pub(crate) tasks: Option<Arc<Registry>>,
    /// The resources subscribed to.
    pub(crate) heard: Heard,
}

/// Starts dispatching `notifications`, and those `listened` brings from
/// the resource subscriptions' stream; the task ends when the connection
/// closes.
pub(crate) fn spawn(
    notifications: mpsc::Receiver<Notification>,
    listened: mpsc::Receiver<Notification>,
    dispatch: Dispatch,
) {
    let Dispatch {
        conn,
        tools,
        observers,
        handlers,
        dropped,
        tasks,
        heard,
    } = dispatch;
    let dispatcher = Dispatcher {
        conn,
        tools,
        tasks,
        heard,
        log: observers
            .log
            .map(|f| Worker::spawn("on_log", f, dropped.clone())),
        list_changed: observers
            .list_changed
            .map(|f| Worker::spawn("on_list_changed", f, dropped.clone())),
        resource_updated: observers
            .resource_updated
            .map(|f| Worker::spawn("on_resource_updated", f, dropped.clone())),
        elicitation_complete: handlers
            .elicitation_complete()
            .cloned()
            .map(|f| Worker::spawn("on_elicitation_complete", f, dropped.clone())),
    };
    tokio::spawn(dispatcher.run(notifications, listened));
}

struct Dispatcher {
    conn: WeakConnection,
    tools: Arc<Mutex<KnownTools>>,
    tasks: Option<Arc<Registry>>,
    heard: Heard,
    log: Option<Worker<LogMessage>>,
    list_changed: Option<Worker<ListChanged>>,
    resource_updated: Option<Worker<ResourceUpdated>>,
    elicitation_complete: Option<Worker<String>>,
}

impl Dispatcher {
    async fn run(
        mut self,
        mut notifications: mpsc::Receiver<Notification>,
        mut listened: mpsc::Receiver<Notification>,
    ) {
        let mut listening = true;
        loop {
            tokio::select! {
                n = notifications.recv() => match n {
                    Some(n) => self.dispatch(n),
                    None => return,
                },
                n = listened.recv(), if listening => match n {
                    Some(n) => self.dispatch(n),
                    None => listening = false,
                },
            }
        }
    }

    fn dispatch(&mut self, n: Notification) {
        let Notification { method, params } = n;
        let params = params.as_deref();
        match method.as_str() {
            method::NOTIFICATIONS_MESSAGE => {
                let Some(msg) = self.parse::<LogMessage>(&method, params) else {
                    return;
                };
                trace(&msg);
                if let Some(w) = &mut self.log {
                    w.offer(msg);
                }
            }
            method::NOTIFICATIONS_TOOLS_LIST_CHANGED => {
                tracing::debug!("the server's tools changed; forgetting the last tools/list");
                self.tools.lock().unwrap().forget();
                self.list_changed(ListChanged::Tools);
            }
            method::NOTIFICATIONS_PROMPTS_LIST_CHANGED => self.list_changed(ListChanged::Prompts),
            method::NOTIFICATIONS_RESOURCES_LIST_CHANGED => {
                self.list_changed(ListChanged::Resources);
            }
            method::NOTIFICATIONS_RESOURCES_UPDATED => {
                let Some(update) = self.parse::<ResourceUpdated>(&method, params) else {
                    return;
                };
                if !self.heard.covers(&update.uri) {
                    tracing::debug!("skipping an update of a resource not subscribed to");
                    return;
                }
                if let Some(w) = &mut self.resource_updated {
                    w.offer(update);
                } else {
                    tracing::debug!("a resource changed; no callback is installed");
                }
            }
            method::NOTIFICATIONS_ELICITATION_COMPLETE => {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct P {
                    elicitation_id: String,
                }
                let Some(p) = self.parse::<P>(&method, params) else {
                    return;
                };
                if let Some(w) = &mut self.elicitation_complete {
                    w.offer(p.elicitation_id);
                } else {
                    tracing::debug!("an elicitation completed; no callback is installed");
                }
            }
            method::NOTIFICATIONS_TASKS_STATUS => {
                #[derive(Deserialize)]
                #[serde(rename_all = "camelCase")]
                struct P {
                    task_id: TaskId,
                }
                let Some(p) = self.parse::<P>(&method, params) else {
                    return;
                };
                match &self.tasks {
                    Some(tasks) => tasks.status_changed(&p.task_id),
                    None => tracing::debug!("a 2025-11-25 task status on a 2026-07-28 session"),
                }
            }
            _ => tracing::debug!(%method, "ignoring a notification this client does not use"),
        }
    }

    fn list_changed(&mut self, which: ListChanged) {
        if let Some(w) = &mut self.list_changed {
            w.offer(which);
        }
    }

    /// The params as `T`; `None` (skipped, counted as discarded) when they
    /// do not fit.
    fn parse<T: for<'de> Deserialize<'de>>(
        &self,
        method: &str,
        params: Option<&RawValue>,
    ) -> Option<T> {
        let text = params.map_or("{}", RawValue::get);
        match serde_json::from_str(text) {
            Ok(v) => Some(v),
            Err(e) => {
                if let Some(conn) = self.conn.upgrade() {
                    conn.discard();
                }
                tracing::debug!(%method, "skipping a notification with malformed params: {e}");
                None
            }
        }
    }
}

/// One callback on its own task, behind a bounded queue.
struct Worker<T> {
    name: &'static str,
    tx: Option<mpsc::Sender<T>>,
    dropped: Arc<AtomicU64>,
    /// Whether the last offer was dropped (warn once a burst).
    lagging: bool,
}

impl<T: Send + 'static> Worker<T> {
    fn spawn(name: &'static str, f: Callback<T>, dropped: Arc<AtomicU64>) -> Self {
        let (tx, mut rx) = mpsc::channel::<T>(CALLBACK_CAPACITY);
        tokio::spawn(async move {
            while let Some(value) = rx.recv().await {
                f(value).await;
            }
        });
        Worker {
            name,
            tx: Some(tx),
            dropped,
            lagging: false,
        }
    }

    /// Queues a value for the callback, or drops it (counted) when the
    /// callback is behind.
    fn offer(&mut self, value: T) {
        let Some(tx) = &self.tx else {
            return;
        };
        match tx.try_send(value) {
            Ok(()) => self.lagging = false,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.dropped.fetch_add(1, Ordering::Relaxed);
                if !std::mem::replace(&mut self.lagging, true) {
                    tracing::warn!(
                        callback = self.name,
                        "the callback is behind on the server's notifications; dropping some"
                    );
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                tracing::warn!(
                    callback = self.name,
                    "the callback panicked; it gets no more notifications"
                );
                self.tx = None;
            }
        }
    }
}

/// Emits a server log message as a `tracing` event.
fn trace(msg: &LogMessage) {
    let data = render(&msg.data);
    let level = msg.level.as_str();
    let logger = msg.logger.as_deref();
    macro_rules! emit {
        ($lvl:expr) => {
            tracing::event!(
                target: SERVER_LOG_TARGET,
                $lvl,
                level,
                logger,
                data = %data,
                "server log"
            )
        };
    }
    match msg.level {
        LogLevel::Debug => emit!(tracing::Level::DEBUG),
        LogLevel::Info | LogLevel::Notice => emit!(tracing::Level::INFO),
        LogLevel::Warning => emit!(tracing::Level::WARN),
        LogLevel::Error | LogLevel::Critical | LogLevel::Alert | LogLevel::Emergency => {
            emit!(tracing::Level::ERROR);
        }
    }
}

/// A log message's data as text: a string as is, anything else as JSON,
/// cut at [`MAX_TRACED_CHARS`].
fn render(data: &Value) -> String {
    let text = match data {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    };
    if text.chars().count() <= MAX_TRACED_CHARS {
        return text;
    }
    let mut cut: String = text.chars().take(MAX_TRACED_CHARS).collect();
    cut.push('…');
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use std::fmt::Write as _;

    /// Keeps each event's level, target and fields as text.
    #[derive(Clone, Default)]
    struct Capture(Arc<Mutex<Vec<String>>>);

    struct Fields(String);

    impl tracing::field::Visit for Fields {
        fn record_debug(&mut self, field: &tracing::field::Field, value: &dyn std::fmt::Debug) {
            let _ = write!(self.0, " {}={:?}", field.name(), value);
        }
    }

    impl tracing::Subscriber for Capture {
        fn enabled(&self, _: &tracing::Metadata<'_>) -> bool {
            true
        }
        fn new_span(&self, _: &tracing::span::Attributes<'_>) -> tracing::span::Id {
            tracing::span::Id::from_u64(1)
        }
        fn record(&self, _: &tracing::span::Id, _: &tracing::span::Record<'_>) {}
        fn record_follows_from(&self, _: &tracing::span::Id, _: &tracing::span::Id) {}
        fn event(&self, event: &tracing::Event<'_>) {
            let m = event.metadata();
            let mut fields = Fields(format!("{} {}", m.level(), m.target()));
            event.record(&mut fields);
            self.0.lock().unwrap().push(fields.0);
        }
        fn enter(&self, _: &tracing::span::Id) {}
        fn exit(&self, _: &tracing::span::Id) {}
    }

    #[test]
    fn a_log_message_becomes_an_event_at_the_mapped_level() {
        let capture = Capture::default();
        tracing::subscriber::with_default(capture.clone(), || {
            trace(&LogMessage::new(LogLevel::Notice, json!("disk at 91%")).with_logger("fs"));
            trace(&LogMessage::new(LogLevel::Critical, json!({"code": 7})));
            trace(&LogMessage::new(LogLevel::Debug, json!(null)));
        });
        let events = capture.0.lock().unwrap().clone();
        assert_eq!(
            events,
            [
                r#"INFO mcp_tasks::server_log message=server log level="notice" logger="fs" data=disk at 91%"#,
                r#"ERROR mcp_tasks::server_log message=server log level="critical" data={"code":7}"#,
                r#"DEBUG mcp_tasks::server_log message=server log level="debug" data=null"#,
            ]
        );
    }

    #[test]
    fn long_data_is_cut_in_the_event() {
        let long = "x".repeat(MAX_TRACED_CHARS + 10);
        let text = render(&Value::String(long));
        assert_eq!(text.chars().count(), MAX_TRACED_CHARS + 1);
        assert!(text.ends_with('…'));
    }
}
