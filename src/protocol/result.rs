//! `resultType` dispatch: `complete`, `input_required` or `task`.

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::decode_error::DecodeError;
use super::tagged::ResultType;
use super::tasks::WireTask;
use super::{CallToolResult, CreateTaskResult, DetailedTask, InputRequiredResult, TaskId};

/// What a `tools/call` can answer, discriminated by `resultType`.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub enum CallToolResponse {
    /// The tool ran and this is its result.
    Complete(CallToolResult),
    /// The server needs input before it can go on (retry with answers).
    InputRequired(InputRequiredResult),
    /// The call became a task.
    Task(CreateTaskResult),
}

fn decode<T: DeserializeOwned>(json: &str) -> Result<T, DecodeError> {
    serde_json::from_str(json).map_err(DecodeError::json)
}

#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
impl CallToolResponse {
    /// Decodes a `tools/call` result.
    ///
    /// `tasks_declared` says whether the request declared the Tasks
    /// extension: without it, `resultType: "task"` is invalid.
    ///
    /// # Errors
    ///
    /// Fails on invalid JSON, an unknown `resultType`, an undeclared task, or
    /// a body that does not fit its `resultType`.
    pub(crate) fn decode(
        json: &str,
        tasks_declared: bool,
    ) -> Result<CallToolResponse, DecodeError> {
        match ResultType::of(json)? {
            ResultType::Complete if is_legacy_task(json) => Err(DecodeError::invalid(
                "the server answered with a 2025-11-25 task creation result ({\"task\": {…}} \
                 without resultType), which is not a tool result; this session does not read \
                 that era's tasks",
            )),
            ResultType::Complete => decode(json).map(CallToolResponse::Complete),
            ResultType::InputRequired => {
                let r: InputRequiredResult = decode(json)?;
                if r.input_requests.is_none() && r.request_state.is_none() {
                    return Err(DecodeError::invalid(
                        "an input_required result needs inputRequests or requestState",
                    ));
                }
                Ok(CallToolResponse::InputRequired(r))
            }
            ResultType::Task if tasks_declared => decode(json).map(CallToolResponse::Task),
            ResultType::Task => Err(DecodeError::invalid(
                "the server returned a task to a request that did not declare the Tasks extension",
            )),
        }
    }
}

/// Whether a result without `resultType` is a 2025-11-25 `CreateTaskResult`
/// (`{"task": {"taskId": …}}`) rather than a tool result: read as one, it
/// would be an empty completed result, and the task would be orphaned.
pub(crate) fn is_legacy_task(json: &str) -> bool {
    #[derive(serde::Deserialize)]
    struct Probe {
        #[serde(default)]
        task: Option<TaskProbe>,
        #[serde(default)]
        content: Option<serde::de::IgnoredAny>,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct TaskProbe {
        #[allow(dead_code)]
        task_id: serde::de::IgnoredAny,
    }
    serde_json::from_str::<Probe>(json).is_ok_and(|p| p.task.is_some() && p.content.is_none())
}

/// The id of the task a `tools/call` answer that did not decode was
/// creating, when it names one: `taskId` beside `resultType: "task"`
/// (2026-07-28), or in a `task` object (2025-11-25). The error for such
/// an answer carries it, so that the task can still be resumed or
/// cancelled. Read only on that error path.
pub(crate) fn created_task_id(json: &str) -> Option<TaskId> {
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Named {
        task_id: TaskId,
    }
    #[derive(Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Probe {
        #[serde(default)]
        result_type: Option<String>,
        #[serde(default)]
        task_id: Option<TaskId>,
        #[serde(default)]
        task: Option<Named>,
    }
    let probe: Probe = serde_json::from_str(json).ok()?;
    match probe {
        Probe {
            result_type: Some(kind),
            task_id: Some(id),
            ..
        } if kind == "task" => Some(id),
        Probe {
            result_type: None,
            task: Some(task),
            ..
        } => Some(task.task_id),
        _ => None,
    }
}

/// Decodes a `tasks/get` result.
///
/// `resultType` must be `complete` or absent; `task` is accepted too, since
/// one of the specification's own examples shows it.
///
/// Read in one pass, `resultType` with the rest (a reply of every read of
/// every task): only a reply that does not read is looked at again, for
/// what its `resultType` says.
pub(crate) fn decode_task_snapshot(json: &str) -> Result<DetailedTask, DecodeError> {
    // A result is an object: serde would read a struct from an array too.
    if !json.trim_start().starts_with('{') {
        return Err(ResultType::of(json)
            .err()
            .unwrap_or_else(|| DecodeError::invalid("a tasks/get result must be an object")));
    }
    let wire: WireTask = match serde_json::from_str(json) {
        Ok(wire) => wire,
        Err(e) => {
            return Err(match ResultType::of(json) {
                Ok(ResultType::InputRequired) => snapshot_input_required(),
                Err(kind) => kind,
                Ok(_) => DecodeError::json(e),
            });
        }
    };
    match wire.result_type.as_deref() {
        None | Some("complete" | "task") => {
            DetailedTask::from_wire(wire).map_err(DecodeError::invalid)
        }
        Some("input_required") => Err(snapshot_input_required()),
        Some(other) => Err(DecodeError::invalid(format!(
            "unknown resultType {other:?}"
        ))),
    }
}

fn snapshot_input_required() -> DecodeError {
    DecodeError::invalid("tasks/get answered with resultType input_required")
}

/// Decodes the empty acknowledgement of `tasks/update` and `tasks/cancel`.
pub(crate) fn decode_ack(json: &str, method: &str) -> Result<(), DecodeError> {
    match ResultType::of(json)? {
        ResultType::Complete => Ok(()),
        other => Err(DecodeError::invalid(format!(
            "{method} answered with resultType {other:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a caller gets for a `tools/call` result (the request declared
    /// the Tasks extension), with `resultType` anywhere, spelled oddly or
    /// wrong, and bodies that do not fit: the kind, or words of the error.
    #[test]
    fn each_tools_call_result_reads_as_its_result_type_says() {
        let deep = format!(
            r#"{{"content":[],"structuredContent":{}{},"resultType":"later"}}"#,
            "[".repeat(200),
            "]".repeat(200)
        );
        let cases: &[(&str, &str)] = &[
            (r#"{"content":[]}"#, "complete"),
            (r#"{"resultType":"complete","content":[]}"#, "complete"),
            (r#"{"content":[],"resultType":"complete"}"#, "complete"),
            (r#"{"resultType":null,"content":[]}"#, "complete"),
            (r#"{"re\u0073ultType":"complete","content":[]}"#, "complete"),
            (r#"{"resultType":"compl\u0065te","content":[]}"#, "complete"),
            (
                r#"{"content":[],"structuredContent":{"resultType":"task"}}"#,
                "complete",
            ),
            (
                r#"{"resultType":"task","taskId":"t","status":"working","ttlMs":null}"#,
                "task",
            ),
            (
                r#"{"taskId":"t","status":"working","resultType":"task"}"#,
                "task",
            ),
            (
                r#"{"resultType":"input_required","requestState":"s"}"#,
                "input_required",
            ),
            (
                r#"{"resultType":"input_required","inputRequests":{}}"#,
                "input_required",
            ),
            (
                r#"{"content":[],"resultType":"later"}"#,
                r#"unknown resultType "later""#,
            ),
            (
                r#"{"content":7,"resultType":"later"}"#,
                r#"unknown resultType "later""#,
            ),
            (&deep, r#"unknown resultType "later""#),
            (
                r#"{"resultType":null,"content":[],"resultType":"task"}"#,
                "duplicate field `resultType`",
            ),
            (
                r#"{"resultType":"complete","content":7}"#,
                "invalid type: integer `7`",
            ),
            (
                r#"{"resultType":1,"content":[]}"#,
                "invalid type: integer `1`",
            ),
            (
                r#"{"resultType":"task","taskId":7,"status":"working"}"#,
                "invalid type: integer `7`",
            ),
            (
                r#"{"resultType":"task","content":[]}"#,
                "missing field `taskId`",
            ),
            (
                r#"{"resultType":"input_required"}"#,
                "needs inputRequests or requestState",
            ),
            (
                r#"{"resultType":"complete","content":[]"#,
                "EOF while parsing",
            ),
            (
                r#"{"resultType":"complete","content":[]} x"#,
                "trailing characters",
            ),
            // An array is no result: the tag probe reads it by position.
            (r#"["complete"]"#, "invalid type: string \"complete\""),
            ("7", "invalid type: integer `7`"),
            ("", "EOF while parsing"),
        ];
        for (json, expected) in cases {
            let seen = match CallToolResponse::decode(json, true) {
                Ok(CallToolResponse::Complete(_)) => "complete".to_owned(),
                Ok(CallToolResponse::Task(_)) => "task".to_owned(),
                Ok(CallToolResponse::InputRequired(_)) => "input_required".to_owned(),
                Err(e) => e.to_string(),
            };
            assert!(seen.contains(expected), "{json}: {seen}");
        }
    }

    /// A `tasks/get` result is a snapshot whatever its `resultType` but
    /// `input_required`; the same errors otherwise.
    #[test]
    fn a_snapshot_is_complete_or_task() {
        for json in [
            r#"{"resultType":"complete","taskId":"t","status":"completed","result":{"content":[]}}"#,
            r#"{"taskId":"t","status":"working","resultType":"task"}"#,
            r#"{"taskId":"t","status":"working"}"#,
        ] {
            assert_eq!(decode_task_snapshot(json).unwrap().task_id.expose(), "t");
        }
        for (json, expected) in [
            (
                r#"{"resultType":"input_required","taskId":"t","status":"working"}"#,
                "tasks/get answered with resultType input_required",
            ),
            (
                r#"{"resultType":"later","taskId":"t","status":"working"}"#,
                r#"unknown resultType "later""#,
            ),
            (
                r#"{"resultType":"task","taskId":"t","status":"working","resultType":"task"}"#,
                "duplicate field `resultType`",
            ),
            (r#"["t","working"]"#, "trailing characters"),
            (r#"[]"#, "must be an object"),
            (r#" ["t","working","late"]"#, "trailing characters"),
            (
                r#"{"resultType":"input_required","inputRequests":{}}"#,
                "input_required",
            ),
            (r#"{"resultType":"later"}"#, r#"unknown resultType "later""#),
            (
                r#"{"taskId":"t","status":"completed"}"#,
                "must carry `result`",
            ),
        ] {
            let e = decode_task_snapshot(json).unwrap_err().to_string();
            assert!(e.contains(expected), "{json}: {e}");
        }
    }

    /// Which undecodable `tools/call` answers name the task they were
    /// creating: only a task's shape, in either era.
    #[test]
    fn a_creation_result_that_does_not_read_still_names_its_task() {
        for (json, id) in [
            (
                r#"{"resultType":"task","taskId":"t","status":7}"#,
                Some("t"),
            ),
            (r#"{"task":{"taskId":"t","status":7}}"#, Some("t")),
            (
                r#"{"resultType":"complete","taskId":"t","content":5}"#,
                None,
            ),
            (r#"{"taskId":"t","content":5}"#, None),
            (r#"{"resultType":"task","taskId":7}"#, None),
            (r#"[1]"#, None),
        ] {
            let got = created_task_id(json);
            assert_eq!(got.as_ref().map(TaskId::expose), id, "{json}");
        }
    }

    #[test]
    fn a_2025_task_creation_result_is_not_an_empty_tool_result() {
        let legacy = r#"{"task":{"taskId":"t-1","status":"working","ttl":60000,"createdAt":"2025-11-25T10:00:00Z"}}"#;
        for declared in [true, false] {
            let e = CallToolResponse::decode(legacy, declared).unwrap_err();
            assert!(
                e.to_string().contains("2025-11-25 task creation result"),
                "{e}"
            );
        }
        // A tool result that happens to carry a `task` field in its content stays one.
        let result = r#"{"content":[{"type":"text","text":"x"}],"task":{"taskId":"t"}}"#;
        assert!(matches!(
            CallToolResponse::decode(result, true),
            Ok(CallToolResponse::Complete(_))
        ));
    }

    #[test]
    fn absent_result_type_is_complete() {
        assert_eq!(
            ResultType::of(r#"{"content":[]}"#).unwrap(),
            ResultType::Complete
        );
        assert!(ResultType::of(r#"{"resultType":"later"}"#).is_err());
    }

    #[test]
    fn task_needs_the_declaration() {
        let json = r#"{"resultType":"task","taskId":"t","status":"working","ttlMs":null}"#;
        assert!(matches!(
            CallToolResponse::decode(json, true),
            Ok(CallToolResponse::Task(_))
        ));
        assert!(CallToolResponse::decode(json, false).is_err());
    }

    #[test]
    fn empty_input_required_is_invalid() {
        assert!(CallToolResponse::decode(r#"{"resultType":"input_required"}"#, true).is_err());
        let r = CallToolResponse::decode(
            r#"{"resultType":"input_required","requestState":"s"}"#,
            true,
        );
        assert!(matches!(r, Ok(CallToolResponse::InputRequired(_))));
    }
}
