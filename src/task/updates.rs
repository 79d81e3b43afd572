//! `Task<Pending>::updates()`: a stream of snapshots for progress display.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use futures_core::Stream;

use super::core::Core;
use super::drive::{Goal, drive};
use super::observed::Observed;
use super::snapshot::Snapshot;
use super::{Pending, Task, TaskState};
use crate::error::Error;

type Step = Pin<Box<dyn Future<Output = (Box<Core>, Observed, crate::Result<()>)> + Send>>;

/// The snapshots of a task as it changes: the current one first, then one
/// per change of status or status message, the terminal one last.
///
/// Fed by pushes when the task was started with `listen()`, by polls at the
/// server's interval otherwise. An `input_required` snapshot is yielded
/// like any other; its requests are then answered with the client's
/// handlers as [`Task::finish`] would, and the stream goes on (the
/// `working` snapshot after the answer comes next). When a request cannot
/// be answered, the `input_required` snapshot is the last. An
/// error (such as the wait's deadline) is yielded once and ends the stream.
/// [`Updates::into_state`] gives the handle back.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
/// # use std::time::Duration;
/// # use mcp_tasks::{Client, TaskState};
/// # use mcp_tasks::protocol::CallToolResult;
/// # use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
/// # let server = TestServer::new().tool(ScriptedTool::task("export", TaskScript::new()
/// #     .poll_interval(Duration::from_millis(5)).working(Duration::from_millis(5), "half way")
/// #     .complete(Duration::from_millis(5), CallToolResult::text("done"))));
/// # let client = Client::connect(server.connect()).await?;
/// use std::future::poll_fn;
/// use std::pin::Pin;
/// use futures_core::Stream;
///
/// let TaskState::Pending(task) = client.task().call_tool("export", ()).await? else { return Ok(()) };
/// let mut updates = task.updates();
/// while let Some(snapshot) = poll_fn(|cx| Pin::new(&mut updates).poll_next(cx)).await {
///     let snapshot = snapshot?;
///     println!("{}: {:?}", snapshot.status, snapshot.status_message);
/// }
/// assert!(updates.into_state().unwrap().is_finished());
/// # Ok(()) }
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct Updates {
    first: Option<Snapshot>,
    step: Option<Step>,
    state: Option<TaskState>,
    ended: bool,
}

impl fmt::Debug for Updates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Updates")
            .field("waiting", &self.step.is_some())
            .field("state", &self.state)
            .field("ended", &self.ended)
            .finish()
    }
}

impl Updates {
    pub(crate) fn new(task: Task<Pending>) -> Updates {
        Updates {
            first: Some(task.snapshot().clone()),
            step: None,
            state: Some(TaskState::Pending(task)),
            ended: false,
        }
    }

    /// The handle, in its latest state. `None` if the stream was dropped
    /// out of a wait it had started (polled, then abandoned before the
    /// change arrived).
    pub fn into_state(self) -> Option<TaskState> {
        self.state
    }
}

impl Stream for Updates {
    type Item = Result<Snapshot, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(first)));
        }
        if this.ended {
            return Poll::Ready(None);
        }
        if this.step.is_none() {
            match this.state.take() {
                Some(TaskState::Pending(task)) => {
                    this.step = Some(Box::pin(drive(task.core, Observed::Pending, Goal::Updates)));
                }
                Some(TaskState::InputRequired(task)) => {
                    let observed = Observed::InputRequired(task.state.requests);
                    this.step = Some(Box::pin(drive(task.core, observed, Goal::Updates)));
                }
                other => {
                    this.state = other;
                    this.ended = true;
                    return Poll::Ready(None);
                }
            }
        }
        let step = this.step.as_mut().expect("a wait is in flight");
        let (core, observed, result) = match step.as_mut().poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(done) => done,
        };
        this.step = None;
        let snapshot = core.snapshot().clone();
        let state = TaskState::from_core(core, observed);
        let item = match result {
            Ok(()) => {
                // A question the wait answers itself is shown, then the
                // stream goes on; one it cannot answer ends the stream.
                this.ended = match &state {
                    TaskState::Pending(_) => false,
                    TaskState::InputRequired(task) => !task.core.can_answer(&task.state.requests),
                    TaskState::Finished(_) => true,
                };
                Ok(snapshot)
            }
            Err(e) => {
                this.ended = true;
                Err(e)
            }
        };
        this.state = Some(state);
        Poll::Ready(Some(item))
    }
}

impl Task<Pending> {
    /// A stream of the task's snapshots as it changes; see [`Updates`].
    pub fn updates(self) -> Updates {
        Updates::new(self)
    }
}
