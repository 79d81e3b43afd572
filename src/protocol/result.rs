//! `resultType` dispatch: `complete`, `input_required` or `task`.

use serde::de::DeserializeOwned;

use super::decode_error::DecodeError;
use super::tagged::{ResultType, decode_once, leading_result_type};
use super::{CallToolResult, CreateTaskResult, DetailedTask, InputRequiredResult};

/// What a `tools/call` can answer, discriminated by `resultType`.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
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
    pub fn decode(json: &str, tasks_declared: bool) -> Result<CallToolResponse, DecodeError> {
        // A task is what a waiting client reads most, and servers write
        // `resultType` first: then the body is read once, its tag checked
        // on the way. Anything else, and any error, is probed first.
        if tasks_declared
            && leading_result_type(json) == Some(ResultType::Task)
            && let Some((ResultType::Task, task)) = decode_once(json)
        {
            return Ok(CallToolResponse::Task(task));
        }
        Self::decode_probed(json, tasks_declared)
    }

    /// [`decode`](Self::decode) by probing for `resultType` first, then
    /// decoding the body the probe chose.
    fn decode_probed(json: &str, tasks_declared: bool) -> Result<CallToolResponse, DecodeError> {
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

/// Decodes a `tasks/get` result.
///
/// `resultType` must be `complete` or absent; `task` is accepted too, since
/// one of the specification's own examples shows it.
pub(crate) fn decode_task_snapshot(json: &str) -> Result<DetailedTask, DecodeError> {
    // Read once when all is well; the probe first names what is not.
    if let Some((ResultType::Complete | ResultType::Task, task)) = decode_once(json) {
        return Ok(task);
    }
    snapshot_probed(json)
}

/// [`decode_task_snapshot`] by probing for `resultType` first.
fn snapshot_probed(json: &str) -> Result<DetailedTask, DecodeError> {
    match ResultType::of(json)? {
        ResultType::Complete | ResultType::Task => decode(json),
        ResultType::InputRequired => Err(DecodeError::invalid(
            "tasks/get answered with resultType input_required",
        )),
    }
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
    use std::fmt;

    use super::*;

    /// Results that are valid, odd or broken, with `resultType` anywhere.
    fn placements() -> Vec<String> {
        let deep = format!("{}{}", "[".repeat(200), "]".repeat(200));
        let mut cases: Vec<String> = [
            r#"{"content":[]}"#,
            r#"{"resultType":"complete","content":[]}"#,
            r#"{"content":[],"resultType":"complete"}"#,
            r#"{"resultType":null,"content":[]}"#,
            r#"{"resultType":null,"content":[],"resultType":"task"}"#,
            r#"{"content":[{"type":"text","text":"x"}],"resultType":"complete","isError":true}"#,
            r#"{"re\u0073ultType":"complete","content":[]}"#,
            r#"{"resultType":"compl\u0065te","content":[]}"#,
            r#"{"content":[],"structuredContent":{"resultType":"task"}}"#,
            r#"{"resultType":"task","content":[]}"#,
            r#"{"content":[],"resultType":"later"}"#,
            r#"{"content":7,"resultType":"later"}"#,
            r#"{"resultType":"later","content":7}"#,
            r#"{"resultType":"complete","content":[],"resultType":"complete"}"#,
            r#"{"resultType":"complete","content":7,"resultType":"x"}"#,
            r#"{"resultType":1,"content":[]}"#,
            r#"{"resultType":"complete","content":7}"#,
            r#"{"content":[],"structuredContent":1e400,"resultType":"later"}"#,
            r#"{"content":[{"type":"text","text":"\ud800"}],"resultType":"later"}"#,
            r#"{"resultType":"complete","content":[]"#,
            r#"{"resultType":"complete","content":[]} x"#,
            r#"["complete"]"#,
            r#"[[],null,false,null,"x"]"#,
            r#"["t-1","working"]"#,
            "7",
            "",
            // Tasks, for the snapshot and the creation result.
            r#"{"resultType":"task","taskId":"t","status":"working","ttlMs":null}"#,
            r#"{"taskId":"t","status":"working","resultType":"task"}"#,
            r#"{"resultType":"complete","taskId":"t","status":"completed","result":{"content":[]}}"#,
            r#"{"resultType":"complete","taskId":"t","status":"completed"}"#,
            r#"{"resultType":"input_required","taskId":"t","status":"working"}"#,
            r#"{"resultType":"input_required","taskId":"t","status":"completed","result":{"content":[],"structuredContent":1e400}}"#,
            r#"{"resultType":"task","taskId":"t","status":"working","_meta":{"x":1e400},"resultType":"later"}"#,
            r#"{"resultType":"task","taskId":"t","status":"working","resultType":"task"}"#,
            r#"{"resultType":"task","taskId":7,"status":"working"}"#,
            r#"{"resultType":"task","task":{"taskId":"t"}}"#,
            r#"{"task":{"taskId":"t","status":"working"}}"#,
            r#"{"resultType":"input_required","inputRequests":{}}"#,
            r#"{"resultType":"input_required"}"#,
        ]
        .map(str::to_owned)
        .to_vec();
        cases.push(format!(
            r#"{{"content":[],"structuredContent":{deep},"resultType":"later"}}"#
        ));
        cases
    }

    /// Equal results, or the same error in the same words.
    fn same<T: PartialEq + fmt::Debug>(
        json: &str,
        once: Result<T, DecodeError>,
        probed: Result<T, DecodeError>,
    ) {
        match (&once, &probed) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "{json}"),
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "{json}"),
            _ => panic!("{json}: read once {once:?}, probed first {probed:?}"),
        }
    }

    /// Reading `resultType` in the same pass as the body changes nothing a
    /// caller sees: not the result, not an error, not the order of errors.
    #[test]
    fn reading_once_agrees_with_probing_first() {
        let mut read_once = 0;
        for json in placements() {
            let json = json.as_str();
            same(json, decode_task_snapshot(json), snapshot_probed(json));
            for declared in [true, false] {
                same(
                    json,
                    CallToolResponse::decode(json, declared),
                    CallToolResponse::decode_probed(json, declared),
                );
            }
            read_once += usize::from(decode_once::<DetailedTask>(json).is_some());
        }
        // The fast path is taken, not only the fallback.
        assert!(read_once >= 4, "{read_once}");
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
