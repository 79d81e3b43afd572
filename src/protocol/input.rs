//! Input the server asks of the client: elicitation, sampling and roots.
//!
//! The same request and response types serve two flows: MRTR (an
//! `input_required` result to `tools/call`, answered by retrying the call)
//! and tasks (a task in `input_required`, answered by `tasks/update`).

use std::collections::BTreeMap;

use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

/// Outstanding input requests by the server-chosen key.
///
/// Ordered by key, so handlers run in a stable order.
pub type InputRequests = BTreeMap<String, InputRequest>;

/// Answers by the key of the request they answer.
pub type InputResponses = BTreeMap<String, InputResponse>;

/// An `elicitation/create` request: ask the user for something.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ElicitRequest {
    /// Fill in a form described by a flat JSON Schema.
    Form {
        /// What to tell the user.
        message: String,
        /// The schema of the answer (`type: object` with primitive properties).
        requested_schema: Value,
    },
    /// Send the user to a URL. The crate never opens it itself.
    Url {
        /// What to tell the user.
        message: String,
        /// Where to send them.
        url: String,
        /// The server's id for this elicitation (2025-11-25), which its
        /// `notifications/elicitation/complete` names when the user is done
        /// at the URL. 2026-07-28 requests have none.
        elicitation_id: Option<String>,
    },
}

/// One message of a sampling conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SamplingMessage {
    /// `user` or `assistant`.
    pub role: String,
    /// A content block (or array of blocks), as sent.
    pub content: Value,
}

/// A `sampling/createMessage` request: ask the client's model for a completion.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageRequest {
    /// The conversation so far.
    pub messages: Vec<SamplingMessage>,
    /// Most tokens to generate.
    pub max_tokens: u64,
    /// Every other field (`systemPrompt`, `temperature`, `tools`, …) as sent.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// A `roots/list` request: ask which filesystem roots the client exposes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ListRootsRequest {
    /// Request metadata, as sent.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// One input request embedded in an `input_required` result or task.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputRequest {
    /// `elicitation/create`.
    Elicitation(ElicitRequest),
    /// `sampling/createMessage`.
    Sampling(CreateMessageRequest),
    /// `roots/list`.
    Roots(ListRootsRequest),
    /// A method or elicitation mode this crate does not know. It is never
    /// answered automatically.
    Other {
        /// The method name.
        method: String,
        /// Its params, as sent.
        params: Value,
    },
}

impl InputRequest {
    /// A form elicitation.
    pub fn form(message: impl Into<String>, requested_schema: Value) -> Self {
        InputRequest::Elicitation(ElicitRequest::Form {
            message: message.into(),
            requested_schema,
        })
    }

    /// A URL elicitation (without an `elicitationId`, as 2026-07-28 sends it).
    pub fn url(message: impl Into<String>, url: impl Into<String>) -> Self {
        InputRequest::Elicitation(ElicitRequest::Url {
            message: message.into(),
            url: url.into(),
            elicitation_id: None,
        })
    }

    /// The wire method name.
    pub fn method(&self) -> &str {
        match self {
            InputRequest::Elicitation(_) => "elicitation/create",
            InputRequest::Sampling(_) => "sampling/createMessage",
            InputRequest::Roots(_) => "roots/list",
            InputRequest::Other { method, .. } => method,
        }
    }
}

#[derive(Serialize, Deserialize)]
struct RawRequest {
    method: String,
    #[serde(default)]
    params: Option<Value>,
}

impl<'de> Deserialize<'de> for InputRequest {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = RawRequest::deserialize(d)?;
        let params = raw.params.unwrap_or_else(|| Value::Object(Map::new()));
        let text = |p: &Value, k: &str| -> Result<String, D::Error> {
            match p.get(k) {
                Some(Value::String(s)) => Ok(s.clone()),
                None | Some(Value::Null) => Ok(String::new()),
                Some(_) => Err(D::Error::custom(format!("`{k}` must be a string"))),
            }
        };
        Ok(match raw.method.as_str() {
            "elicitation/create" => match params.get("mode").and_then(Value::as_str) {
                None | Some("form") => InputRequest::Elicitation(ElicitRequest::Form {
                    message: text(&params, "message")?,
                    requested_schema: params
                        .get("requestedSchema")
                        .cloned()
                        .unwrap_or_else(|| serde_json::json!({"type": "object"})),
                }),
                Some("url") => InputRequest::Elicitation(ElicitRequest::Url {
                    message: text(&params, "message")?,
                    url: text(&params, "url")?,
                    elicitation_id: Some(text(&params, "elicitationId")?)
                        .filter(|id| !id.is_empty()),
                }),
                Some(_) => InputRequest::Other {
                    method: raw.method,
                    params,
                },
            },
            "sampling/createMessage" => {
                InputRequest::Sampling(serde_json::from_value(params).map_err(D::Error::custom)?)
            }
            "roots/list" => {
                InputRequest::Roots(serde_json::from_value(params).map_err(D::Error::custom)?)
            }
            _ => InputRequest::Other {
                method: raw.method,
                params,
            },
        })
    }
}

impl Serialize for InputRequest {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let params = match self {
            InputRequest::Elicitation(ElicitRequest::Form {
                message,
                requested_schema,
            }) => serde_json::json!({
                "mode": "form", "message": message, "requestedSchema": requested_schema
            }),
            InputRequest::Elicitation(ElicitRequest::Url {
                message,
                url,
                elicitation_id,
            }) => {
                let mut p = serde_json::json!({ "mode": "url", "message": message, "url": url });
                if let Some(id) = elicitation_id {
                    p["elicitationId"] = Value::String(id.clone());
                }
                p
            }
            InputRequest::Sampling(r) => {
                serde_json::to_value(r).map_err(serde::ser::Error::custom)?
            }
            InputRequest::Roots(r) => serde_json::to_value(r).map_err(serde::ser::Error::custom)?,
            InputRequest::Other { params, .. } => params.clone(),
        };
        RawRequest {
            method: self.method().to_owned(),
            params: Some(params),
        }
        .serialize(s)
    }
}

/// What the user did with an elicitation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ElicitAction {
    /// The user answered (form) or agreed to open the URL (url).
    Accept,
    /// The user said no.
    Decline,
    /// The user dismissed the request.
    Cancel,
}

/// The answer to an [`ElicitRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ElicitResult {
    /// What the user did.
    pub action: ElicitAction,
    /// The form's values (accepted form mode only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<Map<String, Value>>,
}

impl ElicitResult {
    /// Accept a form with these values (a JSON object; anything else is sent as no content).
    pub fn accept(content: Value) -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content: match content {
                Value::Object(map) => Some(map),
                _ => None,
            },
        }
    }

    /// Accept without content (URL mode: the user agreed to open the link).
    pub fn accept_empty() -> Self {
        ElicitResult {
            action: ElicitAction::Accept,
            content: None,
        }
    }

    /// The user declined.
    pub fn decline() -> Self {
        ElicitResult {
            action: ElicitAction::Decline,
            content: None,
        }
    }

    /// The user dismissed the request.
    pub fn cancel() -> Self {
        ElicitResult {
            action: ElicitAction::Cancel,
            content: None,
        }
    }
}

/// The answer to a [`CreateMessageRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CreateMessageResult {
    /// Normally `assistant`.
    pub role: String,
    /// The generated content block, as JSON.
    pub content: Value,
    /// The model that produced it.
    pub model: String,
    /// Why generation stopped.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stop_reason: Option<String>,
}

/// A filesystem root the client exposes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Root {
    /// A `file://` URI.
    pub uri: String,
    /// Display name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The answer to a [`ListRootsRequest`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListRootsResult {
    /// The roots.
    pub roots: Vec<Root>,
}

/// One answer in `inputResponses`.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum InputResponse {
    /// Answers an elicitation.
    Elicit(ElicitResult),
    /// Answers a sampling request.
    Sampling(CreateMessageResult),
    /// Answers a roots request.
    Roots(ListRootsResult),
}

impl From<ElicitResult> for InputResponse {
    fn from(r: ElicitResult) -> Self {
        InputResponse::Elicit(r)
    }
}

impl From<CreateMessageResult> for InputResponse {
    fn from(r: CreateMessageResult) -> Self {
        InputResponse::Sampling(r)
    }
}

impl From<ListRootsResult> for InputResponse {
    fn from(r: ListRootsResult) -> Self {
        InputResponse::Roots(r)
    }
}

impl Serialize for InputResponse {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            InputResponse::Elicit(r) => r.serialize(s),
            InputResponse::Sampling(r) => r.serialize(s),
            InputResponse::Roots(r) => r.serialize(s),
        }
    }
}

impl<'de> Deserialize<'de> for InputResponse {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = Value::deserialize(d)?;
        let pick = |r: Result<InputResponse, serde_json::Error>| r.map_err(D::Error::custom);
        if v.get("action").is_some() {
            pick(serde_json::from_value(v).map(InputResponse::Elicit))
        } else if v.get("roots").is_some() {
            pick(serde_json::from_value(v).map(InputResponse::Roots))
        } else if v.get("model").is_some() || v.get("role").is_some() {
            pick(serde_json::from_value(v).map(InputResponse::Sampling))
        } else {
            Err(D::Error::custom(
                "an input response needs `action`, `roots` or `model`",
            ))
        }
    }
}

/// An `input_required` result: the server needs answers before it can go on.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub struct InputRequiredResult {
    /// What the server asks, by key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub input_requests: Option<InputRequests>,
    /// Opaque state to echo byte for byte on the retry.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_state: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn elicitation_without_mode_is_a_form() {
        let r: InputRequest = serde_json::from_value(json!({
            "method": "elicitation/create",
            "params": {"message": "Name?", "requestedSchema": {"type": "object"}}
        }))
        .unwrap();
        assert!(
            matches!(r, InputRequest::Elicitation(ElicitRequest::Form { ref message, .. }) if message == "Name?")
        );
    }

    #[test]
    fn unknown_methods_and_modes_are_kept() {
        let r: InputRequest =
            serde_json::from_value(json!({"method": "x/y", "params": {"a": 1}})).unwrap();
        assert!(matches!(r, InputRequest::Other { ref method, .. } if method == "x/y"));
        let r: InputRequest = serde_json::from_value(
            json!({"method": "elicitation/create", "params": {"mode": "voice"}}),
        )
        .unwrap();
        assert!(matches!(r, InputRequest::Other { .. }));
    }

    #[test]
    fn a_url_elicitation_keeps_its_id_when_it_has_one() {
        let with = json!({"method": "elicitation/create", "params": {
            "mode": "url", "message": "Sign in", "url": "https://example.com/a", "elicitationId": "e-1"
        }});
        let r: InputRequest = serde_json::from_value(with.clone()).unwrap();
        assert!(matches!(
            &r,
            InputRequest::Elicitation(ElicitRequest::Url { elicitation_id: Some(id), .. }) if id == "e-1"
        ));
        assert_eq!(serde_json::to_value(&r).unwrap(), with);
        // 2026-07-28 sends none, and none is sent back.
        let r: InputRequest = serde_json::from_value(json!({"method": "elicitation/create",
            "params": {"mode": "url", "message": "m", "url": "https://example.com/b"}}))
        .unwrap();
        assert_eq!(r, InputRequest::url("m", "https://example.com/b"));
        assert!(
            serde_json::to_value(&r).unwrap()["params"]
                .get("elicitationId")
                .is_none()
        );
    }

    #[test]
    fn requests_round_trip() {
        for r in [
            InputRequest::form("m", json!({"type": "object"})),
            InputRequest::url("m", "https://example.com/x"),
            InputRequest::Roots(ListRootsRequest::default()),
        ] {
            let back: InputRequest =
                serde_json::from_value(serde_json::to_value(&r).unwrap()).unwrap();
            assert_eq!(back, r);
        }
    }

    #[test]
    fn responses_decode_by_shape() {
        let r: InputResponse = serde_json::from_value(json!({"action": "decline"})).unwrap();
        assert_eq!(r, InputResponse::Elicit(ElicitResult::decline()));
        let r: InputResponse =
            serde_json::from_value(json!({"roots": [{"uri": "file:///a"}]})).unwrap();
        assert!(matches!(r, InputResponse::Roots(_)));
        let r: InputResponse = serde_json::from_value(
            json!({"role": "assistant", "content": {"type": "text", "text": "hi"}, "model": "m"}),
        )
        .unwrap();
        assert!(matches!(r, InputResponse::Sampling(_)));
        assert!(serde_json::from_value::<InputResponse>(json!({"x": 1})).is_err());
        assert!(serde_json::from_value::<InputResponse>(json!({"action": "maybe"})).is_err());
    }
}
