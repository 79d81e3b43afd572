//! Wire types of MCP revision 2026-07-28 and its Tasks extension.
//!
//! Everything here is plain data with serde implementations: no I/O, no tokio.
//! Decoding is tolerant where real servers differ (unknown fields are ignored,
//! `ttlMs: null` is accepted, non-positive poll intervals read as absent,
//! timestamps stay strings) and strict where the protocol demands it (an
//! unknown `resultType` or task status is an error).
//!
//! Most users never touch these types directly: the [`Client`](crate::Client)
//! and the task handles build and read them. What the client returns or
//! takes is public, so that results can be inspected; the requests' params
//! and the raw results the client turns into those stay inside the crate.

mod base64;
mod completion;
mod decode_error;
mod discover;
pub(crate) mod fnv;
pub(crate) mod input;
pub(crate) mod jsonrpc;
mod legacy_tasks;
mod lenient;
mod logging;
mod meta;
pub(crate) mod method;
mod progress;
mod prompts;
mod resources;
pub(crate) mod result;
pub(crate) mod subscriptions;
pub(crate) mod tagged;
pub(crate) mod tasks;
mod timestamp;
pub(crate) mod tools;
pub(crate) mod versions;

/// The protocol versions this client speaks, newest first: 2026-07-28,
/// then the initialize era's (2025-11-25 and older). What
/// [`ClientBuilder::protocol_version`](crate::ClientBuilder::protocol_version)
/// pins, and what an `initialize` reply may settle on.
///
/// ```
/// let versions: Vec<&str> = mcp_tasks::protocol::supported_versions().collect();
/// assert_eq!(versions[0], mcp_tasks::protocol::PROTOCOL_VERSION);
/// assert!(versions.contains(&"2025-11-25"));
/// ```
pub fn supported_versions() -> impl Iterator<Item = &'static str> {
    versions::SUPPORTED.iter().map(|revision| revision.version)
}

pub(crate) use completion::{CompleteParams, CompleteResult};
pub use completion::{
    Completion, CompletionArgument, CompletionContext, CompletionRef, MAX_COMPLETION_VALUES,
};
pub use decode_error::DecodeError;
pub use discover::{DiscoverResult, ServerCapabilities};
pub(crate) use input::InputRequiredResult;
pub use input::{
    CreateMessageRequest, CreateMessageResult, ElicitAction, ElicitRequest, ElicitResult,
    InputRequest, InputRequests, InputResponse, InputResponses, ListRootsRequest, ListRootsResult,
    Root, SamplingMessage,
};
// Only the HTTP transport reads a field this way outside `jsonrpc`.
pub(crate) use jsonrpc::Message;
#[cfg(feature = "http")]
pub(crate) use jsonrpc::present;
pub use jsonrpc::{RequestId, RpcError, error_codes};
pub(crate) use legacy_tasks::{
    LegacyCallAnswer, declares_task_calls, related_task, with_related_task,
};
pub use legacy_tasks::{LegacyTask, ListTasksResult, META_RELATED_TASK};
pub(crate) use logging::SetLevelParams;
pub use logging::{LogLevel, LogMessage};
pub use meta::{
    ClientCapabilities, ElicitationCapability, Implementation, META_CLIENT_CAPABILITIES,
    META_CLIENT_INFO, META_PROTOCOL_VERSION, META_SERVER_INFO, META_SUBSCRIPTION_ID,
    PROTOCOL_VERSION, SamplingCapability, TASKS_EXTENSION,
};
pub use progress::Progress;
pub(crate) use progress::ProgressParams;
pub(crate) use prompts::{GetPromptParams, ListPromptsResult};
pub use prompts::{GetPromptResult, Prompt, PromptArgument, PromptMessage, Role};
pub(crate) use resources::{
    ListParams, ListResourceTemplatesResult, ListResourcesResult, ResourceParams,
};
pub use resources::{
    ReadResourceResult, Resource, ResourceBody, ResourceContents, ResourceTemplate, ResourceUpdated,
};
pub(crate) use result::CallToolResponse;
pub(crate) use subscriptions::{ListenParams, SubscriptionAcknowledged, SubscriptionFilter};
pub(crate) use tagged::ResultType;
pub(crate) use tasks::{CancelTaskParams, CreateTaskResult, GetTaskParams};
pub use tasks::{DetailedTask, TaskId, TaskInfo, TaskPayload, TaskStatus};
pub(crate) use timestamp::iso8601_utc;

pub(crate) use tools::{CallToolParams, ListToolsResult};
pub use tools::{
    CallToolResult, ContentBlock, TaskOptIn, TaskSupport, Tool, ToolAnnotations, ToolExecution,
};
