//! The JSON-RPC envelopes the test server writes: responses, error
//! responses and notifications, ready for the connection's writer.
//!
//! The crate's protocol module decodes what a server sends; it has no
//! writer for the server's side, so the envelopes are built here.

use serde_json::{Value, json};

use crate::protocol::{RequestId, RpcError};
use crate::transport::Outbound;

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
