//! Tasks extension types: ids, statuses, creation results and snapshots.

use std::borrow::Cow;
use std::fmt;
use std::sync::Arc;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{CallToolResult, InputRequests, RpcError, lenient};

/// A task id: the only handle on a server-side task.
///
/// Task ids may act as bearer tokens (anyone holding one may read or cancel
/// the task), so `TaskId` has no `Display`, and `Debug` shows only a short
/// prefix (`TaskId(9f4c…)`). [`TaskId::expose`] is the one way to the real
/// string: use it where the full value is needed, and store it as a secret.
///
/// Cloning is cheap (the text is shared).
///
/// There is no `to_string()`, so a redacted form can never be sent back to
/// a server by mistake:
///
/// ```compile_fail,E0599
/// let id = mcp_tasks::protocol::TaskId::new("9f4c1e0a-6f53-4b8e");
/// let text = id.to_string();
/// ```
///
/// ```
/// let id = mcp_tasks::protocol::TaskId::new("9f4c1e0a-6f53-4b8e");
/// let text = id.expose().to_owned();
/// assert_eq!(text, "9f4c1e0a-6f53-4b8e");
/// assert_eq!(format!("{id:?}"), "TaskId(#a52d1d55)");
/// ```
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TaskId(Arc<str>);

impl TaskId {
    /// Wraps a task id received from elsewhere (a database, a config file).
    pub fn new(id: impl Into<Arc<str>>) -> Self {
        TaskId(id.into())
    }

    /// The full id. Treat it as a secret: do not log it.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// A short form safe for logs: `#` and 8 hex digits of a digest of
    /// the id (`#a52d1d55`). Two tasks show different forms (unless
    /// their digests collide: about one chance in 860,000 among 100
    /// tasks), and the same task always the same one, across runs, processes and releases of this
    /// crate; it shows nothing of the id's text, so ids that share a
    /// prefix are still told apart. It is never a usable id: a server that
    /// got it back would not know the task.
    ///
    /// The digest is 32-bit FNV-1a of the id's UTF-8 bytes: no secret is
    /// recovered from it, but an id that can be guessed (a counter, a
    /// short word) can be confirmed against it, as it could be against any
    /// digest; such ids protect nothing anyway.
    pub fn redacted(&self) -> String {
        format!("#{:08x}", super::fnv::fnv1a_32(self.0.as_bytes()))
    }

    /// `text` from the server with this id, where it echoes it ("unknown
    /// task: <id>"), in its [`redacted`](TaskId::redacted) form: as is,
    /// and JSON-escaped as a JSON body quotes it. For the server's text
    /// before it goes into an error message.
    ///
    /// Ids under [`TaskId::MIN_HIDDEN`] characters are left alone:
    /// replacing them would garble the text, and such ids protect nothing.
    pub(crate) fn hidden_in<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let raw = self.expose();
        if raw.chars().count() < Self::MIN_HIDDEN {
            return Cow::Borrowed(text);
        }
        let escaped = serde_json::to_string(raw).unwrap_or_default();
        let escaped = escaped
            .strip_prefix('"')
            .and_then(|e| e.strip_suffix('"'))
            .unwrap_or(raw);
        if !text.contains(raw) && !text.contains(escaped) {
            return Cow::Borrowed(text);
        }
        // The longer form first, so that neither leaves part of the other.
        let redacted = self.redacted();
        let (long, short) = if escaped.len() > raw.len() {
            (escaped, raw)
        } else {
            (raw, escaped)
        };
        Cow::Owned(text.replace(long, &redacted).replace(short, &redacted))
    }

    /// The shortest id [`TaskId::hidden_in`] replaces.
    const MIN_HIDDEN: usize = 8;
}

impl fmt::Debug for TaskId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "TaskId({})", self.redacted())
    }
}

impl Serialize for TaskId {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for TaskId {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = String::deserialize(d)?;
        if s.is_empty() {
            return Err(D::Error::custom("a task id must not be empty"));
        }
        Ok(TaskId(s.into()))
    }
}

/// Where a task stands on the server.
///
/// A status this crate does not know (a later revision's, or a server's
/// own) decodes as [`TaskStatus::Unknown`] instead of failing: the task is
/// still there, and the client keeps reading it until a status it knows
/// arrives. The string as sent is in [`TaskPayload::Unknown`] and in the
/// handle's `Snapshot::unknown_status`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum TaskStatus {
    /// In progress.
    Working,
    /// Waiting for answers to its `inputRequests`.
    InputRequired,
    /// Finished with a result (which may be a tool error).
    Completed,
    /// Finished with a JSON-RPC error.
    Failed,
    /// Cancelled before it finished.
    Cancelled,
    /// A status this crate does not know. Not final: the task is treated as
    /// still running.
    #[serde(other)]
    Unknown,
}

impl TaskStatus {
    /// Whether the status is final (`completed`, `failed` or `cancelled`).
    pub fn is_terminal(self) -> bool {
        matches!(
            self,
            TaskStatus::Completed | TaskStatus::Failed | TaskStatus::Cancelled
        )
    }

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Working => "working",
            TaskStatus::InputRequired => "input_required",
            TaskStatus::Completed => "completed",
            TaskStatus::Failed => "failed",
            TaskStatus::Cancelled => "cancelled",
            TaskStatus::Unknown => "unknown",
        }
    }

    /// The status for a wire name; [`TaskStatus::Unknown`] for any other.
    pub fn from_wire(name: &str) -> TaskStatus {
        match name {
            "working" => TaskStatus::Working,
            "input_required" => TaskStatus::InputRequired,
            "completed" => TaskStatus::Completed,
            "failed" => TaskStatus::Failed,
            "cancelled" => TaskStatus::Cancelled,
            _ => TaskStatus::Unknown,
        }
    }
}

impl fmt::Display for TaskStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The flat result of a `tools/call` that became a task (`resultType: "task"`).
///
/// It never carries input requests, a result or an error: when its status is
/// not `working`, read the task with `tasks/get` to learn more.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub struct CreateTaskResult {
    /// The new task's id.
    pub task_id: TaskId,
    /// Its first status (usually `working`).
    pub status: TaskStatus,
    /// Progress or explanation for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_message: Option<String>,
    /// Creation time (ISO 8601, kept as sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub created_at: Option<String>,
    /// Time of the last change (ISO 8601, kept as sent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_updated_at: Option<String>,
    /// Lifetime from creation in milliseconds; `None` means unlimited.
    #[serde(default, deserialize_with = "lenient::ttl_ms")]
    pub ttl_ms: Option<u64>,
    /// Suggested spacing of `tasks/get` calls, in milliseconds.
    #[serde(
        default,
        deserialize_with = "lenient::positive_ms",
        skip_serializing_if = "Option::is_none"
    )]
    pub poll_interval_ms: Option<u64>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// What a task carries in its current status.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum TaskPayload {
    /// `working`: nothing yet.
    Working,
    /// `input_required`: every request still outstanding.
    InputRequired(InputRequests),
    /// `completed`: the tool's result.
    Completed(CallToolResult),
    /// `failed`: the JSON-RPC error the call would have returned.
    Failed(RpcError),
    /// `cancelled`.
    Cancelled,
    /// A status this crate does not know, with its name as sent. Whatever
    /// else the snapshot carried is not interpreted.
    Unknown(String),
}

impl TaskPayload {
    /// The status this payload belongs to.
    pub fn status(&self) -> TaskStatus {
        match self {
            TaskPayload::Working => TaskStatus::Working,
            TaskPayload::InputRequired(_) => TaskStatus::InputRequired,
            TaskPayload::Completed(_) => TaskStatus::Completed,
            TaskPayload::Failed(_) => TaskStatus::Failed,
            TaskPayload::Cancelled => TaskStatus::Cancelled,
            TaskPayload::Unknown(_) => TaskStatus::Unknown,
        }
    }
}

impl TaskPayload {
    /// The payload of a task that ended with `status`, from what the server
    /// sent with it (the same rule for both eras, PROTOCOL.md §5.4, §7.2).
    ///
    /// The status decides; the payload only fills it in:
    /// - `cancelled` is cancelled, whatever came with it;
    /// - `failed` is a failure: the server's JSON-RPC error when it sent
    ///   one, otherwise one made from the task's status message (see
    ///   [`failure_without_error`]);
    /// - `completed` is a completion when it carries a result. One that
    ///   carries only an error is a failure: success is never reported
    ///   without a result. One with neither is `None` (malformed).
    ///
    /// Any other status is `None`: it has not ended.
    pub(crate) fn ended(
        status: TaskStatus,
        status_message: Option<&str>,
        result: Option<CallToolResult>,
        error: Option<RpcError>,
    ) -> Option<TaskPayload> {
        match status {
            TaskStatus::Cancelled => Some(TaskPayload::Cancelled),
            TaskStatus::Failed => {
                Some(TaskPayload::Failed(error.unwrap_or_else(|| {
                    failure_without_error(status_message, result.as_ref())
                })))
            }
            TaskStatus::Completed => match (result, error) {
                (Some(result), _) => Some(TaskPayload::Completed(result)),
                (None, Some(error)) => Some(TaskPayload::Failed(error)),
                (None, None) => None,
            },
            _ => None,
        }
    }
}

/// The error of a task the server stated `failed` without a JSON-RPC
/// error, as initialize-era servers do: the Python SDK's task handlers
/// answer `tasks/result` with a bare `_meta`, others with an `isError`
/// tool result. Code `-32603`. The message is the result's text when it has
/// some (the failure in its own words), else the task's status message
/// (which may be the last progress note, but is all the server said), else
/// a fixed sentence. The tool result, when it says more than its `_meta`,
/// is the error's `data`.
fn failure_without_error(
    status_message: Option<&str>,
    result: Option<&CallToolResult>,
) -> RpcError {
    let result =
        result.filter(|r| !r.content.is_empty() || r.structured_content.is_some() || r.is_error);
    let text = result.map(CallToolResult::joined_text).unwrap_or_default();
    let message = match status_message {
        _ if !text.trim().is_empty() => text,
        Some(m) if !m.trim().is_empty() => m.to_owned(),
        _ => "the task failed (the server gave no reason)".to_owned(),
    };
    let error = RpcError::new(super::error_codes::INTERNAL_ERROR, message);
    match result.and_then(|r| serde_json::to_value(r).ok()) {
        Some(data) => error.with_data(data),
        None => error,
    }
}

/// A full snapshot of a task, as `tasks/get` and `notifications/tasks` carry it.
#[derive(Debug, Clone, PartialEq)]
pub struct DetailedTask {
    /// The task's id.
    pub task_id: TaskId,
    /// Its status and what comes with it.
    pub payload: TaskPayload,
    /// Progress or explanation for people.
    pub status_message: Option<String>,
    /// Creation time, as sent.
    pub created_at: Option<String>,
    /// Time of the last change, as sent.
    pub last_updated_at: Option<String>,
    /// Lifetime from creation in milliseconds; `None` means unlimited.
    pub ttl_ms: Option<u64>,
    /// Suggested spacing of `tasks/get` calls, in milliseconds.
    pub poll_interval_ms: Option<u64>,
}

impl DetailedTask {
    /// The task's status.
    pub fn status(&self) -> TaskStatus {
        self.payload.status()
    }
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTask {
    task_id: TaskId,
    /// Kept as sent: a status this crate does not know must not fail the
    /// snapshot (that would lose the task).
    status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_updated_at: Option<String>,
    #[serde(default, deserialize_with = "lenient::ttl_ms")]
    ttl_ms: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient::positive_ms",
        skip_serializing_if = "Option::is_none"
    )]
    poll_interval_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    input_requests: Option<InputRequests>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    result: Option<CallToolResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    error: Option<RpcError>,
}

impl<'de> Deserialize<'de> for DetailedTask {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawTask::deserialize(d)?;
        let status = TaskStatus::from_wire(&raw.status);
        let payload = match status {
            TaskStatus::Working => TaskPayload::Working,
            TaskStatus::InputRequired => {
                TaskPayload::InputRequired(raw.input_requests.unwrap_or_default())
            }
            TaskStatus::Unknown => TaskPayload::Unknown(raw.status),
            ended => {
                TaskPayload::ended(ended, raw.status_message.as_deref(), raw.result, raw.error)
                    .ok_or_else(|| D::Error::custom("a completed task must carry `result`"))?
            }
        };
        Ok(DetailedTask {
            task_id: raw.task_id,
            payload,
            status_message: raw.status_message,
            created_at: raw.created_at,
            last_updated_at: raw.last_updated_at,
            ttl_ms: raw.ttl_ms,
            poll_interval_ms: raw.poll_interval_ms,
        })
    }
}

impl Serialize for DetailedTask {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (input_requests, result, error) = match &self.payload {
            TaskPayload::InputRequired(r) => (Some(r.clone()), None, None),
            TaskPayload::Completed(r) => (None, Some(r.clone()), None),
            TaskPayload::Failed(e) => (None, None, Some(e.clone())),
            TaskPayload::Working | TaskPayload::Cancelled | TaskPayload::Unknown(_) => {
                (None, None, None)
            }
        };
        let status = match &self.payload {
            TaskPayload::Unknown(raw) => raw.clone(),
            known => known.status().as_str().to_owned(),
        };
        RawTask {
            task_id: self.task_id.clone(),
            status,
            status_message: self.status_message.clone(),
            created_at: self.created_at.clone(),
            last_updated_at: self.last_updated_at.clone(),
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_interval_ms,
            input_requests,
            result,
            error,
        }
        .serialize(s)
    }
}

/// Params of `tasks/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct GetTaskParams {
    /// The task to read.
    pub(crate) task_id: TaskId,
}

/// Params of `tasks/cancel`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CancelTaskParams {
    /// The task to cancel.
    pub(crate) task_id: TaskId,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The demo server's ids all start `task`: their redacted forms must
    /// still tell them apart, and show nothing of the id.
    #[test]
    fn ids_that_share_a_prefix_redact_apart() {
        let ids: Vec<TaskId> = (0..100)
            .map(|n| TaskId::new(format!("task-{n:04}-9f4c1e0a")))
            .collect();
        let shown: std::collections::HashSet<String> = ids.iter().map(TaskId::redacted).collect();
        assert_eq!(shown.len(), ids.len(), "{shown:?}");
        for id in &ids {
            assert!(!id.redacted().contains("task"), "{}", id.redacted());
        }
    }

    #[test]
    fn task_id_is_redacted() {
        let id = TaskId::new("9f4c1e0a-6f53-4b8e");
        assert_eq!(format!("{id:?}"), "TaskId(#a52d1d55)");
        assert_eq!(id.redacted(), "#a52d1d55");
        assert_eq!(id.expose(), "9f4c1e0a-6f53-4b8e");
        // FNV-1a's published test vectors: stable across releases.
        assert_eq!(TaskId::new("").redacted(), "#811c9dc5");
        assert_eq!(TaskId::new("a").redacted(), "#e40c292c");
        assert_eq!(TaskId::new("foobar").redacted(), "#bf9cf968");
    }

    #[test]
    fn an_echoed_id_is_hidden_as_is_and_json_escaped() {
        let raw = format!("gw:v1 \"tenant\"  café\t{}", "Zx9".repeat(100));
        let id = TaskId::new(raw.as_str());
        let escaped = serde_json::to_string(&raw).unwrap();
        for text in [
            format!("unknown task {raw}"),
            format!(
                r#"{{"error":"unknown task {}"}}"#,
                &escaped[1..escaped.len() - 1]
            ),
            format!("{raw} and again {escaped}"),
        ] {
            let shown = id.hidden_in(&text);
            assert!(!shown.contains("Zx9Zx9"), "{shown}");
            assert!(shown.contains(&id.redacted()), "{shown}");
        }
        // Text without the id is borrowed, not copied.
        assert!(matches!(id.hidden_in("no such task"), Cow::Borrowed(_)));
        // Short ids are not replaced inside words.
        let short = TaskId::new("x");
        assert_eq!(short.hidden_in("no task x here"), "no task x here");
    }

    #[test]
    fn an_opaque_id_is_redacted_to_plain_ascii() {
        // Whatever the id holds (multi-byte text, quotes, control
        // characters), the form is `#` and 8 hex digits: it cannot break
        // a log line.
        for raw in [
            "日本語の\"タスク\" handle".repeat(40),
            "é🦀 \"x\"".to_owned(),
            "a\nb\u{1b}[31m".to_owned(),
        ] {
            let shown = TaskId::new(raw.as_str()).redacted();
            assert_eq!(shown.len(), 9, "{shown}");
            assert!(shown.starts_with('#'), "{shown}");
            assert!(shown[1..].bytes().all(|b| b.is_ascii_hexdigit()), "{shown}");
        }
    }

    #[test]
    fn empty_task_id_is_rejected() {
        assert!(serde_json::from_value::<TaskId>(json!("")).is_err());
    }

    #[test]
    fn completed_without_result_is_an_error() {
        let r = serde_json::from_value::<DetailedTask>(
            json!({"taskId": "t", "status": "completed", "ttlMs": null}),
        );
        assert!(r.unwrap_err().to_string().contains("result"));
    }

    #[test]
    fn an_unknown_status_keeps_the_task_and_its_name() {
        let t: DetailedTask = serde_json::from_value(json!({
            "taskId": "t1", "status": "paused", "statusMessage": "on hold", "pollIntervalMs": 500
        }))
        .unwrap();
        assert_eq!(t.status(), TaskStatus::Unknown);
        assert_eq!(t.payload, TaskPayload::Unknown("paused".into()));
        assert_eq!(t.status_message.as_deref(), Some("on hold"));
        assert_eq!(t.poll_interval_ms, Some(500));
        assert!(!t.status().is_terminal());
        // Written back as it came.
        assert_eq!(serde_json::to_value(&t).unwrap()["status"], "paused");
        let created: CreateTaskResult =
            serde_json::from_value(json!({"taskId": "t1", "status": "paused"})).unwrap();
        assert_eq!(created.status, TaskStatus::Unknown);
        assert_eq!(created.task_id.expose(), "t1");
    }

    #[test]
    fn snapshot_round_trips() {
        let t: DetailedTask = serde_json::from_value(json!({
            "taskId": "t1", "status": "failed", "ttlMs": 5, "pollIntervalMs": 0,
            "error": {"code": -32603, "message": "boom"}
        }))
        .unwrap();
        assert_eq!(t.poll_interval_ms, None);
        let back: DetailedTask = serde_json::from_value(serde_json::to_value(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }
}
