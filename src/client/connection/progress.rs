//! Progress for one request: the `notifications/progress` routed to its
//! token, the caller's callback, and the two clocks of a request that
//! reports progress (each report restarts the request's timeout; an
//! overall bound caps the whole).

use std::fmt;
use std::sync::{Arc, Weak};
use std::time::Duration;

use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use super::shared::{Shared, SubEvent};
use crate::protocol::{Progress, ProgressParams, RequestId};

/// What the caller runs for each progress report.
pub(crate) type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// `notifications/progress` for one token; dropping it stops the routing.
pub(crate) struct ProgressWatch {
    pub(super) shared: Weak<Shared>,
    pub(super) token: RequestId,
    pub(super) rx: mpsc::Receiver<SubEvent>,
}

impl ProgressWatch {
    /// The next progress notification's params (`None` inside when some
    /// were dropped because the consumer was slow); `None` once the
    /// connection closed.
    pub(crate) async fn next(&mut self) -> Option<Option<Box<RawValue>>> {
        match self.rx.recv().await? {
            SubEvent::Notification { params, .. } => Some(params),
            SubEvent::Lagged => Some(None),
        }
    }

    /// A notification already queued, without waiting.
    fn try_next(&mut self) -> Option<Option<Box<RawValue>>> {
        match self.rx.try_recv().ok()? {
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

/// Progress tracking for one call, across every request it sends (the
/// rounds of a 2026-07-28 `tools/call` share one token and one overall
/// clock).
pub(crate) struct Tracking {
    watch: ProgressWatch,
    on_progress: ProgressFn,
    /// The longest the call may wait in all, however often progress
    /// restarts a request's timeout.
    total: Duration,
    /// When the first request was sent: the overall clock.
    started: Option<Instant>,
    /// Reports seen, for diagnostics and tests.
    seen: u64,
}

impl fmt::Debug for Tracking {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tracking")
            .field("total", &self.total)
            .field("seen", &self.seen)
            .finish_non_exhaustive()
    }
}

/// Stops the reports of a [`Tracking::keep_reporting`] when dropped.
#[derive(Debug)]
pub(crate) struct Pump(tokio::task::AbortHandle);

impl Drop for Pump {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// `at + by`, or far away when that is too long to count (a bound of
/// `Duration::MAX` is no bound).
pub(crate) fn later(at: Instant, by: Duration) -> Instant {
    at.checked_add(by)
        .unwrap_or_else(|| at + Duration::from_secs(86_400 * 365 * 30))
}

/// Why a tracked wait ended without a reply.
pub(super) struct Elapsed(pub(super) Duration);

impl Tracking {
    pub(super) fn new(watch: ProgressWatch, on_progress: ProgressFn, total: Duration) -> Self {
        Tracking {
            watch,
            on_progress,
            total,
            started: None,
            seen: 0,
        }
    }

    /// The `progressToken` the requests carry.
    pub(crate) fn token(&self) -> &RequestId {
        &self.watch.token
    }

    /// Keeps handing reports to the callback after the call returned (a
    /// 2025-11-25 task keeps its call's token for its whole life), until
    /// the returned guard is dropped or the connection closes.
    pub(crate) fn keep_reporting(mut self) -> Pump {
        let handle = tokio::spawn(async move {
            while let Some(params) = self.watch.next().await {
                self.deliver(params);
            }
        });
        Pump(handle.abort_handle())
    }

    /// Takes one queued report without handing it on (tests).
    #[cfg(test)]
    pub(super) fn queued_report(&mut self) -> bool {
        self.watch.try_next().is_some()
    }

    /// Hands one notification to the callback; `true` when it counts as a
    /// sign of life (a report, or reports dropped for a slow consumer).
    fn deliver(&mut self, params: Option<Box<RawValue>>) -> bool {
        let Some(params) = params else {
            return true;
        };
        match ProgressParams::decode(params.get()) {
            Some(progress) => {
                self.seen += 1;
                (self.on_progress)(progress);
                true
            }
            None => {
                tracing::debug!("skipping a malformed progress notification");
                false
            }
        }
    }

    /// Waits for `reply`, handing each progress report to the callback.
    /// `idle` bounds the wait without a report; each report restarts it,
    /// and the overall bound (never shorter than `idle`) caps it, counted
    /// from the first request of the call. Reports queued when the reply
    /// arrives are delivered first, so none is lost to the race.
    pub(super) async fn wait<T>(
        &mut self,
        reply: oneshot::Receiver<T>,
        idle: Duration,
    ) -> Result<Result<T, oneshot::error::RecvError>, Elapsed> {
        let sent = Instant::now();
        let started = *self.started.get_or_insert(sent);
        let overall = later(started, self.total.max(idle));
        let mut quiet_until = later(sent, idle);
        let mut open = true;
        tokio::pin!(reply);
        loop {
            tokio::select! {
                biased;
                result = &mut reply => {
                    while let Some(params) = self.watch.try_next() {
                        self.deliver(params);
                    }
                    return Ok(result);
                }
                next = self.watch.next(), if open => match next {
                    Some(params) => {
                        if self.deliver(params) {
                            quiet_until = later(Instant::now(), idle);
                        }
                    }
                    // The connection closed; the reply says so next.
                    None => open = false,
                },
                () = tokio::time::sleep_until(quiet_until.min(overall)) => {
                    return Err(Elapsed(sent.elapsed()));
                }
            }
        }
    }
}
