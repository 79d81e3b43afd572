//! The poll loop.

use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use crate::error::{Error, Kind, Result};
use crate::input::InputHandlers;
use crate::protocol::{InputRequests, InputResponses};
use crate::task::Outcome;
use crate::task::handle::Core;
use crate::wait::listen::Push;

/// The first retry of a failed read comes this long after it.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);
/// Stands for "no bound" where a bound is too long to count (about 30 years).
const FAR: Duration = Duration::from_secs(86_400 * 365 * 30);

/// What woke a sleeping wait.
enum Woke {
    Timer,
    Push(Push),
    Closed,
}

/// What a handle knows after a read, before it is typed.
#[derive(Debug)]
pub(crate) enum Observed {
    Pending,
    InputRequired(InputRequests),
    Finished(Outcome),
}

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
pub(crate) async fn wait(
    core: &mut Core,
    observed: &mut Observed,
    goal: Goal,
    bound: Duration,
) -> Result<()> {
    let started = Instant::now();
    // A bound too long to count is no bound.
    let deadline = started.checked_add(bound).unwrap_or_else(|| started + FAR);
    let first = (core.snapshot.status, core.snapshot.status_message.clone());
    let client = core.client().clone();
    let mut read_at: Option<Instant> = None;
    let mut backoff = FIRST_BACKOFF;
    loop {
        match observed {
            Observed::Finished(_) => return Ok(()),
            Observed::InputRequired(_) if goal == Goal::Change => return Ok(()),
            // An update stream shows the question before it is answered.
            Observed::InputRequired(_)
                if goal == Goal::Updates && core.snapshot.status != first.0 =>
            {
                return Ok(());
            }
            Observed::InputRequired(requests) if matches!(goal, Goal::Finish | Goal::Updates) => {
                if !core.can_answer(requests) {
                    // Stop here: the caller gets Task<InputRequired>.
                    return Ok(());
                }
                let handlers = client.handlers().clone();
                Box::pin(answer(core, &handlers, requests)).await?;
                *observed = Observed::Pending;
            }
            Observed::InputRequired(_) | Observed::Pending => {
                let now = (
                    core.snapshot.status,
                    core.snapshot.status_message.as_deref(),
                );
                if matches!(goal, Goal::Change | Goal::Updates)
                    && now != (first.0, first.1.as_deref())
                {
                    return Ok(());
                }
            }
        }

        if core.settings.listen && !core.listen_failed && core.watch.is_none() {
            let id = core.task_id().clone();
            core.watch = Some(core.client().watcher().register(id));
        }
        let listening = core.watch.as_ref().is_some_and(|w| w.confirmed);

        // When to read next: a scheduled retry or read-after-ack, else one
        // interval after the last read (never while pushes keep us
        // current), and once soon after a write.
        let now = Instant::now();
        let scheduled = read_at.or_else(|| match core.last_read {
            _ if listening => None,
            Some(at) => Some(at.checked_add(core.interval()).unwrap_or(deadline)),
            None => Some(now),
        });
        // Pushes show a write's effect to a confirmed listener.
        let soon = core.read_soon.filter(|_| !listening);
        let next_read = match (scheduled, soon) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        let expiry = core.expires_at;
        let wake = [next_read, expiry, Some(deadline)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(deadline);

        // A timer rounds up to the next millisecond tick: never arm one for
        // a moment that has already come. A closed connection wakes every
        // wait at once.
        let woke = if wake <= Instant::now() {
            Woke::Timer
        } else {
            match core.watch.as_mut() {
                Some(watch) => tokio::select! {
                    push = watch.recv() => Woke::Push(push),
                    () = client.closed() => Woke::Closed,
                    () = sleep_until(wake) => Woke::Timer,
                },
                None => tokio::select! {
                    () = client.closed() => Woke::Closed,
                    () = sleep_until(wake) => Woke::Timer,
                },
            }
        };
        let push = match woke {
            Woke::Timer => None,
            Woke::Push(push) => Some(push),
            Woke::Closed => {
                let reason = client
                    .closed_reason()
                    .unwrap_or_else(|| "the connection closed".to_owned());
                return Err(Error::transport(reason).with_task(core.task_id()));
            }
        };
        if let Some(push) = push {
            match push {
                Push::Accepted => {
                    if let Some(w) = core.watch.as_mut() {
                        w.confirmed = true;
                    }
                    // Read once after the ack, so a change made before the
                    // stream opened is not missed.
                    read_at = Some(Instant::now());
                }
                Push::Refused => {
                    // Keep the registration: pushes the server sends anyway
                    // (on another stream, or untagged) still save reads.
                    tracing::debug!(task = ?core.task_id(), "the stream did not accept the task; polling");
                    if let Some(w) = core.watch.as_mut() {
                        w.confirmed = false;
                    }
                    core.listen_failed = true;
                }
                Push::Ended => {
                    tracing::debug!(task = ?core.task_id(), "not listening; polling instead");
                    core.watch = None;
                    core.listen_failed = true;
                }
                Push::Lagged => read_at = Some(Instant::now()),
                Push::Snapshot(task) => {
                    if let Some(next) = core.apply(*task) {
                        // As fresh as a read: the next one waits an interval.
                        core.last_read = Some(Instant::now());
                        core.read_soon = None;
                        *observed = next;
                    }
                }
            }
            continue;
        }

        let now = Instant::now();
        if expiry.is_some_and(|at| at <= now) {
            Box::pin(core.send_cancel()).await?;
            *observed = Observed::Finished(Outcome::Expired);
            return Ok(());
        }
        if next_read.is_none_or(|at| at > now) {
            // Woken by the deadline.
            return Err(Error::new(Kind::Deadline(core.settings.timeout)).with_task(core.task_id()));
        }

        read_at = None;
        let remaining = deadline.saturating_duration_since(now);
        let timeout = core
            .settings
            .request_timeout()
            .min(remaining)
            .max(Duration::from_millis(1));
        // Boxed: a waiting task spends most of its life asleep, and the
        // request future is large; keeping it out of this future's state
        // keeps every pending task small.
        match Box::pin(core.read_within(timeout)).await {
            Ok(Some(next)) => {
                backoff = FIRST_BACKOFF;
                *observed = next;
            }
            Ok(None) => backoff = FIRST_BACKOFF,
            Err(e) if retryable(core, &e) => {
                tracing::debug!(task = ?core.task_id(), "tasks/get failed, retrying in {backoff:?}: {e}");
                read_at = Some(Instant::now() + backoff);
                backoff = (backoff * 2).min(core.interval().max(FIRST_BACKOFF));
            }
            Err(e) => return Err(e),
        }
    }
}

/// Reads are idempotent: retry timeouts and transport failures, unless the
/// connection is gone for good.
fn retryable(core: &Core, e: &Error) -> bool {
    (e.is_timeout() || e.is_transport()) && core.client().closed_reason().is_none()
}

/// Answers every request with the handlers (in key order) and sends one
/// `tasks/update`. Keys are recorded only once the server acknowledged.
async fn answer(core: &mut Core, handlers: &InputHandlers, requests: &InputRequests) -> Result<()> {
    let id = core.task_id().clone();
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let response = handlers
            .answer(key, request)
            .await
            .map_err(|e| e.with_task(&id))?;
        responses.insert(key.clone(), response);
    }
    let timeout = core.settings.request_timeout();
    core.client()
        .update_task_within(&id, &responses, Some(timeout))
        .await?;
    core.machine.ledger_mut().record(&responses);
    core.wrote();
    Ok(())
}
