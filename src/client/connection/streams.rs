//! The streams a connection hands out: a listen subscription and the task
//! pushes no subscription claims (progress for one token is in
//! `progress.rs`). Each stops its routing when dropped.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

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
