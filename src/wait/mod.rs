//! Waiting for a task: the poll schedule, retries, deadlines.
//!
//! Two clocks bound a wait. The *deadline* (`timeout` on the builder, 60 s
//! by default) bounds the whole wait; reaching it hands the task back
//! ([`Error::is_deadline`](crate::Error::is_deadline)). The *request
//! timeout* bounds each `tasks/get`; a read that times out or hits a
//! transport error is retried with backoff inside the deadline, since reads
//! are idempotent. Writes (`tasks/update`, `tasks/cancel`) and `tools/call`
//! are never retried blindly.
//!
//! The schedule:
//! - no sleep before the first read when the handle's snapshot is not fresh
//!   (a creation result that is not `working`, a resume, a failed read);
//! - after a read, the next one comes one interval later, where interval =
//!   max(latest `pollIntervalMs`, else `poll_interval`; `min_poll_interval`),
//!   re-read from every snapshot;
//! - no sleep past the deadline, and none past the `with_ttl` lifetime
//!   (which cancels the task and ends with `Outcome::Expired`).

pub(crate) mod listen;
mod poll;

pub(crate) use poll::{Goal, Observed, wait};
