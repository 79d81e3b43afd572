//! Resource subscriptions on 2026-07-28, where `resources/subscribe` is
//! gone: one `subscriptions/listen` stream per client carries
//! `notifications/resources/updated` for every URI subscribed to (with the
//! resources and prompts `list_changed` beside them), and its events go to
//! the same dispatcher the initialize era's notifications reach.
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

use super::envelope::Envelope;
use super::rpc::{Connection, Notification, SubEvent, Subscription};
use crate::error::{Error, Result};
use crate::protocol::method;
use crate::protocol::{ListenParams, SubscriptionAcknowledged, SubscriptionFilter};

/// The client's resource subscriptions on 2026-07-28.
pub(crate) struct Subscribed {
    state: Mutex<State>,
    /// Into the notification dispatcher.
    forward: mpsc::Sender<Notification>,
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
    pub(crate) fn new(forward: mpsc::Sender<Notification>) -> Self {
        Subscribed {
            state: Mutex::new(State::default()),
            forward,
        }
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
        let (sub, accepted) = open(conn, envelope, &uris, timeout).await?;
        if !accepted.contains(uri) {
            return Err(Error::protocol(format!(
                "the server did not accept a subscription to {uri:?}"
            ))
            .with_method(method::SUBSCRIPTIONS_LISTEN));
        }
        state.uris = uris;
        state.stream = Some(self.forward_from(sub));
        Ok(())
    }

    /// Removes `uri` from the set; the stream closes when the set is empty.
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
        if state.uris.is_empty() {
            state.stream = None;
            return Ok(());
        }
        let uris = state.uris.clone();
        let (sub, _) = open(conn, envelope, &uris, timeout).await?;
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
                        tracing::warn!("resource updates were dropped: the client was behind");
                    }
                }
            }
            tracing::info!(
                "the server ended the stream of resource updates; \
                 subscribe again to reopen it"
            );
        });
        AbortOnDrop(task.abort_handle())
    }
}

/// Opens a listen stream for `uris` and the resource and prompt lists;
/// returns it once acknowledged, with the URIs the server accepted.
async fn open(
    conn: &Connection,
    envelope: &Envelope,
    uris: &BTreeSet<String>,
    timeout: Duration,
) -> Result<(Subscription, BTreeSet<String>)> {
    let params = ListenParams {
        notifications: SubscriptionFilter {
            resources_list_changed: Some(true),
            prompts_list_changed: Some(true),
            resource_subscriptions: Some(uris.iter().cloned().collect()),
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
            let accepted = ack
                .notifications
                .resource_subscriptions
                .unwrap_or_default()
                .into_iter()
                .collect();
            Ok((sub, accepted))
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
