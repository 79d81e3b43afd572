//! `tools/call` with the MRTR loop, and the low-level task verbs.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use crate::client::connection::ProgressFn;
use crate::client::wire::{BoxFuture, ToolListing};
use crate::client::{Call, Client, Started};
use crate::error::{Error, Result};
use crate::protocol::{
    CallToolResult, DetailedTask, InputResponses, ListTasksResult, TaskId, Tool,
};

impl Client {
    /// Calls a tool and returns its result, whatever shape the server
    /// answers in: at once, after input rounds (answered by the installed
    /// handlers), or as a task that is then driven to its end with the
    /// default wait settings.
    ///
    /// A tool that reports its own failure (`isError: true`) is an `Ok`
    /// result. For control over the task (a handle to park, a timeout, a
    /// TTL, listening), use [`Client::task`].
    ///
    /// It goes through [`Client::task`], so a tool that the last
    /// [`Client::list_tools`] listed with `execution.taskSupport`
    /// `optional` or `required` is called with the legacy `task: {}`
    /// opt-in, and the task it becomes is driven to its end here.
    ///
    /// # Errors
    ///
    /// - [`Error::is_builder`]: `arguments` is not a JSON object;
    /// - [`Error::is_input`]: the server asked for input no handler answers;
    /// - the task failed ([`Error::rpc_error`]), was cancelled or expired;
    /// - [`Error::is_outcome_unknown`]: the connection dropped or the
    ///   request timed out after the call was sent (the tool may have run;
    ///   it is not retried);
    /// - any request error.
    pub async fn call_tool(&self, name: &str, arguments: impl Serialize) -> Result<CallToolResult> {
        let state = self.task().call_tool(name, arguments).await?;
        let finished = state.finish().await.map_err(Error::from)?;
        finished.into_result()
    }

    /// Starts a tool call through the wire: MRTR rounds answered with the
    /// installed handlers, and the legacy `task` opt-in (with `ttl`, when
    /// set) if the last listing said the tool wants it. Progress reports
    /// go to `on_progress`, within `progress_total` in all; a task the
    /// call becomes comes with what its era keeps for it (see
    /// [`NewTask`](crate::client::NewTask)), so the task layer asks the
    /// client once per call.
    pub(crate) async fn start(
        &self,
        name: &str,
        arguments: Option<Value>,
        timeout: Duration,
        ttl: Option<Duration>,
        on_progress: Option<(ProgressFn, Duration)>,
    ) -> Result<Started> {
        let progress =
            on_progress.map(|(callback, total)| self.wire().connection().track(callback, total));
        self.wire()
            .start(Call {
                name,
                arguments,
                tools: self,
                ttl,
                handlers: self.handlers(),
                max_rounds: self.max_input_rounds(),
                timeout,
                progress,
            })
            .await
    }

    /// One page of the tasks the server keeps for this client
    /// (`tasks/list`): an initialize-era (2025-11-25) method, low level.
    /// Pass the previous page's `next_cursor` for the next page.
    ///
    /// # Errors
    ///
    /// [`Error::is_builder`] on a 2026-07-28 session, which has no task
    /// listing; `-32602` ([`Error::rpc_error`]) for a cursor the server
    /// does not know; any request error.
    pub async fn list_tasks(&self, cursor: Option<&str>) -> Result<ListTasksResult> {
        self.wire().list_tasks(cursor).await
    }

    /// Reads a task once (`tasks/get`).
    ///
    /// # Errors
    ///
    /// [`Error::is_task_not_found`] for an unknown or expired task; any
    /// request error; [`Error::is_protocol`] for a malformed snapshot.
    pub async fn get_task(&self, id: &TaskId) -> Result<DetailedTask> {
        self.wire().read(id, self.request_timeout()).await
    }

    /// Answers a task's input requests (`tasks/update`). Low level: the
    /// typed handles check keys and never answer one twice.
    ///
    /// # Errors
    ///
    /// [`Error::is_task_not_found`], or any request error.
    pub async fn update_task(&self, id: &TaskId, responses: &InputResponses) -> Result<()> {
        self.wire()
            .answer(id, responses, self.request_timeout())
            .await
    }

    /// Asks the server to cancel a task (`tasks/cancel`). Cooperative: the
    /// task may still finish otherwise. Low level: see the handles' `cancel`.
    ///
    /// # Errors
    ///
    /// [`Error::is_task_not_found`], or any request error.
    pub async fn cancel_task(&self, id: &TaskId) -> Result<()> {
        self.wire().cancel(id, self.request_timeout()).await
    }
}

/// What the client remembers of the last complete listing, and the
/// listing [`Client::list_tools`] makes.
impl ToolListing for Client {
    fn opt_in(&self, name: &str) -> Option<bool> {
        self.inner.listed_tools.lock().unwrap().opt_in(name)
    }

    fn has_listed(&self) -> bool {
        !self.inner.listed_tools.lock().unwrap().is_empty()
    }

    fn list(&self) -> BoxFuture<'_, Result<Vec<Tool>>> {
        Box::pin(self.list_tools())
    }
}
