//! Retention ([`TrackerBuilder::retain`](super::TrackerBuilder::retain)):
//! the worker removes delivered records older than its setting, a small
//! batch at a time, as part of its passes.

use std::sync::Mutex;
use std::time::{Duration, SystemTime};

use tokio::time::Instant;

use super::super::TaskStore;

/// The most delivered records one batch removes: one short write, so that
/// pruning a large backlog never holds the database for long (figures in
/// BENCHMARKS.md).
pub(super) const BATCH: usize = 1_000;

/// A worker's retention setting, and when `run` prunes next.
#[derive(Debug)]
pub(super) struct Retention {
    /// Delivered records older than this are removed.
    age: Duration,
    /// The earliest moment of `run`'s next batch (`None`: at once).
    next: Mutex<Option<Instant>>,
}

impl Retention {
    pub(super) fn new(age: Duration) -> Retention {
        Retention {
            age,
            next: Mutex::new(None),
        }
    }

    /// Whether `run` may prune now: at most once per `every`. Taking the
    /// turn sets the next one.
    pub(super) fn turn(&self, every: Duration) -> bool {
        let now = Instant::now();
        let mut next = self.next.lock().unwrap_or_else(|e| e.into_inner());
        if next.is_some_and(|at| now < at) {
            return false;
        }
        *next = Some(now + every);
        true
    }

    /// Removes one batch of delivered records older than the setting from
    /// `store`: how many. A failure is logged, never returned: the records
    /// stay for a later batch.
    pub(super) async fn prune(&self, store: &impl TaskStore, worker: &str) -> usize {
        let Some(cutoff) = SystemTime::now().checked_sub(self.age) else {
            return 0;
        };
        match store.prune(cutoff, BATCH).await {
            Ok(removed) => {
                if removed > 0 {
                    tracing::debug!(worker = %worker, removed, "delivered records removed");
                }
                removed
            }
            Err(e) if e.is_unavailable() => {
                tracing::debug!(worker = %worker, "no delivered records removed: {e}");
                0
            }
            Err(e) => {
                tracing::warn!(worker = %worker, "delivered records could not be removed: {e}");
                0
            }
        }
    }
}
