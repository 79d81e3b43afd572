//! Streamable HTTP: one POST per message, replies as JSON or SSE.

use std::collections::HashMap;
use std::fmt;
use std::io;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::Url;
use reqwest::header::HeaderMap;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::AbortHandle;

use super::{
    Closed, DEFAULT_MAX_MESSAGE_SIZE, Inbound, MessageSink, MessageStream, Outbound, OutboundKind,
    Transport,
};
use crate::protocol::method;
use crate::protocol::method::Method;
use crate::protocol::versions;
use crate::protocol::{RequestId, TaskId};

#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub mod auth;
mod body;
mod exchange;
mod headers;
mod post;
mod retry_after;
mod send;
mod session;
mod sse;
mod tool_headers;

use exchange::Exchange;
use tool_headers::Registry;

/// How many received messages may wait for the client's reader.
const INBOUND_CAPACITY: usize = 256;
/// Most redirects followed for one POST (307 and 308 only, same origin).
const MAX_REDIRECTS: usize = 5;

/// A remote MCP server spoken to over Streamable HTTP.
///
/// Every message is its own `POST` to the server's one endpoint, over a
/// pool of keep-alive connections. The server answers each request with
/// either `application/json` (the response) or `text/event-stream` (the
/// notifications about that request, then the response); both are
/// understood, and `:` keep-alive comments are ignored. On 2026-07-28 that
/// is all: the protocol is stateless, so there is no session and no `GET`.
///
/// # Sessions (the initialize era)
///
/// With a server of the initialize era (2025-03-26 to 2025-11-25) the
/// transport keeps the session the `initialize` handshake opens:
///
/// - The `Mcp-Session-Id` of the `initialize` reply goes on every later
///   request, with the version the server chose as `MCP-Protocol-Version`
///   (the client tells the transport which, with
///   [`Outbound::protocol_version`]; the transport never reads the reply).
/// - Once `notifications/initialized` is sent, the transport opens the
///   server's own stream: a `GET` with `Accept: text/event-stream`. The
///   requests and notifications the server sends there (`roots/list`,
///   `elicitation/create`, `notifications/message`, …) reach the client
///   like any other, and its answers are POSTed. A `405` (or any status
///   that is not `2xx`) means the server offers no such stream: nothing is
///   retried. When the stream ends or breaks it is opened again with
///   `Last-Event-ID` (the last SSE `id` seen), after a backoff: 1 s,
///   doubled after each attempt in a row that delivered no message, up to
///   30 s. The server's SSE `retry` can lengthen a wait (up to 5 min),
///   never shorten it. A stream that delivers no message (a priming
///   event, comments, empty events) counts as a failure like one that
///   cannot be opened, and five in a row end the `GET` stream for the
///   session (0, 1, 3, 7 and 15 s in, with no `retry`).
/// - A response stream (the SSE reply to a POST) that ends before its
///   response, after the server gave its events ids, is resumed the same
///   way: a `GET` with `Last-Event-ID`, after the same backoff; after five
///   resumptions in a row that delivered no message the request fails
///   with its reply lost (for a `tools/call`,
///   [`Error::is_outcome_unknown`](crate::Error::is_outcome_unknown)).
/// - A `404` to a request that carried the session id means the server
///   forgot the session. The transport starts a new one (it sends the
///   client's `initialize` request again, reads the reply itself, then
///   sends `notifications/initialized`) and sends the failed request again
///   once, unless it is a `tools/call`: a tool is never run twice behind
///   the caller's back, so that call fails, with
///   [`Error::http_status`](crate::Error::http_status) `404` and a message
///   saying the session was renewed. Requests that hit the same lost
///   session together renew it once; a request that fails again on the new
///   session is not retried again. (A `404` whose body is a JSON-RPC
///   `-32601` is an unknown method, not a lost session.)
/// - When the client closes, the session is ended with a `DELETE` carrying
///   its id, bounded by [`Http::close_timeout`] (2 s by default); any
///   answer will do (a `405` says the server ends sessions itself).
///   [`Client::close`](crate::Client::close) waits for it; dropping the
///   client sends it in the background, awaited by nobody.
///
/// A 2025-03-26 server may answer with a JSON-RPC batch (an array, as a
/// JSON body or as one SSE event): on an initialize-era connection each
/// message is handed to the client in order (on 2026-07-28 an array is no
/// reply).
///
/// # Examples
///
/// ```no_run
/// # async fn f() -> mcp_tasks::Result<()> {
/// use std::time::Duration;
/// use mcp_tasks::{Client, transport::Http};
///
/// let client = Client::builder()
///     .connect(
///         Http::new("https://mcp.example.com/mcp")
///             .bearer_token(std::env::var("MCP_TOKEN").unwrap_or_default())
///             .header("X-Team", "data-platform")
///             .connect_timeout(Duration::from_secs(5)),
///     )
///     .await?;
/// let tools = client.list_tools().await?;
/// # Ok(()) }
/// ```
///
/// # Headers
///
/// Each POST carries `Accept: application/json, text/event-stream`,
/// `Content-Type: application/json` and the standard MCP headers, from
/// what the client states, never read back from the message: the method
/// and routing name on the [`Outbound`] it wrote ([`Outbound::method`],
/// [`Outbound::name`]), and the version it negotiated
/// ([`Outbound::protocol_version`]; until a message states one, the newest version this
/// client speaks, and none on `initialize`):
///
/// | header | value |
/// |---|---|
/// | `MCP-Protocol-Version` | the negotiated version (on 2026-07-28, also the body's `_meta["io.modelcontextprotocol/protocolVersion"]`) |
/// | `Mcp-Method` | the JSON-RPC method |
/// | `Mcp-Name` | [`Outbound::name`] on `tools/call` and `prompts/get` (`params.name`), `resources/read` (`params.uri`), `tasks/get`, `tasks/update` and `tasks/cancel` (`params.taskId`) |
/// | `Mcp-Param-{Name}` | each `tools/call` argument the tool's schema annotates with `x-mcp-header` |
///
/// A value that is not plain visible ASCII (non-ASCII text, control
/// characters, leading or trailing spaces) is sent as
/// `=?base64?<base64 of its UTF-8 bytes>?=`. The headers set with
/// [`Http::header`] and [`Http::bearer_token`] go on every POST, the
/// requests that follow up a task included. No header is sent twice.
///
/// # Tool arguments in headers
///
/// The transport reads the `tools/list` replies that pass through it and
/// remembers which arguments of each tool are annotated with
/// `x-mcp-header`, so later calls mirror them. A tool whose annotations
/// are invalid (empty, not an HTTP token, repeated, on a property that is
/// not a string, integer or boolean, or not reached through `properties`
/// alone) is removed from the reply with a warning: the client never
/// sees it, as the specification requires. Calling a tool that was never
/// listed sends no `Mcp-Param-*` header; a server that needs one answers
/// `-32020`, and listing the tools first fixes it.
///
/// # Cancellation, timeouts and lost replies
///
/// On HTTP, closing a response stream *is* the cancellation: when a request
/// times out or its future is dropped, the transport drops that POST's
/// response instead of sending `notifications/cancelled`.
/// `subscriptions/listen` is an SSE response that stays open; its
/// notifications reach the client as they arrive, and dropping the
/// subscription closes it.
///
/// Every reply ends its request at once, whatever it holds; none leaves
/// the request waiting for its timeout.
///
/// When a reply cannot be read to its end, or holds no response (the
/// stream breaks, a `2xx` body is not JSON-RPC, the reply is too large),
/// only that request fails, with
/// [`Error::is_transport`](crate::Error::is_transport): a task read
/// (`tasks/get`) is then sent again as a new request with a new id by the
/// wait, while a `tools/call` reports
/// [`Error::is_outcome_unknown`](crate::Error::is_outcome_unknown) since the
/// tool may have run. A request that never reached the server (the
/// connection was refused) is a plain transport error, even for
/// `tools/call`.
///
/// A reply with a status that is not `2xx` and no JSON-RPC error (an OAuth
/// `401` with `{"error": "invalid_token"}`, a proxy's HTML `502`, an empty
/// `404`) fails its request with that status in
/// [`Error::http_status`](crate::Error::http_status), and the
/// `WWW-Authenticate` header in
/// [`Error::www_authenticate`](crate::Error::www_authenticate). A `3xx` or
/// `4xx` is a refusal: the request did not run, so even a `tools/call` is
/// not outcome-unknown, and a wait does not retry it (`408` and `429` are
/// transport errors, retried by waits). A `5xx` is a transport error.
///
/// # Overload and rate limits
///
/// A `429 Too Many Requests` or `503 Service Unavailable` (from the
/// server or a gateway) fails its request with
/// [`Error::is_overloaded`](crate::Error::is_overloaded). The reply's
/// `Retry-After` header, on any status that is not `2xx`, is read as
/// delta-seconds or as an HTTP-date (any of its three forms, against the
/// system clock) and shows as
/// [`Error::retry_after`](crate::Error::retry_after), capped at 5 minutes.
/// Waits retry a task read refused this way no sooner than it says, nor
/// than the task's interval, and hold back every other task of the client
/// as long; without it they back off exponentially with jitter, up to
/// 30 s. Nothing else is sent again: a `tools/call`, `tasks/update` or
/// `tasks/cancel` so refused fails to its caller, and the transport serves
/// the next request as usual.
///
/// A JSON-RPC error body is read whatever the HTTP status (`200`, `400`,
/// `404`, …): `-32020` (a header the server disagrees with) shows as
/// [`Error::is_header_mismatch`](crate::Error::is_header_mismatch). An error
/// sent without an id, with `null`, or with an id the client never sent
/// (`"server-error"`) is matched to the POST it answers; with a status that
/// is not `2xx`, the error keeps the status too.
///
/// # TLS
///
/// `https` URLs use rustls, with the platform's trust store (through
/// `rustls-platform-verifier`) and the `ring` crypto provider, which the
/// transport installs as the process default when the application has not
/// installed one (install yours before connecting to use it instead). The
/// `native-tls` feature uses the platform's TLS instead (OpenSSL on Linux,
/// Secure Transport on macOS, SChannel on Windows). Only HTTP/1.1 is spoken. Proxies set in `HTTP_PROXY`,
/// `HTTPS_PROXY` and `NO_PROXY` are honoured.
#[derive(Clone)]
pub struct Http {
    url: String,
    headers: Vec<(String, String)>,
    bearer: Option<String>,
    timeout: Option<Duration>,
    connect_timeout: Duration,
    max_message_size: usize,
    max_in_flight: Option<usize>,
    close_timeout: Duration,
    #[cfg(feature = "oauth")]
    auth: Option<auth::OAuth>,
}

impl fmt::Debug for Http {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Header values and the token may be secrets: names only.
        let mut f = f.debug_struct("Http");
        f.field("url", &self.url)
            .field(
                "headers",
                &self.headers.iter().map(|(n, _)| n).collect::<Vec<_>>(),
            )
            .field("bearer_token", &self.bearer.as_ref().map(|_| "<redacted>"))
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("max_message_size", &self.max_message_size)
            .field("max_in_flight", &self.max_in_flight)
            .field("close_timeout", &self.close_timeout);
        #[cfg(feature = "oauth")]
        f.field("auth", &self.auth);
        f.finish()
    }
}

impl Http {
    /// The server's MCP endpoint, such as `https://mcp.example.com/mcp`.
    ///
    /// The URL is checked when the client connects: an invalid one, or one
    /// that is neither `http` nor `https`, fails
    /// [`ClientBuilder::connect`](crate::ClientBuilder::connect).
    pub fn new(url: impl Into<String>) -> Self {
        Http {
            url: url.into(),
            headers: Vec::new(),
            bearer: None,
            timeout: None,
            connect_timeout: Duration::from_secs(10),
            max_message_size: DEFAULT_MAX_MESSAGE_SIZE,
            max_in_flight: None,
            close_timeout: session::DELETE_TIMEOUT,
            #[cfg(feature = "oauth")]
            auth: None,
        }
    }

    /// Bound on ending an initialize-era session when the client closes
    /// (default 2 s): the `DELETE`, from sending it to its answer.
    /// [`Client::close`](crate::Client::close) returns within it, with an
    /// error when the answer did not come in time.
    pub fn close_timeout(mut self, timeout: Duration) -> Self {
        self.close_timeout = timeout;
        self
    }

    /// Adds a header to every POST (an API key, a tenant, a trace id).
    ///
    /// A later header of the same name replaces an earlier one. The headers
    /// the transport sets itself (`Accept`, `Content-Type`, the `Mcp-*`
    /// and `MCP-Protocol-Version` headers) cannot be replaced: naming one,
    /// or giving an invalid name or value, fails the connect.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// Sends `Authorization: Bearer <token>` with every POST (replacing an
    /// `Authorization` header given to [`Http::header`]). The token never
    /// appears in `Debug` output or logs.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer = Some(token.into());
        self
    }

    /// Authorizes with OAuth 2.1 as the MCP specification says: on the
    /// server's first `401`, discovers its authorization server, registers,
    /// has the user authorize, and from then on sends the access token with
    /// every request, refreshing it as needed (feature `oauth`; see
    /// [`auth`](crate::transport::auth)). It replaces
    /// [`Http::bearer_token`] and any `Authorization` header.
    #[cfg(feature = "oauth")]
    #[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
    pub fn auth(mut self, oauth: auth::OAuth) -> Self {
        self.auth = Some(oauth);
        self
    }

    /// Bound on each exchange, from the POST to the end of its reply
    /// (default: none). `subscriptions/listen` streams, which stay open on
    /// purpose, are exempt.
    ///
    /// The client's own per-request timeout
    /// ([`ClientBuilder::request_timeout`](crate::ClientBuilder::request_timeout),
    /// 30 s by default) applies too; whichever ends first closes the
    /// exchange.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = Some(timeout);
        self
    }

    /// Bound on opening a connection, TLS included (default 10 s). A POST
    /// that cannot connect fails as a transport error and is known not to
    /// have reached the server.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// The largest JSON reply, or SSE event, accepted (default 16 MiB). A
    /// larger one fails its request rather than growing a buffer without
    /// bound.
    pub fn max_message_size(mut self, bytes: usize) -> Self {
        self.max_message_size = bytes;
        self
    }

    /// Most POSTs in flight at once (default: no limit), and so most
    /// connections in use: HTTP/1.1 carries one exchange at a time per
    /// connection, and the pool opens a new one for every request that
    /// finds none idle. The pool keeps at most as many idle connections
    /// (one it opened for a request that then took another coming back
    /// to the pool is kept or closed), so at most twice as many are open.
    ///
    /// Without a limit, `N` requests at once open up to `N` connections,
    /// kept in the pool up to 90 s once idle (about 27 KB of memory each):
    /// thousands of tasks whose reads fall due together can run out of
    /// file descriptors (the requests that cannot connect fail at once as
    /// transport errors; task reads are sent again by their waits, beyond
    /// their schedule). With a limit, a request waits for a slot
    /// before it is sent; the wait counts toward the client's request
    /// timeout ([`ClientBuilder::request_timeout`](crate::ClientBuilder::request_timeout)),
    /// not toward [`Http::timeout`].
    ///
    /// Each request holds its slot until its reply is read to its end, so
    /// a `tools/call` whose SSE reply streams for minutes holds one for
    /// minutes: leave room for those. A limit of 0 is taken as 1.
    ///
    /// The rule: what waits on something other than the server's work
    /// takes no slot, so that it never keeps the other requests waiting.
    /// That is `subscriptions/listen` streams, an initialize-era session's
    /// `GET` stream, the answers to the server's own requests, an
    /// initialize-era `tasks/result` (it stays open until its task ends,
    /// and is the channel of the task's questions), and a request whose
    /// reply has asked the client a question (the slot goes back with the
    /// question: the request now waits on the answer, maybe a person's).
    /// Each of those is still a connection of its own: with many tasks
    /// waiting for input at once, as many connections are open beyond the
    /// limit.
    ///
    /// # Examples
    ///
    /// ```no_run
    /// # async fn f() -> mcp_tasks::Result<()> {
    /// use mcp_tasks::{Client, transport::Http};
    ///
    /// // Thousands of pending tasks, read over at most 64 connections.
    /// let client = Client::builder()
    ///     .connect(Http::new("https://mcp.example.com/mcp").max_in_flight(64))
    ///     .await?;
    /// # Ok(()) }
    /// ```
    pub fn max_in_flight(mut self, requests: usize) -> Self {
        self.max_in_flight = Some(requests.max(1));
        self
    }
}

/// What every exchange of one connection shares.
struct Shared {
    client: reqwest::Client,
    url: Url,
    base_headers: HeaderMap,
    tools: Registry,
    timeout: Option<Duration>,
    max_message_size: usize,
    /// The protocol version the client negotiated
    /// ([`Outbound::protocol_version`]); the newest one until it says.
    version: Mutex<Arc<str>>,
    /// The requests whose replies are being read, to drop on cancellation.
    in_flight: Mutex<HashMap<RequestId, AbortHandle>>,
    /// An initialize-era session's `Mcp-Session-Id`, once the server gave one.
    session: Mutex<Option<reqwest::header::HeaderValue>>,
    /// The `initialize` request the client sent, sent again to renew a lost session.
    initialize: Mutex<Option<String>>,
    /// Held while a lost session is renewed, so that concurrent `404`s renew it once.
    renewal: tokio::sync::Mutex<()>,
    /// The server's own stream (the `GET`), while it runs.
    listener: Mutex<Option<AbortHandle>>,
    /// Set when the transport closes: no stream is opened after it.
    closed: AtomicBool,
    /// Numbers the requests the transport sends on its own.
    internal: AtomicU64,
    /// The slots of [`Http::max_in_flight`], when it is set.
    slots: Option<Arc<Semaphore>>,
    /// [`Http::close_timeout`]: the bound on the session's `DELETE`.
    close_timeout: Duration,
    /// OAuth, when configured: the token every request carries.
    #[cfg(feature = "oauth")]
    auth: Option<auth::Authorization>,
}

/// The initialize era's session header (2025-03-26 and later).
const SESSION_HEADER: &str = "mcp-session-id";

impl Shared {
    /// Waits for a slot of [`Http::max_in_flight`] (at once without one).
    async fn slot(&self) -> Option<OwnedSemaphorePermit> {
        let slots = self.slots.clone()?;
        // Never closed: acquiring fails only on a closed semaphore.
        slots.acquire_owned().await.ok()
    }

    /// Keeps the session id an `initialize` reply gave (sent on every
    /// later request).
    fn keep_session(&self, session: Option<reqwest::header::HeaderValue>) {
        if let Some(session) = session {
            *self.session.lock().unwrap() = Some(session);
        }
    }

    /// The headers of one message's POST, from what the client states: the
    /// method and routing name on the [`Outbound`], the version it
    /// negotiated ([`Outbound::protocol_version`]). The body is read only for
    /// the arguments of a tool that mirrors them in headers.
    fn headers_for(&self, message: &Outbound) -> Result<HeaderMap, String> {
        let method = message.method.as_str();
        let routing = message
            .name
            .as_deref()
            .filter(|_| Method::of(method).routing_param().is_some());
        // The arguments are read only for a tool with annotations.
        let mirrored = (method == method::TOOLS_CALL)
            .then(|| {
                let params = self.tools.params(routing?)?;
                let arguments = headers::call_arguments(&message.json)?;
                Some(headers::mirrored(&params, &arguments))
            })
            .flatten()
            .unwrap_or_default();
        // The version the message states; before any, the last stated.
        let version = message
            .protocol_version
            .clone()
            .unwrap_or_else(|| self.version());
        let mut headers =
            headers::for_message(&self.base_headers, method, &version, routing, &mirrored)?;
        if message.kind == OutboundKind::Response {
            // A response has no method to announce.
            headers.remove(headers::METHOD_HEADER);
        }
        if method == method::INITIALIZE {
            // The version is what the handshake settles; none is sent before.
            headers.remove(headers::PROTOCOL_VERSION_HEADER);
        }
        if let Some(session) = self.session.lock().unwrap().clone() {
            headers.insert(SESSION_HEADER, session);
        }
        Ok(headers)
    }

    /// Sends a request and reads its reply on a task of its own.
    fn start(
        self: &Arc<Self>,
        id: RequestId,
        method: String,
        headers: HeaderMap,
        json: String,
        task: Option<TaskId>,
        tx: mpsc::Sender<Inbound>,
    ) {
        let exchange = Exchange::new(self.clone(), id.clone(), method, headers, json, task, tx);
        // Registered before the task can end, so its own removal from the
        // table always comes after this insertion.
        let mut in_flight = self.in_flight.lock().unwrap();
        let handle = tokio::spawn(exchange.run());
        in_flight.insert(id, handle.abort_handle());
    }

    /// Drops the reply of one request (on HTTP, that cancels it).
    fn cancel(&self, id: &RequestId) {
        let handle = self.in_flight.lock().unwrap().remove(id);
        // Aborted outside the lock: the exchange's own cleanup takes it.
        if let Some(handle) = handle {
            handle.abort();
        }
    }

    fn abort_all(&self) {
        let handles: Vec<_> = self.in_flight.lock().unwrap().drain().collect();
        for (_, handle) in handles {
            handle.abort();
        }
    }

    /// Sends `version` as `MCP-Protocol-Version` from now on (a message
    /// stated it: [`Outbound::protocol_version`]); it also says whether
    /// the server keeps a session (the initialize era's, opened by
    /// `initialize`) and may answer with batches.
    fn settle(&self, version: &Arc<str>) {
        let mut current = self.version.lock().unwrap();
        if *current != *version {
            *current = Arc::clone(version);
        }
    }

    /// The version in use, as `MCP-Protocol-Version` carries it.
    fn version(&self) -> Arc<str> {
        self.version.lock().unwrap().clone()
    }

    /// Whether this connection speaks an initialize-era version that has
    /// sessions and the `GET` stream (never 2026-07-28).
    fn in_session_era(&self) -> bool {
        versions::has(&self.version.lock().unwrap(), |r| r.http_session)
    }

    /// Whether a reply may be a JSON-RPC batch: on the initialize era only
    /// (2025-03-26 allowed them; later versions are read as leniently).
    fn accepts_batches(&self) -> bool {
        versions::has(&self.version.lock().unwrap(), |r| r.batches)
    }

    /// Opens the server's own stream (replacing one already open), once the
    /// handshake is done on an initialize-era connection.
    fn start_listening(self: &Arc<Self>, tx: mpsc::Sender<Inbound>) {
        if !self.in_session_era() {
            return;
        }
        let mut listener = self.listener.lock().unwrap();
        // Checked under the lock `close` takes after setting the flag: a
        // stream started here is always seen, and stopped, by `close`.
        if self.closed.load(Ordering::SeqCst) {
            return;
        }
        if let Some(old) = listener.take() {
            old.abort();
        }
        *listener = Some(tokio::spawn(session::listen(self.clone(), tx)).abort_handle());
    }

    fn stop_listening(&self) {
        let handle = self.listener.lock().unwrap().take();
        if let Some(handle) = handle {
            handle.abort();
        }
    }

    /// A fresh id for a request the transport sends on its own.
    fn internal_id(&self) -> RequestId {
        let n = self.internal.fetch_add(1, Ordering::Relaxed);
        RequestId::String(format!("mcp-tasks-http-{n}"))
    }
}

/// The sending half of an [`Http`] transport: each message becomes a POST.
pub struct HttpSink {
    shared: Arc<Shared>,
    inbound: Option<mpsc::Sender<Inbound>>,
}

/// The receiving half of an [`Http`] transport: the messages of every
/// reply, as they arrive.
pub struct HttpStream {
    rx: mpsc::Receiver<Inbound>,
}

impl fmt::Debug for HttpSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpSink")
            .field("url", &self.shared.url.as_str())
            .field("in_flight", &self.shared.in_flight.lock().unwrap().len())
            .finish_non_exhaustive()
    }
}

impl fmt::Debug for HttpStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HttpStream").finish_non_exhaustive()
    }
}

fn invalid_input(msg: impl Into<String>) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, msg.into())
}

impl Transport for Http {
    type Sink = HttpSink;
    type Stream = HttpStream;

    async fn connect(self) -> io::Result<(HttpSink, HttpStream)> {
        let url = Url::parse(&self.url)
            .map_err(|e| invalid_input(format!("invalid server URL {:?}: {e}", self.url)))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(invalid_input(format!(
                "the server URL must be http or https, not {:?}",
                url.scheme()
            )));
        }
        #[allow(unused_mut, reason = "changed with the oauth feature only")]
        let mut base_headers =
            headers::base(&self.headers, self.bearer.as_deref()).map_err(invalid_input)?;
        #[cfg(feature = "oauth")]
        if self.auth.is_some() {
            // The OAuth token is the only authorization sent.
            base_headers.remove(reqwest::header::AUTHORIZATION);
        }
        #[cfg(not(feature = "native-tls"))]
        install_crypto_provider();
        let mut client = reqwest::Client::builder();
        if let Some(most) = self.max_in_flight {
            client = client.pool_max_idle_per_host(most);
        }
        let client = client
            .connect_timeout(self.connect_timeout)
            .tcp_keepalive(Duration::from_secs(30))
            .pool_idle_timeout(Duration::from_secs(90))
            .redirect(redirect_policy())
            .user_agent(concat!(
                env!("CARGO_PKG_NAME"),
                "/",
                env!("CARGO_PKG_VERSION")
            ))
            .build()
            .map_err(|e| io::Error::other(format!("could not set up the HTTP client: {e}")))?;
        #[cfg(feature = "oauth")]
        let auth = match self.auth {
            Some(config) => Some(auth::Authorization::new(
                config,
                url.clone(),
                auth_client(self.connect_timeout)?,
            )),
            None => None,
        };
        let (tx, rx) = mpsc::channel(INBOUND_CAPACITY);
        let shared = Arc::new(Shared {
            client,
            url,
            base_headers,
            tools: Registry::default(),
            timeout: self.timeout,
            max_message_size: self.max_message_size,
            version: Mutex::new(Arc::from(versions::NEWEST)),
            in_flight: Mutex::new(HashMap::new()),
            session: Mutex::new(None),
            initialize: Mutex::new(None),
            renewal: tokio::sync::Mutex::new(()),
            listener: Mutex::new(None),
            closed: AtomicBool::new(false),
            internal: AtomicU64::new(1),
            slots: self
                .max_in_flight
                .map(|most| Arc::new(Semaphore::new(most))),
            close_timeout: self.close_timeout,
            #[cfg(feature = "oauth")]
            auth,
        });
        Ok((
            HttpSink {
                shared,
                inbound: Some(tx),
            },
            HttpStream { rx },
        ))
    }
}

/// The HTTP client of authorization (discovery, registration, tokens): it
/// follows no redirect, so a request never lands where it was not sent.
#[cfg(feature = "oauth")]
fn auth_client(connect_timeout: Duration) -> io::Result<reqwest::Client> {
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .redirect(reqwest::redirect::Policy::none())
        .user_agent(concat!(
            env!("CARGO_PKG_NAME"),
            "/",
            env!("CARGO_PKG_VERSION")
        ))
        .build()
        .map_err(|e| io::Error::other(format!("could not set up the HTTP client: {e}")))
}

/// rustls needs a crypto provider, and reqwest is built without one (its
/// own, aws-lc-rs, needs cmake to build): installs ring as the process
/// default, unless the application installed a provider first, which is
/// then used instead.
#[cfg(not(feature = "native-tls"))]
fn install_crypto_provider() {
    if rustls::crypto::CryptoProvider::get_default().is_none() {
        // An error means another thread installed one meanwhile: as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    }
}

/// Follows 307 and 308 only (they keep the method and body), within the
/// same origin, so a POST never turns into a GET and credentials never
/// leave the server they were given for.
fn redirect_policy() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error("too many redirects")
        } else if matches!(attempt.status().as_u16(), 307 | 308) && same_origin {
            attempt.follow()
        } else {
            attempt.stop()
        }
    })
}

impl MessageSink for HttpSink {
    async fn send(&mut self, message: Outbound) -> io::Result<()> {
        let Some(tx) = self.inbound.clone() else {
            return Err(io::Error::new(
                io::ErrorKind::BrokenPipe,
                "the transport is closed",
            ));
        };
        if let Some(id) = &message.cancels {
            // Cancellation on HTTP is closing the reply, not a POST.
            self.shared.cancel(id);
            return Ok(());
        }
        if let Some(version) = &message.protocol_version {
            self.shared.settle(version);
        }
        let headers = self.shared.headers_for(&message);
        // A `tasks/*` request is named by its task id.
        let task = message
            .method
            .starts_with("tasks/")
            .then(|| message.name.as_deref().map(TaskId::new))
            .flatten();
        let Outbound {
            json,
            kind,
            method,
            id,
            ..
        } = message;
        if method == method::INITIALIZE && kind == OutboundKind::Request {
            // Kept to open a new session should the server lose this one.
            *self.shared.initialize.lock().unwrap() = Some(json.clone());
        }
        match (kind, id, headers) {
            (OutboundKind::Request, Some(id), Ok(headers)) => {
                self.shared.start(id, method, headers, json, task, tx);
            }
            (OutboundKind::Request, Some(id), Err(reason)) => {
                let _ = tx.send(Inbound::NotSent { id, reason }).await;
            }
            (OutboundKind::Request, None, _) => {
                tracing::warn!(%method, "not sending a request without an id");
            }
            // Notifications, and responses to the server's requests: one
            // POST each, with nothing to wait for but its acceptance. Sent
            // in order with what follows (`notifications/initialized` must
            // reach the server before the session's first request).
            (_, _, Ok(headers)) => {
                let initialized = method == method::NOTIFICATIONS_INITIALIZED;
                // Taken here, not in `notify`: a session renewal notifies
                // from inside an exchange that already holds one. A
                // response takes none: it answers a question the server
                // may have asked on a call's own stream, and that call,
                // holding its slot, waits for the answer.
                let slot = match kind {
                    OutboundKind::Response => None,
                    _ => self.shared.slot().await,
                };
                post::notify(self.shared.clone(), method, headers, json).await;
                drop(slot);
                if initialized {
                    self.shared.start_listening(tx);
                }
            }
            (_, _, Err(reason)) => tracing::warn!(%method, "not sending a message: {reason}"),
        }
        Ok(())
    }

    async fn close(&mut self) -> io::Result<Closed> {
        self.inbound = None;
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.stop_listening();
        self.shared.abort_all();
        session::end(&self.shared).await?;
        Ok(Closed::gracefully())
    }
}

impl Drop for HttpSink {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.stop_listening();
        self.shared.abort_all();
    }
}

impl MessageStream for HttpStream {
    async fn recv(&mut self) -> io::Result<Option<Inbound>> {
        Ok(self.rx.recv().await)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_hides_the_token_and_header_values() {
        let http = Http::new("https://example.com/mcp")
            .bearer_token("tok-123")
            .header("X-Api-Key", "key-456");
        let text = format!("{http:?}");
        assert!(
            text.contains("X-Api-Key") && text.contains("<redacted>"),
            "{text}"
        );
        assert!(
            !text.contains("tok-123") && !text.contains("key-456"),
            "{text}"
        );
    }

    /// Building the TLS client must find a crypto provider: reqwest panics
    /// when rustls has none.
    #[tokio::test]
    async fn an_https_transport_builds_its_tls_client() {
        let (sink, _stream) = Http::new("https://127.0.0.1:9/mcp")
            .connect()
            .await
            .expect("the TLS client builds");
        drop(sink);
        #[cfg(not(feature = "native-tls"))]
        assert!(rustls::crypto::CryptoProvider::get_default().is_some());
    }

    #[tokio::test]
    async fn bad_configuration_fails_the_connect() {
        for http in [
            Http::new("not a url"),
            Http::new("ftp://example.com/mcp"),
            Http::new("http://127.0.0.1:9/mcp").header("Mcp-Method", "x"),
            Http::new("http://127.0.0.1:9/mcp").header("X-Ok", "a\nb"),
        ] {
            let err = http.connect().await.unwrap_err();
            assert_eq!(err.kind(), io::ErrorKind::InvalidInput, "{err}");
        }
    }

    /// The headers carry what the client states on the message: the
    /// routing name and the version, whatever the body says.
    #[tokio::test]
    async fn headers_come_from_what_the_client_states_never_from_the_body() {
        let (sink, _stream) = Http::new("http://127.0.0.1:9/mcp").connect().await.unwrap();
        let body = r#"{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"taskId":"from-body","_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01"}}}"#;
        let mut m = Outbound::request(body.into(), "tasks/get", RequestId::Number(1));
        m.name = Some("stated".into());
        let h = sink.shared.headers_for(&m).unwrap();
        assert_eq!(h[headers::NAME_HEADER], "stated");
        assert_eq!(h[headers::PROTOCOL_VERSION_HEADER], versions::NEWEST);
        m.protocol_version = Some("2025-06-18".into());
        m.name = None;
        let h = sink.shared.headers_for(&m).unwrap();
        assert!(h.get(headers::NAME_HEADER).is_none());
        assert_eq!(h[headers::PROTOCOL_VERSION_HEADER], "2025-06-18");
        // A method that routes by nothing sends no name, stated or not.
        let mut m = Outbound::request(body.into(), "tools/list", RequestId::Number(2));
        m.name = Some("stated".into());
        let h = sink.shared.headers_for(&m).unwrap();
        assert!(h.get(headers::NAME_HEADER).is_none());
        // `initialize` carries its offer in its params, and no header.
        let m = Outbound::request("{}".into(), "initialize", RequestId::Number(3));
        let h = sink.shared.headers_for(&m).unwrap();
        assert!(h.get(headers::PROTOCOL_VERSION_HEADER).is_none());
    }
}
