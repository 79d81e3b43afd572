//! What the test server writes: the JSON-RPC envelopes (responses, error
//! responses and notifications, ready for the connection's writer) and
//! the marks every result carries (`resultType`, `_meta.serverInfo`).
//!
//! The crate's protocol module decodes what a server sends; it has no
//! writer for the server's side, so the envelopes are built here.

use serde_json::{Map, Value, json};

use crate::protocol::{InputRequests, META_SERVER_INFO, RequestId, RpcError};
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
