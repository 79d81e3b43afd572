//! How a task ended.

use serde::de::DeserializeOwned;

use crate::error::{Error, Kind, Result};
use crate::protocol::{CallToolResult, RpcError};

/// How a finished task ended. Data, not an error: a failed task is a
/// successful observation of a failure.
#[derive(Debug, Clone, PartialEq)]
#[allow(clippy::large_enum_variant)]
pub enum Outcome {
    /// The tool ran to the end. Its result may still report a tool error
    /// (`is_error: true`): the tool ran and says it failed.
    Completed(CallToolResult),
    /// The task failed with the JSON-RPC error the call would have returned.
    Failed(RpcError),
    /// The task was cancelled.
    Cancelled,
    /// The lifetime set with `with_ttl` passed before the task finished; the
    /// client sent `tasks/cancel`.
    Expired,
}

impl Outcome {
    /// Whether the task completed (even with a tool error).
    pub fn is_completed(&self) -> bool {
        matches!(self, Outcome::Completed(_))
    }

    /// The result, when the task completed.
    pub fn result(&self) -> Option<&CallToolResult> {
        match self {
            Outcome::Completed(r) => Some(r),
            _ => None,
        }
    }

    /// Turns the outcome into a `Result` for `?`.
    ///
    /// # Errors
    ///
    /// `Failed`, `Cancelled` and `Expired` give an error that says so;
    /// `Failed`'s is also [`Error::is_rpc`], with the task's error in
    /// [`Error::rpc_error`]. Match the outcome itself to tell them apart.
    /// A completed tool error is `Ok`.
    pub fn into_result(self) -> Result<CallToolResult> {
        match self {
            Outcome::Completed(r) => Ok(r),
            Outcome::Failed(e) => Err(Error::new(Kind::TaskFailed(e))),
            Outcome::Cancelled => Err(Error::new(Kind::Cancelled)),
            Outcome::Expired => Err(Error::new(Kind::Expired)),
        }
    }

    /// The result of a completed task, or the error `into_result` gives.
    fn completed(&self) -> Result<&CallToolResult> {
        match self {
            Outcome::Completed(r) => Ok(r),
            Outcome::Failed(e) => Err(Error::new(Kind::TaskFailed(e.clone()))),
            Outcome::Cancelled => Err(Error::new(Kind::Cancelled)),
            Outcome::Expired => Err(Error::new(Kind::Expired)),
        }
    }

    /// Decodes `structuredContent` of a completed result as `T`.
    ///
    /// # Errors
    ///
    /// As [`Outcome::into_result`] when the task did not complete;
    /// [`Error::is_protocol`] when there is no structured content or it does
    /// not decode as `T`.
    pub fn structured<T: DeserializeOwned>(&self) -> Result<T> {
        let value = self
            .completed()?
            .structured_content
            .as_ref()
            .ok_or_else(|| Error::protocol("the result has no structuredContent"))?;
        T::deserialize(value)
            .map_err(|e| Error::protocol(format!("structuredContent does not decode: {e}")))
    }
}
