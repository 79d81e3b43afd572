//! What starting a call takes and gives, whatever the era.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::client::connection::{Pump, Tracking};
use crate::error::{Error, Result};
use crate::input::InputHandlers;
use crate::protocol::{CallToolResult, CreateTaskResult, TaskOptIn, Tool};

/// One `tools/call` to start.
pub(crate) struct Call<'a> {
    pub(crate) name: &'a str,
    pub(crate) arguments: Option<Value>,
    /// What the client knows of its tools: whether a call carries the
    /// legacy `task` opt-in follows from it.
    pub(crate) tools: &'a dyn ToolListing,
    /// The lifetime the opt-in asks for, when it is sent.
    pub(crate) ttl: Option<Duration>,
    /// Who answers input rounds, and how many rounds at most.
    pub(crate) handlers: &'a InputHandlers,
    pub(crate) max_rounds: usize,
    pub(crate) timeout: Duration,
    /// Progress reports asked for, and where they go. Where the era keeps
    /// a call's progress token for its task's life, a task the call
    /// becomes takes it along (see [`NewTask::progress`]).
    pub(crate) progress: Option<Tracking>,
}

impl Call<'_> {
    /// The legacy opt-in for a tool whose listing said `listed` (`None`:
    /// not listed): sent when the listing asked for it.
    pub(super) fn opt_in(&self, listed: Option<bool>) -> Option<TaskOptIn> {
        (listed == Some(true)).then(|| {
            TaskOptIn::new(
                self.ttl
                    .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)),
            )
        })
    }
}

/// A future the wire awaits without knowing its type.
pub(crate) type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// What the client remembers of the server's tools from its last
/// complete listing, and how it lists them again: the era decides whether
/// a call needs a listing first (a 2025-11-25 server that runs tasks
/// wants the opt-in on the tools listed for it).
pub(crate) trait ToolListing: Sync {
    /// What the last listing said of `name`: `None` when it did not name
    /// it (or there is none), else whether it wants the legacy opt-in.
    fn opt_in(&self, name: &str) -> Option<bool>;

    /// Whether a listing is remembered.
    fn has_listed(&self) -> bool;

    /// Lists every tool, as [`Client::list_tools`](crate::Client::list_tools)
    /// does (and remembered the same way).
    fn list(&self) -> BoxFuture<'_, Result<Vec<Tool>>>;
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

/// The error for a `tools/call` answer that did not decode: a protocol
/// error, carrying the task's id when the answer names the task it was
/// creating, so that no task is left running unknown (both eras).
pub(super) fn undecodable_call(raw: &RawValue, e: impl std::fmt::Display) -> Error {
    let error = Error::protocol(e.to_string()).with_method(crate::protocol::method::TOOLS_CALL);
    match crate::protocol::result::created_task_id(raw.get()) {
        Some(id) => error.with_task(&id),
        None => error,
    }
}
