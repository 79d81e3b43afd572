//! The streams a connection hands out: a listen subscription and the task
//! pushes no subscription claims (progress for one token is in
//! `progress.rs`). Each stops its routing when dropped.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use tokio::sync::mpsc;

use super::shared::{Shared, SubEvent};
use crate::protocol::{RequestId, RpcError};

/// An open listen stream. Dropping it ends the stream on the server.
pub(crate) struct Subscription {
    pub(super) shared: Arc<Shared>,
    pub(super) id: RequestId,
    pub(super) rx: mpsc::Receiver<SubEvent>,
    pub(super) lagged: Arc<AtomicBool>,
    /// The server's error, when it ended the stream with one.
    pub(super) refusal: Arc<OnceLock<RpcError>>,
}

impl Subscription {
    /// The stream's request id.
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// The error the server ended the stream with, if it did so (read
    /// once [`next`](Self::next) said the stream ended).
    pub(crate) fn refusal(&self) -> Option<&RpcError> {
        self.refusal.get()
    }

    /// The next event; `None` when the stream ended (final response, server
    /// cancel, or closed connection). A lag is reported before the next
    /// event, never instead of one: an event taken from the queue is
    /// always returned.
    pub(crate) async fn next(&mut self) -> Option<SubEvent> {
        if self.lagged.swap(false, Ordering::AcqRel) {
            return Some(SubEvent::Lagged);
        }
        self.rx.recv().await
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
