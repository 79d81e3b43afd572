//! The streams a connection hands out: a listen subscription, the task
//! pushes no subscription claims, and progress for one token. Each stops
//! its routing when dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::shared::{Shared, SubEvent};
use crate::protocol::RequestId;

/// An open listen stream. Dropping it ends the stream on the server.
pub(crate) struct Subscription {
    pub(super) shared: Arc<Shared>,
    pub(super) id: RequestId,
    pub(super) rx: mpsc::Receiver<SubEvent>,
    pub(super) lagged: Arc<AtomicBool>,
}

impl Subscription {
    /// The next event; `None` when the stream ended (final response, server
    /// cancel, or closed connection).
    pub(crate) async fn next(&mut self) -> Option<SubEvent> {
        if self.lagged.swap(false, Ordering::AcqRel) {
            return Some(SubEvent::Lagged);
        }
        let ev = self.rx.recv().await;
        if ev.is_some() && self.lagged.swap(false, Ordering::AcqRel) {
            return Some(SubEvent::Lagged);
        }
        ev
    }
}

/// `notifications/progress` for one token; dropping it stops the routing.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct ProgressWatch {
    pub(super) shared: Weak<Shared>,
    pub(super) token: RequestId,
    pub(super) rx: mpsc::Receiver<SubEvent>,
}

#[cfg_attr(not(test), allow(dead_code))]
impl ProgressWatch {
    /// The next progress notification's params; `None` once the
    /// connection closed.
    pub(crate) async fn next(&mut self) -> Option<Option<Box<RawValue>>> {
        match self.rx.recv().await? {
            SubEvent::Notification { params, .. } => Some(params),
            SubEvent::Lagged => Some(None),
        }
    }
}

impl Drop for ProgressWatch {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.tables.lock().unwrap().progress.remove(&self.token);
        }
    }
}

/// The task pushes no subscription claimed (see [`Connection::task_pushes`]).
pub(crate) struct Pushes {
    pub(super) rx: mpsc::Receiver<SubEvent>,
    pub(super) lagged: Arc<AtomicBool>,
}

impl Pushes {
    /// The next push, or `Lagged` when some were dropped; `None` once the
    /// connection closed.
    pub(crate) async fn next(&mut self) -> Option<SubEvent> {
        if self.lagged.swap(false, Ordering::AcqRel) {
            return Some(SubEvent::Lagged);
        }
        self.rx.recv().await
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.shared.abandon(self.id.clone(), true);
    }
}
