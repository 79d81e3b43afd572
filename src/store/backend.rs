//! For store authors: what a [`TaskStore`] takes and returns that an
//! application never handles.
//!
//! An application opens a store ([`MemoryStore`](super::MemoryStore),
//! `SqliteStore`, `PostgresStore`), hands it to a
//! [`Tracker`](super::Tracker), and reads and answers its records through
//! the [`TaskStore`] methods that take a [`RecordId`] or a
//! [`Filter`](super::Filter). The types here are the other half of the
//! trait, the one a worker drives: a [`NewTask`] to insert or reserve, a
//! [`Claim`] of due records, the [`Fence`] every write under a lease
//! carries, a [`StepReport`] of what one read found, and the
//! [`Reservation`] a unique key gets. Nothing here is needed to use a
//! store; all of it is needed to write one.
//!
//! # Writing a store
//!
//! A store is a type that implements [`TaskStore`] over some durable
//! storage, safely shared by every worker that opens it. The trait's
//! methods say what each one does; the rules that tie them together are
//! these.
//!
//! - **Keys.** [`TaskStore::insert`] and [`TaskStore::reserve`] give each
//!   record a new [`RecordId`], never reused. A [`NewTask`] with
//!   `unique_key` set is refused when its key and scope already name a
//!   unique record ([`StoreError::duplicate`]); `reserve` answers
//!   [`Reservation::Taken`] instead, and writes nothing.
//! - **Claims and leases.** [`TaskStore::claim`] hands out records that
//!   have no live lease and are either open and due by `claim.now`, or
//!   ended and not yet delivered, oldest due first, at most
//!   `claim.limit`; each gets a lease for `claim.worker` until
//!   `claim.now + claim.lease`. Two workers claiming at once never get
//!   the same record: do the choice and the lease in one transaction (or
//!   `SELECT … FOR UPDATE SKIP LOCKED`, as `PostgresStore` does).
//! - **Fencing.** Every claim gives the record a new [`Fence`], larger
//!   than any it had before. Every method that takes a fence writes only
//!   when the record's current fence is that one, and otherwise fails with
//!   [`StoreError::stale`], changing nothing: the check and the write are
//!   one statement or one transaction, never a read followed by a write.
//! - **Writes from anywhere.** [`TaskStore::answer_by`] and
//!   [`TaskStore::request_cancel`] need no lease: any process may call
//!   them. They make the record due at once, so that the next claim
//!   carries the answer or the cancel to the server, and
//!   [`TaskStore::save`] then gives the record up at once instead of at
//!   [`StepReport::due`].
//! - **Questions and answers.** [`TaskStore::ask`] merges the keys a read
//!   showed into the record's questions (a new key opens a question, a
//!   missing one closes it); the first answer stored for an open question
//!   wins, an answer that does not fit its question is refused
//!   ([`StoreError::refused`] with a [`Refusal`](super::Refusal)), and
//!   the keys in [`StepReport::taken`] and [`StepReport::offered`] mark
//!   answers sent and questions told to the application.
//! - **Endings.** [`TaskStore::finish`] keeps the lease, so that the
//!   worker that saw the end delivers it; [`TaskStore::acknowledge`] marks
//!   it delivered, after which the record is never claimed again, and
//!   only [`TaskStore::prune`] and [`TaskStore::forget`] remove it.
//! - **History.** The record's creation, a change of status or status
//!   message, a new question, an answer stored or taken, a cancel asked
//!   for and an ending each add an [`Event`](super::Event) to the
//!   record's [`History`](super::History) in the same write as the
//!   change, at most [`MAX_HISTORY`](super::MAX_HISTORY) kept.
//! - **Errors.** Report what went wrong with the [`StoreError`]
//!   constructors ([`StoreError::not_found`], [`StoreError::stale`],
//!   [`StoreError::unavailable`] when the storage cannot be reached, …), so
//!   that the tracker tells a lost lease from a lost connection. A record
//!   that cannot be read comes back as an error in its place in
//!   [`TaskStore::claim`] and [`TaskStore::list`]
//!   ([`StoreError::corrupt`]), never skipped in silence.
//!
//! The crate's own stores are checked by one set of tests; with the
//! `test-util` feature, `mcp_tasks::store::contract(&store).await` runs
//! them against yours (on an empty store; it panics on the first rule
//! broken). It is left out of these docs because its checks grow from
//! release to release.
//!
//! A store that wraps another (to count calls, add a cache, or fail on
//! purpose in a test) implements the trait by forwarding each method,
//! the fences included.

use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::{Ending, RecordId, Schedule};
#[cfg(doc)]
use super::{StoreError, TaskStore};
use crate::protocol::TaskStatus;
use crate::task::TaskRef;

/// A fencing token: grows on every claim of a record, so a write that
/// carries an older one comes from a worker that no longer holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Fence(pub i64);

/// A task to record: what [`TaskStore::insert`] takes.
#[derive(Debug, Clone)]
pub struct NewTask {
    /// How to find the task again.
    pub reference: TaskRef,
    /// The tool that was called.
    pub tool: String,
    /// The caller's own key for the task (an order number, a job id), if any.
    pub key: Option<String>,
    /// Whether `key` names one task in its scope: an insert of a second
    /// record with the same key and scope, both unique, is refused
    /// ([`StoreError::is_duplicate`]).
    pub unique_key: bool,
    /// Whose task it is (a tenant, a user, an application): listings filter by it.
    pub scope: String,
    /// The status the server last stated.
    pub status: TaskStatus,
    /// The status message the server last stated.
    pub status_message: Option<String>,
    /// The server's suggested interval between reads, in milliseconds.
    pub poll_interval_ms: Option<u64>,
    /// When to read the task first.
    pub due: SystemTime,
    /// How the task already ended, for a task recorded after its end.
    pub ending: Option<Ending>,
    /// The spacing of its reads and its lifetime, as the task's builder
    /// set them.
    pub schedule: Schedule,
}

impl NewTask {
    /// The status to record: the one its ending implies, for a task
    /// recorded after its end, else the one the server stated.
    pub(crate) fn recorded_status(&self) -> TaskStatus {
        self.ending.as_ref().map_or(self.status, Ending::status)
    }
}

/// A claim of due records: what [`TaskStore::claim`] takes.
#[derive(Debug, Clone)]
pub struct Claim<'a> {
    /// The worker claiming.
    pub worker: &'a str,
    /// At most this many records.
    pub limit: usize,
    /// The clock: records due at or before it, with no live lease.
    pub now: SystemTime,
    /// How long the lease lasts from `now`.
    pub lease: Duration,
    /// Claim this record alone, due or not (a task taken back as a handle).
    pub record: Option<RecordId>,
}

/// What one step of a task found, written back by [`TaskStore::save`]
/// (and by [`TaskStore::start`] for a reserved record), which also gives
/// the record up until `due`.
///
/// Named apart from [`protocol::Progress`](crate::protocol::Progress), a
/// server's progress notification.
#[derive(Debug, Clone, PartialEq)]
pub struct StepReport {
    /// The status the server stated.
    pub status: TaskStatus,
    /// The status message the server stated.
    pub status_message: Option<String>,
    /// The server's suggested interval between reads, in milliseconds.
    pub poll_interval_ms: Option<u64>,
    /// Reads that failed in a row, after this step.
    pub failed_reads: u32,
    /// When the task is next due.
    pub due: SystemTime,
    /// Answers the server acknowledged in this step.
    pub taken: Vec<String>,
    /// Questions the application acknowledged in this step
    /// ([`TrackerBuilder::on_question`](super::TrackerBuilder::on_question)).
    pub offered: Vec<String>,
}

/// What [`TaskStore::reserve`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reservation {
    /// A new record, held by the caller under this fence until the call
    /// is answered ([`TaskStore::start`]).
    Reserved {
        /// The new record.
        id: RecordId,
        /// Its lease's fencing token.
        fence: Fence,
    },
    /// The key already names a record in its scope: nothing was written.
    Taken(RecordId),
}
