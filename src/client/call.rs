//! `tools/list`, `tools/call` with the MRTR loop, and the low-level task verbs.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;

use super::rpc::{ProgressFn, Tracking};
use super::{Call, Client, Started, decode};
use crate::error::{Error, Result};
use crate::protocol::method;
use crate::protocol::{
    CallToolResult, DetailedTask, InputResponses, ListTasksResult, ListToolsParams,
    ListToolsResult, TaskId, TaskOptIn, Tool,
};

/// Most pages `list_tools` follows before deciding the server loops.
const MAX_PAGES: usize = 1000;

impl Client {
    /// Lists every tool, following `nextCursor` across pages.
    ///
    /// The client also keeps what the listing says of each tool's
    /// 2025-11-25 `execution.taskSupport`, replacing what an earlier
    /// listing said (a listing that fails leaves it as it was). Calls made
    /// afterwards to a tool listed as `optional` or `required` carry the
    /// legacy `task` opt-in, which servers still on that model need; see
    /// [`TaskOptIn`](crate::protocol::TaskOptIn). Nothing is ever listed
    /// behind the caller's back, and the raw [`Client::request`] neither
    /// fills nor reads this memory. A `notifications/tools/list_changed`
    /// from the server forgets it (a listing under way when it comes is
    /// not kept either): list again to know the tools.
    ///
    /// # Errors
    ///
    /// A request error, a malformed page, or more than 1,000 pages
    /// ([`Error::is_protocol`]: the server is looping).
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        let mut tools = Vec::new();
        let mut params = ListToolsParams::default();
        let generation = self.tools_generation();
        for _ in 0..MAX_PAGES {
            let raw = self.wire().send(method::TOOLS_LIST, &params, None).await?;
            let page: ListToolsResult = decode(&raw, method::TOOLS_LIST)?;
            tools.extend(page.tools);
            match page.next_cursor {
                Some(c) if params.cursor.as_deref() != Some(c.as_str()) => params.cursor = Some(c),
                Some(_) => {
                    return Err(Error::protocol("tools/list returned the same cursor twice")
                        .with_method(method::TOOLS_LIST));
                }
                None => {
                    self.remember_tools(generation, &tools);
                    return Ok(tools);
                }
            }
        }
        Err(
            Error::protocol(format!("tools/list did not end after {MAX_PAGES} pages"))
                .with_method(method::TOOLS_LIST),
        )
    }

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
    /// set) if the last listing said the tool wants it.
    pub(crate) async fn start(
        &self,
        name: &str,
        arguments: Option<Value>,
        timeout: Duration,
        ttl: Option<Duration>,
        progress: Option<&mut Tracking>,
    ) -> Result<Started> {
        let mut listed = self.listed_opt_in(name);
        if listed.is_none() && self.wire().lists_for_opt_in() {
            // A 2025-11-25 server that runs tasks wants the opt-in on the
            // tools listed for it: list, so the call knows. Calls started
            // together wait for one listing (the lock is held for the
            // listing only, never through the call). The listing is read
            // here, not from memory, which the server's `list_changed`
            // (sent in bursts after the handshake) may have cleared
            // meanwhile.
            let _listing = self.opt_in_listing().await;
            listed = self.listed_opt_in(name);
            if listed.is_none() && !self.has_listed() {
                match self.list_tools().await {
                    Ok(tools) => {
                        listed = tools
                            .iter()
                            .find(|t| t.name == name)
                            .map(super::listed::wants_opt_in);
                    }
                    Err(e) => {
                        tracing::debug!("listing the tools for their task support failed: {e}");
                    }
                }
            }
        }
        let opt_in = (listed == Some(true))
            .then(|| TaskOptIn::new(ttl.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))));
        self.wire()
            .start(Call {
                name,
                arguments,
                opt_in,
                listed: listed.is_some(),
                handlers: self.handlers(),
                max_rounds: self.max_input_rounds(),
                timeout,
                progress,
            })
            .await
    }

    /// Progress tracking for one call: a fresh token whose reports go to
    /// `on_progress`, within `total` in all.
    pub(crate) fn track_progress(&self, on_progress: ProgressFn, total: Duration) -> Tracking {
        self.wire().connection().track(on_progress, total)
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
