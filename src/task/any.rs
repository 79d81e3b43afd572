//! What a [`TaskState`] offers: its id, status and reference in any
//! state, the typed handle out of it, and a wait to its end. The type is
//! defined beside [`Task`], which returns it and which it holds.

use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::time::Duration;

use super::TaskRef;
use super::handle::{Task, TaskError, TaskState};
use super::state::{Finished, InputRequired, Pending};
use crate::protocol::{TaskId, TaskStatus};

impl TaskState {
    /// The task's id; `None` for an immediate result.
    pub fn id(&self) -> Option<&TaskId> {
        match self {
            TaskState::Pending(t) => Some(t.id()),
            TaskState::InputRequired(t) => Some(t.id()),
            TaskState::Finished(t) => t.id(),
        }
    }

    /// A serialisable reference to resume the task later, in any state;
    /// `None` only for an immediate result (the server answered at once,
    /// without a task).
    ///
    /// ```
    /// # async fn f(client: mcp_tasks::Client) -> mcp_tasks::Result<()> {
    /// let state = client.task().call_tool("build", serde_json::json!({})).await?;
    /// if let Some(reference) = state.reference() {
    ///     // Keep it (it serialises) to resume the task after a restart.
    ///     let kept = serde_json::to_string(&reference).unwrap();
    /// #   drop(kept);
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn reference(&self) -> Option<TaskRef> {
        match self {
            TaskState::Pending(t) => Some(t.reference()),
            TaskState::InputRequired(t) => Some(t.reference()),
            TaskState::Finished(t) => t.reference(),
        }
    }

    /// The last status the client observed.
    pub fn status(&self) -> TaskStatus {
        match self {
            TaskState::Pending(t) => t.snapshot().status,
            TaskState::InputRequired(t) => t.snapshot().status,
            TaskState::Finished(t) => t.snapshot().status,
        }
    }

    /// The last status message.
    pub fn status_message(&self) -> Option<&str> {
        match self {
            TaskState::Pending(t) => t.status_message(),
            TaskState::InputRequired(t) => t.status_message(),
            TaskState::Finished(t) => t.status_message(),
        }
    }

    /// Whether the task has ended.
    pub fn is_finished(&self) -> bool {
        matches!(self, TaskState::Finished(_))
    }

    /// The finished handle, or `self` back.
    ///
    /// # Errors
    ///
    /// `Err(self)` when the task has not finished.
    pub fn try_into_finished(self) -> Result<Task<Finished>, TaskState> {
        match self {
            TaskState::Finished(t) => Ok(t),
            other => Err(other),
        }
    }

    /// The pending handle, or `self` back.
    ///
    /// # Errors
    ///
    /// `Err(self)` in any other state.
    pub fn try_into_pending(self) -> Result<Task<Pending>, TaskState> {
        match self {
            TaskState::Pending(t) => Ok(t),
            other => Err(other),
        }
    }

    /// The input-required handle, or `self` back.
    ///
    /// # Errors
    ///
    /// `Err(self)` in any other state.
    pub fn try_into_input_required(self) -> Result<Task<InputRequired>, TaskState> {
        match self {
            TaskState::InputRequired(t) => Ok(t),
            other => Err(other),
        }
    }

    /// Drives the task to its end, whatever its state; see
    /// [`Task::<Pending>::finish`]. A finished handle is returned at once.
    ///
    /// # Errors
    ///
    /// As [`Task::<Pending>::finish`].
    pub async fn finish(self) -> Result<Task<Finished>, TaskError<TaskState>> {
        match self {
            TaskState::Pending(t) => t.finish().await,
            TaskState::InputRequired(t) => t.finish().await,
            TaskState::Finished(t) => Ok(t),
        }
    }

    /// [`finish`](TaskState::finish), bounded by `bound` for this wait
    /// instead of the builder's `timeout`; see
    /// [`Task::<Pending>::finish_within`]. A finished handle is returned
    /// at once.
    ///
    /// ```
    /// # async fn f(state: mcp_tasks::TaskState) {
    /// # use std::time::Duration;
    /// match state.finish_within(Duration::from_secs(5)).await {
    ///     Ok(done) => println!("{:?}", done.outcome()),
    ///     Err(e) if e.error().is_deadline() => {
    ///         let still_running = e.into_task(); // wait again later, or cancel
    /// #       drop(still_running);
    ///     }
    ///     Err(e) => println!("{e}"),
    /// }
    /// # }
    /// ```
    ///
    /// # Errors
    ///
    /// As [`Task::<Pending>::finish_within`].
    pub async fn finish_within(
        self,
        bound: Duration,
    ) -> Result<Task<Finished>, TaskError<TaskState>> {
        match self {
            TaskState::Pending(t) => t.finish_within(bound).await,
            TaskState::InputRequired(t) => t.finish_within(bound).await,
            TaskState::Finished(t) => Ok(t),
        }
    }
}

impl From<Task<Pending>> for TaskState {
    fn from(t: Task<Pending>) -> Self {
        TaskState::Pending(t)
    }
}

impl From<Task<InputRequired>> for TaskState {
    fn from(t: Task<InputRequired>) -> Self {
        TaskState::InputRequired(t)
    }
}

impl From<Task<Finished>> for TaskState {
    fn from(t: Task<Finished>) -> Self {
        TaskState::Finished(t)
    }
}

impl IntoFuture for TaskState {
    type Output = Result<Task<Finished>, TaskError<TaskState>>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    /// Same as [`TaskState::finish`].
    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.finish())
    }
}
