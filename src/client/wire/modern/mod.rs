//! The 2026-07-28 wire: no handshake, `_meta` on every request, tasks read
//! with `tasks/get`, answered with `tasks/update`, cancelled with
//! `tasks/cancel`, watched with `subscriptions/listen`.

mod subscriptions;

use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use super::heard::Heard;
use super::pushes::{Watch, Watcher};
use super::start::{Call, NewTask, Started, undecodable_call};
use crate::client::connection::{Connection, Notification, ServerRequest, Tracking};
use crate::client::wire::Envelope;
use crate::error::{Error, Hint, Kind, Result};
use crate::input::InputHandlers;
use crate::protocol::method;
use crate::protocol::result::{decode_ack, decode_task_snapshot};
use crate::protocol::{
    CallToolParams, CallToolResponse, CancelTaskParams, DetailedTask, GetTaskParams,
    InputRequiredResult, InputResponses, ResultType, RpcError, TaskId, error_codes,
};
pub(crate) use subscriptions::Lists;
use subscriptions::Subscribed;

/// The connection, spoken in 2026-07-28.
pub(crate) struct Modern {
    conn: Connection,
    envelope: Arc<Envelope>,
    request_timeout: Duration,
    /// The client-wide listen watcher, started on first use.
    watcher: OnceLock<Watcher>,
    /// The resource subscriptions and list changes, on their own listen
    /// stream; readied once connected (see [`Modern::hear`]).
    subscribed: Option<Subscribed>,
}

impl Modern {
    pub(crate) fn new(
        conn: Connection,
        envelope: Arc<Envelope>,
        request_timeout: Duration,
    ) -> Self {
        Modern {
            conn,
            envelope,
            request_timeout,
            watcher: OnceLock::new(),
            subscribed: None,
        }
    }

    /// Refuses the server's `requests` with `-32601`: input comes in the
    /// results of this era's requests, never as a request of the server's.
    /// Those that waited through the handshake are refused now, and every
    /// later one by the connection's reader (the receiver is closed).
    pub(crate) fn refuse_requests(&self, mut requests: mpsc::Receiver<ServerRequest>) {
        requests.close();
        tokio::spawn(async move {
            while let Some(request) = requests.recv().await {
                let error = RpcError::new(
                    error_codes::METHOD_NOT_FOUND,
                    format!("this client does not answer {}", request.method),
                );
                if let Err(e) = request.responder.error(error).await {
                    tracing::debug!("could not refuse a request from the server: {e}");
                }
            }
        });
    }

    /// Readies resource subscriptions: the stream's events go to
    /// `forward`, each stream also asks for the list changes of `lists`,
    /// and the URIs subscribed to are kept in `heard`.
    pub(crate) fn hear(&mut self, forward: mpsc::Sender<Notification>, lists: Lists, heard: Heard) {
        self.subscribed = Some(Subscribed::new(forward, lists, heard));
    }

    fn subscribed(&self) -> Result<&Subscribed> {
        self.subscribed
            .as_ref()
            .ok_or_else(|| Error::protocol("resource subscriptions are not readied on this client"))
    }

    /// Subscribes to `uri` (`subscribe`) or ends its subscription, on the
    /// client's listen stream (see `subscriptions`).
    pub(crate) async fn subscribe_resource(&self, uri: &str, subscribe: bool) -> Result<()> {
        let subscribed = self.subscribed()?;
        let (conn, envelope, timeout) = (&self.conn, &self.envelope, self.request_timeout);
        if subscribe {
            subscribed.subscribe(conn, envelope, uri, timeout).await
        } else {
            subscribed.unsubscribe(conn, envelope, uri, timeout).await
        }
    }

    /// Opens the listen stream for the list changes alone, when some are
    /// listened for and no stream is open yet.
    pub(crate) async fn listen_lists(&self) -> Result<()> {
        self.subscribed()?
            .listen_lists(&self.conn, &self.envelope, self.request_timeout)
            .await
    }

    pub(crate) fn connection(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// Sends one request with the envelope's `_meta`, retrying once with
    /// another protocol version on `-32022`. Errors carry the method.
    pub(crate) async fn send<P: Serialize>(
        &self,
        method: &'static str,
        name: Option<&str>,
        params: &P,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>> {
        self.send_tracked(method, name, params, timeout, None).await
    }

    /// As [`Modern::send`], asking for progress reports with `tracking`.
    async fn send_tracked<P: Serialize>(
        &self,
        method: &'static str,
        name: Option<&str>,
        params: &P,
        timeout: Option<Duration>,
        mut tracking: Option<&mut Tracking>,
    ) -> Result<Box<RawValue>> {
        let timeout = timeout.unwrap_or(self.request_timeout);
        let mut renegotiated = false;
        loop {
            let version = self.envelope.protocol_version();
            let token = tracking.as_deref().map(|t| t.token().clone());
            let body = self
                .envelope
                .wrap(method, params, &version)
                .with_progress(token.as_ref());
            let result = self
                .conn
                .request_tracked(
                    method,
                    name.map(str::to_owned),
                    &body,
                    timeout,
                    tracking.as_deref_mut(),
                )
                .await;
            match result {
                Err(e) if e.is_unsupported_version() && !renegotiated => {
                    let data = e.rpc_error().and_then(|r| r.data.as_ref());
                    let Some(next) = self.envelope.renegotiate(data, &version) else {
                        return Err(e.with_method(method));
                    };
                    self.conn.negotiated(next);
                    renegotiated = true;
                }
                other => return other.map_err(|e| e.with_method(method)),
            }
        }
    }

    /// Sends `tools/call` and answers `input_required` rounds until the
    /// server completes the call or returns a task. Every round carries the
    /// legacy `task` opt-in when the call has one.
    pub(crate) async fn start(&self, call: Call<'_>) -> Result<Started> {
        let listed = call.tools.opt_in(call.name);
        let opt_in = call.opt_in(listed);
        let Call {
            name,
            arguments,
            handlers,
            max_rounds,
            timeout,
            mut progress,
            ..
        } = call;
        let mut params = CallToolParams {
            name: name.to_owned(),
            arguments,
            input_responses: None,
            request_state: None,
            task: opt_in,
        };
        for round in 0..=max_rounds {
            let raw = self
                .send_tracked(
                    method::TOOLS_CALL,
                    Some(name),
                    &params,
                    Some(timeout),
                    progress.as_mut(),
                )
                .await
                .map_err(|e| {
                    if listed.is_none() && wants_task_opt_in(&e) {
                        e.with_hint(LIST_TOOLS_FOR_TASK_OPT_IN)
                    } else {
                        e
                    }
                })?;
            let response =
                CallToolResponse::decode(raw.get(), true).map_err(|e| undecodable_call(&raw, e))?;
            let asked = match response {
                CallToolResponse::Complete(r) => return Ok(Started::Complete(r)),
                CallToolResponse::Task(created) => {
                    // A task of this era reports progress in its status
                    // message: the call's token ends with the call.
                    return Ok(Started::Task(NewTask {
                        created,
                        hold: None,
                        progress: None,
                    }));
                }
                CallToolResponse::InputRequired(asked) => asked,
            };
            (params.input_responses, params.request_state) =
                answer_round(handlers, method::TOOLS_CALL, name, round, asked).await?;
        }
        Err(too_many_rounds(method::TOOLS_CALL, max_rounds))
    }

    /// Sends a request that may ask for input first (`prompts/get`,
    /// `resources/read`; §4 of the protocol) and answers each
    /// `input_required` round with `handlers`, re-sending the same
    /// `params` with the responses and the echoed `requestState`, until
    /// the server answers otherwise; at most `max_rounds` rounds. The
    /// answer is returned raw, for the method's own decoding.
    pub(crate) async fn send_answering<P: Serialize>(
        &self,
        method: &'static str,
        name: &str,
        params: &P,
        handlers: &InputHandlers,
        max_rounds: usize,
    ) -> Result<Box<RawValue>> {
        /// The method's parameters with one round's answers beside them.
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Answered<'a, P: Serialize> {
            #[serde(flatten)]
            params: &'a P,
            #[serde(skip_serializing_if = "Option::is_none")]
            input_responses: Option<InputResponses>,
            #[serde(skip_serializing_if = "Option::is_none")]
            request_state: Option<String>,
        }
        let mut answered = Answered {
            params,
            input_responses: None,
            request_state: None,
        };
        // The server's answers of every round share one request timeout
        // (the handlers' time is not counted).
        let mut left = self.request_timeout;
        for round in 0..=max_rounds {
            if left.is_zero() {
                return Err(rounds_timed_out(method, self.request_timeout));
            }
            let sent = tokio::time::Instant::now();
            let raw = match self.send(method, Some(name), &answered, Some(left)).await {
                Err(e) if e.is_timeout() && left < self.request_timeout => {
                    return Err(rounds_timed_out(method, self.request_timeout));
                }
                sent => sent?,
            };
            left = left.saturating_sub(sent.elapsed());
            if !matches!(ResultType::of(raw.get()), Ok(ResultType::InputRequired)) {
                return Ok(raw);
            }
            let asked: InputRequiredResult = serde_json::from_str(raw.get()).map_err(|e| {
                Error::protocol(format!("malformed {method} input request: {e}"))
                    .with_method(method)
            })?;
            (answered.input_responses, answered.request_state) =
                answer_round(handlers, method, name, round, asked).await?;
        }
        Err(too_many_rounds(method, max_rounds))
    }

    /// One `tasks/get`.
    pub(crate) async fn read(
        &self,
        id: &TaskId,
        timeout: Option<Duration>,
    ) -> Result<DetailedTask> {
        let params = GetTaskParams {
            task_id: id.clone(),
        };
        let raw = self
            .send_task(method::TASKS_GET, id, &params, timeout)
            .await?;
        let task = decode_task_snapshot(raw.get()).map_err(|e| {
            Error::protocol(format!("malformed task snapshot: {e}"))
                .with_method(method::TASKS_GET)
                .with_task(id)
        })?;
        super::same_task(id, &task.task_id)?;
        Ok(task)
    }

    /// One `tasks/update`.
    pub(crate) async fn answer(
        &self,
        id: &TaskId,
        responses: &InputResponses,
        timeout: Option<Duration>,
    ) -> Result<()> {
        // Borrowed: the answers are serialised once, never copied.
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
        self.task_ack(method::TASKS_UPDATE, id, &params, timeout)
            .await
    }

    /// One `tasks/cancel`.
    pub(crate) async fn cancel(&self, id: &TaskId, timeout: Option<Duration>) -> Result<()> {
        let params = CancelTaskParams {
            task_id: id.clone(),
        };
        self.task_ack(method::TASKS_CANCEL, id, &params, timeout)
            .await
    }

    /// Registers a task with the client-wide listen watcher.
    pub(crate) fn watch(&self, id: TaskId) -> Watch {
        self.watcher
            .get_or_init(|| {
                Watcher::start(
                    self.conn.downgrade(),
                    self.envelope.clone(),
                    self.conn.task_pushes(),
                    self.request_timeout,
                )
            })
            .register(id)
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
        self.send(method, Some(id.expose()), params, timeout)
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

/// One `input_required` round (the `round`th, from 0) of a request of
/// `method`, answered by `handlers`: what the next attempt sends, the
/// answers (`None` when the round asked for none, a `requestState`-only
/// round) and the `requestState` echoed exactly as received (absent when
/// the server sent none). Nothing is answered unless every request can
/// be: a person is not asked one question of a round that fails anyway.
async fn answer_round(
    handlers: &InputHandlers,
    method: &'static str,
    name: &str,
    round: usize,
    asked: InputRequiredResult,
) -> Result<(Option<InputResponses>, Option<String>)> {
    let InputRequiredResult {
        input_requests,
        request_state,
    } = asked;
    // An event of the current span: for a tool call, the task span.
    tracing::info!(
        round = round + 1,
        requests = input_requests.as_ref().map_or(0, |r| r.len()),
        "{method} asked for input"
    );
    let count = input_requests.as_ref().map_or(0, |r| r.len());
    if !InputHandlers::answers_round_of(count) {
        return Err(Error::protocol(format!(
            "the server asked for {count} inputs in one round; the handlers answer at most {}",
            crate::input::MAX_INPUTS_PER_ROUND
        ))
        .with_method(method));
    }
    let requests = input_requests.iter().flatten();
    for (key, request) in requests.clone() {
        if !handlers.can_answer(request) {
            return Err(Error::new(Kind::InputRequired(format!(
                "{method} {name:?} needs input {key:?} ({}) and no handler answers it",
                request.method()
            )))
            .with_method(method));
        }
    }
    let mut responses = InputResponses::new();
    for (key, request) in requests {
        let response = handlers.answer(key, request).await?;
        responses.insert(key.clone(), response);
    }
    Ok(((!responses.is_empty()).then_some(responses), request_state))
}

/// The error of a request whose input rounds used up the one request
/// timeout they share.
fn rounds_timed_out(method: &'static str, after: Duration) -> Error {
    Error::new(Kind::Timeout {
        after,
        discarded: 0,
    })
    .with_method(method)
    .with_hint(ROUNDS_SHARE_ONE_TIMEOUT)
}

/// Said of a request whose input rounds ran out of time together.
const ROUNDS_SHARE_ONE_TIMEOUT: Hint = Hint {
    text: "its input rounds share one request timeout for the server's answers",
    missing_capability: false,
};

/// The error of a request that still asked for input after `max_rounds`.
fn too_many_rounds(method: &'static str, max_rounds: usize) -> Error {
    Error::protocol(format!(
        "the server still asked for input after {max_rounds} rounds"
    ))
    .with_method(method)
}

/// The advice on a refusal [`wants_task_opt_in`] recognises, for a tool
/// the client had not listed.
const LIST_TOOLS_FOR_TASK_OPT_IN: Hint = Hint {
    text: "the server wants the 2025-11-25 `task` opt-in for this tool: call list_tools() \
           first so the client knows the tool wants a task",
    missing_capability: true,
};

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
