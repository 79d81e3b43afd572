//! What clients asked about each task: [`TaskCounts`] and [`Counters`].
//!
//! The counts are kept per task the server created, a few dozen bytes
//! each (more only for a task whose questions were answered), so a server
//! with thousands of tasks keeps them all.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

/// What clients asked about one task, as counted by the
/// [`TestServer`](super::TestServer) when each request arrived (answered
/// or refused alike).
///
/// Serialized (with serde) as
/// `{"reads": 3, "overlapping_reads": 0, "answers": {"answer": 1}, "cancels": 0}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct TaskCounts {
    /// `tasks/get` requests.
    pub reads: u64,
    /// Reads that arrived while another read of the same task was still
    /// being answered: two clients polling the same task at once. A read
    /// is being answered from its arrival until its reply is sent, which
    /// [`TestServer::read_delay`](super::TestServer::read_delay) stretches.
    pub overlapping_reads: u64,
    /// `tasks/update` requests, per input key they carried an answer for
    /// (answers to a key already answered, or never asked, included).
    pub answers: BTreeMap<String, u64>,
    /// `tasks/cancel` requests.
    pub cancels: u64,
}

/// The [`TaskCounts`] of every task a [`TestServer`](super::TestServer)
/// created, and their totals: see
/// [`TestServer::counters`](super::TestServer::counters).
///
/// Serialized (with serde) as
/// `{"tasks": {"<task id>": {…}, …}, "totals": {…}}`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Counters {
    /// The counts of each task created so far (expired ones included), by
    /// task id.
    pub tasks: BTreeMap<String, TaskCounts>,
    /// The sums over every task.
    pub totals: Totals,
}

/// The sums of the [`Counters`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[non_exhaustive]
pub struct Totals {
    /// Tasks created.
    pub tasks: u64,
    /// `tasks/get` requests about tasks this server created.
    pub reads: u64,
    /// Overlapping reads (see [`TaskCounts::overlapping_reads`]).
    pub overlapping_reads: u64,
    /// Answers, all keys together (see [`TaskCounts::answers`]).
    pub answers: u64,
    /// `tasks/cancel` requests about tasks this server created.
    pub cancels: u64,
    /// `tasks/get`, `tasks/update` and `tasks/cancel` requests about a
    /// task this server never created (one a server before a restart made,
    /// say), or without a task id.
    pub unknown_task_requests: u64,
}

/// The counts of every task, kept with the server's state.
#[derive(Debug, Default)]
pub(super) struct Tally {
    tasks: HashMap<String, Entry>,
    unknown: u64,
}

#[derive(Debug, Default)]
struct Entry {
    counts: TaskCounts,
    /// Reads of the task being answered now.
    reading: u32,
}

/// What a `tasks/*` request asks of its task.
pub(super) enum Ask<'a> {
    /// `tasks/get`.
    Read,
    /// `tasks/update`, with the keys its `inputResponses` answers.
    Answer(Vec<&'a str>),
    /// `tasks/cancel`.
    Cancel,
}

impl Tally {
    /// Starts counting for a new task.
    pub(super) fn created(&mut self, id: &str) {
        self.tasks.insert(id.to_owned(), Entry::default());
    }

    /// Counts one request about `task` (`None`: it named none). Returns
    /// whether it is a read of a task of this server, now being answered.
    pub(super) fn count(&mut self, task: Option<&str>, ask: Ask<'_>) -> bool {
        let Some(entry) = task.and_then(|t| self.tasks.get_mut(t)) else {
            self.unknown += 1;
            return false;
        };
        let counts = &mut entry.counts;
        match ask {
            Ask::Read => {
                counts.reads += 1;
                if entry.reading > 0 {
                    counts.overlapping_reads += 1;
                }
                entry.reading += 1;
                return true;
            }
            Ask::Answer(keys) => {
                for key in keys {
                    *counts.answers.entry(key.to_owned()).or_default() += 1;
                }
            }
            Ask::Cancel => counts.cancels += 1,
        }
        false
    }

    /// A read of `task` was answered (or given up).
    pub(super) fn read_done(&mut self, task: &str) {
        if let Some(entry) = self.tasks.get_mut(task) {
            entry.reading = entry.reading.saturating_sub(1);
        }
    }

    /// The counts of one task.
    pub(super) fn of(&self, task: &str) -> Option<TaskCounts> {
        self.tasks.get(task).map(|e| e.counts.clone())
    }

    /// Every task's counts and their totals.
    pub(super) fn counters(&self) -> Counters {
        let mut totals = Totals {
            tasks: self.tasks.len() as u64,
            unknown_task_requests: self.unknown,
            ..Totals::default()
        };
        let mut tasks = BTreeMap::new();
        for (id, entry) in &self.tasks {
            let c = &entry.counts;
            totals.reads += c.reads;
            totals.overlapping_reads += c.overlapping_reads;
            totals.answers += c.answers.values().sum::<u64>();
            totals.cancels += c.cancels;
            tasks.insert(id.clone(), c.clone());
        }
        Counters { tasks, totals }
    }
}
