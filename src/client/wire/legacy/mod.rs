//! The initialize-era wire (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05):
//! an `initialize` handshake, then plain JSON-RPC requests without the
//! per-request `_meta`; input comes as requests from the server, which
//! `server_requests/` answers. Its tasks are in `tasks`; what the
//! client remembers of the tools' `task` opt-in is in `known_tools`.

mod known_tools;
mod server_requests;
mod tasks;

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::mpsc;

pub(crate) use known_tools::{KnownTools, wants_opt_in};
use server_requests::hosted_tasks::{self, Host};
pub(crate) use tasks::Registry;
use tasks::{Follow, LegacyTasks};

use super::heard::Heard;
use super::start::{Call, NewTask, Started, TaskHold, ToolListing, undecodable_call};
use crate::client::connection::{Connection, ServerRequest, Tracking};
use crate::client::decode::decode;
use crate::client::wire::Envelope;
use crate::error::{Error, Result};
use crate::input::InputHandlers;
use crate::protocol::method;
use crate::protocol::versions::{self, Era};
use crate::protocol::{
    CallToolParams, ClientCapabilities, DetailedTask, DiscoverResult, Implementation,
    InputResponses, LegacyCallAnswer, ListTasksResult, META_SERVER_INFO, RequestId, ResourceParams,
    ServerCapabilities, TaskId,
};

/// An initialized session.
pub(crate) struct Legacy {
    conn: Connection,
    envelope: Arc<Envelope>,
    request_timeout: Duration,
    /// The server declared task-augmented `tools/call` (2025-11-25).
    task_calls: bool,
    /// The tasks the client hosts for the server: the client declared
    /// them and the server settled on 2025-11-25, so task-augmented
    /// requests from the server become tasks.
    host: Option<Arc<Host>>,
    tasks: LegacyTasks,
    /// Held while the tools are listed for the `task` opt-in, so that
    /// calls started together list once.
    listing: tokio::sync::Mutex<()>,
    /// The URIs subscribed to, whose updates the dispatcher delivers.
    heard: Heard,
}

/// An initialize-era request's params, with `_meta.progressToken` when the
/// caller asked for progress (that era sends no other `_meta`).
#[derive(Serialize)]
struct WithProgress<'a, P: Serialize> {
    #[serde(flatten)]
    params: &'a P,
    #[serde(rename = "_meta", skip_serializing_if = "Option::is_none")]
    meta: Option<ProgressMeta<'a>>,
}

#[derive(Serialize)]
struct ProgressMeta<'a> {
    #[serde(rename = "progressToken")]
    progress_token: &'a RequestId,
}

impl<'a, P: Serialize> WithProgress<'a, P> {
    fn new(params: &'a P, token: Option<&'a RequestId>) -> Self {
        WithProgress {
            params,
            meta: token.map(|progress_token| ProgressMeta { progress_token }),
        }
    }
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct InitializeParams<'a> {
    protocol_version: &'a str,
    capabilities: Value,
    client_info: &'a Implementation,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct InitializeResult {
    protocol_version: String,
    #[serde(default)]
    capabilities: ServerCapabilities,
    #[serde(default)]
    server_info: Option<Value>,
    #[serde(default)]
    instructions: Option<String>,
}

impl Legacy {
    /// Runs the handshake: `initialize` offering `offer`, the server's
    /// choice checked against the versions this client speaks, then
    /// `notifications/initialized`. Returns the session and what the
    /// server said of itself, in the shape `server/discover` gives.
    ///
    /// On 2025-11-25 the client also declares the tasks it hosts for the
    /// server, when `handlers` can run them (see
    /// `server_requests/hosted_tasks.rs`).
    pub(crate) async fn initialize(
        conn: Connection,
        envelope: Arc<Envelope>,
        handlers: &InputHandlers,
        offer: &str,
        request_timeout: Duration,
    ) -> Result<(Legacy, DiscoverResult)> {
        // Hosted tasks are declared on 2025-11-25 only, and used only when
        // the server settles on that version too.
        let hosted = Some(offer)
            .filter(|offer| versions::has(offer, |r| r.experimental_tasks))
            .and_then(|_| hosted_tasks::capability(handlers));
        let params = InitializeParams {
            protocol_version: offer,
            capabilities: initialize_capabilities(envelope.capabilities(), hosted.as_ref()),
            client_info: envelope.info(),
        };
        let raw = conn
            .request(method::INITIALIZE, None, &params, request_timeout)
            .await
            .map_err(|e| e.with_method(method::INITIALIZE))?;
        let result: InitializeResult = serde_json::from_str(raw.get()).map_err(|e| {
            Error::protocol(format!("malformed initialize result: {e}"))
                .with_method(method::INITIALIZE)
        })?;
        let Some(revision) =
            versions::find(&result.protocol_version).filter(|r| r.era == Era::Initialize)
        else {
            return Err(Error::protocol(format!(
                "the server chose protocol version {:?}, which this client does not speak \
                 (it offered {offer:?}; it speaks {})",
                result.protocol_version,
                versions::of_era(Era::Initialize)
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
            .with_method(method::INITIALIZE));
        };
        let version = revision.version;
        // Told before `notifications/initialized`: from it on, the
        // session's messages are in the version the server chose.
        envelope.set_protocol_version(version);
        conn.negotiated(version);
        conn.notify(method::NOTIFICATIONS_INITIALIZED, &Map::new())
            .await?;
        let mut meta = Map::new();
        if let Some(info) = result.server_info {
            meta.insert(META_SERVER_INFO.to_owned(), info);
        }
        let task_calls = revision.experimental_tasks && result.capabilities.declares_task_calls();
        let hosts_tasks = hosted.is_some() && revision.experimental_tasks;
        let discovered = DiscoverResult {
            supported_versions: vec![version.to_owned()],
            capabilities: result.capabilities,
            instructions: result.instructions,
            ttl_ms: None,
            cache_scope: None,
            meta: (!meta.is_empty()).then_some(meta),
        };
        let session = Legacy {
            conn,
            envelope,
            request_timeout,
            task_calls,
            host: hosts_tasks.then(Host::new),
            tasks: LegacyTasks::new(),
            listing: tokio::sync::Mutex::new(()),
            heard: Heard::default(),
        };
        Ok((session, discovered))
    }

    pub(crate) fn connection(&self) -> &Connection {
        &self.conn
    }

    pub(crate) fn envelope(&self) -> &Envelope {
        &self.envelope
    }

    /// Sends one request as this era does: the params alone, no `_meta`.
    pub(crate) async fn send<P: Serialize>(
        &self,
        method: &'static str,
        name: Option<&str>,
        params: &P,
        timeout: Option<Duration>,
    ) -> Result<Box<RawValue>> {
        let timeout = timeout.unwrap_or(self.request_timeout);
        self.conn
            .request(method, name.map(str::to_owned), params, timeout)
            .await
            .map_err(|e| e.with_method(method))
    }

    /// Answers the server's `requests` with `handlers` (this era asks for
    /// input by request), hosting its tasks where that was agreed; a
    /// request about a task the client follows goes to that task's handle.
    pub(crate) fn serve_requests(
        &self,
        requests: mpsc::Receiver<ServerRequest>,
        handlers: InputHandlers,
    ) {
        server_requests::serve(
            requests,
            handlers,
            Some(self.tasks.registry.clone()),
            self.host.clone(),
        );
    }

    /// How many tasks the client hosts for the server now.
    pub(crate) fn hosted_tasks(&self) -> usize {
        self.host.as_ref().map_or(0, |h| h.len())
    }

    /// The tasks this session follows.
    pub(crate) fn registry(&self) -> &Arc<Registry> {
        &self.tasks.registry
    }

    /// Calls a tool. Input the tool needs comes as requests from the
    /// server, answered while the call runs. The answer is the result, or
    /// (with the `task` opt-in, which the call carries only when the
    /// server runs tasks) a task's creation result `{"task": {…}}`.
    pub(crate) async fn start(&self, call: Call<'_>) -> Result<Started> {
        // Bounded by the call's timeout, as a wait on the server for this
        // call: a listing that has not ended by then is given up, as a
        // failed one is.
        let listed = tokio::time::timeout(call.timeout, self.listed(call.name, call.tools))
            .await
            .unwrap_or_else(|_| {
                tracing::debug!(
                    tool = call.name,
                    "listing the tools for their task support did not end within the call's timeout"
                );
                None
            });
        let opt_in = call.opt_in(listed).filter(|_| self.task_calls);
        let asked_for_a_task = opt_in.is_some();
        let mut tracking = call.progress;
        let token = tracking.as_ref().map(|t| t.token().clone());
        let params = CallToolParams {
            name: call.name.to_owned(),
            arguments: call.arguments,
            input_responses: None,
            request_state: None,
            task: opt_in,
        };
        let raw = self
            .conn
            .request_tracked(
                method::TOOLS_CALL,
                Some(call.name.to_owned()),
                &WithProgress::new(&params, token.as_ref()),
                call.timeout,
                tracking.as_mut(),
            )
            .await
            .map_err(|e| e.with_method(method::TOOLS_CALL))?;
        let answer = LegacyCallAnswer::read(raw.get()).map_err(|e| undecodable_call(&raw, e))?;
        let task = match answer {
            LegacyCallAnswer::Result(r) => return Ok(Started::Complete(r)),
            LegacyCallAnswer::Task(task) => task,
        };
        if !asked_for_a_task {
            // Against the rules, but the task exists: follow it rather
            // than lose it.
            tracing::warn!(
                tool = call.name,
                "the server made a task of a call that did not ask for one"
            );
        }
        let created = task.into_created();
        // Followed from the answer on, and the call's progress token
        // kept: a task of this era reports on it for its whole life.
        Ok(Started::Task(NewTask {
            hold: Some(TaskHold::new(self.follow(&created.task_id))),
            progress: tracking.map(Tracking::keep_reporting),
            created,
        }))
    }

    /// What the listing says of tool `name` (see [`ToolListing::opt_in`]),
    /// listing the tools first when the server runs tasks and no listing
    /// is remembered: such a server wants the opt-in on the tools listed
    /// for it, and a call without it is refused or runs without a task.
    /// This costs one `tools/list` (all its pages) per client, not per
    /// call: calls started together wait for one listing (the lock is
    /// held for the listing only, never through a call), and later calls
    /// read what it left. A `list_changed` from the server forgets it;
    /// the next call lists again. A failed listing is logged, and the
    /// call goes without the opt-in; so does one that has not ended
    /// within the call's timeout (the wait for another call's listing
    /// included), which [`Legacy::start`] bounds it by.
    async fn listed(&self, name: &str, tools: &dyn ToolListing) -> Option<bool> {
        let listed = tools.opt_in(name);
        if listed.is_some() || !self.task_calls {
            return listed;
        }
        let _listing = self.listing.lock().await;
        // Read again once the lock is held, not from before: another
        // call's listing may have ended meanwhile, and the server's
        // `list_changed` (sent in bursts after the handshake) may have
        // cleared the memory.
        let listed = tools.opt_in(name);
        if listed.is_some() || tools.has_listed() {
            return listed;
        }
        match tools.list().await {
            Ok(all) => all.iter().find(|t| t.name == name).map(wants_opt_in),
            Err(e) => {
                tracing::debug!("listing the tools for their task support failed: {e}");
                None
            }
        }
    }

    /// Keeps the URIs subscribed to in `heard`, which the dispatcher reads.
    pub(crate) fn hear(&mut self, heard: Heard) {
        self.heard = heard;
    }

    /// Subscribes to `uri` (`resources/subscribe`) or ends its
    /// subscription (`resources/unsubscribe`). A subscription is heard
    /// from the moment the server may send an update (and forgotten again
    /// when the request fails); an unsubscription is not heard from at
    /// once.
    pub(crate) async fn subscribe_resource(&self, uri: &str, subscribe: bool) -> Result<()> {
        let method = if subscribe {
            method::RESOURCES_SUBSCRIBE
        } else {
            method::RESOURCES_UNSUBSCRIBE
        };
        let added = subscribe && self.heard.add(uri);
        if !subscribe {
            self.heard.remove(uri);
        }
        let params = ResourceParams {
            uri: uri.to_owned(),
        };
        let sent = match self.send(method, None, &params, None).await {
            Ok(raw) => decode::<Value>(&raw, method).map(drop),
            Err(e) => Err(e),
        };
        if sent.is_err() && added {
            self.heard.remove(uri);
        }
        sent
    }

    /// Holds task `id` for a handle (see [`Follow`]).
    pub(crate) fn follow(&self, id: &TaskId) -> Follow {
        self.tasks.registry.follow(id)
    }

    pub(crate) async fn read(&self, id: &TaskId, timeout: Duration) -> Result<DetailedTask> {
        self.tasks.read(&self.conn, id, timeout).await
    }

    pub(crate) async fn answer(&self, id: &TaskId, responses: &InputResponses) -> Result<()> {
        self.tasks.answer(id, responses).await
    }

    pub(crate) async fn cancel(&self, id: &TaskId, timeout: Duration) -> Result<()> {
        self.tasks.cancel(&self.conn, id, timeout).await
    }

    /// One page of `tasks/list`.
    pub(crate) async fn list_tasks(&self, cursor: Option<&str>) -> Result<ListTasksResult> {
        #[derive(Serialize)]
        struct Params<'a> {
            #[serde(skip_serializing_if = "Option::is_none")]
            cursor: Option<&'a str>,
        }
        let raw = self
            .send(method::TASKS_LIST, None, &Params { cursor }, None)
            .await?;
        serde_json::from_str(raw.get()).map_err(|e| {
            Error::protocol(format!("malformed tasks/list result: {e}"))
                .with_method(method::TASKS_LIST)
        })
    }
}

/// The `capabilities` of `initialize`: the handlers' own, with `tasks`
/// when the client hosts tasks.
fn initialize_capabilities(
    capabilities: &ClientCapabilities,
    hosted: Option<&Map<String, Value>>,
) -> Value {
    let mut value =
        serde_json::to_value(capabilities).unwrap_or_else(|_| Value::Object(Map::new()));
    if let (Some(tasks), Value::Object(map)) = (hosted, &mut value) {
        map.insert("tasks".to_owned(), Value::Object(tasks.clone()));
    }
    value
}
