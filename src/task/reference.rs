//! `TaskRef`: a serialisable, resumable reference to a task.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::protocol::TaskId;

/// Everything needed to find a task again: its id, the server it lives on,
/// and the protocol revision it was created under.
///
/// Save it (a database, a file) to resume waiting after a restart with
/// [`TaskBuilder::resume`](crate::TaskBuilder::resume). Task ids are the
/// only handle on a task (2026-07-28 has no `tasks/list`), and they may act
/// as bearer tokens: store a `TaskRef` as a secret. `Debug` shows only a
/// prefix of the id.
///
/// # Resuming across eras and sessions
///
/// A task lives in the protocol era it was created in: a reference taken
/// on an initialize-era (2025-11-25) server does not resume on a
/// 2026-07-28 client, nor the other way round; `resume` says so
/// ([`Error::is_builder`](crate::Error::is_builder)) instead of sending a
/// read the server cannot answer. References saved before this field
/// existed carry no revision and are not checked.
///
/// Initialize-era servers may also scope a task to the session that made
/// it: the reference server `server-everything` (TypeScript SDK 1.32)
/// answers a read from another HTTP session as an unknown task
/// ([`Error::is_task_not_found`](crate::Error::is_task_not_found)), so a
/// task there resumes within the client (and session) that started it,
/// not after a restart.
///
/// ```
/// use mcp_tasks::TaskRef;
/// use mcp_tasks::protocol::TaskId;
///
/// let r = TaskRef::new(TaskId::new("f3a9c2d1e8b7"), Some("export-server".into()));
/// let saved = serde_json::to_string(&r).unwrap();
/// let back: TaskRef = serde_json::from_str(&saved).unwrap();
/// assert_eq!(back, r);
/// assert!(!format!("{r:?}").contains("c2d1"));
/// ```
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TaskRef {
    task_id: TaskId,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    server: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    protocol_version: Option<String>,
}

impl TaskRef {
    /// A reference to task `task_id` on the server named `server` (see
    /// [`ClientBuilder::server_id`](crate::ClientBuilder::server_id)).
    pub fn new(task_id: TaskId, server: Option<String>) -> Self {
        TaskRef {
            task_id,
            server,
            protocol_version: None,
        }
    }

    /// Records the protocol revision the task was created under, which
    /// [`TaskBuilder::resume`](crate::TaskBuilder::resume) checks against
    /// the client's era.
    pub fn with_protocol_version(mut self, version: impl Into<String>) -> Self {
        self.protocol_version = Some(version.into());
        self
    }

    /// The protocol revision the task was created under, when recorded.
    pub fn protocol_version(&self) -> Option<&str> {
        self.protocol_version.as_deref()
    }

    /// The task's id.
    pub fn task_id(&self) -> &TaskId {
        &self.task_id
    }

    /// The server the task belongs to, when known.
    pub fn server(&self) -> Option<&str> {
        self.server.as_deref()
    }
}

impl fmt::Debug for TaskRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TaskRef")
            .field("task_id", &self.task_id)
            .field("server", &self.server)
            .field("protocol_version", &self.protocol_version)
            .finish()
    }
}
