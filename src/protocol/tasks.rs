//! Tasks extension types: ids, statuses, what is said of a task in either
//! era (`TaskInfo`), creation results and snapshots.

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
/// handle's snapshot ([`TaskInfo::unknown_status`]).
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

/// What a server says of a task, whatever its status: the status and the
/// facts that come with every task in both eras (a 2026-07-28 creation
/// result or snapshot, a 2025-11-25 `Task`). A handle's
/// [`snapshot`](crate::Task::snapshot) is the last one it saw.
///
/// It carries no payload: a snapshot's input requests, result or error
/// are in [`DetailedTask::payload`](super::DetailedTask::payload).
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct TaskInfo {
    /// The status.
    pub status: TaskStatus,
    /// Progress or explanation for people.
    pub status_message: Option<String>,
    /// Creation time, as the server sent it (ISO 8601).
    pub created_at: Option<String>,
    /// Time of the last change, as the server sent it (ISO 8601).
    pub last_updated_at: Option<String>,
    /// The server's lifetime for the task in milliseconds, from its
    /// creation (`None`: unlimited).
    pub ttl_ms: Option<u64>,
    /// The server's suggested spacing of reads, in milliseconds.
    pub poll_interval_ms: Option<u64>,
    /// The status as sent, when the client does not know it (`status` is
    /// then [`TaskStatus::Unknown`]); `None` otherwise.
    pub unknown_status: Option<String>,
}

impl TaskInfo {
    /// What is known of a task when only its status is; set the other
    /// fields on the value.
    pub fn new(status: TaskStatus) -> Self {
        TaskInfo {
            status,
            status_message: None,
            created_at: None,
            last_updated_at: None,
            ttl_ms: None,
            poll_interval_ms: None,
            unknown_status: None,
        }
    }

    /// The status as the wire names it (a status the client does not
    /// know, as it was sent).
    pub(crate) fn wire_status(&self) -> &str {
        match &self.unknown_status {
            Some(raw) => raw,
            None => self.status.as_str(),
        }
    }
}

/// A task as 2026-07-28 writes it, every field a creation result or a
/// snapshot may carry (`ttlMs`, `pollIntervalMs`), with the status kept as
/// sent, so that one the client does not know is neither an error nor
/// lost. A reply is read into it once, then split into the id, a
/// [`TaskInfo`] and what the caller makes of the rest (nothing is copied).
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct WireTask {
    pub(crate) task_id: TaskId,
    pub(crate) status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) status_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) last_updated_at: Option<String>,
    #[serde(default, deserialize_with = "lenient::ttl_ms")]
    pub(crate) ttl_ms: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient::positive_ms",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) poll_interval_ms: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input_requests: Option<InputRequests>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) result: Option<CallToolResult>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) error: Option<RpcError>,
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub(crate) meta: Option<Map<String, Value>>,
    /// `resultType`, as sent: read with the rest, so that a `tasks/get`
    /// reply is parsed once (see `result::decode_task_snapshot`).
    #[serde(default, skip_serializing)]
    pub(crate) result_type: Option<String>,
}

/// What a [`WireTask`] carries beyond its [`TaskInfo`].
pub(crate) struct WireRest {
    pub(crate) input_requests: Option<InputRequests>,
    pub(crate) result: Option<CallToolResult>,
    pub(crate) error: Option<RpcError>,
    pub(crate) meta: Option<Map<String, Value>>,
}

impl WireTask {
    /// The id, the [`TaskInfo`] and the rest, moved out.
    pub(crate) fn split(self) -> (TaskId, TaskInfo, WireRest) {
        let status = TaskStatus::from_wire(&self.status);
        let info = TaskInfo {
            status,
            unknown_status: (status == TaskStatus::Unknown).then_some(self.status),
            status_message: self.status_message,
            created_at: self.created_at,
            last_updated_at: self.last_updated_at,
            ttl_ms: self.ttl_ms,
            poll_interval_ms: self.poll_interval_ms,
        };
        let rest = WireRest {
            input_requests: self.input_requests,
            result: self.result,
            error: self.error,
            meta: self.meta,
        };
        (self.task_id, info, rest)
    }

    /// Task `id` as the wire writes it, with `rest`.
    pub(crate) fn of(id: &TaskId, info: &TaskInfo, rest: WireRest) -> Self {
        WireTask {
            task_id: id.clone(),
            status: info.wire_status().to_owned(),
            status_message: info.status_message.clone(),
            created_at: info.created_at.clone(),
            last_updated_at: info.last_updated_at.clone(),
            ttl_ms: info.ttl_ms,
            poll_interval_ms: info.poll_interval_ms,
            input_requests: rest.input_requests,
            result: rest.result,
            error: rest.error,
            meta: rest.meta,
            result_type: None,
        }
    }
}

impl WireRest {
    /// Nothing beyond the info.
    pub(crate) fn none() -> Self {
        WireRest {
            input_requests: None,
            result: None,
            error: None,
            meta: None,
        }
    }
}

/// The flat result of a `tools/call` that became a task (`resultType: "task"`).
///
/// It never carries input requests, a result or an error: when its status is
/// not `working`, read the task with `tasks/get` to learn more.
#[derive(Debug, Clone, PartialEq)]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub struct CreateTaskResult {
    /// The new task's id.
    pub task_id: TaskId,
    /// Its first status (usually `working`) and what comes with it.
    pub info: TaskInfo,
    /// Result metadata.
    pub meta: Option<Map<String, Value>>,
}

impl<'de> Deserialize<'de> for CreateTaskResult {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let (task_id, info, rest) = WireTask::deserialize(d)?.split();
        Ok(CreateTaskResult {
            task_id,
            info,
            meta: rest.meta,
        })
    }
}

impl Serialize for CreateTaskResult {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let rest = WireRest {
            meta: self.meta.clone(),
            ..WireRest::none()
        };
        WireTask::of(&self.task_id, &self.info, rest).serialize(s)
    }
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
#[non_exhaustive]
pub struct DetailedTask {
    /// The task's id.
    pub task_id: TaskId,
    /// Its status and what comes with every status (`info.status` is the
    /// payload's).
    pub info: TaskInfo,
    /// What the status carries: input requests, a result, an error.
    pub payload: TaskPayload,
}

impl DetailedTask {
    /// The task's status.
    pub fn status(&self) -> TaskStatus {
        self.payload.status()
    }

    /// A snapshot of task `task_id` from what is said of it and its
    /// payload; the status (and an unknown status's name) is the
    /// payload's, whatever `info` says.
    pub fn new(task_id: TaskId, mut info: TaskInfo, payload: TaskPayload) -> Self {
        info.status = payload.status();
        match &payload {
            TaskPayload::Unknown(raw) => info.unknown_status = Some(raw.clone()),
            _ => info.unknown_status = None,
        }
        DetailedTask {
            task_id,
            info,
            payload,
        }
    }
}

impl DetailedTask {
    /// The snapshot a task's wire shape describes; the error says what
    /// does not fit.
    pub(crate) fn from_wire(wire: WireTask) -> Result<Self, &'static str> {
        let (task_id, info, rest) = wire.split();
        let payload = match (info.status, &info.unknown_status) {
            (TaskStatus::Working, _) => TaskPayload::Working,
            (TaskStatus::InputRequired, _) => {
                TaskPayload::InputRequired(rest.input_requests.unwrap_or_default())
            }
            (TaskStatus::Unknown, raw) => TaskPayload::Unknown(raw.clone().unwrap_or_default()),
            (ended, _) => TaskPayload::ended(
                ended,
                info.status_message.as_deref(),
                rest.result,
                rest.error,
            )
            .ok_or("a completed task must carry `result`")?,
        };
        Ok(DetailedTask {
            task_id,
            info,
            payload,
        })
    }
}

impl<'de> Deserialize<'de> for DetailedTask {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        DetailedTask::from_wire(WireTask::deserialize(d)?).map_err(D::Error::custom)
    }
}

impl Serialize for DetailedTask {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut rest = WireRest::none();
        match &self.payload {
            TaskPayload::InputRequired(r) => rest.input_requests = Some(r.clone()),
            TaskPayload::Completed(r) => rest.result = Some(r.clone()),
            TaskPayload::Failed(e) => rest.error = Some(e.clone()),
            TaskPayload::Working | TaskPayload::Cancelled | TaskPayload::Unknown(_) => {}
        }
        // The payload's status is the one written, whatever `info` says.
        let mut info = Cow::Borrowed(&self.info);
        let unknown = match &self.payload {
            TaskPayload::Unknown(raw) => Some(raw),
            _ => None,
        };
        if info.status != self.payload.status() || info.unknown_status.as_ref() != unknown {
            let info = info.to_mut();
            info.status = self.payload.status();
            info.unknown_status = unknown.cloned();
        }
        WireTask::of(&self.task_id, &info, rest).serialize(s)
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
        assert_eq!(t.info.status_message.as_deref(), Some("on hold"));
        assert_eq!(t.info.poll_interval_ms, Some(500));
        assert!(!t.status().is_terminal());
        // Written back as it came.
        assert_eq!(serde_json::to_value(&t).unwrap()["status"], "paused");
        let created: CreateTaskResult =
            serde_json::from_value(json!({"taskId": "t1", "status": "paused"})).unwrap();
        assert_eq!(created.info.status, TaskStatus::Unknown);
        assert_eq!(created.info.unknown_status.as_deref(), Some("paused"));
        assert_eq!(t.info.unknown_status.as_deref(), Some("paused"));
        assert_eq!(created.task_id.expose(), "t1");
    }

    #[test]
    fn snapshot_round_trips() {
        let t: DetailedTask = serde_json::from_value(json!({
            "taskId": "t1", "status": "failed", "ttlMs": 5, "pollIntervalMs": 0,
            "error": {"code": -32603, "message": "boom"}
        }))
        .unwrap();
        assert_eq!(t.info.poll_interval_ms, None);
        let back: DetailedTask = serde_json::from_value(serde_json::to_value(&t).unwrap()).unwrap();
        assert_eq!(back, t);
    }
}
