//! `tools/list`, `tools/call` with the MRTR loop, and the low-level task verbs.

use std::time::Duration;

use serde::Serialize;
use serde_json::Value;
use serde_json::value::RawValue;

use super::{Client, Declare, decode};
use crate::error::{Error, Hint, Result};
use crate::protocol::result::{decode_ack, decode_task_snapshot};
use crate::protocol::{
    CallToolParams, CallToolResponse, CallToolResult, CancelTaskParams, CreateTaskResult,
    DetailedTask, GetTaskParams, InputRequiredResult, InputResponses, ListToolsParams,
    ListToolsResult, TaskId, TaskOptIn, Tool, error_codes,
};

/// Most pages `list_tools` follows before deciding the server loops.
const MAX_PAGES: usize = 1000;

/// How a `tools/call` ended once MRTR rounds are done.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)]
pub(crate) enum Called {
    Complete(CallToolResult),
    Task(CreateTaskResult),
}

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
    /// fills nor reads this memory.
    ///
    /// # Errors
    ///
    /// A request error, a malformed page, or more than 1,000 pages
    /// ([`Error::is_protocol`]: the server is looping).
    pub async fn list_tools(&self) -> Result<Vec<Tool>> {
        let mut tools = Vec::new();
        let mut params = ListToolsParams::default();
        for _ in 0..MAX_PAGES {
            let raw = self
                .send("tools/list", None, &params, Declare::Core, None)
                .await?;
            let page: ListToolsResult = decode(&raw, "tools/list")?;
            tools.extend(page.tools);
            match page.next_cursor {
                Some(c) if params.cursor.as_deref() != Some(c.as_str()) => params.cursor = Some(c),
                Some(_) => {
                    return Err(Error::protocol("tools/list returned the same cursor twice")
                        .with_method("tools/list"));
                }
                None => {
                    self.remember_tools(&tools);
                    return Ok(tools);
                }
            }
        }
        Err(
            Error::protocol(format!("tools/list did not end after {MAX_PAGES} pages"))
                .with_method("tools/list"),
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

    /// Sends `tools/call` and answers `input_required` rounds until the
    /// server completes the call or returns a task.
    ///
    /// Every round carries the legacy `task` opt-in (with `ttl`, when set)
    /// if the last listing said the tool wants it.
    pub(crate) async fn call_rounds(
        &self,
        name: &str,
        arguments: Option<Value>,
        timeout: Option<Duration>,
        ttl: Option<Duration>,
    ) -> Result<Called> {
        let listed = self.listed_opt_in(name);
        let task = (listed == Some(true))
            .then(|| TaskOptIn::new(ttl.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))));
        let mut params = CallToolParams {
            name: name.to_owned(),
            arguments,
            input_responses: None,
            request_state: None,
            task,
        };
        for _ in 0..=self.max_input_rounds() {
            let raw = self
                .send("tools/call", Some(name), &params, Declare::Tasks, timeout)
                .await
                .map_err(|e| match listed {
                    None if wants_task_opt_in(&e) => e.with_hint(Hint::ListToolsForTaskOptIn),
                    _ => e,
                })?;
            let response = CallToolResponse::decode(raw.get(), true)
                .map_err(|e| Error::protocol(e.to_string()).with_method("tools/call"))?;
            match response {
                CallToolResponse::Complete(r) => return Ok(Called::Complete(r)),
                CallToolResponse::Task(t) => return Ok(Called::Task(t)),
                CallToolResponse::InputRequired(round) => {
                    let InputRequiredResult {
                        input_requests,
                        request_state,
                    } = round;
                    let mut responses = InputResponses::new();
                    for (key, request) in input_requests.iter().flatten() {
                        if !self.handlers().can_answer(request) {
                            return Err(Error::new(crate::error::Kind::InputRequired(format!(
                                "tools/call {name:?} needs input {key:?} ({}) and no handler answers it",
                                request.method()
                            )))
                            .with_method("tools/call"));
                        }
                    }
                    for (key, request) in input_requests.iter().flatten() {
                        let response = self.handlers().answer(key, request).await?;
                        responses.insert(key.clone(), response);
                    }
                    params.input_responses = (!responses.is_empty()).then_some(responses);
                    // Echoed exactly as received; absent when the server sent none.
                    params.request_state = request_state;
                }
            }
        }
        Err(Error::protocol(format!(
            "the server still asked for input after {} rounds",
            self.max_input_rounds()
        ))
        .with_method("tools/call"))
    }

    /// Reads a task once (`tasks/get`).
    ///
    /// # Errors
    ///
    /// [`Error::is_task_not_found`] for an unknown or expired task; any
    /// request error; [`Error::is_protocol`] for a malformed snapshot.
    pub async fn get_task(&self, id: &TaskId) -> Result<DetailedTask> {
        self.get_task_within(id, None).await
    }

    pub(crate) async fn get_task_within(
        &self,
        id: &TaskId,
        timeout: Option<Duration>,
    ) -> Result<DetailedTask> {
        let params = GetTaskParams {
            task_id: id.clone(),
        };
        let raw = self.send_task("tasks/get", id, &params, timeout).await?;
        let task = decode_task_snapshot(raw.get()).map_err(|e| {
            Error::protocol(format!("malformed task snapshot: {e}"))
                .with_method("tasks/get")
                .with_task(id)
        })?;
        if &task.task_id != id {
            return Err(Error::protocol("tasks/get answered for another task")
                .with_method("tasks/get")
                .with_task(id));
        }
        Ok(task)
    }

    /// Answers a task's input requests (`tasks/update`). Low level: the
    /// typed handles check keys and never answer one twice.
    ///
    /// # Errors
    ///
    /// [`Error::is_task_not_found`], or any request error.
    pub async fn update_task(&self, id: &TaskId, responses: &InputResponses) -> Result<()> {
        self.update_task_within(id, responses, None).await
    }

    pub(crate) async fn update_task_within(
        &self,
        id: &TaskId,
        responses: &InputResponses,
        timeout: Option<Duration>,
    ) -> Result<()> {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Params<'a> {
            task_id: &'a TaskId,
            input_responses: &'a InputResponses,
        }
        let params = Params {
            task_id: id,
            input_responses: responses,
        };
        self.task_ack("tasks/update", id, &params, timeout).await
    }

    /// Asks the server to cancel a task (`tasks/cancel`). Cooperative: the
    /// task may still finish otherwise. Low level: see the handles' `cancel`.
    ///
    /// # Errors
    ///
    /// [`Error::is_task_not_found`], or any request error.
    pub async fn cancel_task(&self, id: &TaskId) -> Result<()> {
        self.cancel_task_within(id, None).await
    }

    pub(crate) async fn cancel_task_within(
        &self,
        id: &TaskId,
        timeout: Option<Duration>,
    ) -> Result<()> {
        let params = CancelTaskParams {
            task_id: id.clone(),
        };
        self.task_ack("tasks/cancel", id, &params, timeout).await
    }

    /// Sends a `tasks/*` request: routed by the task id (`Mcp-Name` on
    /// HTTP), declaring the extension, errors tagged with the task.
    async fn send_task<P: Serialize>(
        &self,
        method: &'static str,
        id: &TaskId,
        params: &P,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>> {
        self.send(method, Some(id.expose()), params, Declare::Tasks, timeout)
            .await
            .map_err(|e| e.with_task(id))
    }

    /// Sends `tasks/update` or `tasks/cancel` and checks the empty acknowledgement.
    async fn task_ack<P: Serialize>(
        &self,
        method: &'static str,
        id: &TaskId,
        params: &P,
        timeout: Option<Duration>,
    ) -> Result<()> {
        let raw = self.send_task(method, id, params, timeout).await?;
        decode_ack(raw.get(), method).map_err(|e| {
            Error::protocol(e.to_string())
                .with_method(method)
                .with_task(id)
        })
    }
}

/// Whether an error to a `tools/call` is a 2025-11-25 server refusing a
/// call without the `task` opt-in: `-32601` (or `-32600`) with a message
/// about "task augmented" calls (neva 0.9: "Tool required task augmented
/// call").
fn wants_task_opt_in(e: &Error) -> bool {
    e.is_rpc()
        && e.rpc_error().is_some_and(|r| {
            (r.code == error_codes::METHOD_NOT_FOUND || r.code == error_codes::INVALID_REQUEST)
                && r.message.to_ascii_lowercase().contains("task augment")
        })
}
