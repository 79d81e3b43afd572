//! `Snapshot`: what the client last saw of a task.

use crate::protocol::{CreateTaskResult, DetailedTask, TaskPayload, TaskStatus};

/// What the client last saw of a task, without its payload.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Snapshot {
    /// The status.
    pub status: TaskStatus,
    /// Progress or explanation for people.
    pub status_message: Option<String>,
    /// Creation time, as the server sent it.
    pub created_at: Option<String>,
    /// Time of the last change, as the server sent it.
    pub last_updated_at: Option<String>,
    /// The server's lifetime for the task in milliseconds (`None`: unlimited).
    pub ttl_ms: Option<u64>,
    /// The server's suggested polling interval in milliseconds.
    pub poll_interval_ms: Option<u64>,
    /// The status as sent, when the client does not know it (`status` is
    /// then [`TaskStatus::Unknown`]); `None` otherwise.
    pub unknown_status: Option<String>,
}

impl Snapshot {
    /// A snapshot that knows only a status.
    pub(crate) fn of_status(status: TaskStatus) -> Self {
        Snapshot {
            status,
            status_message: None,
            created_at: None,
            last_updated_at: None,
            ttl_ms: None,
            poll_interval_ms: None,
            unknown_status: None,
        }
    }

    pub(crate) fn from_created(t: &CreateTaskResult) -> Self {
        Snapshot {
            status: t.status,
            status_message: t.status_message.clone(),
            created_at: t.created_at.clone(),
            last_updated_at: t.last_updated_at.clone(),
            ttl_ms: t.ttl_ms,
            poll_interval_ms: t.poll_interval_ms,
            unknown_status: None,
        }
    }

    /// Splits a detailed snapshot into what the handle keeps and its
    /// payload. `unknown_status` is left for the caller, who owns the
    /// payload's name.
    pub(crate) fn split(t: DetailedTask) -> (Self, TaskPayload) {
        let DetailedTask {
            task_id: _,
            payload,
            status_message,
            created_at,
            last_updated_at,
            ttl_ms,
            poll_interval_ms,
        } = t;
        let snapshot = Snapshot {
            status: payload.status(),
            status_message,
            created_at,
            last_updated_at,
            ttl_ms,
            poll_interval_ms,
            unknown_status: None,
        };
        (snapshot, payload)
    }
}
