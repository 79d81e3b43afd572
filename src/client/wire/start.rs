//! What starting a call takes and gives, whatever the era.

use std::time::Duration;

use serde_json::Value;

use crate::client::connection::Tracking;
use crate::input::InputHandlers;
use crate::protocol::{CallToolResult, CreateTaskResult, TaskOptIn};

/// One `tools/call` to start.
pub(crate) struct Call<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: Option<Value>,
    /// The legacy `task` opt-in, when the tool's listing asked for it.
    pub(crate) opt_in: Option<TaskOptIn>,
    /// Whether the tool was listed at all (for the hint on a refusal).
    pub(crate) listed: bool,
    /// Who answers input rounds, and how many rounds at most.
    pub(crate) handlers: &'a InputHandlers,
    pub(crate) max_rounds: usize,
    pub(crate) timeout: Duration,
    /// Progress reports asked for, and where they go.
    pub(crate) progress: Option<&'a mut Tracking>,
}

/// How a started call stands once input rounds are done.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Started {
    /// The server answered at once.
    Complete(CallToolResult),
    /// The call became a task.
    Task(CreateTaskResult),
}
