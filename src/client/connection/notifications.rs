//! The notifications no table of the connection claims (logging,
//! `*/list_changed`, elicitation completion, anything else), handed to the
//! client layer through one bounded queue. The reader never waits on it:
//! when the client falls behind, a notification is dropped and counted.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use serde_json::value::RawValue;
use tokio::sync::mpsc;

/// How many unclaimed notifications may wait for the client layer.
pub(crate) const NOTIFICATION_CAPACITY: usize = 64;

/// A notification from the server that nothing in the connection claimed.
#[derive(Debug)]
pub(crate) struct Notification {
    pub(crate) method: String,
    pub(crate) params: Option<Box<RawValue>>,
}

/// What the reader counts of the queue, readable without the tables' lock.
#[derive(Default)]
pub(super) struct Dropped {
    /// Notifications dropped because the client layer was behind.
    count: AtomicU64,
    /// Whether the last one was dropped (warn once a burst).
    lagging: AtomicBool,
}

impl Dropped {
    pub(super) fn count(&self) -> u64 {
        self.count.load(Ordering::Relaxed)
    }

    /// Counts one notification dropped elsewhere (a stream's full queue).
    pub(super) fn add(&self) {
        self.count.fetch_add(1, Ordering::Relaxed);
    }
}

/// Queues a notification for the client layer through `queue`, or drops it
/// (counted in `dropped`) when the queue is full. Without a receiver it is
/// ignored, as before anyone took one.
pub(super) fn hand_over(
    queue: &mut Option<mpsc::Sender<Notification>>,
    dropped: &Dropped,
    method: String,
    params: Option<Box<RawValue>>,
) {
    let Some(tx) = queue else {
        tracing::debug!(%method, "a notification nothing handles");
        return;
    };
    match tx.try_send(Notification { method, params }) {
        Ok(()) => dropped.lagging.store(false, Ordering::Relaxed),
        Err(mpsc::error::TrySendError::Full(n)) => {
            dropped.count.fetch_add(1, Ordering::Relaxed);
            if !dropped.lagging.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    method = %n.method,
                    "the client is behind on the server's notifications; dropping some"
                );
            } else {
                tracing::debug!(method = %n.method, "dropping a notification: the queue is full");
            }
        }
        Err(mpsc::error::TrySendError::Closed(_)) => *queue = None,
    }
}
