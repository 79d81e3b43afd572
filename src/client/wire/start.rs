//! What starting a call takes and gives, whatever the era.

use std::time::Duration;

use serde_json::Value;

use crate::client::connection::{Pump, Tracking};
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
    /// Progress reports asked for, and where they go. Where the era keeps
    /// a call's progress token for its task's life, a task the call
    /// becomes takes it along (see [`NewTask::progress`]).
    pub(crate) progress: Option<Tracking>,
}

/// How a started call stands once input rounds are done.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Started {
    /// The server answered at once.
    Complete(CallToolResult),
    /// The call became a task.
    Task(NewTask),
}

/// A task a call became, with what its era keeps for it while a handle
/// lives: the task layer holds both and looks at neither.
#[derive(Debug)]
pub(crate) struct NewTask {
    pub(crate) created: CreateTaskResult,
    /// The era's hold on the task (see [`TaskHold`]).
    pub(crate) hold: Option<TaskHold>,
    /// The call's progress reports, still going to its callback (a
    /// 2025-11-25 task keeps its call's token).
    pub(crate) progress: Option<Pump>,
}

/// What a handle keeps of its task for the era while it lives (a
/// 2025-11-25 session holds the task's input requests for it). Dropping
/// it lets the task go. Opaque: the task layer only keeps it.
pub(crate) struct TaskHold {
    _held: Box<dyn std::any::Any + Send + Sync>,
}

impl TaskHold {
    pub(super) fn new(held: impl std::any::Any + Send + Sync) -> Self {
        TaskHold {
            _held: Box::new(held),
        }
    }
}

impl std::fmt::Debug for TaskHold {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TaskHold")
    }
}
