//! The poll loop.

use std::time::Duration;

use tokio::time::{Instant, sleep_until};

use crate::error::{Error, Kind, Result};
use crate::input::InputHandlers;
use crate::protocol::{InputRequests, InputResponses};
use crate::task::handle::Core;
use crate::task::{InputMode, Outcome};
use crate::wait::listen::Push;

/// The first retry of a failed read comes this long after it.
const FIRST_BACKOFF: Duration = Duration::from_millis(100);

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

/// Waits until `goal`, updating `observed` as snapshots arrive. On `Err`,
/// `observed` and `core` still describe the task: the caller returns the
/// handle with the error.
pub(crate) async fn wait(core: &mut Core, observed: &mut Observed, goal: Goal) -> Result<()> {
    let started = Instant::now();
    let deadline = started + core.settings.timeout;
    let first = (core.snapshot.status, core.snapshot.status_message.clone());
    let mut read_at: Option<Instant> = None;
    let mut backoff = FIRST_BACKOFF;
    loop {
        match observed {
            Observed::Finished(_) => return Ok(()),
            Observed::InputRequired(_) if goal == Goal::Change => return Ok(()),
            Observed::InputRequired(requests) if matches!(goal, Goal::Finish | Goal::Updates) => {
                let handlers = core.client().handlers().clone();
                if core.settings.input == InputMode::Manual
                    || !requests.values().all(|r| handlers.can_answer(r))
                {
                    // Stop here: the caller gets Task<InputRequired>.
                    return Ok(());
                }
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
        // interval after the last read; never while pushes keep us current.
        let now = Instant::now();
        let next_read = read_at.or_else(|| match core.last_read {
            _ if listening => None,
            Some(at) => Some(at + core.interval()),
            None => Some(now),
        });
        let expiry = core.expires_at;
        let wake = [next_read, expiry, Some(deadline)]
            .into_iter()
            .flatten()
            .min()
            .unwrap_or(deadline);

        // A timer rounds up to the next millisecond tick: never arm one for
        // a moment that has already come.
        let due = wake <= Instant::now();
        let pushed = match core.watch.as_mut() {
            Some(watch) if !due => tokio::select! {
                push = watch.recv() => Some(push),
                () = sleep_until(wake) => None,
            },
            None if !due => {
                sleep_until(wake).await;
                None
            }
            _ => None,
        };
        if let Some(push) = pushed {
            match push {
                Push::Accepted => {
                    if let Some(w) = core.watch.as_mut() {
                        w.confirmed = true;
                    }
                    // Read once after the ack, so a change made before the
                    // stream opened is not missed.
                    read_at = Some(Instant::now());
                }
                Push::Refused | Push::Ended => {
                    tracing::debug!(task = %core.task_id(), "not listening; polling instead");
                    core.watch = None;
                    core.listen_failed = true;
                }
                Push::Lagged => read_at = Some(Instant::now()),
                Push::Snapshot(task) => {
                    if let Some(next) = core.apply(*task) {
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
                tracing::debug!(task = %core.task_id(), "tasks/get failed, retrying in {backoff:?}: {e}");
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
    Ok(())
}
