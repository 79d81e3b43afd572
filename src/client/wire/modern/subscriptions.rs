//! Resource subscriptions and list changes on 2026-07-28, where
//! `resources/subscribe` is gone and list changes come only on a listen
//! stream: one `subscriptions/listen` stream per client carries
//! `notifications/resources/updated` for every URI subscribed to and, when
//! the client has an `on_list_changed` callback, the `list_changed` of the
//! lists the server says change; its events go to the same dispatcher the
//! initialize era's notifications reach.
//!
//! A listen request's filter is fixed for its lifetime, so each change of
//! the set opens a new stream with the whole set, waits for its
//! acknowledgement, and only then closes the old one: no update falls
//! into the gap, and one that comes right then may be delivered twice.
//! Changes are made one at a time.
//!
//! When the server ends the stream (a final response, a cancellation), it
//! is opened again with the same set after [`reopen_delay`] (1 s, doubled
//! per attempt, up to 30 s); after [`MAX_REOPENS`] attempts in a row that
//! delivered nothing (refused, unacknowledged, or ended at once) the
//! client stops trying and says so, and the next subscription opens a new
//! stream. A subscription is never confirmed on a stream that has ended:
//! the stream is opened again first.
//!
//! Notifications that come right behind the acknowledgement may overflow
//! the stream's queue before it is read: the acknowledgement is still the
//! first message, and what was dropped is counted
//! ([`ClientStats::dropped_notifications`](crate::ClientStats::dropped_notifications)).

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, mpsc};
use tokio::task::AbortHandle;

use crate::client::connection::{Connection, Notification, SubEvent, Subscription, WeakConnection};
use crate::client::wire::Envelope;
use crate::client::wire::heard::Heard;
use crate::error::{Error, Result};
use crate::protocol::method;
use crate::protocol::{
    ListenParams, RequestId, ServerCapabilities, SubscriptionAcknowledged, SubscriptionFilter,
};

/// How many times in a row an ended stream is opened again without
/// delivering anything before the client gives up on it.
pub(crate) const MAX_REOPENS: u32 = 5;
/// The first wait before opening an ended stream again.
const REOPEN_BASE: Duration = Duration::from_secs(1);
/// The longest wait before opening an ended stream again.
const REOPEN_MAX: Duration = Duration::from_secs(30);

/// How long to wait before the `attempt`-th (from 1) reopening in a row.
pub(crate) fn reopen_delay(attempt: u32) -> Duration {
    REOPEN_BASE
        .saturating_mul(1 << attempt.saturating_sub(1).min(8))
        .min(REOPEN_MAX)
}

/// The client's resource subscriptions on 2026-07-28.
pub(crate) struct Subscribed {
    state: Mutex<State>,
    /// Into the notification dispatcher.
    forward: mpsc::Sender<Notification>,
    /// The list changes every stream asks for.
    lists: Lists,
    /// The URIs whose updates the dispatcher delivers.
    heard: Heard,
}

/// Which `list_changed` notifications the client listens for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Lists {
    /// `notifications/tools/list_changed`.
    pub(crate) tools: bool,
    /// `notifications/prompts/list_changed`.
    pub(crate) prompts: bool,
    /// `notifications/resources/list_changed`.
    pub(crate) resources: bool,
}

impl Lists {
    /// The lists a server says change (`listChanged: true` in its
    /// capabilities); all three when its capabilities are not known, as
    /// the acknowledgement then says which it honours.
    pub(crate) fn advertised(capabilities: Option<&ServerCapabilities>) -> Lists {
        let Some(caps) = capabilities else {
            return Lists {
                tools: true,
                prompts: true,
                resources: true,
            };
        };
        let changes = |cap: &Option<serde_json::Value>| {
            cap.as_ref().is_some_and(|c| c["listChanged"] == true)
        };
        Lists {
            tools: changes(&caps.tools),
            prompts: changes(&caps.prompts),
            resources: changes(&caps.resources),
        }
    }

    /// Whether no list is listened for.
    pub(crate) fn is_empty(self) -> bool {
        self == Lists::default()
    }

    /// The lists an acknowledgement accepted.
    fn accepted(filter: &SubscriptionFilter) -> Lists {
        Lists {
            tools: filter.tools_list_changed == Some(true),
            prompts: filter.prompts_list_changed == Some(true),
            resources: filter.resources_list_changed == Some(true),
        }
    }
}

#[derive(Default)]
struct State {
    uris: BTreeSet<String>,
    /// The task forwarding the current stream's events (and opening it
    /// again when the server ends it); dropping it drops the stream, which
    /// closes it on the server.
    stream: Option<Stream>,
}

/// The stream the client listens on, through the task that forwards it.
struct Stream {
    task: AbortOnDrop,
    /// The id of the stream the task forwards now (it changes when the
    /// task opens an ended stream again).
    current: Arc<std::sync::Mutex<RequestId>>,
}

impl Stream {
    /// Whether the server can still be heard on it: the task runs and its
    /// stream is open on the connection (not ended by the server, even if
    /// the task has not seen the end yet).
    fn is_live(&self, conn: &Connection) -> bool {
        !self.task.0.is_finished() && conn.is_listening(&self.current.lock().unwrap())
    }
}

struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// What the forwarding task needs to open its stream again.
struct Reopen {
    conn: WeakConnection,
    envelope: Arc<Envelope>,
    uris: BTreeSet<String>,
    lists: Lists,
    timeout: Duration,
}

impl Subscribed {
    /// Subscriptions whose streams also carry the list changes of `lists`;
    /// the URIs subscribed to are kept in `heard`.
    pub(crate) fn new(forward: mpsc::Sender<Notification>, lists: Lists, heard: Heard) -> Self {
        Subscribed {
            state: Mutex::new(State::default()),
            forward,
            lists,
            heard,
        }
    }

    /// Opens the stream for the list changes alone, when there are some
    /// to hear and no stream is open yet. A server that accepts none of
    /// them gets its stream closed at once.
    pub(crate) async fn listen_lists(
        &self,
        conn: &Connection,
        envelope: &Arc<Envelope>,
        timeout: Duration,
    ) -> Result<()> {
        if self.lists.is_empty() {
            return Ok(());
        }
        let mut state = self.state.lock().await;
        if state.stream.as_ref().is_some_and(|s| s.is_live(conn)) {
            return Ok(());
        }
        let (sub, accepted) = open(conn, envelope, &state.uris, self.lists, timeout).await?;
        if accepted.lists.is_empty() && state.uris.is_empty() {
            tracing::debug!("the server accepted no list changes on its listen stream");
            return Ok(());
        }
        let uris = state.uris.clone();
        state.stream = Some(self.forward_from(sub, conn, envelope, uris, timeout));
        Ok(())
    }

    /// Adds `uri` to the set. A no-op when it is there and its stream
    /// lives; a stream that has ended is opened again first, and a
    /// failure to open it fails the subscription.
    pub(crate) async fn subscribe(
        &self,
        conn: &Connection,
        envelope: &Arc<Envelope>,
        uri: &str,
        timeout: Duration,
    ) -> Result<()> {
        let mut state = self.state.lock().await;
        let live = state.stream.as_ref().is_some_and(|s| s.is_live(conn));
        if live && state.uris.contains(uri) {
            return Ok(());
        }
        let mut uris = state.uris.clone();
        uris.insert(uri.to_owned());
        // Heard from the moment the new stream may carry it.
        let added = self.heard.add(uri);
        let opened = open(conn, envelope, &uris, self.lists, timeout).await;
        let (sub, accepted) = match opened {
            Ok(opened) => opened,
            Err(e) => {
                if added {
                    self.heard.remove(uri);
                }
                return Err(e);
            }
        };
        if !accepted.uris.contains(uri) {
            if added {
                self.heard.remove(uri);
            }
            return Err(Error::protocol(format!(
                "the server did not accept a subscription to {uri:?}"
            ))
            .with_method(method::SUBSCRIPTIONS_LISTEN));
        }
        state.uris = uris.clone();
        state.stream = Some(self.forward_from(sub, conn, envelope, uris, timeout));
        Ok(())
    }

    /// Removes `uri` from the set; the stream closes when the set is empty
    /// and no list change is listened for.
    pub(crate) async fn unsubscribe(
        &self,
        conn: &Connection,
        envelope: &Arc<Envelope>,
        uri: &str,
        timeout: Duration,
    ) -> Result<()> {
        let mut state = self.state.lock().await;
        if !state.uris.remove(uri) {
            return Ok(());
        }
        self.heard.remove(uri);
        if state.uris.is_empty() && self.lists.is_empty() {
            state.stream = None;
            return Ok(());
        }
        let uris = state.uris.clone();
        let (sub, _) = open(conn, envelope, &uris, self.lists, timeout).await?;
        state.stream = Some(self.forward_from(sub, conn, envelope, uris, timeout));
        Ok(())
    }

    /// Forwards a stream's notifications to the dispatcher, opening it
    /// again (with `uris`) when the server ends it.
    fn forward_from(
        &self,
        sub: Subscription,
        conn: &Connection,
        envelope: &Arc<Envelope>,
        uris: BTreeSet<String>,
        timeout: Duration,
    ) -> Stream {
        let current = Arc::new(std::sync::Mutex::new(sub.id().clone()));
        let reopen = Reopen {
            conn: conn.downgrade(),
            envelope: envelope.clone(),
            uris,
            lists: self.lists,
            timeout,
        };
        let task = tokio::spawn(forward(sub, self.forward.clone(), reopen, current.clone()));
        Stream {
            task: AbortOnDrop(task.abort_handle()),
            current,
        }
    }
}

/// The forwarding task: the stream's notifications into the dispatcher;
/// when the server ends the stream, it is opened again after a backoff,
/// at most [`MAX_REOPENS`] times in a row without a notification between.
async fn forward(
    mut sub: Subscription,
    forward: mpsc::Sender<Notification>,
    reopen: Reopen,
    current: Arc<std::sync::Mutex<RequestId>>,
) {
    let mut attempts: u32 = 0;
    loop {
        while let Some(event) = sub.next().await {
            match event {
                SubEvent::Notification { method, params } => {
                    attempts = 0;
                    if forward.send(Notification { method, params }).await.is_err() {
                        return;
                    }
                }
                SubEvent::Lagged => {
                    tracing::warn!(
                        "resource updates or list changes were dropped: the client was behind"
                    );
                }
            }
        }
        drop(sub);
        // Ended: opened again unless the connection is gone.
        sub = loop {
            let gone = || {
                reopen
                    .conn
                    .upgrade()
                    .is_none_or(|c| c.closed_reason().is_some())
            };
            if gone() {
                return;
            }
            attempts += 1;
            if attempts > MAX_REOPENS {
                tracing::warn!(
                    "the server keeps ending the stream of resource updates and list changes; \
                     gave up after {MAX_REOPENS} attempts (a new subscription opens it again)"
                );
                return;
            }
            let delay = reopen_delay(attempts);
            tracing::info!(
                "the server ended the stream of resource updates and list changes; \
                 opening it again in {}",
                crate::human::duration(delay)
            );
            tokio::time::sleep(delay).await;
            let Some(conn) = reopen.conn.upgrade() else {
                return;
            };
            let opened = open(
                &conn,
                &reopen.envelope,
                &reopen.uris,
                reopen.lists,
                reopen.timeout,
            )
            .await;
            match opened {
                Ok((new, accepted)) => {
                    if !reopen.uris.is_subset(&accepted.uris) {
                        tracing::warn!("the reopened stream leaves out some subscribed resources");
                    }
                    *current.lock().unwrap() = new.id().clone();
                    break new;
                }
                Err(e) => tracing::debug!("opening the stream again failed: {e}"),
            }
        };
    }
}

/// What an acknowledgement accepted.
struct Accepted {
    uris: BTreeSet<String>,
    lists: Lists,
}

/// Opens a listen stream for `uris` and `lists`; returns it once
/// acknowledged, with what the server accepted.
async fn open(
    conn: &Connection,
    envelope: &Envelope,
    uris: &BTreeSet<String>,
    lists: Lists,
    timeout: Duration,
) -> Result<(Subscription, Accepted)> {
    let asked = |yes: bool| yes.then_some(true);
    let params = ListenParams {
        notifications: SubscriptionFilter {
            tools_list_changed: asked(lists.tools),
            resources_list_changed: asked(lists.resources),
            prompts_list_changed: asked(lists.prompts),
            resource_subscriptions: (!uris.is_empty()).then(|| uris.iter().cloned().collect()),
            ..SubscriptionFilter::default()
        },
    };
    let version = envelope.protocol_version();
    let body = envelope.wrap(method::SUBSCRIPTIONS_LISTEN, &params, &version);
    let mut sub = conn
        .subscribe(method::SUBSCRIPTIONS_LISTEN, &body)
        .await
        .map_err(|e| e.with_method(method::SUBSCRIPTIONS_LISTEN))?;
    // Notifications right behind the acknowledgement may have overflowed
    // the queue already: the lag is reported first, the acknowledgement
    // is still the first message. The drops are counted by the connection.
    let first = tokio::time::timeout(timeout, async {
        loop {
            match sub.next().await {
                Some(SubEvent::Lagged) => {}
                other => return other,
            }
        }
    })
    .await;
    match first {
        Ok(Some(SubEvent::Notification { method, params }))
            if method == method::NOTIFICATIONS_ACKNOWLEDGED =>
        {
            let ack: SubscriptionAcknowledged = params
                .and_then(|p| serde_json::from_str(p.get()).ok())
                .unwrap_or_default();
            let lists = Lists::accepted(&ack.notifications);
            let uris = ack
                .notifications
                .resource_subscriptions
                .unwrap_or_default()
                .into_iter()
                .collect();
            Ok((sub, Accepted { uris, lists }))
        }
        Ok(Some(_)) => Err(Error::protocol(
            "a listen stream began with something other than its acknowledgement",
        )
        .with_method(method::SUBSCRIPTIONS_LISTEN)),
        Ok(None) => Err(match sub.refusal() {
            // Refused with an error: that error.
            Some(rpc) => Error::rpc(rpc.clone()),
            None => match conn.closed_reason() {
                Some(reason) => Error::transport(reason),
                None => {
                    Error::protocol("the server ended the listen stream before acknowledging it")
                }
            },
        }
        .with_method(method::SUBSCRIPTIONS_LISTEN)),
        Err(_) => Err(Error::protocol(format!(
            "the server did not acknowledge the listen stream within {timeout:?}"
        ))
        .with_method(method::SUBSCRIPTIONS_LISTEN)),
    }
}
