//! What the test server writes: the JSON-RPC envelopes (responses, error
//! responses and notifications, ready for the connection's writer) and
//! the marks every result carries (`resultType`, `_meta.serverInfo`); and
//! how it reads the input responses a retry brings.
//!
//! The crate's protocol module decodes what a server sends; it has no
//! writer for the server's side, so the envelopes are built here.

use serde_json::{Map, Value, json};

use crate::protocol::{
    InputRequests, InputResponse, META_SERVER_INFO, RequestId, RpcError, error_codes,
};
use crate::transport::Outbound;

/// The name in the server's `serverInfo`.
const SERVER_NAME: &str = "mcp-tasks-test-server";

/// A JSON-RPC response.
pub(super) fn response(id: &RequestId, result: Value) -> Outbound {
    let json = json!({ "jsonrpc": "2.0", "id": id, "result": result });
    Outbound::new(json.to_string(), "")
}

/// A JSON-RPC error response.
pub(super) fn error_response(id: &RequestId, error: &RpcError) -> Outbound {
    let json = json!({ "jsonrpc": "2.0", "id": id, "error": error });
    Outbound::new(json.to_string(), "")
}

/// A JSON-RPC notification.
pub(super) fn notification(method: &str, params: Value) -> Outbound {
    let json = json!({ "jsonrpc": "2.0", "method": method, "params": params });
    Outbound::new(json.to_string(), method)
}

fn server_info() -> Value {
    json!({ "name": SERVER_NAME, "version": env!("CARGO_PKG_VERSION") })
}

/// Adds `resultType` and `_meta.serverInfo` to a result object.
pub(super) fn finish(value: Value, result_type: &str, with_info: bool) -> Value {
    let mut object = match value {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    object.insert("resultType".into(), json!(result_type));
    if with_info {
        let meta = object
            .entry("_meta")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(meta) = meta {
            meta.insert(META_SERVER_INFO.into(), server_info());
        }
    }
    Value::Object(object)
}

/// An `input_required` result asking `requests`, with `requestState`
/// when given.
pub(super) fn input_required(requests: &InputRequests, state: Option<&str>) -> Value {
    let mut body = json!({ "inputRequests": requests });
    if let Some(state) = state {
        body["requestState"] = json!(state);
    }
    finish(body, "input_required", false)
}

/// An invalid-params error saying `message`.
pub(super) fn invalid(message: impl Into<String>) -> RpcError {
    RpcError::new(error_codes::INVALID_PARAMS, message)
}

/// A retry's `inputResponses`: `None` when absent or null; an error when
/// not an object.
pub(super) fn input_responses(params: &Value) -> Result<Option<&Map<String, Value>>, RpcError> {
    match params.get("inputResponses") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(map)) => Ok(Some(map)),
        Some(_) => Err(invalid("inputResponses must be an object")),
    }
}

/// `responses` sorted against `requests`: the answers given, by key, and
/// the requests still unanswered. An answer that is no input response is
/// an error naming its key.
pub(super) fn sort_answers(
    requests: &InputRequests,
    responses: Option<&Map<String, Value>>,
) -> Result<(Map<String, Value>, InputRequests), RpcError> {
    let mut answers = Map::new();
    let mut missing = InputRequests::new();
    for (key, request) in requests {
        match responses.and_then(|r| r.get(key)) {
            Some(answer) => {
                serde_json::from_value::<InputResponse>(answer.clone())
                    .map_err(|e| invalid(format!("inputResponses[{key:?}] is malformed: {e}")))?;
                answers.insert(key.clone(), answer.clone());
            }
            None => {
                missing.insert(key.clone(), request.clone());
            }
        }
    }
    Ok((answers, missing))
}
