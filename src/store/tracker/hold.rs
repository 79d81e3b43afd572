//! The heartbeat: whatever a worker awaits on a record's behalf (a read, an
//! input handler, the application's outcome callback) runs while the
//! record's lease is renewed, so that no other worker claims the record
//! meanwhile, and is cut short once the lease cannot be kept.

use std::time::{Duration, SystemTime};

use super::super::{Fence, RecordId, StoreError, StoreResult, TaskStore};
use super::{Connector, Tracker};

impl<S: TaskStore, C: Connector> Tracker<S, C> {
    /// Runs `work` for record `id`, held under `fence` until `until`,
    /// renewing the lease every third of its length.
    ///
    /// # Errors
    ///
    /// [`StoreError::is_stale`] when the lease was lost meanwhile: another
    /// worker claimed the record (a renewal was refused), or the store
    /// could not be reached to renew it before it ran out. `work` is then
    /// dropped where it stands: nothing it would have written is written.
    pub(super) async fn keeping<T>(
        &self,
        id: RecordId,
        fence: Fence,
        mut until: SystemTime,
        work: impl Future<Output = T>,
    ) -> StoreResult<T> {
        let lease = self.inner.settings.lease;
        let beat = (lease / 3).max(Duration::from_millis(5));
        let mut work = std::pin::pin!(work);
        loop {
            // Never sleep past the lease: a renewal that keeps failing
            // must cut the work before another worker may claim the record.
            let left = until
                .duration_since(SystemTime::now())
                .unwrap_or(Duration::ZERO);
            if left.is_zero() {
                return Err(StoreError::stale(id));
            }
            tokio::select! {
                out = &mut work => return Ok(out),
                () = tokio::time::sleep(beat.min(left)) => {}
            }
            let next = SystemTime::now() + lease;
            let renewed = self.inner.store.renew(id, fence, next).await;
            self.renewed(&renewed);
            match renewed {
                Ok(()) => until = next,
                Err(e) if e.is_stale() || e.is_not_found() => return Err(e),
                Err(e) => {
                    tracing::debug!(record = %id, "could not renew a lease: {e}");
                }
            }
        }
    }

    /// Runs `work` to its end while the lease of `id` under `fence` is
    /// renewed, as [`keeping`](Tracker::keeping) does, but never cuts it:
    /// for a call whose answer must not be lost (a `tools/call` that may
    /// start a task). Once the lease is lost, renewals stop, and the
    /// caller's next fenced write finds the record stale.
    pub(super) async fn renewing<T>(
        &self,
        id: RecordId,
        fence: Fence,
        mut until: SystemTime,
        work: impl Future<Output = T>,
    ) -> T {
        let lease = self.inner.settings.lease;
        let beat = (lease / 3).max(Duration::from_millis(5));
        let mut work = std::pin::pin!(work);
        let mut held = true;
        loop {
            let pause = match until.duration_since(SystemTime::now()) {
                Ok(left) if held => beat.min(left),
                // Lost, or run out: only the work is left to wait for.
                _ => return work.await,
            };
            tokio::select! {
                out = &mut work => return out,
                () = tokio::time::sleep(pause) => {}
            }
            let next = SystemTime::now() + lease;
            let renewed = self.inner.store.renew(id, fence, next).await;
            self.renewed(&renewed);
            match renewed {
                Ok(()) => until = next,
                Err(e) if e.is_stale() || e.is_not_found() => held = false,
                Err(e) => {
                    tracing::debug!(record = %id, "could not renew a lease: {e}");
                }
            }
        }
    }

    /// Counts a renewal's result.
    fn renewed(&self, result: &StoreResult<()>) {
        let result = match result {
            Ok(()) => "ok",
            Err(e) if e.is_stale() || e.is_not_found() => "lost",
            Err(_) => "failed",
        };
        super::meter::renewal(&self.inner.meter, result);
    }
}
