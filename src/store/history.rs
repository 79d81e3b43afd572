//! A record's history: what happened to a tracked task, newest last, kept
//! in its record so that a person can read it next to the task.
//!
//! Each store writes an entry in the same statement as the change it
//! records, where the database allows (a save that changes the status, a
//! claim that takes a record over, an ending, a delivery, a cancel asked
//! for); the changes that read the record first (questions and answers)
//! write theirs with the rest. A write that changes nothing (a save with
//! the status and message the record already has) appends nothing.
//!
//! The history is bounded: [`MAX_HISTORY`] entries, the newest kept. The
//! entries that fell off are counted ([`History::dropped`]), so that a
//! reader knows the history is cut.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::protocol::TaskStatus;

/// The most entries a record's history keeps; past it, the oldest go
/// (and are counted in [`History::dropped`]).
///
/// Thirty-two holds the whole life of a common task (created, a few
/// statuses, a question asked, answered and taken, the ending, its
/// delivery: about ten entries) with room for a long run of status
/// messages, while keeping a record's row small: every claim and save
/// rewrites the row, and an entry holds at most [`MAX_HISTORY_TEXT`]
/// characters of server text, so the history stays under about 10 KB
/// even when a server sends the longest messages, and around 3 KB with
/// common ones.
pub const MAX_HISTORY: usize = 32;

/// The most characters of server text (a status message, a question's
/// key) an entry keeps; the record itself keeps the whole text.
pub const MAX_HISTORY_TEXT: usize = 200;

/// A record's history: its newest entries, oldest first, and how many
/// older ones were dropped to keep it within [`MAX_HISTORY`].
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct History {
    /// The entries kept, oldest first.
    pub entries: Vec<HistoryEntry>,
    /// How many older entries were dropped: when it is not zero, the
    /// history does not go back to the record's creation.
    pub dropped: u64,
}

impl History {
    /// Whether entries were dropped: the history is cut at its start.
    pub fn is_cut(&self) -> bool {
        self.dropped > 0
    }

    /// Appends `entries`, dropping (and counting) the oldest past
    /// [`MAX_HISTORY`].
    pub(crate) fn extend(&mut self, entries: impl IntoIterator<Item = HistoryEntry>) {
        self.entries.extend(entries);
        if self.entries.len() > MAX_HISTORY {
            let excess = self.entries.len() - MAX_HISTORY;
            self.entries.drain(..excess);
            self.dropped += excess as u64;
        }
    }

    /// Appends one entry.
    pub(crate) fn push(&mut self, at: SystemTime, event: Event) {
        self.extend([HistoryEntry { at, event }]);
    }
}

/// One thing that happened to a tracked task.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistoryEntry {
    /// When, on the clock of the worker or process that made the change
    /// (the database's, for a Postgres store on its own clock).
    #[serde(with = "super::questions::millis")]
    pub at: SystemTime,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

/// What happened to a tracked task, in its [`History`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum Event {
    /// The record was written: the task was started, recorded after its
    /// start, or its unique key reserved.
    Created {
        /// The status it was recorded with.
        status: TaskStatus,
        /// The status message it was recorded with (at most
        /// [`MAX_HISTORY_TEXT`] characters).
        #[serde(default)]
        message: Option<String>,
    },
    /// A read found another status or status message.
    Status {
        /// The new status.
        status: TaskStatus,
        /// The new status message (at most [`MAX_HISTORY_TEXT`]
        /// characters).
        #[serde(default)]
        message: Option<String>,
    },
    /// A read found a question not seen before.
    Asked {
        /// The question's key (at most [`MAX_HISTORY_TEXT`] characters).
        key: String,
    },
    /// An answer to a question was stored.
    Answered {
        /// The question's key (at most [`MAX_HISTORY_TEXT`] characters).
        key: String,
        /// Who answered.
        by: Answerer,
    },
    /// The server acknowledged the answer to a question.
    Taken {
        /// The question's key (at most [`MAX_HISTORY_TEXT`] characters).
        key: String,
    },
    /// Someone asked for the task to be cancelled.
    CancelRequested,
    /// The task ended.
    Ended {
        /// How, by [`Ending::name`](super::Ending::name): `completed`,
        /// `failed`, `cancelled`, `expired`, `unreachable` or
        /// `start_unknown`.
        ending: String,
    },
    /// The application acknowledged the ending.
    Delivered,
    /// A worker claimed the record after the last lease ran out without
    /// being given back (its worker stopped, crashed or paused). The two
    /// names are the same when a worker paused past its own lease; a
    /// worker restarted under its name gives its leases back first
    /// ([`TaskStore::release_worker`](super::TaskStore::release_worker)),
    /// so its claims are no takeover.
    TakenOver {
        /// The worker whose lease ran out.
        from: String,
        /// The worker that claimed the record.
        to: String,
    },
    /// An event this version of the crate does not know (written by a
    /// newer one).
    #[serde(other)]
    Other,
}

impl Event {
    /// A short name: `created`, `status`, `asked`, `answered`, `taken`,
    /// `cancel_requested`, `ended`, `delivered`, `taken_over` or `other`.
    pub fn name(&self) -> &'static str {
        match self {
            Event::Created { .. } => "created",
            Event::Status { .. } => "status",
            Event::Asked { .. } => "asked",
            Event::Answered { .. } => "answered",
            Event::Taken { .. } => "taken",
            Event::CancelRequested => "cancel_requested",
            Event::Ended { .. } => "ended",
            Event::Delivered => "delivered",
            Event::TakenOver { .. } => "taken_over",
            Event::Other => "other",
        }
    }

    /// A status change, its message cut to [`MAX_HISTORY_TEXT`].
    pub(crate) fn status(status: TaskStatus, message: Option<&str>) -> Event {
        Event::Status {
            status,
            message: message.map(cut),
        }
    }
}

/// Who answered a question ([`TaskStore::answer_by`](super::TaskStore::answer_by)).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum Answerer {
    /// An input handler of the worker that held the task
    /// ([`TaskStore::record_answer`](super::TaskStore::record_answer)).
    Handler,
    /// A person, through the task inbox's page.
    Page,
    /// A person, through the command line (`mcp-tasks answer`).
    CommandLine,
    /// The application, through its own code
    /// ([`TaskStore::answer`](super::TaskStore::answer),
    /// [`Tracker::answer`](super::Tracker::answer)).
    Application,
    /// Someone this version of the crate does not know.
    #[serde(other)]
    Other,
}

impl Answerer {
    /// A short name: `handler`, `page`, `command_line`, `application` or
    /// `other`.
    pub fn name(self) -> &'static str {
        match self {
            Answerer::Handler => "handler",
            Answerer::Page => "page",
            Answerer::CommandLine => "command_line",
            Answerer::Application => "application",
            Answerer::Other => "other",
        }
    }
}

/// `text`, at most [`MAX_HISTORY_TEXT`] characters of it.
pub(crate) fn cut(text: &str) -> String {
    match text.char_indices().nth(MAX_HISTORY_TEXT) {
        Some((end, _)) => text[..end].to_owned(),
        None => text.to_owned(),
    }
}

/// The entries a new record starts with.
pub(crate) fn created(
    status: TaskStatus,
    message: Option<&str>,
    ending: Option<&super::Ending>,
    now: SystemTime,
) -> Vec<HistoryEntry> {
    let mut entries = vec![HistoryEntry {
        at: now,
        event: Event::Created {
            status,
            message: message.map(cut),
        },
    }];
    if let Some(ending) = ending {
        entries.push(HistoryEntry {
            at: now,
            event: Event::Ended {
                ending: ending.name().to_owned(),
            },
        });
    }
    entries
}

/// Entries as the JSON array the database stores keep.
#[cfg_attr(not(any(feature = "sqlite", feature = "postgres")), allow(dead_code))]
pub(crate) fn entries_json(entries: &[HistoryEntry]) -> String {
    serde_json::to_string(entries).expect("history entries serialize")
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000 + s)
    }

    #[test]
    fn the_newest_are_kept_and_the_dropped_counted() {
        let mut h = History::default();
        for i in 0..(MAX_HISTORY as u64 + 5) {
            h.push(at(i), Event::Asked { key: i.to_string() });
        }
        assert_eq!(h.entries.len(), MAX_HISTORY);
        assert_eq!(h.dropped, 5);
        assert!(h.is_cut());
        assert_eq!(h.entries[0].event, Event::Asked { key: "5".into() });
        assert_eq!(h.entries.last().unwrap().at, at(MAX_HISTORY as u64 + 4));
    }

    #[test]
    fn entries_round_trip_and_unknown_ones_are_kept_as_other() {
        let entries = vec![
            HistoryEntry {
                at: at(1),
                event: Event::Created {
                    status: TaskStatus::Working,
                    message: None,
                },
            },
            HistoryEntry {
                at: at(2),
                event: Event::Answered {
                    key: "q".into(),
                    by: Answerer::Page,
                },
            },
            HistoryEntry {
                at: at(3),
                event: Event::TakenOver {
                    from: "a".into(),
                    to: "b".into(),
                },
            },
        ];
        let back: Vec<HistoryEntry> = serde_json::from_str(&entries_json(&entries)).unwrap();
        assert_eq!(back, entries);
        let newer: Vec<HistoryEntry> =
            serde_json::from_str(r#"[{"at": 5, "event": "paused", "why": "x"}]"#).unwrap();
        assert_eq!(newer[0].event, Event::Other);
    }

    #[test]
    fn server_text_is_cut() {
        let long = "é".repeat(MAX_HISTORY_TEXT * 3);
        let Event::Status { message, .. } = Event::status(TaskStatus::Working, Some(&long)) else {
            unreachable!()
        };
        assert_eq!(message.unwrap().chars().count(), MAX_HISTORY_TEXT);
    }
}
