//! `tools/list`, `tools/call` and their results.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::{InputResponses, ResourceContents};

/// Untrusted hints about a tool's behaviour.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolAnnotations {
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The tool does not change its environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    /// The tool may destroy data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    /// Calling twice with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    /// The tool talks to the outside world.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

/// A tool the server offers.
///
/// Build one with [`Tool::new`] and set the public fields; the struct is
/// `non_exhaustive` so that fields can be added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Tool {
    /// The name to call it by.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// JSON Schema of its arguments, kept as sent (never dereferenced).
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// JSON Schema of its `structuredContent`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// Behaviour hints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<ToolAnnotations>,
    /// Icons, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// The 2025-11-25 `execution` member (`execution.taskSupport`), which
    /// 2026-07-28 removed but some servers still send. `None` when absent
    /// or not an object: a malformed value never fails the `tools/list`
    /// decode.
    ///
    /// The client reads it for one thing: a `tools/call` made through
    /// [`Client::task`](crate::Client::task) (and so [`Client::call_tool`](crate::Client::call_tool))
    /// to a tool whose last listing said `optional` or `required` carries
    /// the legacy `task` opt-in; see [`TaskOptIn`].
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_execution"
    )]
    pub execution: Option<ToolExecution>,
    /// Tool metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// A tool's `execution` member, as servers still on 2025-11-25 send it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolExecution {
    /// `execution.taskSupport`; `None` when absent or not a string.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "lenient_task_support"
    )]
    pub task_support: Option<TaskSupport>,
}

impl ToolExecution {
    /// An `execution` member with this `taskSupport`.
    pub fn task_support(support: TaskSupport) -> Self {
        ToolExecution {
            task_support: Some(support),
        }
    }
}

/// The values of the 2025-11-25 `execution.taskSupport`.
///
/// On the wire it is a string; any value but the three known ones reads as
/// [`TaskSupport::Other`], kept as sent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum TaskSupport {
    /// `"forbidden"`: the tool never runs as a task.
    Forbidden,
    /// `"optional"`: the tool may run as a task.
    Optional,
    /// `"required"`: the tool runs only as a task.
    Required,
    /// A value this crate does not know.
    Other(String),
}

impl TaskSupport {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            TaskSupport::Forbidden => "forbidden",
            TaskSupport::Optional => "optional",
            TaskSupport::Required => "required",
            TaskSupport::Other(s) => s,
        }
    }

    /// Whether a call should carry the legacy `task` opt-in: `optional`
    /// or `required`.
    pub fn wants_opt_in(&self) -> bool {
        matches!(self, TaskSupport::Optional | TaskSupport::Required)
    }
}

impl From<&str> for TaskSupport {
    fn from(s: &str) -> Self {
        match s {
            "forbidden" => TaskSupport::Forbidden,
            "optional" => TaskSupport::Optional,
            "required" => TaskSupport::Required,
            other => TaskSupport::Other(other.to_owned()),
        }
    }
}

impl Serialize for TaskSupport {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TaskSupport {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(TaskSupport::from(String::deserialize(d)?.as_str()))
    }
}

/// `execution`: an object, else absent.
fn lenient_execution<'de, D: Deserializer<'de>>(d: D) -> Result<Option<ToolExecution>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(v @ Value::Object(_)) => serde_json::from_value(v).ok(),
        _ => None,
    })
}

/// `taskSupport`: a string, else absent.
fn lenient_task_support<'de, D: Deserializer<'de>>(d: D) -> Result<Option<TaskSupport>, D::Error> {
    Ok(match Option::<Value>::deserialize(d)? {
        Some(Value::String(s)) => Some(TaskSupport::from(s.as_str())),
        _ => None,
    })
}

fn empty_object_schema() -> Value {
    serde_json::json!({ "type": "object" })
}

impl Tool {
    /// A tool with a name and an empty object schema.
    pub fn new(name: impl Into<String>) -> Self {
        Tool {
            name: name.into(),
            title: None,
            description: None,
            input_schema: empty_object_schema(),
            output_schema: None,
            annotations: None,
            icons: None,
            execution: None,
            meta: None,
        }
    }

    /// The tool's `execution.taskSupport`, when it sent a known or unknown string.
    pub fn task_support(&self) -> Option<&TaskSupport> {
        self.execution.as_ref()?.task_support.as_ref()
    }
}

/// One page of `tools/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub struct ListToolsResult {
    /// The tools on this page.
    #[serde(default)]
    pub tools: Vec<Tool>,
    /// Cursor of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// Cache freshness hint in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// `public` or `private` caching scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
}

/// Params of `tools/call` (without `_meta`, which the client adds).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallToolParams {
    /// The tool to call.
    pub(crate) name: String,
    /// Its arguments (a JSON object).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) arguments: Option<Value>,
    /// Answers to the previous round's input requests (MRTR retries only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) input_responses: Option<InputResponses>,
    /// The previous round's `requestState`, echoed byte for byte.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) request_state: Option<String>,
    /// The legacy `task` opt-in (see [`TaskOptIn`]); absent unless the
    /// client decided to send it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) task: Option<TaskOptIn>,
}

/// The 2025-11-25 per-request task opt-in, `params.task = {ttl?}`.
///
/// 2026-07-28 removed it (servers must ignore it), but servers still on
/// the older model, such as neva 0.9, run a tool whose `taskSupport` is
/// `required` only when a call carries it, and answer `-32601` otherwise.
///
/// The client sends it on a `tools/call` made through
/// [`Client::task`](crate::Client::task) or [`Client::call_tool`](crate::Client::call_tool)
/// when, and only when, the client's last [`Client::list_tools`](crate::Client::list_tools)
/// listed the tool with `execution.taskSupport` `optional` or `required`.
/// It is `{"ttl": <ms>}` when the builder set
/// [`with_ttl`](crate::TaskBuilder::with_ttl), else `{}` (the
/// server then picks its own lifetime).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct TaskOptIn {
    /// The requested lifetime in milliseconds; the server may choose another.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u64>,
}

impl TaskOptIn {
    /// An opt-in that requests `ttl` milliseconds, or none.
    pub fn new(ttl: Option<u64>) -> Self {
        TaskOptIn { ttl }
    }
}

/// The result of a tool call, immediate or inside a completed task.
///
/// A tool that failed on its own terms still *completed*: it reports the
/// failure with `is_error: true` and explains it in `content`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CallToolResult {
    /// What the tool returned for the model to read.
    #[serde(default)]
    pub content: Vec<ContentBlock>,
    /// Structured output, matching the tool's `outputSchema` when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub structured_content: Option<Value>,
    /// The tool reported an error of its own.
    #[serde(default, skip_serializing_if = "is_false")]
    pub is_error: bool,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

fn is_false(b: &bool) -> bool {
    !*b
}

impl CallToolResult {
    /// A successful result with one text block.
    pub fn text(text: impl Into<String>) -> Self {
        CallToolResult {
            content: vec![ContentBlock::text(text)],
            ..Self::default()
        }
    }

    /// A tool error (`isError: true`) with one text block.
    pub fn error(text: impl Into<String>) -> Self {
        CallToolResult {
            is_error: true,
            ..Self::text(text)
        }
    }

    /// Sets `structuredContent`.
    pub fn with_structured(mut self, value: Value) -> Self {
        self.structured_content = Some(value);
        self
    }

    /// The text of all text blocks, joined by newlines.
    pub fn joined_text(&self) -> String {
        let mut out = String::new();
        for block in &self.content {
            if let ContentBlock::Text { text, .. } = block {
                if !out.is_empty() {
                    out.push('\n');
                }
                out.push_str(text);
            }
        }
        out
    }
}

/// One block of content: of a tool result, or of a prompt message.
///
/// Read tolerantly: a block whose `type` this crate does not know, or a
/// block of a known type without the fields that type needs, never fails
/// the result it came in. It is kept whole, as sent, in
/// [`ContentBlock::Unknown`] (and written back out the same).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ContentBlock {
    /// Plain text.
    Text {
        /// The text.
        text: String,
        /// Audience, priority and modification hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
    },
    /// An image, base64.
    #[serde(rename_all = "camelCase")]
    Image {
        /// Base64 data.
        data: String,
        /// MIME type.
        mime_type: String,
        /// Hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
    },
    /// Audio, base64.
    #[serde(rename_all = "camelCase")]
    Audio {
        /// Base64 data.
        data: String,
        /// MIME type.
        mime_type: String,
        /// Hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
    },
    /// A link to a resource the client may read.
    #[serde(rename_all = "camelCase")]
    ResourceLink {
        /// Its URI.
        uri: String,
        /// Its name.
        name: String,
        /// Display title.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        title: Option<String>,
        /// Description.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        description: Option<String>,
        /// MIME type.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        mime_type: Option<String>,
        /// Size in bytes.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        size: Option<u64>,
        /// Hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
    },
    /// A resource embedded in the result.
    Resource {
        /// The resource.
        resource: ResourceContents,
        /// Hints.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        annotations: Option<Value>,
    },
    /// A block this crate cannot read (an unknown `type`, or a known one
    /// missing a field), kept as sent.
    #[serde(untagged)]
    Unknown(Value),
}

impl ContentBlock {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        ContentBlock::Text {
            text: text.into(),
            annotations: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn support(execution: Value) -> Option<TaskSupport> {
        let page: ListToolsResult = serde_json::from_value(json!({
            "tools": [{ "name": "t", "inputSchema": { "type": "object" }, "execution": execution }]
        }))
        .expect("a malformed execution never fails the page");
        page.tools[0].task_support().cloned()
    }

    #[test]
    fn task_support_is_read_tolerantly() {
        assert_eq!(
            support(json!({"taskSupport": "required"})),
            Some(TaskSupport::Required)
        );
        assert_eq!(
            support(json!({"taskSupport": "optional"})),
            Some(TaskSupport::Optional)
        );
        assert_eq!(
            support(json!({"taskSupport": "forbidden"})),
            Some(TaskSupport::Forbidden)
        );
        assert_eq!(
            support(json!({"taskSupport": "Later"})),
            Some(TaskSupport::Other("Later".into()))
        );
        assert_eq!(support(json!({"taskSupport": 3})), None);
        assert_eq!(support(json!({"taskSupport": null})), None);
        assert_eq!(support(json!({})), None);
        assert_eq!(support(json!("required")), None);
        assert_eq!(support(json!(null)), None);
        assert!(!TaskSupport::Other("x".into()).wants_opt_in());
        assert!(!TaskSupport::Forbidden.wants_opt_in());
    }

    #[test]
    fn execution_and_opt_in_round_trip() {
        let mut tool = Tool::new("t");
        tool.execution = Some(ToolExecution::task_support(TaskSupport::Optional));
        let v = serde_json::to_value(&tool).unwrap();
        assert_eq!(v["execution"], json!({"taskSupport": "optional"}));
        assert!(
            serde_json::to_value(Tool::new("t"))
                .unwrap()
                .get("execution")
                .is_none()
        );
        let params = CallToolParams {
            name: "t".into(),
            arguments: None,
            input_responses: None,
            request_state: None,
            task: Some(TaskOptIn::new(None)),
        };
        assert_eq!(
            serde_json::to_string(&params).unwrap(),
            r#"{"name":"t","task":{}}"#
        );
        let params = CallToolParams {
            task: Some(TaskOptIn::new(Some(60_000))),
            ..params
        };
        assert_eq!(
            serde_json::to_string(&params).unwrap(),
            r#"{"name":"t","task":{"ttl":60000}}"#
        );
    }
}
