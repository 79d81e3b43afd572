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
//! Changes are made one at a time. When the server ends the stream, the
//! set is kept and the next change opens a new one with it.

use std::collections::BTreeSet;
use std::time::Duration;

use tokio::sync::{Mutex, mpsc};
use tokio::task::AbortHandle;

use crate::client::connection::{Connection, Notification, SubEvent, Subscription};
use crate::client::envelope::Envelope;
use crate::error::{Error, Result};
use crate::protocol::method;
use crate::protocol::{
    ListenParams, ServerCapabilities, SubscriptionAcknowledged, SubscriptionFilter,
};

/// The client's resource subscriptions on 2026-07-28.
pub(crate) struct Subscribed {
    state: Mutex<State>,
    /// Into the notification dispatcher.
    forward: mpsc::Sender<Notification>,
    /// The list changes every stream asks for.
    lists: Lists,
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
    /// The task forwarding the current stream's events; aborting it drops
    /// the stream, which closes it on the server.
    stream: Option<AbortOnDrop>,
}

struct AbortOnDrop(AbortHandle);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

impl Subscribed {
    /// Subscriptions whose streams also carry the list changes of `lists`.
    pub(crate) fn new(forward: mpsc::Sender<Notification>, lists: Lists) -> Self {
        Subscribed {
            state: Mutex::new(State::default()),
            forward,
            lists,
        }
    }

    /// Opens the stream for the list changes alone, when there are some
    /// to hear and no stream is open yet. A server that accepts none of
    /// them gets its stream closed at once.
    pub(crate) async fn listen_lists(
        &self,
        conn: &Connection,
        envelope: &Envelope,
        timeout: Duration,
    ) -> Result<()> {
        if self.lists.is_empty() {
            return Ok(());
        }
        let mut state = self.state.lock().await;
        if state.stream.as_ref().is_some_and(|s| !s.0.is_finished()) {
            return Ok(());
        }
        let (sub, accepted) = open(conn, envelope, &state.uris, self.lists, timeout).await?;
        if accepted.lists.is_empty() && state.uris.is_empty() {
            tracing::debug!("the server accepted no list changes on its listen stream");
            return Ok(());
        }
        state.stream = Some(self.forward_from(sub));
        Ok(())
    }

    /// Adds `uri` to the set (a no-op when it is there and its stream lives).
    pub(crate) async fn subscribe(
        &self,
        conn: &Connection,
        envelope: &Envelope,
        uri: &str,
        timeout: Duration,
    ) -> Result<()> {
        let mut state = self.state.lock().await;
        let live = state.stream.as_ref().is_some_and(|s| !s.0.is_finished());
        if live && state.uris.contains(uri) {
            return Ok(());
        }
        let mut uris = state.uris.clone();
        uris.insert(uri.to_owned());
        let (sub, accepted) = open(conn, envelope, &uris, self.lists, timeout).await?;
        if !accepted.uris.contains(uri) {
            return Err(Error::protocol(format!(
                "the server did not accept a subscription to {uri:?}"
            ))
            .with_method(method::SUBSCRIPTIONS_LISTEN));
        }
        state.uris = uris;
        state.stream = Some(self.forward_from(sub));
        Ok(())
    }

    /// Removes `uri` from the set; the stream closes when the set is empty
    /// and no list change is listened for.
    pub(crate) async fn unsubscribe(
        &self,
        conn: &Connection,
        envelope: &Envelope,
        uri: &str,
        timeout: Duration,
    ) -> Result<()> {
        let mut state = self.state.lock().await;
        if !state.uris.remove(uri) {
            return Ok(());
        }
        if state.uris.is_empty() && self.lists.is_empty() {
            state.stream = None;
            return Ok(());
        }
        let uris = state.uris.clone();
        let (sub, _) = open(conn, envelope, &uris, self.lists, timeout).await?;
        state.stream = Some(self.forward_from(sub));
        Ok(())
    }

    /// Forwards a stream's notifications to the dispatcher until it ends.
    fn forward_from(&self, mut sub: Subscription) -> AbortOnDrop {
        let forward = self.forward.clone();
        let task = tokio::spawn(async move {
            while let Some(event) = sub.next().await {
                match event {
                    SubEvent::Notification { method, params } => {
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
            tracing::info!(
                "the server ended the stream of resource updates and list changes; \
                 subscribe again to reopen it"
            );
        });
        AbortOnDrop(task.abort_handle())
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
    let first = tokio::time::timeout(timeout, sub.next()).await;
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
        Ok(None) => Err(Error::protocol(
            "the server ended the listen stream before acknowledging it",
        )
        .with_method(method::SUBSCRIPTIONS_LISTEN)),
        Err(_) => Err(Error::protocol(format!(
            "the server did not acknowledge the listen stream within {timeout:?}"
        ))
        .with_method(method::SUBSCRIPTIONS_LISTEN)),
    }
}
