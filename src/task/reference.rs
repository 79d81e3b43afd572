//! `TaskRef`: a serialisable, resumable reference to a task.

use std::fmt;

use serde::{Deserialize, Serialize};

use crate::protocol::TaskId;

/// Everything needed to find a task again: its id and the server it lives on.
///
/// Save it (a database, a file) to resume waiting after a restart with
/// [`TaskBuilder::resume`](crate::TaskBuilder::resume). Task ids are the
/// only handle on a task (there is no `tasks/list`), and they may act as
/// bearer tokens: store a `TaskRef` as a secret. `Debug` shows only a
/// prefix of the id.
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
}

impl TaskRef {
    /// A reference to task `task_id` on the server named `server` (see
    /// [`ClientBuilder::server_id`](crate::ClientBuilder::server_id)).
    pub fn new(task_id: TaskId, server: Option<String>) -> Self {
        TaskRef { task_id, server }
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
            .finish()
    }
}
