//! The MCP client: one connection, shared by every clone and task handle.
//!
//! - `connection/`: JSON-RPC over a transport: request ids, pending
//!   requests, routing of what the server sends, timeouts.
//! - `wire/`: the protocol eras, and everything that differs between
//!   them: which one a server speaks, each one's way to start, read,
//!   answer and cancel a task, the `_meta` of a 2026-07-28 request
//!   (`envelope.rs`), task pushes, resource subscriptions, and
//!   the requests a server sends (answered on the initialize era, with
//!   the tasks the client hosts for a 2025-11-25 server; refused on
//!   2026-07-28). One folder per era: `wire/modern/`, `wire/legacy/`.
//!   Code outside `wire/` never asks which era it talks to.
//! - `call.rs`: `tools/call` and the task verbs; `decode.rs`: one result
//!   decoder.
//! - `catalog/`: tools, resources, templates, prompts and completion.
//! - `notifications/`: the dispatcher of what the server sends outside
//!   any request, and the builder's callbacks for it.
//! - `stats.rs`: the diagnostic counters.

use std::fmt;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::OnceCell;

use crate::error::{Error, Result};
use crate::input::{Callback, InputHandlers};
use crate::protocol::method::{self, Method};
use crate::protocol::{DiscoverResult, Implementation, LogMessage, ResourceUpdated, ResultType};
use crate::transport::Transport;

pub(crate) mod call;
mod catalog;
pub(crate) mod connection;
mod decode;
mod notifications;
mod stats;
mod wire;

pub use catalog::pages::{Listed, Pages, ToolPages};
use connection::Connection;
pub(crate) use decode::decode;
use notifications::{Dispatch, Observers};
pub use notifications::{ListChanged, SERVER_LOG_TARGET};
pub use stats::ClientStats;
use wire::Envelope;
use wire::KnownTools;
pub(crate) use wire::{Call, NewTask, Push, Started, TaskHold, Watch, Wire};

/// The default bound on one request.
const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest a `connect` probe waits by default.
const DEFAULT_PROBE_TIMEOUT: Duration = Duration::from_secs(10);
/// The default bound on MRTR rounds of one `tools/call`.
const DEFAULT_MAX_INPUT_ROUNDS: usize = 10;

/// An MCP client: 2026-07-28, or an initialize-era session (2025-11-25
/// and earlier), whichever the server speaks ([`ClientBuilder::connect`]
/// negotiates it).
///
/// `Client` is cheap to clone: clones share one connection (an `Arc`
/// inside), so there is no need to wrap it in an `Arc`. Every task handle
/// holds a clone, which keeps the connection open while the handle lives.
///
/// On 2026-07-28 every request carries the full per-request `_meta`
/// (protocol version, client info, capabilities derived from the installed
/// [`InputHandlers`]); task-related requests also declare the Tasks
/// extension. On the initialize era the same facts go once, in the
/// `initialize` handshake.
///
/// # Examples
///
/// ```
/// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
/// use mcp_tasks::Client;
/// use mcp_tasks::protocol::CallToolResult;
/// use mcp_tasks::testing::{ScriptedTool, TestServer};
///
/// let server = TestServer::new().tool(ScriptedTool::immediate("ping", CallToolResult::text("pong")));
/// let client = Client::builder().client_info("docs", "1.0").connect(server.connect()).await?;
/// let result = client.call_tool("ping", serde_json::json!({})).await?;
/// assert_eq!(result.joined_text(), "pong");
/// # Ok(()) }
/// ```
///
/// # Closing, and drop behavior
///
/// [`Client::close`] ends the connection and waits until it is ended: an
/// HTTP session's `DELETE` answered, a stdio child exited. Call it before
/// the program exits: nothing else waits for it.
///
/// Dropping the last clone (and the last task handle) without `close`
/// closes the connection too, but in the background, awaited by nobody: a
/// stdio child gets its stdin closed and, with its process group, a
/// signal if it does not exit in time, and an HTTP session's `DELETE` is
/// sent, both on a task that dies with the runtime. When the program
/// exits right after the drop, the `DELETE` is usually never sent, and
/// the child and its group are killed at once (they never outlive the
/// client). Either way, tasks on the server run on.
#[derive(Clone)]
pub struct Client {
    inner: Arc<Inner>,
}

struct Inner {
    wire: Wire,
    handlers: InputHandlers,
    request_timeout: Duration,
    max_input_rounds: usize,
    /// The bound on the JSON one `list_tools()` reads.
    max_listed_bytes: usize,
    /// The bound on what the items of one `list_tools()`, or of one page
    /// read alone, take in memory.
    max_listed_memory: usize,
    /// The bound on one whole `list_tools()`.
    list_timeout: Duration,
    server_id: Option<String>,
    discovered: OnceCell<DiscoverResult>,
    /// The tools of the last complete `list_tools()`, shared with the
    /// notification dispatcher (which forgets them on `list_changed`).
    listed_tools: Arc<Mutex<KnownTools>>,
    /// Notifications dropped because a callback was behind.
    notify_dropped: Arc<AtomicU64>,
}

impl fmt::Debug for Client {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Client")
            .field("client_info", &self.inner.wire.envelope().info().name)
            .field("protocol_version", &self.protocol_version())
            .field("input_handlers", &self.inner.handlers)
            .finish_non_exhaustive()
    }
}

#[derive(bon::Builder)]
#[builder(
    builder_type(
        name = ClientBuilder,
        vis = "pub",
        doc {
            /// Configures and connects a [`Client`]. Start with [`Client::builder`],
            /// finish with [`ClientBuilder::connect`].
            ///
            /// Each setter may be called once.
        }
    ),
    start_fn(name = new_builder, vis = ""),
    finish_fn(name = build_config, vis = ""),
    state_mod(vis = "pub", doc {
        /// Type states of [`ClientBuilder`]; you never need to name them.
    })
)]
pub(crate) struct Config {
    /// The name and version sent as `clientInfo` on every request
    /// (default: this crate's name and version).
    #[builder(with = |name: impl Into<String>, version: impl Into<String>| Implementation::new(name, version))]
    client_info: Option<Implementation>,
    /// Handlers for the server's input requests. They also decide which
    /// capabilities the client declares (default: none).
    input_handlers: Option<InputHandlers>,
    /// Bound on each request (default 30 s).
    request_timeout: Option<Duration>,
    /// Pins the protocol version, and with it the era (default: negotiated).
    ///
    /// Without it, `connect` probes with `server/discover`: a 2026-07-28
    /// server answers it (or with an error only such a server gives), and
    /// any other answer, or none within the probe bound, starts an
    /// `initialize` handshake offering 2025-11-25 (accepting 2025-06-18,
    /// 2025-03-26 and 2024-11-05 in reply). A 2026-07-28 version skips the
    /// probe (a server that answers `-32022` is retried once with a version
    /// both speak); an initialize-era version goes straight to
    /// `initialize`, offering it.
    #[builder(into)]
    protocol_version: Option<String>,
    /// How long `connect` waits for the answer to its `server/discover`
    /// probe before it takes the server for an initialize-era one (default:
    /// the request timeout, at most 10 s).
    probe_timeout: Option<Duration>,
    /// Most MRTR rounds for one `tools/call`, `prompts/get` or
    /// `resources/read` before giving up (default 10).
    max_input_rounds: Option<usize>,
    /// Most bytes of JSON one [`Client::list_tools`] (or
    /// `list_resources`, `list_resource_templates`, `list_prompts`) reads,
    /// summed over its pages (default 16 MiB). A listing that passes it
    /// fails with [`Error::is_over_limit`] without asking for more pages.
    /// What the items take in memory is bounded by `max_listed_memory`.
    /// Read a larger listing page by page with [`Client::tool_pages`].
    max_listed_bytes: Option<usize>,
    /// Most bytes of memory the items of one [`Client::list_tools`] (or
    /// `list_resources`, `list_resource_templates`, `list_prompts`) take,
    /// and those of one page read alone with [`Client::tool_pages`] and
    /// its siblings (default 64 MiB).
    ///
    /// Each page is measured on its JSON before anything of it is
    /// decoded, so nothing past the bound is ever built. An item counts:
    ///
    /// - its own size (`size_of`: 248 bytes for a
    ///   [`Tool`](crate::protocol::Tool), 224 for a
    ///   [`Resource`](crate::protocol::Resource), 208 for a
    ///   [`ResourceTemplate`](crate::protocol::ResourceTemplate), 152 for
    ///   a [`Prompt`](crate::protocol::Prompt), on 64-bit targets);
    /// - each string in it as allocated: its length plus 8 bytes, rounded
    ///   up to 16, at least 32 (member names of the item itself are not
    ///   kept, so not counted);
    /// - each array as its 32-byte slots (4, then doubling), and each JSON
    ///   object as 640 bytes a node (one node up to 11 entries; past that,
    ///   one per 5 entries, the most it can take) and its keys;
    /// - for a tool sent without `inputSchema`, the `{"type":"object"}` it
    ///   is given (704 bytes).
    ///
    /// This is what the decoded items take, within a few percent (typed
    /// members, such as a tool's `annotations`, count as the JSON objects
    /// they are sent as, which is more). So the default holds about
    /// 230,000 resources with short URIs and names, or 68,000 tools sent
    /// as `{"name":"t"}`; the process's memory for the listing is this
    /// count plus the list's spare capacity (at most its length again,
    /// times the item's size). A listing whose items would pass the bound
    /// fails with [`Error::is_over_limit`] without asking for more pages;
    /// a page that would pass it alone fails the page reader the same way.
    /// Nothing of either is kept.
    max_listed_memory: Option<usize>,
    /// Bound on one whole [`Client::list_tools`], every page included
    /// (default 5 minutes); each page is also bounded by the request
    /// timeout. A listing that does not end in time fails with
    /// [`Error::is_deadline`].
    list_timeout: Option<Duration>,
    /// Names the server for [`TaskRef`](crate::TaskRef)s, so that resuming
    /// a task against another server is detected (default: the server's
    /// own name from `server/discover`, when it was called).
    #[builder(into)]
    server_id: Option<String>,
    /// Called with each server log message; see `ClientBuilder::on_log`.
    #[builder(setters(vis = "", name = on_log_internal))]
    on_log: Option<Callback<LogMessage>>,
    /// Called when a server list changes; see `ClientBuilder::on_list_changed`.
    #[builder(setters(vis = "", name = on_list_changed_internal))]
    on_list_changed: Option<Callback<ListChanged>>,
    /// Called when a resource subscribed to changes; see
    /// `ClientBuilder::on_resource_updated`.
    #[builder(setters(vis = "", name = on_resource_updated_internal))]
    on_resource_updated: Option<Callback<ResourceUpdated>>,
}

impl<S: client_builder::IsComplete> ClientBuilder<S> {
    /// Opens `transport` and returns the connected client.
    ///
    /// Unless the builder pins a version, it learns which era the server
    /// speaks: a `server/discover` probe (its answer is what
    /// [`Client::discover`] returns later), and for an initialize-era
    /// server the `initialize` handshake. The same API then works on both.
    ///
    /// # Errors
    ///
    /// [`Error::is_transport`] when the transport cannot be opened (for
    /// stdio: the program cannot be started) or closes during the
    /// handshake; [`Error::is_protocol`] when the server chose a version
    /// this client does not speak (the error names both); any error of
    /// the `initialize` request.
    pub async fn connect<T: Transport>(self, transport: T) -> Result<Client> {
        let config = self.build_config();
        let conn = Connection::open(transport).await?;
        // Taken before the handshake: servers send `list_changed` and log
        // messages right after `initialize`, and they wait in the queue.
        let notifications = conn.notifications();
        // Taken before the handshake too: a request the server sends
        // during it waits, and is answered once the era is known (`ping`
        // is answered at once by the connection itself).
        let requests = conn.server_requests();
        let handlers = config.input_handlers.unwrap_or_default();
        let info = config.client_info.unwrap_or_else(|| {
            Implementation::new(env!("CARGO_PKG_NAME"), env!("CARGO_PKG_VERSION"))
        });
        let pin = wire::probe::Pin::of(config.protocol_version.as_deref());
        let envelope = Envelope::new(info, handlers.capabilities(), config.protocol_version);
        let request_timeout = config.request_timeout.unwrap_or(DEFAULT_REQUEST_TIMEOUT);
        let probe_timeout = config
            .probe_timeout
            .unwrap_or_else(|| request_timeout.min(DEFAULT_PROBE_TIMEOUT));
        let session = wire::probe::negotiate(
            conn,
            Arc::new(envelope),
            &handlers,
            pin,
            probe_timeout,
            request_timeout,
        )
        .await?;
        session.wire.serve_requests(requests, handlers.clone());
        let discovered = OnceCell::new();
        if let Some(d) = session.discovered {
            let _ = discovered.set(d);
        }
        let listed_tools = Arc::new(Mutex::new(KnownTools::default()));
        let notify_dropped = Arc::new(AtomicU64::new(0));
        // What the 2026-07-28 resource subscriptions' listen stream hears
        // goes to the same dispatcher.
        let (listened_tx, listened) = tokio::sync::mpsc::channel(connection::NOTIFICATION_CAPACITY);
        // On 2026-07-28 list changes come on a listen stream alone: one is
        // opened for those the server says change when someone listens.
        let lists = match &config.on_list_changed {
            Some(_) => wire::Lists::advertised(discovered.get().map(|d| &d.capabilities)),
            None => wire::Lists::default(),
        };
        let heard = wire::Heard::default();
        let mut wire = session.wire;
        wire.hear(heard.clone(), listened_tx, lists);
        notifications::spawn(
            notifications,
            listened,
            Dispatch {
                conn: wire.connection().downgrade(),
                tools: listed_tools.clone(),
                observers: Observers {
                    log: config.on_log,
                    list_changed: config.on_list_changed,
                    resource_updated: config.on_resource_updated,
                },
                handlers: handlers.clone(),
                dropped: notify_dropped.clone(),
                tasks: wire.registry().cloned(),
                heard,
            },
        );
        let client = Client {
            inner: Arc::new(Inner {
                wire,
                handlers,
                request_timeout,
                max_input_rounds: config.max_input_rounds.unwrap_or(DEFAULT_MAX_INPUT_ROUNDS),
                max_listed_bytes: config
                    .max_listed_bytes
                    .unwrap_or(catalog::pages::DEFAULT_MAX_LISTED_BYTES),
                max_listed_memory: config
                    .max_listed_memory
                    .unwrap_or(catalog::pages::DEFAULT_MAX_LISTED_MEMORY),
                list_timeout: config
                    .list_timeout
                    .unwrap_or(catalog::pages::DEFAULT_LIST_TIMEOUT),
                server_id: config.server_id,
                discovered,
                listed_tools,
                notify_dropped,
            }),
        };
        // Only when the server was probed: one that was not (a pinned
        // version) is not sent a request it did not ask for; its list
        // changes come with the first resource subscription.
        let probed = client.inner.discovered.get().is_some();
        if probed && !lists.is_empty() && client.inner.wire.subscribes_by_listening() {
            listen_for_list_changes(&client);
        }
        Ok(client)
    }
}

/// Opens the 2026-07-28 listen stream for list changes in the background,
/// so that `connect` does not wait for its acknowledgement; a server that
/// refuses it is logged, and heard from again only once a resource is
/// subscribed to. The task holds the client weakly, but for the moment of
/// opening the stream.
fn listen_for_list_changes(client: &Client) {
    let weak = Arc::downgrade(&client.inner);
    tokio::spawn(async move {
        let Some(inner) = weak.upgrade() else { return };
        let wire = &inner.wire;
        match wire.listen_for_list_changes().await {
            Ok(()) => {}
            // Closed while the stream was being opened: nothing is lost.
            Err(e) if wire.connection().closed_reason().is_some() => {
                tracing::debug!("the stream of list changes was not opened: {e}");
            }
            Err(e) => tracing::warn!("list changes will not be heard: {e}"),
        }
    });
}

impl Client {
    /// Starts configuring a client.
    pub fn builder() -> ClientBuilder {
        Config::new_builder()
    }

    /// Connects with the default settings; see [`Client::builder`] for more.
    ///
    /// # Errors
    ///
    /// As [`ClientBuilder::connect`].
    pub async fn connect<T: Transport>(transport: T) -> Result<Client> {
        Self::builder().connect(transport).await
    }

    /// The protocol version requests are sent with.
    pub fn protocol_version(&self) -> Arc<str> {
        self.inner.wire.envelope().protocol_version()
    }

    /// The bound on each request.
    pub fn request_timeout(&self) -> Duration {
        self.inner.request_timeout
    }

    /// What names the server in [`TaskRef`](crate::TaskRef)s: the builder's
    /// `server_id`, else the server's name from a `server/discover` already made.
    pub fn server_id(&self) -> Option<&str> {
        self.inner.server_id.as_deref().or_else(|| {
            self.inner
                .discovered
                .get()
                .and_then(|d| d.meta.as_ref())
                .and_then(|m| m.get(crate::protocol::META_SERVER_INFO))
                .and_then(|i| i.get("name"))
                .and_then(Value::as_str)
        })
    }

    /// Ends the connection gracefully and waits until it is ended, within
    /// the transport's own bound:
    ///
    /// | transport | what closing does | bound |
    /// |---|---|---|
    /// | [`Stdio`](crate::transport::Stdio) | closes the child's stdin, waits for it to exit, then sends its process group SIGTERM, then SIGKILL | [`Stdio::shutdown_timeout`](crate::transport::Stdio::shutdown_timeout) (500 ms) plus [`Stdio::terminate_timeout`](crate::transport::Stdio::terminate_timeout) (2 s) by default |
    /// | `Http` | ends an initialize-era session with its `DELETE` and waits for the answer (nothing to send on 2026-07-28) | `Http::close_timeout`, 2 s by default |
    /// | [`memory`](crate::transport::memory) | closes the sending end, so the peer reads the end | none needed |
    ///
    /// Closing ends the connection for every clone of this client and
    /// every task handle: the requests still waiting, and every later
    /// one, fail at once with a transport error whose message says the
    /// client was closed ([`Error::is_transport`];
    /// [`Client::closed_reason`] says the same). A `tools/call` still
    /// waiting reports [`Error::is_outcome_unknown`]: it was sent. Tasks
    /// on the server run on; a [`TaskRef`](crate::TaskRef) resumes them
    /// on a new connection.
    ///
    /// Calling it again, or after the connection closed on its own (the
    /// server exited, say), returns `Ok(())` at once.
    ///
    /// See the type's documentation for what dropping does instead.
    ///
    /// # Errors
    ///
    /// [`Error::is_transport`] when the close could not be done as it
    /// should: the session's `DELETE` got no answer in time or could not
    /// be sent. The connection is closed either way. A stdio child that
    /// did not exit in time and was ended by a signal is closed: that is `Ok`,
    /// logged at `warn` and counted in
    /// [`ClientStats::servers_killed`](crate::ClientStats::servers_killed).
    ///
    /// # Examples
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")] async fn main() -> mcp_tasks::Result<()> {
    /// use mcp_tasks::Client;
    /// use mcp_tasks::testing::TestServer;
    ///
    /// let client = Client::connect(TestServer::new().connect()).await?;
    /// let other = client.clone();
    /// client.close().await?;
    /// let e = other.list_tools().await.unwrap_err();
    /// assert!(e.is_transport() && e.to_string().contains("the client was closed"));
    /// # Ok(()) }
    /// ```
    pub async fn close(self) -> Result<()> {
        self.inner
            .wire
            .connection()
            .close()
            .await
            .map_err(|e| Error::transport(format!("closing: {e}")).with_source(e))
    }

    /// Why the connection closed, if it has.
    pub fn closed_reason(&self) -> Option<String> {
        self.inner.wire.connection().closed_reason()
    }

    /// The moment before which no wait reads a task: the end of the latest
    /// `Retry-After` the server sent, while it is to come.
    pub(crate) fn not_before(&self) -> Option<tokio::time::Instant> {
        self.inner.wire.connection().not_before()
    }

    /// Resolves once the connection has closed (at once if it has).
    pub(crate) async fn closed(&self) {
        self.inner.wire.connection().closed().await;
    }

    /// Sends `server/discover` once and caches the answer.
    ///
    /// # Errors
    ///
    /// A transport, timeout or JSON-RPC error; a failed discover is not cached.
    pub async fn discover(&self) -> Result<&DiscoverResult> {
        self.inner
            .discovered
            .get_or_try_init(|| async {
                let raw = self
                    .inner
                    .wire
                    .send(method::SERVER_DISCOVER, &Map::new(), None)
                    .await?;
                decode(&raw, method::SERVER_DISCOVER)
            })
            .await
    }

    /// Whether the server runs tool calls as tasks: it advertises the
    /// 2026-07-28 Tasks extension (sends `server/discover` the first time,
    /// unless `connect` already did), or an initialize-era server declared
    /// 2025-11-25's task-augmented `tools/call` in its handshake.
    ///
    /// A 2026-07-28 server that does not advertise it may still work: the
    /// client declares the extension on every task request regardless.
    ///
    /// # Errors
    ///
    /// As [`Client::discover`].
    pub async fn supports_tasks(&self) -> Result<bool> {
        Ok(self.discover().await?.capabilities.supports_tasks())
    }

    /// Sends any request and returns its raw result: the escape hatch for
    /// methods this crate does not wrap.
    ///
    /// `params` must be a JSON object or null. On 2026-07-28 the client adds
    /// its `_meta` (declaring the Tasks extension on `tools/call`, `tasks/*`
    /// and `subscriptions/listen`); keys of a `_meta` object in `params` win
    /// over the client's, so a caller can replace the capabilities. On an
    /// initialize-era session `params` go as given.
    ///
    /// The result is returned as sent, with one check: a `resultType:
    /// "task"` answer is accepted only from `tools/call` (and `tasks/get`),
    /// the one method that can become a task.
    ///
    /// # Errors
    ///
    /// [`Error::is_builder`] when `params` is not an object;
    /// [`Error::is_protocol`] for a task where none may be, or a result that
    /// is not JSON; otherwise as any request.
    pub async fn request(&self, method: &str, params: Value) -> Result<Value> {
        let mut params = match params {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            _ => return Err(Error::builder("params must be a JSON object")),
        };
        // Where every request carries `_meta`; an initialize-era session
        // said it all in its handshake and sends the caller's alone.
        if let Some(mut meta) = self.inner.wire.request_meta(method) {
            if let Some(Value::Object(user)) = params.remove("_meta") {
                meta.extend(user);
            }
            params.insert("_meta".into(), Value::Object(meta));
        }
        let name = routing_name(method, &params);
        let raw = self
            .inner
            .wire
            .connection()
            .request(method, name, &params, self.inner.request_timeout)
            .await
            .map_err(|e| e.with_method(method.to_owned()))?;
        if is_stray_task(method, &raw) {
            let e = Error::protocol(format!("{method} answered with a task, which it cannot be"));
            return Err(e.with_method(method.to_owned()));
        }
        serde_json::from_str(raw.get())
            .map_err(|e| Error::protocol(format!("{method}: {e}")).with_method(method.to_owned()))
    }

    /// The wire every task-level operation goes through.
    pub(crate) fn wire(&self) -> &Wire {
        &self.inner.wire
    }

    pub(crate) fn handlers(&self) -> &InputHandlers {
        &self.inner.handlers
    }

    pub(crate) fn max_input_rounds(&self) -> usize {
        self.inner.max_input_rounds
    }

    /// Where the listing memory stands before a `tools/list` starts.
    pub(crate) fn tools_generation(&self) -> u64 {
        self.inner.listed_tools.lock().unwrap().generation()
    }

    /// Notifications dropped because a callback was behind.
    pub(crate) fn notify_dropped(&self) -> &AtomicU64 {
        &self.inner.notify_dropped
    }

    /// Replaces what the client remembers of the server's tools, unless
    /// the server said they changed since the listing started
    /// (`generation`).
    pub(crate) fn remember_tools(&self, generation: u64, tools: &[crate::protocol::Tool]) {
        let listed = tools
            .iter()
            .map(|t| (t.name.clone(), wire::wants_opt_in(t)))
            .collect();
        self.inner
            .listed_tools
            .lock()
            .unwrap()
            .replace(generation, listed);
    }
}

/// What a request sent by hand acts on (see
/// [`Outbound::name`](crate::transport::Outbound::name)): the param its
/// method is routed by, when it is a string or a number.
fn routing_name(method: &str, params: &Map<String, Value>) -> Option<String> {
    match params.get(Method::of(method).routing_param()?)? {
        Value::String(text) => Some(text.clone()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    }
}

/// Whether a reply of the raw escape hatch is a task where none may be:
/// only `tools/call` can become a task (and `tasks/get` is read leniently,
/// since one of the specification's own examples tags it `task`).
fn is_stray_task(method: &str, raw: &RawValue) -> bool {
    !Method::of(method).may_answer_with_a_task()
        && matches!(ResultType::of(raw.get()), Ok(ResultType::Task))
}
