//! The connection loop and the request handlers.

use std::collections::HashMap;
use std::io;

use serde_json::{Map, Value, json};
use tokio::sync::mpsc;
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;
use tracing::{debug, warn};

use super::TestServer;
use super::counts::Ask;
use super::record::{RecordedRequest, declares_tasks};
use super::resources::{Asked, page_of};
use super::script::Behavior;
use super::tasks::{self, Reading, TaskError};
use super::wire::{
    error_response, finish, input_required, input_responses, invalid, response, sort_answers,
};
use crate::protocol::{
    CallToolResult, InputRequests, META_CLIENT_CAPABILITIES, META_PROTOCOL_VERSION, Message,
    RequestId, RpcError, TASKS_EXTENSION, Tool, error_codes,
};
use crate::transport::{Inbound, MessageSink, MessageStream, Outbound, Transport};

/// Freshness hint of cacheable results, in milliseconds.
const CACHE_TTL_MS: u64 = 60_000;

const DISCOVER: &str = "server/discover";
const TOOLS_LIST: &str = "tools/list";
const TOOLS_CALL: &str = "tools/call";
const TASKS_GET: &str = "tasks/get";
const TASKS_UPDATE: &str = "tasks/update";
const TASKS_CANCEL: &str = "tasks/cancel";
const LISTEN: &str = "subscriptions/listen";
const CANCELLED: &str = "notifications/cancelled";

fn task_not_found() -> RpcError {
    invalid("task not found")
}

fn tasks_required() -> RpcError {
    RpcError::new(
        error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY,
        "this request needs the Tasks extension declared in clientCapabilities",
    )
    .with_data(json!({ "requiredCapabilities": { "extensions": { TASKS_EXTENSION: {} } } }))
}

fn call_result(result: &CallToolResult) -> Value {
    finish(
        serde_json::to_value(result).unwrap_or_default(),
        "complete",
        false,
    )
}

/// One connection's way back to the client.
#[derive(Debug, Clone)]
struct Conn {
    id: u64,
    tx: mpsc::UnboundedSender<Outbound>,
}

impl TestServer {
    /// Serves one connection until the peer closes it.
    pub(super) async fn run_connection<T: Transport>(&self, transport: T) -> io::Result<()> {
        let (mut sink, mut stream) = transport.connect().await?;
        let (tx, mut rx) = mpsc::unbounded_channel::<Outbound>();
        let writer = tokio::spawn(async move {
            while let Some(message) = rx.recv().await {
                if let Err(e) = sink.send(message).await {
                    debug!("test server: the client stopped reading: {e}");
                    break;
                }
            }
            if let Err(e) = sink.close().await {
                debug!("test server: the connection did not close gracefully: {e}");
            }
        });
        let conn = Conn {
            id: self.shared.lock().next_conn(),
            tx,
        };
        let mut handlers = JoinSet::new();
        let mut in_flight: HashMap<RequestId, AbortHandle> = HashMap::new();
        let outcome = loop {
            let inbound = match stream.recv().await {
                Ok(Some(inbound)) => inbound,
                Ok(None) => break Ok(()),
                Err(e) => break Err(e),
            };
            while let Some(done) = handlers.try_join_next() {
                if let Err(e) = done {
                    warn!("test server: a request handler failed: {e}");
                }
            }
            match inbound {
                Inbound::Message(text) => {
                    self.receive(&conn, &text, &mut handlers, &mut in_flight);
                }
                Inbound::Invalid(why) => warn!("test server: skipping an invalid message: {why}"),
                Inbound::Lost { .. }
                | Inbound::NotSent { .. }
                | Inbound::Unreachable { .. }
                | Inbound::HttpError { .. } => {}
            }
        };
        // Stop the handlers first, so none can open a listen stream afterwards.
        handlers.shutdown().await;
        self.shared.lock().drop_connection(conn.id);
        drop(conn);
        // The writer ends once every sender (handlers, subscriptions) is gone.
        let _ = writer.await;
        outcome
    }

    /// Records and dispatches one message.
    fn receive(
        &self,
        conn: &Conn,
        text: &str,
        handlers: &mut JoinSet<()>,
        in_flight: &mut HashMap<RequestId, AbortHandle>,
    ) {
        let message = match Message::from_json(text) {
            Ok(message) => message,
            Err(e) => {
                warn!("test server: skipping a malformed message: {e}");
                return;
            }
        };
        let parse = |raw: Option<Box<serde_json::value::RawValue>>| {
            raw.and_then(|r| serde_json::from_str::<Value>(r.get()).ok())
                .unwrap_or(Value::Null)
        };
        match message {
            Message::Request { id, method, params } => {
                let params = parse(params);
                self.record(&method, Some(id.clone()), &params);
                let server = self.clone();
                let conn = conn.clone();
                let key = id.clone();
                let reading = self.tally(&method, &params);
                let handle = handlers.spawn(async move {
                    if let Some(reply) = server.handle_request(&conn, &id, &method, &params) {
                        let delay = server.config.read_delay;
                        if method == TASKS_GET && !delay.is_zero() {
                            tokio::time::sleep(delay).await;
                        }
                        // A send error means the connection is closing; nothing to do.
                        let _ = conn.tx.send(reply);
                    }
                    // The read is over, answered or not.
                    drop(reading);
                });
                in_flight.retain(|_, h| !h.is_finished());
                in_flight.insert(key, handle);
            }
            Message::Notification { method, params } => {
                let params = parse(params);
                self.record(&method, None, &params);
                if method != CANCELLED {
                    debug!("test server: ignoring notification {method}");
                    return;
                }
                let Some(target) = params
                    .get("requestId")
                    .and_then(|v| serde_json::from_value::<RequestId>(v.clone()).ok())
                else {
                    warn!("test server: notifications/cancelled without a requestId");
                    return;
                };
                if self.shared.lock().unsubscribe(conn.id, &target) {
                    debug!("test server: the client ended listen stream {target}");
                }
                if let Some(handle) = in_flight.remove(&target) {
                    handle.abort();
                }
            }
            Message::Response { .. } | Message::Error { .. } => {
                warn!("test server: clients never send responses; ignoring one");
            }
        }
    }

    /// Counts a `tasks/*` request; a read of a task of this server comes
    /// back as a [`Reading`], to hold until it is answered.
    fn tally(&self, method: &str, params: &Value) -> Option<Reading> {
        let ask = match method {
            TASKS_GET => Ask::Read,
            TASKS_UPDATE => Ask::Answer(
                params
                    .get("inputResponses")
                    .and_then(Value::as_object)
                    .map(|answers| answers.keys().map(String::as_str).collect())
                    .unwrap_or_default(),
            ),
            TASKS_CANCEL => Ask::Cancel,
            _ => return None,
        };
        let task = params.get("taskId").and_then(Value::as_str);
        let reading = self.shared.lock().tally_mut().count(task, ask);
        task.filter(|_| reading)
            .map(|task| Reading::new(self.shared.clone(), task.to_owned()))
    }

    fn record(&self, method: &str, id: Option<RequestId>, params: &Value) {
        let keep = self.config.keep_requests;
        let request = RecordedRequest {
            method: method.to_owned(),
            id,
            // Only counted: the params need no copy.
            params: if keep { params.clone() } else { Value::Null },
            at: Instant::now(),
        };
        self.shared.lock().record(request, keep);
    }

    /// The reply to one request; `None` for a listen stream (answered later, if ever).
    fn handle_request(
        &self,
        conn: &Conn,
        id: &RequestId,
        method: &str,
        params: &Value,
    ) -> Option<Outbound> {
        let reply = match self.dispatch(conn, id, method, params) {
            Ok(Some(result)) => Some(response(id, result)),
            Ok(None) => None,
            Err(error) => Some(error_response(id, &error)),
        };
        let mut state = self.shared.lock();
        if reply.is_some() && state.faults().never_answers(method) {
            // The work is done; only the reply is withheld.
            state.fired();
            return None;
        }
        reply
    }

    fn dispatch(
        &self,
        conn: &Conn,
        id: &RequestId,
        method: &str,
        params: &Value,
    ) -> Result<Option<Value>, RpcError> {
        if self.shared.lock().faults().gives_task_for(method) {
            self.shared.lock().fired();
            return Ok(Some(bogus_task()));
        }
        let known = [
            DISCOVER,
            TOOLS_LIST,
            TOOLS_CALL,
            TASKS_GET,
            TASKS_UPDATE,
            TASKS_CANCEL,
        ]
        .contains(&method)
            || self.offers(method)
            || (method == LISTEN && self.config.listen_supported);
        if !known {
            let mut error = RpcError::new(
                error_codes::METHOD_NOT_FOUND,
                format!("method not found: {method}"),
            );
            if method == "initialize" {
                error = error.with_data(json!({ "supported": self.config.supported_versions }));
            }
            return Err(error);
        }
        self.check_meta(params)?;
        let tasks_declared = declares_tasks(params);
        let result = match method {
            DISCOVER => self.discover(),
            TOOLS_LIST => self.list_tools(params)?,
            TOOLS_CALL => self.call_tool(params, tasks_declared)?,
            TASKS_GET => {
                let task = self.task_param(params, tasks_declared)?;
                let snapshot = self
                    .shared
                    .lock()
                    .snapshot(task)
                    .ok_or_else(task_not_found)?;
                finish(
                    serde_json::to_value(snapshot).unwrap_or_default(),
                    "complete",
                    true,
                )
            }
            TASKS_UPDATE => {
                let task = self.task_param(params, tasks_declared)?;
                let Some(Value::Object(responses)) = params.get("inputResponses") else {
                    return Err(invalid("tasks/update needs an `inputResponses` object"));
                };
                self.shared
                    .lock()
                    .update(task, responses)
                    .map_err(|e| match e {
                        TaskError::NotFound => task_not_found(),
                        TaskError::Invalid(message) => invalid(message),
                    })?;
                finish(json!({}), "complete", true)
            }
            TASKS_CANCEL => {
                let task = self.task_param(params, tasks_declared)?;
                tasks::cancel(&self.shared, task).map_err(|_| task_not_found())?;
                finish(json!({}), "complete", true)
            }
            _ if method != LISTEN => match self.ask_first(method, params)? {
                Asked::Round(round) => round,
                Asked::Answered(answers) => {
                    let mut body = self.answer(method, params)?;
                    if let Some(answers) = answers {
                        body["_meta"]["inputResponses"] = Value::Object(answers);
                    }
                    finish(body, "complete", true)
                }
            },
            _ => {
                let mut state = self.shared.lock();
                if state.faults().never_answers(LISTEN) {
                    state.fired();
                    return Ok(None);
                }
                drop(state);
                self.listen(conn, id, params, tasks_declared)?;
                return Ok(None);
            }
        };
        Ok(Some(result))
    }

    /// Every request needs `_meta` with a supported protocol version and client capabilities.
    fn check_meta(&self, params: &Value) -> Result<(), RpcError> {
        let meta = params
            .get("_meta")
            .filter(|m| m.is_object())
            .ok_or_else(|| {
                invalid("params._meta is required (protocolVersion and clientCapabilities)")
            })?;
        let version = meta
            .get(META_PROTOCOL_VERSION)
            .and_then(Value::as_str)
            .ok_or_else(|| invalid(format!("_meta[{META_PROTOCOL_VERSION:?}] is required")))?;
        if !meta
            .get(META_CLIENT_CAPABILITIES)
            .is_some_and(Value::is_object)
        {
            return Err(invalid(format!(
                "_meta[{META_CLIENT_CAPABILITIES:?}] must be an object"
            )));
        }
        if !self.config.supported_versions.iter().any(|v| v == version) {
            return Err(RpcError::new(
                error_codes::UNSUPPORTED_PROTOCOL_VERSION,
                format!("unsupported protocol version {version}"),
            )
            .with_data(json!({
                "supported": self.config.supported_versions,
                "requested": version,
            })));
        }
        Ok(())
    }

    fn discover(&self) -> Value {
        let mut capabilities = Map::new();
        capabilities.insert("tools".into(), json!({ "listChanged": true }));
        capabilities.insert("extensions".into(), json!({ TASKS_EXTENSION: {} }));
        self.add_capabilities(&mut capabilities);
        finish(
            json!({
                "supportedVersions": self.config.supported_versions,
                "capabilities": capabilities,
                "ttlMs": CACHE_TTL_MS,
                "cacheScope": "public",
            }),
            "complete",
            true,
        )
    }

    fn list_tools(&self, params: &Value) -> Result<Value, RpcError> {
        let tools: Vec<&Tool> = self.config.tools.iter().map(|t| &t.tool).collect();
        let mut body = page_of(&tools, "tools", params, self.config.page_size)?;
        body["ttlMs"] = json!(CACHE_TTL_MS);
        body["cacheScope"] = json!("public");
        Ok(finish(body, "complete", true))
    }

    fn call_tool(&self, params: &Value, tasks_declared: bool) -> Result<Value, RpcError> {
        let name = params
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("tools/call needs a string `name`"))?;
        let tool = self
            .config
            .tools
            .iter()
            .find(|t| t.tool.name == name)
            .ok_or_else(|| invalid(format!("unknown tool: {name}")))?;
        if tool.needs_task_param && params.get("task").is_none_or(Value::is_null) {
            return Err(RpcError::new(
                error_codes::METHOD_NOT_FOUND,
                "Tool required task augmented call",
            ));
        }
        match &tool.behavior {
            Behavior::Immediate(result) => Ok(call_result(result)),
            Behavior::InputRequired {
                requests,
                request_state,
                result,
            } => mrtr(params, requests, request_state.as_deref(), result),
            Behavior::InputForever(requests) => Ok(input_required(requests, None)),
            Behavior::Task(_) | Behavior::TaskFrom(_) if !tasks_declared => Err(tasks_required()),
            Behavior::Task(script) => Ok(self.start_task(script)),
            Behavior::TaskFrom(write) => {
                let arguments = match params.get("arguments") {
                    None | Some(Value::Null) => json!({}),
                    Some(arguments) => arguments.clone(),
                };
                Ok(self.start_task(&write.script(&arguments)))
            }
        }
    }

    /// Creates a task following `script`; its `CreateTaskResult`.
    fn start_task(&self, script: &super::TaskScript) -> Value {
        let created = tasks::create_task(&self.shared, script);
        finish(
            serde_json::to_value(created).unwrap_or_default(),
            "task",
            false,
        )
    }

    /// `params.taskId` of a `tasks/*` request, once the extension is known to be declared.
    fn task_param<'p>(&self, params: &'p Value, tasks_declared: bool) -> Result<&'p str, RpcError> {
        if !tasks_declared {
            return Err(tasks_required());
        }
        params
            .get("taskId")
            .and_then(Value::as_str)
            .ok_or_else(|| invalid("a string `taskId` is required"))
    }

    fn listen(
        &self,
        conn: &Conn,
        id: &RequestId,
        params: &Value,
        tasks_declared: bool,
    ) -> Result<(), RpcError> {
        let filter = params
            .get("notifications")
            .filter(|f| f.is_object())
            .ok_or_else(|| invalid("subscriptions/listen needs a `notifications` object"))?;
        let task_ids = match filter.get("taskIds") {
            None | Some(Value::Null) => None,
            Some(Value::Array(ids)) => Some(
                ids.iter()
                    .map(|v| v.as_str().map(str::to_owned))
                    .collect::<Option<Vec<String>>>()
                    .ok_or_else(|| invalid("notifications.taskIds must be strings"))?,
            ),
            Some(_) => return Err(invalid("notifications.taskIds must be an array")),
        };
        if task_ids.is_some() && !tasks_declared {
            return Err(tasks_required());
        }
        let uris = match filter.get("resourceSubscriptions") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(uris)) => uris
                .iter()
                .map(|v| v.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>()
                .ok_or_else(|| invalid("notifications.resourceSubscriptions must be strings"))?,
            Some(_) => {
                return Err(invalid(
                    "notifications.resourceSubscriptions must be an array",
                ));
            }
        };
        let asks = |key: &str| filter.get(key).and_then(Value::as_bool) == Some(true);
        let has_resources = self.offers(super::resources::RESOURCES_LIST);
        let lists = tasks::Lists {
            tools: asks("toolsListChanged"),
            resources: asks("resourcesListChanged") && has_resources,
            prompts: asks("promptsListChanged") && self.offers(super::resources::PROMPTS_LIST),
            uris: if self.accepts_resource_subscriptions() {
                uris
            } else {
                Vec::new()
            },
        };
        self.shared.lock().subscribe(
            conn.id,
            id.clone(),
            conn.tx.clone(),
            task_ids.as_deref(),
            self.config.accept_listen_task_ids,
            lists,
        );
        Ok(())
    }
}

/// The creation result of `Faults::task_result_for`: a task that does not exist.
fn bogus_task() -> Value {
    finish(
        json!({
            "taskId": "task-0-bogus",
            "status": "working",
            "createdAt": "2026-08-01T09:00:00.000Z",
            "lastUpdatedAt": "2026-08-01T09:00:00.000Z",
            "ttlMs": null,
        }),
        "task",
        false,
    )
}

/// A `tools/call` of an MRTR tool (see [`ScriptedTool::input_required`](super::ScriptedTool::input_required)).
fn mrtr(
    params: &Value,
    requests: &InputRequests,
    state: Option<&str>,
    result: &CallToolResult,
) -> Result<Value, RpcError> {
    let responses = input_responses(params)?;
    let sent_state = match params.get("requestState") {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => Some(s.as_str()),
        Some(_) => return Err(invalid("requestState must be a string")),
    };
    if responses.is_none() && sent_state.is_none() {
        return Ok(input_required(requests, state));
    }
    if sent_state != state {
        return Err(invalid("requestState was altered"));
    }
    let (answers, missing) = sort_answers(requests, responses)?;
    if !missing.is_empty() {
        return Ok(input_required(&missing, state));
    }
    let done = result
        .clone()
        .with_structured(json!({ "inputResponses": answers }));
    Ok(call_result(&done))
}
