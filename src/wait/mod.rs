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
//!   the latest `pollIntervalMs` (else `poll_interval`), capped at
//!   `max_poll_interval` (30 s by default) and raised to `min_poll_interval`
//!   (50 ms), re-read from every snapshot. A server's interval is a
//!   suggestion: however large (`1e12`, `u64::MAX`), reads keep coming at
//!   the cap, and a wait that starts when the last read is older than the
//!   cap reads at once. Non-integer values round up to whole milliseconds;
//!   zero, negative and non-numeric ones count as absent;
//! - an applied push counts as a read: the next read comes one interval
//!   after it;
//! - after a write the server acknowledged (`tasks/update`, `tasks/cancel`),
//!   one read comes at the floor (`min_poll_interval`) instead of a whole
//!   interval later, so an answer or a cancel shows its effect soon; the
//!   reads after that one are spaced by the interval again. A listener
//!   whose stream accepted the task relies on pushes instead;
//! - no sleep past the deadline, and none past the `with_ttl` lifetime
//!   (which cancels the task and ends with `Outcome::Expired`);
//! - a closed connection wakes every wait at once: it fails with
//!   [`Error::is_transport`](crate::Error::is_transport) and the handle.

pub(crate) mod listen;
mod poll;

pub(crate) use poll::{Goal, Observed, wait};
