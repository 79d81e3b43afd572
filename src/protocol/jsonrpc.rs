//! JSON-RPC 2.0 envelopes, request ids and errors.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use serde_json::value::RawValue;

/// Error codes with a meaning in MCP 2026-07-28 and the Tasks extension.
pub mod error_codes {
    /// The peer could not parse the JSON it received.
    pub const PARSE_ERROR: i64 = -32700;
    /// The message is not a valid JSON-RPC request.
    pub const INVALID_REQUEST: i64 = -32600;
    /// Unknown method, or a method behind a capability the server did not advertise.
    pub const METHOD_NOT_FOUND: i64 = -32601;
    /// Invalid params; on `tasks/*` it means the task is unknown or expired.
    pub const INVALID_PARAMS: i64 = -32602;
    /// The server failed internally.
    pub const INTERNAL_ERROR: i64 = -32603;
    /// An HTTP routing header is missing or disagrees with the body.
    pub const HEADER_MISMATCH: i64 = -32020;
    /// The server needs a client capability (or extension) the request did not declare.
    pub const MISSING_REQUIRED_CLIENT_CAPABILITY: i64 = -32021;
    /// The server does not speak the requested protocol version.
    pub const UNSUPPORTED_PROTOCOL_VERSION: i64 = -32022;
}

/// A JSON-RPC request id: a number or a string.
///
/// The client numbers its requests; servers echo the id in their response.
#[derive(Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(untagged)]
pub enum RequestId {
    /// A numeric id.
    Number(i64),
    /// A string id.
    String(String),
}

impl fmt::Debug for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for RequestId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RequestId::Number(n) => write!(f, "{n}"),
            RequestId::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl From<i64> for RequestId {
    fn from(n: i64) -> Self {
        RequestId::Number(n)
    }
}

impl From<&str> for RequestId {
    fn from(s: &str) -> Self {
        RequestId::String(s.to_owned())
    }
}

/// The error object of a JSON-RPC error response, or of a `failed` task.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// The error code; see [`error_codes`].
    pub code: i64,
    /// A short description from the server.
    #[serde(default)]
    pub message: String,
    /// Extra data from the server, such as `supported` versions for `-32022`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with a code and a message and no data.
    pub fn new(code: i64, message: impl Into<String>) -> Self {
        RpcError {
            code,
            message: message.into(),
            data: None,
        }
    }

    /// Adds `data` to the error.
    pub fn with_data(mut self, data: Value) -> Self {
        self.data = Some(data);
        self
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} (code {})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// One message received from a peer, classified by its envelope.
///
/// Payloads stay as raw JSON until the receiver knows what type to expect,
/// so each message is parsed once.
#[derive(Debug)]
#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
pub enum Message {
    /// A request (has `id` and `method`).
    Request {
        /// Its id.
        id: RequestId,
        /// The method name.
        method: String,
        /// Its params, unparsed.
        params: Option<Box<RawValue>>,
    },
    /// A notification (has `method`, no `id`).
    Notification {
        /// The method name.
        method: String,
        /// Its params, unparsed.
        params: Option<Box<RawValue>>,
    },
    /// A successful response.
    Response {
        /// The id of the request it answers.
        id: RequestId,
        /// The `result` member, unparsed.
        result: Box<RawValue>,
    },
    /// An error response. `id` is `None` when the peer could not read the request's id.
    Error {
        /// The id of the request it answers, if the peer knew it.
        id: Option<RequestId>,
        /// The error.
        error: RpcError,
    },
}

#[derive(Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    params: Option<Box<RawValue>>,
    /// Present even when `null`: a response whose result is `null` is
    /// still a response (JSON-RPC 2.0 allows any value).
    #[serde(default, deserialize_with = "present")]
    result: Option<Box<RawValue>>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// Reads a member that is there as `Some`, whatever its value, `null`
/// included (with `#[serde(default, deserialize_with = "present")]`; a
/// plain `Option` reads `null` as absent). For the members whose presence
/// says what a JSON-RPC message is: `"result": null` is a response.
pub(crate) fn present<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    T::deserialize(d).map(Some)
}

#[cfg_attr(not(feature = "fuzzing"), allow(unreachable_pub))]
impl Message {
    /// Parses one JSON-RPC message.
    ///
    /// # Errors
    ///
    /// Fails when the text is not JSON, is not an object, or fits none of the
    /// four envelope shapes.
    pub(crate) fn from_json(text: &str) -> Result<Message, super::DecodeError> {
        let env: Envelope = serde_json::from_str(text).map_err(super::DecodeError::json)?;
        match env {
            Envelope {
                method: Some(method),
                id: Some(id),
                params,
                ..
            } => Ok(Message::Request { id, method, params }),
            Envelope {
                method: Some(method),
                id: None,
                params,
                ..
            } => Ok(Message::Notification { method, params }),
            Envelope {
                error: Some(error),
                id,
                ..
            } => Ok(Message::Error { id, error }),
            Envelope {
                result: Some(result),
                id: Some(id),
                ..
            } => Ok(Message::Response { id, result }),
            _ => Err(super::DecodeError::invalid(
                "a JSON-RPC message needs a method, a result or an error",
            )),
        }
    }
}

/// A request as written on the wire: `{"jsonrpc":"2.0","id":…,"method":…,"params":…}`.
#[derive(Serialize)]
pub(crate) struct OutRequest<'a, P: Serialize> {
    pub(crate) jsonrpc: &'static str,
    pub(crate) id: &'a RequestId,
    pub(crate) method: &'a str,
    pub(crate) params: P,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_envelopes() {
        let m = Message::from_json(r#"{"jsonrpc":"2.0","id":4,"result":null}"#).unwrap();
        assert!(
            matches!(&m, Message::Response { result, .. } if result.get() == "null"),
            "a null result is still a response: {m:?}"
        );
        let m = Message::from_json(r#"{"jsonrpc":"2.0","id":3,"result":{"a":1}}"#).unwrap();
        assert!(matches!(
            m,
            Message::Response {
                id: RequestId::Number(3),
                ..
            }
        ));
        let m = Message::from_json(
            r#"{"jsonrpc":"2.0","id":"x","error":{"code":-32601,"message":"no"}}"#,
        )
        .unwrap();
        assert!(
            matches!(m, Message::Error { id: Some(RequestId::String(_)), error } if error.code == -32601)
        );
        let m = Message::from_json(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"bad"}}"#,
        )
        .unwrap();
        assert!(matches!(m, Message::Error { id: None, .. }));
        let m =
            Message::from_json(r#"{"jsonrpc":"2.0","method":"notifications/tasks","params":{}}"#)
                .unwrap();
        assert!(matches!(m, Message::Notification { .. }));
        assert!(Message::from_json(r#"{"jsonrpc":"2.0","id":1}"#).is_err());
        assert!(Message::from_json("[1,2]").is_err());
        assert!(Message::from_json("not json").is_err());
    }

    proptest::proptest! {
        /// Whatever value `result` holds, `null` included, the message is
        /// the response to its request (never dropped as malformed, which
        /// would leave the request waiting for its timeout).
        #[test]
        fn any_result_value_is_a_response(value in json_value()) {
            let text = serde_json::json!({"jsonrpc": "2.0", "id": 9, "result": value}).to_string();
            let m = Message::from_json(&text).unwrap();
            proptest::prop_assert!(
                matches!(&m, Message::Response { id: RequestId::Number(9), result }
                    if serde_json::from_str::<serde_json::Value>(result.get()).unwrap() == value),
                "{text} read as {m:?}"
            );
        }
    }

    fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(serde_json::Value::Null),
            any::<bool>().prop_map(serde_json::Value::from),
            any::<i64>().prop_map(serde_json::Value::from),
            "[a-z]{0,8}".prop_map(serde_json::Value::from),
        ];
        leaf.prop_recursive(3, 16, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(serde_json::Value::from),
                prop::collection::btree_map("[a-z]{1,4}", inner, 0..4)
                    .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
            ]
        })
    }
}
