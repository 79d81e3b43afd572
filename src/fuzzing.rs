//! The decoders the fuzz targets and benchmarks drive directly. Not part
//! of the public API: no stability promise, and hidden from the
//! documentation (feature `fuzzing`).
//!
//! The wire types the decoders return are re-exported here, and only
//! here: the crate keeps them to itself otherwise.

pub use crate::protocol::input::InputRequiredResult;
pub use crate::protocol::jsonrpc::Message;
pub use crate::protocol::result::CallToolResponse;
pub use crate::protocol::subscriptions::{SubscriptionAcknowledged, SubscriptionFilter};
pub use crate::protocol::tagged::ResultType;
pub use crate::protocol::tasks::CreateTaskResult;
pub use crate::protocol::tools::ListToolsResult;

/// Why an input did not decode: the decoder's own text.
pub type DecodeError = Box<dyn std::error::Error + Send + Sync>;

/// Decodes a `tools/call` result, as the client does; `tasks_declared`
/// says whether the request declared the Tasks extension.
///
/// # Errors
///
/// Invalid JSON, an unknown `resultType`, an undeclared task, or a body
/// that does not fit its `resultType`.
pub fn call_tool_response(
    json: &str,
    tasks_declared: bool,
) -> Result<CallToolResponse, DecodeError> {
    Ok(CallToolResponse::decode(json, tasks_declared)?)
}

/// Reads the `resultType` of a JSON result object.
///
/// # Errors
///
/// Invalid JSON, or a `resultType` the crate does not know.
pub fn result_type(json: &str) -> Result<ResultType, DecodeError> {
    Ok(ResultType::of(json)?)
}

/// Parses one JSON-RPC message, as the client's read loop does.
///
/// # Errors
///
/// The text is not JSON, not an object, or fits none of the four
/// envelope shapes.
pub fn message(text: &str) -> Result<Message, DecodeError> {
    Ok(Message::from_json(text)?)
}
