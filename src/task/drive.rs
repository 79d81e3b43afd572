//! The wait loop: drives a handle's core until a goal, by polling or by
//! pushes.
//!
//! Two clocks bound a wait. The *deadline* (`timeout` on the builder, 60 s
//! by default, or the bound given to `finish_within`) bounds the whole
//! wait; reaching it hands the task back
//! ([`Error::is_deadline`](crate::Error::is_deadline)). The *request
//! timeout* bounds each read; a read that times out or hits a transport
//! error is retried with backoff inside the deadline, since reads are
//! idempotent. Writes (answers, cancels) and `tools/call` are never retried
//! blindly.
//!
//! The schedule:
//! - no sleep before the first read when the handle's snapshot is not fresh
//!   (a creation result that is not `working`, a resume, a failed read);
//! - after a read, the next one comes one interval later, where interval =
//!   the latest `pollIntervalMs` (else `poll_interval`), capped at
//!   `max_poll_interval` (30 s by default) and raised to `min_poll_interval`
//!   (50 ms), re-read from every snapshot. A server's interval is a
//!   suggestion: however large (`1e12`, `u64::MAX`), reads keep coming at
//!   the cap, and a wait that starts when the last read is older than the
//!   cap reads at once. Non-integer values round up to whole milliseconds;
//!   zero, negative and non-numeric ones count as absent;
//! - an applied push counts as a read: the next read comes one interval
//!   after it;
//! - after a write the server acknowledged (an answer, a cancel), one read
//!   comes at the floor (`min_poll_interval`) instead of a whole interval
//!   later, so an answer or a cancel shows its effect soon; the reads after
//!   that one are spaced by the interval again. A listener whose stream
//!   accepted the task relies on pushes instead;
//! - no sleep past the deadline, and none past the `with_ttl` lifetime
//!   (which cancels the task and ends with `Outcome::Expired`);
//! - a closed connection wakes every wait at once: it fails with
//!   [`Error::is_transport`](crate::Error::is_transport) and the handle.
//!
//! Overload and rate limits (HTTP `429` and `503`, see
//! [`Error::is_overloaded`](crate::Error::is_overloaded)):
//! - a read refused with `Retry-After` is retried that long after the
//!   refusal (capped at 5 minutes), and never sooner than one interval:
//!   `Retry-After: 0` does not make reads come faster than the schedule;
//! - the pause holds for every task of the same client: the connection
//!   keeps the moment it ends, and no wait reads any task before it (a
//!   wait asleep when the refusal comes sleeps on to that moment). A
//!   `Retry-After` on the reply to any request counts, a `tools/call`'s
//!   included;
//! - a read refused without `Retry-After` is retried after one interval,
//!   then two, four, … up to 30 s (or the interval, when it is longer),
//!   each less a jitter of up to a quarter (never under the interval), so
//!   that tasks refused together do not come back together. The jitter is
//!   drawn from the task id and the attempt, not from a clock, so a
//!   schedule is the same on every run;
//! - other failed reads (a timeout, a lost reply) back off from 100 ms, up
//!   to the interval.
//!
//! The loop lives beside the handles because what it works on is the
//! handle's core (its machine, ledger, snapshot and schedule): a trait
//! between the two would restate `Core`'s methods one for one.

use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use super::core::Core;
use super::observed::Observed;
use super::outcome::Outcome;
use super::schedule::{After, seed_of};
use super::trace::traced;
use crate::Client;
use crate::client::{Push, Watch};
use crate::error::{Error, Kind, Result, Waited};
use crate::protocol::{InputRequests, InputResponses, TaskStatus};

/// Stands for "no bound" where a bound is too long to count (about 30 years).
const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);

/// When a wait ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Goal {
    /// At the end of the task, answering input per the input mode.
    Finish,
    /// At the next change of status or status message.
    Change,
    /// At the end of the task, never answering input (after a cancel).
    Settle,
    /// At the next change, answering input per the input mode (update streams).
    Updates,
}

/// Waits until `goal`, at most `bound`, updating `observed` as snapshots
/// arrive. On `Err`, `observed` and `core` still describe the task: the
/// caller returns the handle with the error.
///
/// Callers run it inside the task span (`traced!`), so the requests it
/// sends are the span's children. Its requests (a read, answers, a
/// cancel) are boxed: a wait sleeps most of its life, and a request's
/// future is several times the size of the rest of it (`cargo bench
/// --bench scale` prints a wait's size).
pub(crate) async fn wait(
    core: &mut Core,
    observed: &mut Observed,
    goal: Goal,
    bound: Duration,
) -> Result<()> {
    let mut state = WaitState::new(core, bound);
    let client = core.client().clone();
    loop {
        match observed {
            Observed::Finished(_) => return Ok(()),
            Observed::InputRequired(_) if goal == Goal::Change => return Ok(()),
            // An update stream shows the question before it is answered.
            Observed::InputRequired(_)
                if goal == Goal::Updates && core.snapshot().status != state.first =>
            {
                return Ok(());
            }
            Observed::InputRequired(requests) if matches!(goal, Goal::Finish | Goal::Updates) => {
                if !core.can_answer(requests) {
                    // Stop here: the caller gets Task<InputRequired>.
                    return Ok(());
                }
                Box::pin(answer(core, requests)).await?;
                *observed = Observed::Pending;
            }
            Observed::InputRequired(_) | Observed::Pending => {
                // The status or its message changed since the wait began.
                if matches!(goal, Goal::Change | Goal::Updates) && core.changes() != state.changes {
                    return Ok(());
                }
            }
        }

        core.ensure_watch();
        // Sleep until the next read, the lifetime or the deadline, unless
        // a push or the connection closing comes first (a closed
        // connection wins). A timer rounds up to the next millisecond
        // tick: none is armed for a moment that has already come.
        let now = Instant::now();
        let at = state.wake(core, &client, now);
        if at > now {
            tokio::select! {
                biased;
                () = client.closed() => {
                    let reason = client
                        .closed_reason()
                        .unwrap_or_else(|| "the connection closed".to_owned());
                    return Err(Error::transport(reason).with_task(core.task_id()));
                }
                push = next_push(core.watch_mut()) => {
                    match push {
                        Push::Accepted => {
                            if let Some(w) = core.watch_mut() {
                                w.confirm();
                            }
                            // Read once after the ack, so a change made
                            // before the stream opened is not missed.
                            state.read_at = Some(Instant::now());
                        }
                        Push::Refused => core.listen_refused(),
                        Push::Ended => core.listen_ended(),
                        Push::Lagged => state.read_at = Some(Instant::now()),
                        Push::Snapshot(task) => {
                            if let Some(next) = core.apply_push(*task) {
                                *observed = next;
                            }
                        }
                    }
                    continue;
                }
                () = sleep_until(at) => {}
            }
        }

        let now = Instant::now();
        if core.expires_at().is_some_and(|at| at <= now) {
            Box::pin(core.send_cancel()).await?;
            *observed = Observed::Finished(Box::new(Outcome::Expired));
            return Ok(());
        }
        // Worked out again after the sleep: a refusal with `Retry-After`
        // (another task's, say) may have come meanwhile. `now`, not a
        // fresh moment, for a task never read: "at once" taken anew would
        // always come a little after `now`, and the wait would spin
        // without reading.
        let next_read = state.next_read(core, &client, now);
        if next_read.is_none_or(|at| at > now) {
            if now < state.deadline {
                // Not the deadline: the read moved later; sleep on.
                continue;
            }
            // Woken by the deadline.
            return Err(Error::new(Kind::Deadline {
                after: bound,
                what: Waited::Task,
            })
            .with_task(core.task_id()));
        }

        state.read_at = None;
        let remaining = state.deadline.saturating_duration_since(now);
        let timeout = core
            .settings()
            .request_timeout()
            .min(remaining)
            .max(Duration::from_millis(1));
        match Box::pin(core.read_within(timeout)).await {
            Ok(Some(next)) => {
                state.read_ok();
                *observed = next;
            }
            Ok(None) => state.read_ok(),
            Err(e) if retryable(core, &e) => {
                let wait = state.read_failed(core, &e);
                tracing::debug!(task = ?core.task_id(), "a read failed, retrying in {}: {e}", crate::human::duration(wait));
                state.read_at = Some(Instant::now() + wait);
            }
            Err(e) => return Err(e),
        }
    }
}

/// The next push for the task; never, without a registration.
async fn next_push(watch: Option<&mut Watch>) -> Push {
    match watch {
        Some(watch) => watch.recv().await,
        None => std::future::pending().await,
    }
}

/// What a wait keeps from one read to the next, besides the handle's core.
struct WaitState {
    /// The end of the wait.
    deadline: Instant,
    /// A scheduled retry or read-after-ack; it replaces the schedule.
    read_at: Option<Instant>,
    /// Reads that failed in a row.
    failures: u32,
    /// The core's change count when the wait began.
    changes: u32,
    /// The status when the wait began.
    first: TaskStatus,
}

impl WaitState {
    fn new(core: &Core, bound: Duration) -> WaitState {
        let now = Instant::now();
        WaitState {
            // A bound too long to count is no bound.
            deadline: now.checked_add(bound).unwrap_or_else(|| now + FAR),
            read_at: None,
            failures: 0,
            changes: core.changes(),
            first: core.snapshot().status,
        }
    }

    /// When to read next: a scheduled retry or read-after-ack, else one
    /// interval after the last read (never while pushes keep the task
    /// current), and once soon after a write; never before the end of a
    /// pause the server asked for. A task never read is due `now`.
    fn next_read(&self, core: &Core, client: &Client, now: Instant) -> Option<Instant> {
        let listening = core.listening();
        let far = now + FAR;
        let scheduled = self
            .read_at
            .or_else(|| core.scheduled_read(listening, now, far));
        let next_read = match (scheduled, core.soon_read(listening)) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        held_back(next_read, client.not_before())
    }

    /// When the wait wakes: the next read, the `with_ttl` lifetime or the
    /// deadline, whichever comes first.
    fn wake(&self, core: &Core, client: &Client, now: Instant) -> Instant {
        [self.next_read(core, client, now), core.expires_at()]
            .into_iter()
            .flatten()
            .fold(self.deadline, Instant::min)
    }

    fn read_ok(&mut self) {
        self.failures = 0;
    }

    /// How long to wait before retrying a read that failed with `e`: the
    /// shared schedule's rule for the failure.
    fn read_failed(&mut self, core: &Core, e: &Error) -> Duration {
        self.failures = self.failures.saturating_add(1);
        let after = After::Failure {
            attempt: self.failures,
            overloaded: e.is_overloaded(),
            retry_after: e.retry_after(),
        };
        core.settings().rules.delay(
            core.snapshot().poll_interval_ms,
            after,
            seed_of(core.task_id().expose()),
        )
    }
}

/// Reads are idempotent: retry timeouts, transport failures and an
/// overloaded server's refusals (with a JSON-RPC error or not), unless the
/// connection is gone for good.
fn retryable(core: &Core, e: &Error) -> bool {
    super::schedule::retryable(e) && core.client().closed_reason().is_none()
}

/// `at`, moved to `not_before` when that is later.
fn held_back(at: Option<Instant>, not_before: Option<Instant>) -> Option<Instant> {
    match (at, not_before) {
        (Some(at), Some(held)) => Some(at.max(held)),
        (at, _) => at,
    }
}

/// Answers every request with the handlers (in key order) and sends them
/// in one write. Keys are recorded only once the server acknowledged.
async fn answer(core: &mut Core, requests: &InputRequests) -> Result<()> {
    let client = core.client().clone();
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let response = client
            .handlers()
            .answer(key, request)
            .await
            .map_err(|e| e.with_task(core.task_id()))?;
        responses.insert(key.clone(), response);
    }
    core.send_answers(&responses).await
}

/// Waits for `goal` within the builder's `timeout`, owning the core (for
/// futures that must be `'static`).
pub(crate) async fn drive(
    core: Box<Core>,
    observed: Observed,
    goal: Goal,
) -> (Box<Core>, Observed, Result<()>) {
    let bound = core.settings().timeout;
    drive_within(core, observed, goal, bound).await
}

/// Waits for `goal` within `bound`, owning the core.
pub(crate) async fn drive_within(
    mut core: Box<Core>,
    mut observed: Observed,
    goal: Goal,
    bound: Duration,
) -> (Box<Core>, Observed, Result<()>) {
    let r = traced!(core.span(), wait(&mut core, &mut observed, goal, bound));
    (core, observed, r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pause_the_server_asked_for_moves_a_read_later_never_sooner() {
        let now = Instant::now();
        let later = now + Duration::from_secs(3);
        assert_eq!(held_back(Some(now), Some(later)), Some(later));
        assert_eq!(held_back(Some(later), Some(now)), Some(later));
        assert_eq!(held_back(Some(now), None), Some(now));
        assert_eq!(
            held_back(None, Some(later)),
            None,
            "a listener reads nothing"
        );
    }
}
