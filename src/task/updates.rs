//! `Task<Pending>::updates()`: the snapshots of a task as it changes.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures_core::Stream;
use tokio::sync::Mutex;

use super::core::Core;
use super::drive::{Goal, wait};
use super::observed::Observed;
use super::trace::traced;
use super::{Pending, Task, TaskState};
use crate::error::Error;
use crate::protocol::TaskInfo;

/// What a wait works on. Shared with the stream's step in flight, which
/// holds the lock while it waits, so that dropping the step gives it back.
struct HandleParts {
    core: Box<Core>,
    observed: Observed,
}

type Step = Pin<Box<dyn Future<Output = (Result<TaskInfo, Error>, bool)> + Send>>;

/// The snapshots of a task as it changes: the current one first, then one
/// per change of status or status message, the terminal one last.
///
/// Fed by pushes when the task was started with `listen()`, by polls at the
/// server's interval otherwise. An `input_required` snapshot is yielded
/// like any other; its requests are then answered with the client's
/// handlers as [`Task::finish`] would, and the stream goes on (the
/// `working` snapshot after the answer comes next). When a request cannot
/// be answered, the `input_required` snapshot is the last. An error (such
/// as the wait's deadline) is yielded once and ends the stream.
///
/// Read it with [`Updates::next`], or as a [`Stream`]. Either way the
/// handle is never lost: [`Updates::into_task`] gives it back in its latest
/// state, also after a wait was dropped half way (inside `select!` or a
/// timeout).
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
/// let TaskState::Pending(task) = client.task().call_tool("export", ()).await? else { return Ok(()) };
/// let mut updates = task.updates();
/// while let Some(snapshot) = updates.next().await {
///     let snapshot = snapshot?;
///     println!("{}: {:?}", snapshot.status, snapshot.status_message);
/// }
/// assert!(updates.into_task().is_finished());
/// # Ok(()) }
/// ```
#[must_use = "streams do nothing unless polled"]
pub struct Updates {
    first: Option<TaskInfo>,
    parts: Arc<Mutex<HandleParts>>,
    /// The stream's wait in flight, between two polls.
    step: Option<Step>,
    ended: bool,
}

impl fmt::Debug for Updates {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Updates")
            .field("waiting", &self.step.is_some())
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

/// One wait for the next change, on what `parts` holds; the item to yield
/// and whether the stream ends after it.
async fn step(parts: &mut HandleParts) -> (Result<TaskInfo, Error>, bool) {
    let HandleParts { core, observed } = parts;
    let bound = core.settings().timeout;
    match traced!(core.span(), wait(core, observed, Goal::Updates, bound)) {
        Ok(()) => {
            // A question the wait answers itself is shown, then the stream
            // goes on; one it cannot answer ends the stream.
            let ended = match observed {
                Observed::Pending => false,
                Observed::InputRequired(requests) => !core.can_answer(requests),
                Observed::Finished(_) => true,
            };
            (Ok(core.snapshot().clone()), ended)
        }
        Err(e) => (Err(e), true),
    }
}

impl Updates {
    pub(crate) fn new(task: Task<Pending>) -> Updates {
        Updates {
            first: Some(task.snapshot().clone()),
            parts: Arc::new(Mutex::new(HandleParts {
                core: task.core,
                observed: Observed::Pending,
            })),
            step: None,
            ended: false,
        }
    }

    /// The next snapshot; `None` once the stream has ended.
    ///
    /// # Cancel safety
    ///
    /// Cancel-safe: dropping the future (in `select!`, or a timeout) loses
    /// nothing. The handle stays in the stream, and the next call waits on.
    pub async fn next(&mut self) -> Option<Result<TaskInfo, Error>> {
        if let Some(first) = self.first.take() {
            return Some(Ok(first));
        }
        // A stream poll left half way gives the handle back when dropped.
        self.step = None;
        if self.ended {
            return None;
        }
        let mut parts = self.parts.lock().await;
        let (item, ended) = step(&mut parts).await;
        self.ended = ended;
        Some(item)
    }

    /// The handle, in its latest state.
    pub fn into_task(self) -> TaskState {
        let Updates { parts, step, .. } = self;
        // The wait in flight, if any, holds the lock: dropping it lets go.
        drop(step);
        let HandleParts { core, observed } = match Arc::try_unwrap(parts) {
            Ok(parts) => parts.into_inner(),
            Err(_) => unreachable!("only the stream's step shares what the handle holds"),
        };
        TaskState::from_core(core, observed)
    }
}

impl Stream for Updates {
    type Item = Result<TaskInfo, Error>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(first)));
        }
        if this.ended {
            return Poll::Ready(None);
        }
        let step = this.step.get_or_insert_with(|| {
            let parts = this.parts.clone();
            Box::pin(async move { step(&mut *parts.lock_owned().await).await })
        });
        let (item, ended) = match step.as_mut().poll(cx) {
            Poll::Pending => return Poll::Pending,
            Poll::Ready(done) => done,
        };
        this.step = None;
        this.ended = ended;
        Poll::Ready(Some(item))
    }
}

impl Task<Pending> {
    /// A stream of the task's snapshots as it changes; see [`Updates`].
    pub fn updates(self) -> Updates {
        Updates::new(self)
    }
}
