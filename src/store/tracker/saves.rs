//! The saves of a worker's steps, written together. A step that ends
//! with the task still running gives its slot up and waits a few
//! milliseconds for the saves of other steps, and one call writes them all
//! ([`TaskStore::save_all`]: on Postgres, one statement). A database
//! spends more on a statement and its transaction than on the row it
//! writes: a save of one row cost Postgres 46–56 µs of CPU, a row of a
//! save of sixteen 21–26 µs, of sixty-four 15–22 µs (BENCHMARKS.md).

use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, Semaphore, oneshot};

use super::super::{Fence, RecordId, StepReport, StoreError, StoreResult, TaskStore};
use super::{Connector, Tracker};

/// A job's slot ([`TrackerBuilder::concurrency`](super::TrackerBuilder::concurrency)),
/// while it holds one.
pub(super) type Slot = Option<tokio::sync::OwnedSemaphorePermit>;

/// How long the first save of a batch waits for others, unless a claim's
/// worth came sooner.
const LINGER: Duration = Duration::from_millis(5);

/// The saves waiting to be written, a signal that a claim's worth of
/// them is in, and room for two claims' worth of saves not yet answered
/// (one batch forming while another is written): a step that finds none
/// keeps its slot until there is, so that a slow store slows the reads
/// rather than piling up held records whose saves wait.
pub(super) struct Saves {
    pending: Mutex<Vec<Pending>>,
    full: Notify,
    room: Semaphore,
}

impl Saves {
    /// Room for `2 * batch` saves not yet answered.
    pub(super) fn new(batch: usize) -> Saves {
        Saves {
            pending: Mutex::default(),
            full: Notify::new(),
            room: Semaphore::new(batch.saturating_mul(2)),
        }
    }
}

/// A save waiting to be written, and where its answer goes.
struct Pending {
    save: (RecordId, Fence, StepReport),
    answer: oneshot::Sender<StoreResult<()>>,
}

impl<S: TaskStore, C: Connector> Tracker<S, C> {
    /// Writes what a step of record `id` found, together with the saves
    /// of the other steps that end within [`LINGER`] (at once when a
    /// claim's worth, [`batch`](super::TrackerBuilder::batch), is in),
    /// and returns what the store answered for this one. The job's
    /// `slot` is given up meanwhile: another record is read while this
    /// one's save waits, and the save keeps only its record. With one
    /// slot, the save goes alone, at once.
    pub(super) async fn save_step(
        &self,
        id: RecordId,
        fence: Fence,
        progress: StepReport,
        slot: Slot,
    ) -> StoreResult<()> {
        let slots = self.inner.settings.concurrency;
        if slots < 2 {
            return self.inner.store.save(id, fence, progress).await;
        }
        // Held until the answer comes; closed never.
        let _room = self.inner.saves.room.acquire().await;
        if slot.is_some() {
            drop(slot);
            // A sleeping `run` starts a job in the slot freed.
            self.inner.wake.notify_one();
        }
        let (answer, answered) = oneshot::channel();
        let first = {
            let saves = &self.inner.saves;
            let mut pending = saves.pending.lock().unwrap_or_else(PoisonError::into_inner);
            pending.push(Pending {
                save: (id, fence, progress),
                answer,
            });
            if pending.len() == self.inner.settings.batch {
                saves.full.notify_one();
            }
            pending.len() == 1
        };
        if first {
            // Written by a task of its own, so that a step cut short (its
            // lease lost, a stop) does not strand the others' saves.
            let this = self.clone();
            tokio::spawn(async move { this.write_saves().await });
        }
        answered.await.unwrap_or_else(|_| {
            Err(StoreError::other(
                "a save was dropped before it was written",
            ))
        })
    }

    /// Waits for a claim's worth of saves or [`LINGER`], then writes the
    /// saves waiting and answers each.
    async fn write_saves(&self) {
        let saves = &self.inner.saves;
        let _ = tokio::time::timeout(LINGER, saves.full.notified()).await;
        let batch =
            std::mem::take(&mut *saves.pending.lock().unwrap_or_else(PoisonError::into_inner));
        let (batch, answers): (Vec<_>, Vec<_>) =
            batch.into_iter().map(|p| (p.save, p.answer)).unzip();
        let written = self.inner.store.save_all(batch).await;
        for (answer, result) in answers.into_iter().zip(written) {
            // A step that was cut short no longer waits for its answer.
            let _ = answer.send(result);
        }
    }
}
