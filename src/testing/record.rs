//! What the test server received: [`RecordedRequest`].

use serde_json::Value;
use tokio::time::Instant;

use crate::protocol::{META_CLIENT_CAPABILITIES, RequestId, TASKS_EXTENSION};

/// One request or notification the [`TestServer`](super::TestServer)
/// received, recorded before it was answered.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    /// The JSON-RPC method.
    pub method: String,
    /// The request id; `None` for a notification.
    pub id: Option<RequestId>,
    /// The `params` member as received (`Value::Null` when absent).
    pub params: Value,
    /// When it arrived, on tokio's clock (so paused-time tests can check spacing).
    pub at: Instant,
}

impl RecordedRequest {
    /// `params.taskId`, for `tasks/get`, `tasks/update` and `tasks/cancel`.
    pub fn task_id(&self) -> Option<&str> {
        self.params.get("taskId")?.as_str()
    }

    /// Whether `params._meta` declares the Tasks extension in its client capabilities.
    pub fn declares_tasks(&self) -> bool {
        declares_tasks(&self.params)
    }

    /// Whether this is a notification (it has no id).
    pub fn is_notification(&self) -> bool {
        self.id.is_none()
    }
}

/// Whether `params._meta.clientCapabilities.extensions` holds the Tasks extension.
pub(super) fn declares_tasks(params: &Value) -> bool {
    params
        .get("_meta")
        .and_then(|m| m.get(META_CLIENT_CAPABILITIES))
        .and_then(|c| c.get("extensions"))
        .and_then(|e| e.get(TASKS_EXTENSION))
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn reads_task_id_and_declaration() {
        let r = RecordedRequest {
            method: "tasks/get".into(),
            id: Some(RequestId::Number(1)),
            params: json!({
                "taskId": "t-1",
                "_meta": {META_CLIENT_CAPABILITIES: {"extensions": {TASKS_EXTENSION: {}}}}
            }),
            at: Instant::now(),
        };
        assert_eq!(r.task_id(), Some("t-1"));
        assert!(r.declares_tasks());
        assert!(!r.is_notification());
        let r = RecordedRequest {
            params: json!({"_meta": {META_CLIENT_CAPABILITIES: {}}}),
            ..r
        };
        assert_eq!(r.task_id(), None);
        assert!(!r.declares_tasks());
    }
}
