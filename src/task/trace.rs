//! The task span: one `mcp_tasks.task` span per handle's life, its fields,
//! and the events recorded inside it. See the `# Tracing` section of
//! [`Task`](crate::Task) for what a subscriber sees.
//!
//! A handle holds its span as `Option<Box<Trace>>`: `None` (one word, no
//! allocation) unless a subscriber enabled the span when the call started,
//! so that pending tasks cost the same with no subscriber installed.

use std::future::Future;
use std::pin::Pin;

use tracing::Span;
use tracing::field::Empty;

use super::outcome::Outcome;
use crate::Client;
use crate::error::Error;
use crate::protocol::{TaskId, TaskStatus};

/// Awaits `$fut` inside the task span `$span` (an `Option<Span>`). Only
/// a traced future is wrapped (and boxed): untraced, the future awaited is
/// `$fut` itself.
macro_rules! traced {
    ($span:expr, $fut:expr) => {{
        if let Some(span) = $span {
            $crate::task::trace::in_span($fut, span).await
        } else {
            $fut.await
        }
    }};
}
pub(crate) use traced;

/// `fut` inside `span`, boxed (see [`traced!`]).
pub(crate) fn in_span<'a, F>(
    fut: F,
    span: Span,
) -> Pin<Box<dyn Future<Output = F::Output> + Send + 'a>>
where
    F: Future + Send + 'a,
{
    Box::pin(tracing::Instrument::instrument(fut, span))
}

/// How a handle's life ended, as recorded in the span's `outcome` field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum End {
    /// The task ended, observed: `completed`, `failed`, `cancelled`, `expired`.
    Outcome(&'static str),
    /// The handle was dropped before the task ended.
    Dropped,
    /// The handle was turned into a `TaskRef` with `detach()`.
    Detached,
    /// `cancel()` sent `tasks/cancel` and let go of the handle.
    CancelRequested,
    /// The call or the resume failed before there was a handle.
    Error,
}

impl End {
    fn name(self) -> &'static str {
        match self {
            End::Outcome(name) => name,
            End::Dropped => "dropped",
            End::Detached => "detached",
            End::CancelRequested => "cancel_requested",
            End::Error => "error",
        }
    }

    pub(crate) fn of(outcome: &Outcome) -> End {
        End::Outcome(match outcome {
            Outcome::Completed(_) => "completed",
            Outcome::Failed(_) => "failed",
            Outcome::Cancelled => "cancelled",
            Outcome::Expired => "expired",
        })
    }
}

/// A live task span and the counts recorded in it when it ends.
pub(crate) struct Trace {
    span: Span,
    reads: u32,
    input_rounds: u32,
}

/// The era field: `modern` for 2026-07-28, `initialize` for the
/// initialize-era revisions.
fn era(client: &Client) -> &'static str {
    client.wire().era().name()
}

impl Trace {
    /// The span of a `tools/call` about to be sent, when a subscriber wants
    /// it. The task id is recorded once the server created the task.
    pub(crate) fn call(client: &Client, tool: &str) -> Option<Box<Trace>> {
        Trace::open(client, Some(tool), None)
    }

    /// The span of a task re-attached to by `resume`. The tool is unknown
    /// (a `TaskRef` does not carry it).
    pub(crate) fn resume(client: &Client, id: &TaskId) -> Option<Box<Trace>> {
        Trace::open(client, None, Some(id))
    }

    /// The span with `tool` or the task's `id` (redacted), whichever is
    /// known when it opens, and every other field empty but the era;
    /// `resumed` when it opens with the id.
    fn open(client: &Client, tool: Option<&str>, id: Option<&TaskId>) -> Option<Box<Trace>> {
        let span = tracing::info_span!(
            "mcp_tasks.task",
            tool,
            task_id = id.map(|id| tracing::field::display(id.redacted())),
            protocol_version = Empty,
            era = era(client),
            resumed = id.is_some(),
            outcome = Empty,
            reads = Empty,
            input_rounds = Empty,
            error = Empty,
        );
        (!span.is_disabled()).then(|| {
            Box::new(Trace {
                span,
                reads: 0,
                input_rounds: 0,
            })
        })
    }

    pub(crate) fn span(&self) -> &Span {
        &self.span
    }

    /// The call became a task (or was answered at once, `id` `None`): the
    /// id, the version the call went out under, and the first status.
    pub(crate) fn created(&self, client: &Client, id: Option<&TaskId>, status: TaskStatus) {
        let version = client.protocol_version();
        self.span.record("protocol_version", &*version);
        match id {
            Some(id) => {
                self.span.record("task_id", id.redacted().as_str());
                tracing::info!(parent: &self.span, status = status.as_str(), "task created");
            }
            None => tracing::info!(parent: &self.span, "answered without a task"),
        }
    }

    /// A resumed task's first read was applied. `DEBUG`: a tracker
    /// resumes a task on every read, and a read that changes nothing is
    /// no news for an operator.
    pub(crate) fn resumed(&self, client: &Client, status: TaskStatus) {
        let version = client.protocol_version();
        self.span.record("protocol_version", &*version);
        tracing::debug!(parent: &self.span, status = status.as_str(), "task resumed");
    }

    /// One `tasks/get` is about to be sent.
    pub(crate) fn read(&mut self) {
        self.reads = self.reads.saturating_add(1);
    }

    /// The observed status changed.
    pub(crate) fn moved(&self, from: TaskStatus, to: TaskStatus, open: usize) {
        if to == TaskStatus::InputRequired {
            tracing::info!(
                parent: &self.span,
                from = from.as_str(),
                to = to.as_str(),
                requests = open,
                "status changed"
            );
        } else {
            tracing::info!(
                parent: &self.span,
                from = from.as_str(),
                to = to.as_str(),
                "status changed"
            );
        }
    }

    /// The server acknowledged answers to `keys` input requests: one round.
    pub(crate) fn answered(&mut self, keys: usize) {
        self.input_rounds = self.input_rounds.saturating_add(1);
        tracing::info!(
            parent: &self.span,
            round = self.input_rounds,
            answers = keys,
            "input answered"
        );
    }

    /// `tasks/cancel` was acknowledged.
    pub(crate) fn cancel_sent(&self) {
        tracing::info!(parent: &self.span, "cancel sent");
    }

    /// Records how the handle's life ended and the counts; the span closes
    /// once its last clone (a cancel still being sent) is gone.
    pub(crate) fn end(self, end: End) -> Span {
        self.span.record("outcome", end.name());
        self.span.record("reads", self.reads);
        self.span.record("input_rounds", self.input_rounds);
        self.span
    }

    /// The call or resume failed before a handle existed.
    pub(crate) fn failed(self, e: &Error) {
        self.span.record("error", e.kind_name());
        drop(self.end(End::Error));
    }
}
