//! The 2025-11-25 experimental tasks (initialize era): the `Task` object
//! with `ttl` and `pollInterval`, the nested creation result
//! `{"task": {…}}`, `tasks/list`, and the related-task metadata that ties
//! a server's input request to its task.

use std::borrow::Cow;

use serde::de::IgnoredAny;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::decode_error::DecodeError;
use super::{
    CallToolResult, CreateTaskResult, DetailedTask, TaskId, TaskInfo, TaskPayload, TaskStatus,
    lenient,
};

/// The `_meta` key that ties a request, notification or result to a task
/// on 2025-11-25: `{"taskId": "…"}`.
pub const META_RELATED_TASK: &str = "io.modelcontextprotocol/related-task";

/// A task as a 2025-11-25 server describes it (`tasks/get`, `tasks/list`,
/// `tasks/cancel`, the creation result and `notifications/tasks/status`):
/// a status without its payload.
///
/// The client reads these itself; the type is public for
/// [`Client::list_tasks`](crate::Client::list_tasks).
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct LegacyTask {
    /// The task's id.
    pub task_id: TaskId,
    /// Its status (an unknown one reads as [`TaskStatus::Unknown`]) and
    /// what the server says with it.
    pub info: TaskInfo,
}

/// A task as the initialize era writes it (`ttl`, `pollInterval`), the
/// status kept as sent, so that one the client does not know is neither
/// an error nor lost.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawLegacyTask {
    task_id: TaskId,
    status: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status_message: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    created_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    last_updated_at: Option<String>,
    #[serde(default, deserialize_with = "lenient::ttl_ms")]
    ttl: Option<u64>,
    #[serde(
        default,
        deserialize_with = "lenient::positive_ms",
        skip_serializing_if = "Option::is_none"
    )]
    poll_interval: Option<u64>,
}

impl<'de> Deserialize<'de> for LegacyTask {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawLegacyTask::deserialize(d)?;
        let status = TaskStatus::from_wire(&raw.status);
        Ok(LegacyTask {
            task_id: raw.task_id,
            info: TaskInfo {
                status,
                unknown_status: (status == TaskStatus::Unknown).then_some(raw.status),
                status_message: raw.status_message,
                created_at: raw.created_at,
                last_updated_at: raw.last_updated_at,
                ttl_ms: raw.ttl,
                poll_interval_ms: raw.poll_interval,
            },
        })
    }
}

impl Serialize for LegacyTask {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let info = &self.info;
        RawLegacyTask {
            task_id: self.task_id.clone(),
            status: info.wire_status().to_owned(),
            status_message: info.status_message.clone(),
            created_at: info.created_at.clone(),
            last_updated_at: info.last_updated_at.clone(),
            ttl: info.ttl_ms,
            poll_interval: info.poll_interval_ms,
        }
        .serialize(s)
    }
}

impl LegacyTask {
    /// The payload a status without its result carries: `working`, or an
    /// unknown status with its name (the others need `tasks/result` or
    /// the task's input requests).
    pub(crate) fn bare_payload(&self) -> TaskPayload {
        match (&self.info.unknown_status, self.info.status) {
            (Some(raw), _) => TaskPayload::Unknown(raw.clone()),
            (None, TaskStatus::Cancelled) => TaskPayload::Cancelled,
            _ => TaskPayload::Working,
        }
    }

    /// The task as a 2026-07-28 creation result (what the task layer starts from).
    pub(crate) fn into_created(self) -> CreateTaskResult {
        CreateTaskResult {
            task_id: self.task_id,
            info: self.info,
            meta: None,
        }
    }

    /// The task with `payload`, as a 2026-07-28 snapshot.
    pub(crate) fn into_detailed(self, payload: TaskPayload) -> DetailedTask {
        DetailedTask::new(self.task_id, self.info, payload)
    }
}

/// What an initialize-era `tools/call` answers: the tool's result, or
/// (with the `task` opt-in) a task's creation result `{"task": {…}}`.
#[derive(Debug)]
pub(crate) enum LegacyCallAnswer {
    /// The call became this task.
    Task(LegacyTask),
    /// The tool's result.
    Result(CallToolResult),
}

impl LegacyCallAnswer {
    /// Reads an answer: one pass over the whole reply to learn its kind
    /// (the task object kept as it is), then the task object alone, or
    /// the result, decoded. A `task` with a `taskId` and no `content`
    /// beside it is a creation result; anything else is a tool result.
    ///
    /// # Errors
    ///
    /// Invalid JSON; a creation result whose task does not read; a tool
    /// result that does not read; a 2026-07-28 `resultType` other than
    /// `complete`, which this era has no use for.
    pub(crate) fn read(json: &str) -> Result<Self, DecodeError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Probe<'a> {
            #[serde(default, borrow)]
            task: Option<&'a RawValue>,
            #[serde(default)]
            content: Option<IgnoredAny>,
            #[serde(default, borrow)]
            result_type: Option<Cow<'a, str>>,
        }
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct HasId {
            #[allow(dead_code)]
            task_id: IgnoredAny,
        }
        let probe: Probe<'_> = serde_json::from_str(json).map_err(DecodeError::json)?;
        if let (Some(task), None) = (probe.task, &probe.content) {
            match serde_json::from_str::<LegacyTask>(task.get()) {
                Ok(task) => return Ok(LegacyCallAnswer::Task(task)),
                Err(e) if serde_json::from_str::<HasId>(task.get()).is_ok() => {
                    return Err(DecodeError::invalid(format!(
                        "malformed task creation result: {e}"
                    )));
                }
                // Not a task at all: a tool result that says `task`.
                Err(_) => {}
            }
        }
        match probe.result_type.as_deref() {
            None | Some("complete") => serde_json::from_str(json)
                .map(LegacyCallAnswer::Result)
                .map_err(DecodeError::json),
            Some("input_required" | "task") => Err(DecodeError::invalid(
                "an initialize-era tools/call answered with a 2026-07-28 result kind",
            )),
            Some(other) => Err(DecodeError::invalid(format!(
                "unknown resultType {other:?}"
            ))),
        }
    }
}

/// One page of `tasks/list` (2025-11-25).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ListTasksResult {
    /// The tasks on this page.
    pub tasks: Vec<LegacyTask>,
    /// The cursor of the next page; `None` on the last.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}

/// The task a request or result is tied to, from its
/// `_meta["io.modelcontextprotocol/related-task"].taskId`.
pub(crate) fn related_task(params: &Map<String, Value>) -> Option<TaskId> {
    let id = params
        .get("_meta")?
        .get(META_RELATED_TASK)?
        .get("taskId")?
        .as_str()?;
    (!id.is_empty()).then(|| TaskId::new(id))
}

/// `result` with `_meta["io.modelcontextprotocol/related-task"] =
/// {taskId}`, beside whatever `_meta` it had (one that is not an object is
/// replaced): what a response tied to a task carries on 2025-11-25.
pub(crate) fn with_related_task(mut result: Value, id: &TaskId) -> Value {
    if let Value::Object(map) = &mut result {
        let meta = map
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        if let Value::Object(meta) = meta {
            meta.insert(
                META_RELATED_TASK.to_owned(),
                serde_json::json!({ "taskId": id }),
            );
        }
    }
    result
}

/// Whether a 2025-11-25 server declares task-augmented `tools/call`
/// (`capabilities.tasks.requests.tools.call`).
pub(crate) fn declares_task_calls(tasks: Option<&Value>) -> bool {
    tasks
        .and_then(|t| t.get("requests"))
        .and_then(|r| r.get("tools"))
        .and_then(|t| t.get("call"))
        .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_recorded_creation_result_of_server_everything() {
        let raw = r#"{"task": {"taskId": "4a1f", "status": "working", "ttl": 300000,
            "createdAt": "2026-11-30T10:00:00Z", "lastUpdatedAt": "2026-11-30T10:00:00Z",
            "pollInterval": 1000, "statusMessage": "Task created"}}"#;
        let LegacyCallAnswer::Task(task) = LegacyCallAnswer::read(raw).unwrap() else {
            panic!("not read as a task")
        };
        let t = task.into_created();
        assert_eq!(t.task_id.expose(), "4a1f");
        assert_eq!(t.info.status, TaskStatus::Working);
        assert_eq!(
            (t.info.ttl_ms, t.info.poll_interval_ms),
            (Some(300_000), Some(1000))
        );
    }

    /// Each shape an initialize-era `tools/call` answer can take, read in
    /// one pass: what it is read as, or words of the error.
    #[test]
    fn each_legacy_call_answer_reads_as_what_it_is() {
        let cases: &[(&str, &str)] = &[
            (r#"{"task": {"taskId": "t", "status": "working"}}"#, "task"),
            (
                r#"{"content": [], "task": {"taskId": "t", "status": "working"}}"#,
                "result",
            ),
            (
                r#"{"task": "export", "structuredContent": {"a": 1}}"#,
                "result",
            ),
            (r#"{"task": {"name": "export"}}"#, "result"),
            (r#"{"task": null, "content": []}"#, "result"),
            (r#"{"content": [], "resultType": null}"#, "result"),
            (r#"{"content": [], "resultType": "complete"}"#, "result"),
            (
                r#"{"task": {"taskId": "t", "status": 5}}"#,
                "malformed task creation result",
            ),
            (
                r#"{"resultType": "task", "taskId": "t", "status": "working"}"#,
                "2026-07-28 result kind",
            ),
            (
                r#"{"resultType": "input_required", "requestState": "s"}"#,
                "2026-07-28 result kind",
            ),
            (
                r#"{"resultType": "later", "content": []}"#,
                "unknown resultType",
            ),
            (r#"{"content": 5}"#, "invalid type"),
            (r#"[1, 2]"#, "invalid type"),
        ];
        for (json, want) in cases {
            let got = match LegacyCallAnswer::read(json) {
                Ok(LegacyCallAnswer::Task(_)) => "task".to_owned(),
                Ok(LegacyCallAnswer::Result(_)) => "result".to_owned(),
                Err(e) => e.to_string(),
            };
            assert!(got.contains(want), "{json}: {got}");
        }
    }

    #[test]
    fn null_ttl_and_odd_intervals_are_read_leniently() {
        let t: LegacyTask = serde_json::from_str(
            r#"{"taskId": "x", "status": "what", "ttl": null, "pollInterval": 0}"#,
        )
        .unwrap();
        assert_eq!(t.info.status, TaskStatus::Unknown);
        assert_eq!((t.info.ttl_ms, t.info.poll_interval_ms), (None, None));
    }

    #[test]
    fn related_meta_is_added_beside_what_is_there() {
        let id = TaskId::new("t1");
        let v = with_related_task(
            serde_json::json!({"action": "accept", "_meta": {"k": 1}}),
            &id,
        );
        assert_eq!(v["_meta"]["k"], 1);
        assert_eq!(
            v["_meta"][META_RELATED_TASK],
            serde_json::json!({"taskId": "t1"})
        );
        let v = with_related_task(serde_json::json!({"action": "decline", "_meta": 3}), &id);
        assert_eq!(v["_meta"][META_RELATED_TASK]["taskId"], "t1");
    }

    #[test]
    fn the_related_task_is_read_from_meta() {
        let params =
            serde_json::json!({"message": "?", "_meta": {META_RELATED_TASK: {"taskId": "t-1"}}});
        let id = related_task(params.as_object().unwrap()).unwrap();
        assert_eq!(id.expose(), "t-1");
        assert!(related_task(serde_json::json!({"_meta": {}}).as_object().unwrap()).is_none());
        assert!(declares_task_calls(Some(
            &serde_json::json!({"requests": {"tools": {"call": {}}}})
        )));
        assert!(!declares_task_calls(Some(&serde_json::json!({"list": {}}))));
    }
}
