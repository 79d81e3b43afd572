//! The crate's error type: opaque, one word wide, queried by predicates.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use serde_json::Value;

use crate::human;
use crate::protocol::method::Method;
use crate::protocol::{RpcError, TaskId, error_codes};

/// A boxed error from elsewhere (an input handler, an I/O layer).
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// `Result<T, mcp_tasks::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong talking to an MCP server.
///
/// `Error` is opaque: ask it what happened with the `is_*` predicates and
/// the accessors rather than matching on it. A task that *failed* or was
/// *cancelled* is not an `Error`: it is an [`Outcome`](crate::Outcome).
///
/// # Examples
///
/// ```
/// # async fn f(client: mcp_tasks::Client, id: mcp_tasks::protocol::TaskId) {
/// match client.get_task(&id).await {
///     Ok(snapshot) => println!("{}", snapshot.status()),
///     Err(e) if e.is_task_not_found() => println!("the task expired or never existed"),
///     Err(e) if e.is_timeout() => println!("the server did not answer in time"),
///     Err(e) => println!("{e}"),
/// }
/// # }
/// ```
pub struct Error {
    inner: Box<Inner>,
}

struct Inner {
    kind: Kind,
    method: Option<Cow<'static, str>>,
    task_id: Option<TaskId>,
    source: Option<BoxError>,
    hint: Option<Hint>,
    http: Option<HttpReply>,
}

/// Advice the client adds to an error it recognises: a sentence for the
/// message, and what the error then also is. The words are the caller's
/// (the wire that recognised it); this file knows no era.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Hint {
    /// What to do, appended to the error's message.
    pub(crate) text: &'static str,
    /// The server wants something the request did not declare or carry:
    /// the error is also [`Error::is_missing_capability`].
    pub(crate) missing_capability: bool,
}

/// What an HTTP reply that failed its request said besides its body.
#[derive(Debug)]
struct HttpReply {
    status: u16,
    www_authenticate: Option<String>,
    /// `Retry-After`, at most [`MAX_RETRY_AFTER`].
    retry_after: Option<Duration>,
}

/// The longest wait a server's `Retry-After` imposes on the client: 5
/// minutes. A larger value (a misconfigured gateway's `86400`, a date next
/// year) counts as this much, so that a task is read again within the
/// deadline its caller chose, rather than never.
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(300);

#[derive(Debug, thiserror::Error)]
pub(crate) enum Kind {
    #[error("connection to the server failed: {0}")]
    Transport(String),
    /// No connection could be made: the request was not sent.
    #[error("could not connect to the server: {0}")]
    Unreachable(String),
    #[error("the request timed out after {}{}", human::duration(*after), discarded_note(*discarded))]
    Timeout {
        after: Duration,
        /// Messages skipped as unreadable or unmatched while it waited.
        discarded: u64,
    },
    #[error("{} did not end within {}{}", what.subject(), human::duration(*after), what.note())]
    Deadline {
        after: Duration,
        /// What ran out of time.
        what: Waited,
    },
    /// A call that gathers many replies passed a bound on what it keeps
    /// (the text says which).
    #[error("{0}")]
    OverLimit(String),
    #[error("the server broke the protocol: {0}")]
    Protocol(String),
    #[error("the server answered with an error: {0}")]
    Rpc(RpcError),
    #[error("the reply to tools/call was lost; the call may or may not have run: {0}")]
    OutcomeUnknown(String),
    #[error("the server refused the request: {0}")]
    Refused(String),
    /// The server sent `notifications/cancelled` for the request.
    #[error("the server cancelled the request{}", cancel_note(.reason.as_deref(), *.partial))]
    ServerCancelled {
        reason: Option<String>,
        /// The request may have done part of its work (`tools/call`).
        partial: bool,
    },
    #[error("an input handler did not answer: {0}")]
    Input(String),
    #[error("invalid request: {0}")]
    Builder(String),
    /// The request needs a server capability the server did not
    /// advertise; it was not sent.
    #[error("the server does not offer {0}")]
    NotAdvertised(String),
    #[error("input required: {0}")]
    InputRequired(String),
    #[error("the task failed: {0}")]
    TaskFailed(RpcError),
    #[error("the task was cancelled")]
    Cancelled,
    #[error("the task outlived its time to live and was cancelled")]
    Expired,
}

impl Error {
    pub(crate) fn new(kind: Kind) -> Self {
        Error {
            inner: Box::new(Inner {
                kind,
                method: None,
                task_id: None,
                source: None,
                hint: None,
                http: None,
            }),
        }
    }

    pub(crate) fn transport(msg: impl Into<String>) -> Self {
        Self::new(Kind::Transport(msg.into()))
    }

    pub(crate) fn protocol(msg: impl Into<String>) -> Self {
        Self::new(Kind::Protocol(msg.into()))
    }

    pub(crate) fn rpc(e: RpcError) -> Self {
        Self::new(Kind::Rpc(e))
    }

    pub(crate) fn input(msg: impl Into<String>) -> Self {
        Self::new(Kind::Input(msg.into()))
    }

    pub(crate) fn builder(msg: impl Into<String>) -> Self {
        Self::new(Kind::Builder(msg.into()))
    }

    /// Tags the error with its request's method, unless it has one.
    pub(crate) fn with_method(mut self, method: impl Into<Cow<'static, str>>) -> Self {
        if self.inner.method.is_none() {
            self.inner.method = Some(method.into());
        }
        self
    }

    pub(crate) fn with_task(mut self, id: &TaskId) -> Self {
        self.inner.task_id.get_or_insert_with(|| id.clone());
        self
    }

    pub(crate) fn with_hint(mut self, hint: Hint) -> Self {
        self.inner.hint = Some(hint);
        self
    }

    /// Records the HTTP status (and `WWW-Authenticate`) of the reply that
    /// failed the request.
    pub(crate) fn with_http(mut self, status: u16, www_authenticate: Option<String>) -> Self {
        self.inner.http = Some(HttpReply {
            status,
            www_authenticate,
            retry_after: None,
        });
        self
    }

    /// Records the `Retry-After` of the reply [`Error::with_http`]
    /// recorded, capped at [`MAX_RETRY_AFTER`].
    pub(crate) fn with_retry_after(mut self, wait: Option<Duration>) -> Self {
        if let Some(http) = self.inner.http.as_mut() {
            http.retry_after = wait.map(|w| w.min(MAX_RETRY_AFTER));
        }
        self
    }

    /// The error without the method it names: for a failure that is no
    /// request's (a server that cannot be reached at all).
    pub(crate) fn without_method(mut self) -> Self {
        self.inner.method = None;
        self
    }

    pub(crate) fn with_source(mut self, source: impl Into<BoxError>) -> Self {
        self.inner.source = Some(source.into());
        self
    }

    /// A short, stable name of the error's kind, for the `error` field of
    /// tracing spans (never any text from the server).
    pub(crate) fn kind_name(&self) -> &'static str {
        match &self.inner.kind {
            Kind::Transport(_) => "transport",
            Kind::Unreachable(_) => "connect",
            Kind::Timeout { .. } => "timeout",
            Kind::Deadline { .. } => "deadline",
            Kind::OverLimit(_) => "over_limit",
            Kind::Protocol(_) => "protocol",
            Kind::Rpc(_) => "rpc",
            Kind::OutcomeUnknown(_) => "outcome_unknown",
            Kind::Refused(_) => "refused",
            Kind::ServerCancelled { .. } => "server_cancelled",
            Kind::Input(_) => "input",
            Kind::Builder(_) => "builder",
            Kind::NotAdvertised(_) => "not_advertised",
            Kind::InputRequired(_) => "input_required",
            Kind::TaskFailed(_) => "task_failed",
            Kind::Cancelled => "cancelled",
            Kind::Expired => "expired",
        }
    }

    /// One request got no answer within its timeout.
    pub fn is_timeout(&self) -> bool {
        matches!(self.inner.kind, Kind::Timeout { .. })
    }

    /// A whole wait or listing (many requests) did not end within its
    /// deadline.
    ///
    /// Waits that time out hand the task back, so nothing is lost; see
    /// [`Task::finish`](crate::Task::finish). A
    /// [`Client::list_tools`](crate::Client::list_tools) that does not end
    /// within [`ClientBuilder::list_timeout`](crate::ClientBuilder::list_timeout)
    /// fails this way too.
    pub fn is_deadline(&self) -> bool {
        matches!(self.inner.kind, Kind::Deadline { .. })
    }

    /// A listing passed a bound on what it keeps:
    /// [`Client::list_tools`](crate::Client::list_tools) (or its siblings)
    /// read more than
    /// [`ClientBuilder::max_listed_bytes`](crate::ClientBuilder::max_listed_bytes)
    /// of pages, or its items, or those of one page read alone with
    /// [`Client::tool_pages`](crate::Client::tool_pages), took more than
    /// [`ClientBuilder::max_listed_memory`](crate::ClientBuilder::max_listed_memory)
    /// in memory. The message names the bound and its value. Nothing is
    /// kept; read such a listing page by page, or raise the bound.
    ///
    /// (A single reply larger than the transport's `max_message_size`
    /// fails its request as [`is_transport`](Error::is_transport).)
    pub fn is_over_limit(&self) -> bool {
        matches!(self.inner.kind, Kind::OverLimit(_))
    }

    /// The connection failed or closed (child exited, socket reset, …).
    pub fn is_transport(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::Transport(_) | Kind::OutcomeUnknown(_) | Kind::Unreachable(_)
        )
    }

    /// No connection to the server could be made (nothing listens at its
    /// address, its host is unknown, the TLS handshake failed), so the
    /// request was not sent: a `tools/call` did not run. Also
    /// [`is_transport`](Error::is_transport). When `connect` fails so, the
    /// server is not running (or not there): no protocol era was tried.
    pub fn is_connect(&self) -> bool {
        matches!(self.inner.kind, Kind::Unreachable(_))
    }

    /// The server sent something the protocol does not allow (malformed
    /// JSON, an unknown `resultType`, a task where none may be).
    pub fn is_protocol(&self) -> bool {
        matches!(self.inner.kind, Kind::Protocol(_))
    }

    /// The server, or a gateway in front of it, refused the request
    /// before running it: an HTTP `3xx` or `4xx` reply without a JSON-RPC
    /// error (`404 Not Found`, `403 Forbidden`, `401 Unauthorized`, a
    /// redirect the client does not follow). [`http_status`](Error::http_status)
    /// gives the status, and the message quotes the start of the body.
    ///
    /// A refused request did not run, so a refused `tools/call` is not
    /// [`is_outcome_unknown`](Error::is_outcome_unknown), and waits do not
    /// retry a refused read. `408` and `429`, which ask for a later retry,
    /// are [`is_transport`](Error::is_transport) instead, as is a `5xx`.
    ///
    /// # Examples
    ///
    /// ```
    /// # async fn f(client: mcp_tasks::Client) {
    /// match client.list_tools().await {
    ///     Err(e) if e.is_refused() && e.http_status() == Some(404) => {
    ///         println!("no MCP server at this URL: {e}");
    ///     }
    ///     _ => {}
    /// }
    /// # }
    /// ```
    pub fn is_refused(&self) -> bool {
        matches!(self.inner.kind, Kind::Refused(_))
    }

    /// The server answered with a JSON-RPC error, which
    /// [`rpc_error`](Error::rpc_error) gives: to the request, or as the
    /// error a task ended with (the error
    /// [`Outcome::into_result`](crate::Outcome::into_result) and
    /// [`Client::call_tool`](crate::Client::call_tool) give for a task
    /// that ended `failed`; its `Display` says so).
    pub fn is_rpc(&self) -> bool {
        self.rpc_error().is_some()
    }

    /// The server's JSON-RPC error; `Some` exactly when
    /// [`is_rpc`](Error::is_rpc).
    pub fn rpc_error(&self) -> Option<&RpcError> {
        match &self.inner.kind {
            Kind::Rpc(e) | Kind::TaskFailed(e) => Some(e),
            _ => None,
        }
    }

    /// The server needs a capability or extension the request did not
    /// declare (`-32021`), or the legacy task opt-in the request did not
    /// carry.
    ///
    /// The second case is a server still on the 2025-11-25 task model
    /// (neva 0.9, for one) that answers a `tools/call` of a tool whose
    /// `execution.taskSupport` is `required` with `-32601` or `-32600` and
    /// a message about "task augmented" calls. The client sends that
    /// opt-in ([`TaskOptIn`](crate::protocol::TaskOptIn)) only for tools
    /// its last [`Client::list_tools`](crate::Client::list_tools) listed as
    /// wanting it, so when it answers for a tool not listed yet, the error
    /// is also `is_missing_capability()` and its `Display` says to call
    /// `list_tools()` first. [`Error::rpc_error`] still holds the
    /// server's own code and message.
    ///
    /// It is also the error of a request the client did not send because
    /// the server did not advertise what it needs: resources, prompts,
    /// completions or resource subscriptions (see
    /// [`Client::list_resources`](crate::Client::list_resources)). That
    /// error has no [`Error::rpc_error`].
    pub fn is_missing_capability(&self) -> bool {
        self.rpc_code() == Some(error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY)
            || self.inner.hint.is_some_and(|h| h.missing_capability)
            || matches!(self.inner.kind, Kind::NotAdvertised(_))
    }

    /// The server does not speak a protocol version the client offered (`-32022`).
    pub fn is_unsupported_version(&self) -> bool {
        self.rpc_code() == Some(error_codes::UNSUPPORTED_PROTOCOL_VERSION)
    }

    /// The server rejected an HTTP header: one is missing, malformed or
    /// disagrees with the body (`-32020`). A tool called before `tools/list`
    /// told the client which arguments it mirrors in `Mcp-Param-*` headers
    /// fails this way; listing the tools first fixes it.
    pub fn is_header_mismatch(&self) -> bool {
        self.rpc_code() == Some(error_codes::HEADER_MISMATCH)
    }

    /// The task is unknown to the server: it never existed, expired or was
    /// purged (`-32602` on a `tasks/*` request).
    pub fn is_task_not_found(&self) -> bool {
        self.rpc_code() == Some(error_codes::INVALID_PARAMS)
            && self
                .method()
                .is_some_and(|m| Method::of(m).is_task_scoped())
    }

    /// The reply to a `tools/call` was lost, or did not come within the
    /// request timeout, after the request was sent: the tool may or may not
    /// have run. Never retried automatically; check before calling again.
    ///
    /// A timed-out `tools/call` is both [`is_timeout`](Error::is_timeout)
    /// and `is_outcome_unknown`, so code that retries timeouts must ask this
    /// first.
    pub fn is_outcome_unknown(&self) -> bool {
        match self.inner.kind {
            Kind::OutcomeUnknown(_) | Kind::ServerCancelled { partial: true, .. } => true,
            Kind::Timeout { .. } => self
                .method()
                .is_some_and(|m| Method::of(m).loses_outcome_with_its_reply()),
            _ => false,
        }
    }

    /// The server cancelled the request while the client waited for it
    /// (it sent `notifications/cancelled` naming the request): the request
    /// ends at once instead of waiting for its timeout. The `Display` text
    /// gives the server's reason, when it sent one.
    ///
    /// A cancelled `tools/call` is also
    /// [`is_outcome_unknown`](Error::is_outcome_unknown): the tool may have
    /// partly run. Other requests did nothing the client can rely on.
    pub fn is_server_cancelled(&self) -> bool {
        matches!(self.inner.kind, Kind::ServerCancelled { .. })
    }

    /// The HTTP status of the reply that failed the request, when the
    /// server (or a proxy in front of it) answered with one that is not
    /// `2xx`: `401` for a missing or expired token, `403`, `502` from a
    /// gateway, and so on.
    ///
    /// A JSON-RPC error sent with such a status keeps both: this and
    /// [`rpc_error`](Error::rpc_error). A `3xx` or `4xx` reply with no
    /// JSON-RPC error is neither [`is_transport`](Error::is_transport) nor
    /// [`is_outcome_unknown`](Error::is_outcome_unknown): the server
    /// refused the request before running it (`408` and `429`, which ask
    /// for a later retry, are transport errors). A `5xx` one is a transport
    /// error, and a `tools/call` that gets it has an unknown outcome.
    /// [`is_overloaded`](Error::is_overloaded) and
    /// [`retry_after`](Error::retry_after) tell a server that asks to be
    /// left alone for a while.
    ///
    /// # Examples
    ///
    /// ```
    /// # fn f(e: mcp_tasks::Error) {
    /// if e.http_status() == Some(401) {
    ///     // Refresh the token; `www_authenticate` says where to get one.
    ///     println!("{:?}", e.www_authenticate());
    /// }
    /// # }
    /// ```
    pub fn http_status(&self) -> Option<u16> {
        self.inner.http.as_ref().map(|h| h.status)
    }

    /// The server (or a gateway in front of it) is overloaded or rate
    /// limits the client: the reply that failed the request had HTTP
    /// status `429 Too Many Requests` or `503 Service Unavailable`, with or
    /// without a JSON-RPC error in its body.
    ///
    /// Neither MCP nor the official SDKs define a JSON-RPC error code for
    /// overload (the `-32000`..`-32019` range is left to each server, so no
    /// meaning is read into it): only the HTTP status counts. On stdio no
    /// error is `is_overloaded`.
    ///
    /// A wait retries a task read that fails this way, no sooner than
    /// [`retry_after`](Error::retry_after) says and never sooner than the
    /// task's poll interval, and holds back the reads of every other task
    /// of the same [`Client`](crate::Client) as long. A write
    /// (`tools/call`, an answer, a cancel) is never sent again on its own:
    /// a `tools/call` refused with `503` may have reached the tool (it is
    /// also [`is_outcome_unknown`](Error::is_outcome_unknown)), one refused
    /// with `429` did not run.
    ///
    /// # Examples
    ///
    /// ```
    /// # async fn f(client: mcp_tasks::Client) {
    /// match client.list_tools().await {
    ///     Err(e) if e.is_overloaded() => {
    ///         let wait = e.retry_after().unwrap_or(std::time::Duration::from_secs(1));
    ///         tokio::time::sleep(wait).await;
    ///     }
    ///     _ => {}
    /// }
    /// # }
    /// ```
    pub fn is_overloaded(&self) -> bool {
        matches!(self.http_status(), Some(429 | 503))
    }

    /// How long the server asked the client to wait before trying again:
    /// the `Retry-After` header of the reply that failed the request, on
    /// any status that sends it (`429`, `503`, a `3xx`, …).
    ///
    /// Both forms are read: delta-seconds (`Retry-After: 3`) and an
    /// HTTP-date (`Retry-After: Fri, 01 Jan 2027 00:00:00 GMT`, measured
    /// against the system clock when the reply came; a date already past
    /// is zero). The value is capped at 5 minutes: a larger one is read as
    /// 5 minutes. `None` when the reply had no such header, or one that
    /// does not parse.
    pub fn retry_after(&self) -> Option<Duration> {
        self.inner.http.as_ref()?.retry_after
    }

    /// The `WWW-Authenticate` header of the reply that failed the request
    /// (sent with `401` and `403`), for the caller's authorization flow:
    /// the scheme, and often `error`, `scope` and `resource_metadata`.
    pub fn www_authenticate(&self) -> Option<&str> {
        self.inner.http.as_ref()?.www_authenticate.as_deref()
    }

    /// An input handler failed or gave an answer that does not fit the request.
    pub fn is_input(&self) -> bool {
        matches!(self.inner.kind, Kind::Input(_))
    }

    /// The request could not be built (for example, arguments that do not
    /// serialize to a JSON object).
    pub fn is_builder(&self) -> bool {
        matches!(self.inner.kind, Kind::Builder(_))
    }

    /// The task needs input that no installed handler can give (or the
    /// wait was set to manual input). Answer it with
    /// [`Task::respond`](crate::Task::respond) on the handle the error carries.
    pub fn is_input_required(&self) -> bool {
        matches!(self.inner.kind, Kind::InputRequired(_))
    }

    /// The task this error concerns, when there is one.
    pub fn task_id(&self) -> Option<&TaskId> {
        self.inner.task_id.as_ref()
    }

    /// The wire method of the request that failed, when there is one
    /// (any method, also one sent through [`Client::request`](crate::Client::request)).
    pub fn method(&self) -> Option<&str> {
        self.inner.method.as_deref()
    }

    /// The kind as shown: where the server's own text (an error's
    /// message and data, a cancellation's reason) echoes the task id, a
    /// copy that shows its redacted form instead ("unknown task: <id>"),
    /// so that showing the error never shows the secret. `None` when
    /// there is nothing to hide. The client's own texts never hold a raw
    /// id, and HTTP bodies have it hidden before they are quoted.
    fn hiding_task(&self) -> Option<Kind> {
        let id = self.inner.task_id.as_ref()?;
        let hide = |e: &RpcError| -> Option<RpcError> {
            let message = id.hidden_in(&e.message);
            let data = e.data.as_ref().map(Value::to_string);
            let hidden_data = data.as_deref().map(|d| id.hidden_in(d));
            let echoed =
                matches!(message, Cow::Owned(_)) || matches!(hidden_data, Some(Cow::Owned(_)));
            echoed.then(|| RpcError {
                code: e.code,
                message: message.into_owned(),
                // Data that echoes the id shows as its JSON text, hidden.
                data: match hidden_data {
                    Some(Cow::Owned(hidden)) => Some(Value::String(hidden)),
                    _ => e.data.clone(),
                },
            })
        };
        match &self.inner.kind {
            Kind::Rpc(e) => hide(e).map(Kind::Rpc),
            Kind::TaskFailed(e) => hide(e).map(Kind::TaskFailed),
            Kind::ServerCancelled {
                reason: Some(reason),
                partial,
            } => match id.hidden_in(reason) {
                Cow::Borrowed(_) => None,
                Cow::Owned(reason) => Some(Kind::ServerCancelled {
                    reason: Some(reason),
                    partial: *partial,
                }),
            },
            _ => None,
        }
    }

    /// The code of the error the request itself was answered with (not
    /// a failed task's).
    fn rpc_code(&self) -> Option<i64> {
        match &self.inner.kind {
            Kind::Rpc(e) => Some(e.code),
            _ => None,
        }
    }
}

/// What a [`Kind::Deadline`] bounded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waited {
    /// A wait for a task, which runs on.
    Task,
    /// A listing of every page.
    Listing,
}

impl Waited {
    fn subject(self) -> &'static str {
        match self {
            Waited::Task => "the wait",
            Waited::Listing => "the listing",
        }
    }

    fn note(self) -> &'static str {
        match self {
            Waited::Task => "; the task runs on",
            Waited::Listing => "",
        }
    }
}

/// What a timeout adds when unreadable or unmatched messages arrived while
/// it waited: the reply may have been among them.
fn discarded_note(discarded: u64) -> String {
    match discarded {
        0 => String::new(),
        1 => "; meanwhile 1 message from the server was skipped as unreadable or \
              unmatched (the reply may have been lost in it)"
            .to_owned(),
        n => format!(
            "; meanwhile {n} messages from the server were skipped as unreadable or \
             unmatched (the reply may have been lost in them)"
        ),
    }
}

/// The server's reason for a cancellation, and whether the work may have
/// partly happened.
fn cancel_note(reason: Option<&str>, partial: bool) -> String {
    let reason = match reason {
        Some(r) => format!(": {r}"),
        None => " (it gave no reason)".to_owned(),
    };
    let partial = if partial {
        "; the tool may have partly run"
    } else {
        ""
    };
    format!("{reason}{partial}")
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("mcp_tasks::Error");
        let hidden = self.hiding_task();
        d.field("kind", hidden.as_ref().unwrap_or(&self.inner.kind));
        if let Some(m) = &self.inner.method {
            d.field("method", m);
        }
        if let Some(id) = &self.inner.task_id {
            d.field("task_id", id);
        }
        if let Some(h) = &self.inner.http {
            d.field("http_status", &h.status);
            if let Some(w) = &h.www_authenticate {
                d.field("www_authenticate", w);
            }
            if let Some(r) = &h.retry_after {
                d.field("retry_after", r);
            }
        }
        if let Some(s) = &self.inner.source {
            d.field("source", s);
        }
        if let Some(h) = self.inner.hint {
            d.field("hint", &h.text);
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(m) = &self.inner.method {
            write!(f, "{m}: ")?;
        }
        match self.hiding_task() {
            Some(kind) => write!(f, "{kind}")?,
            None => write!(f, "{}", self.inner.kind)?,
        }
        if let Some(h) = self.inner.hint {
            write!(f, "; {}", h.text)?;
        }
        if let Some(id) = &self.inner.task_id {
            write!(f, " (task {})", id.redacted())?;
        }
        Ok(())
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.inner
            .source
            .as_ref()
            .map(|e| &**e as &(dyn std::error::Error + 'static))
    }
}

/// A reqwest error with its causes, without the URL (whose query may hold
/// a code, a state or another secret): for an error message or a log line.
#[cfg(feature = "http")]
pub(crate) fn describe_reqwest(e: reqwest::Error) -> String {
    one_line(&e.without_url())
}

/// An error and its causes on one line, `: ` between them, each said once
/// (a cause whose text the line already holds is left out).
#[cfg_attr(not(any(feature = "http", feature = "postgres")), allow(dead_code))]
pub(crate) fn one_line(e: &(dyn std::error::Error + 'static)) -> String {
    let mut line = e.to_string();
    let mut cause = e.source();
    while let Some(c) = cause {
        let text = c.to_string();
        if !line.contains(&text) {
            line.push_str(": ");
            line.push_str(&text);
        }
        cause = c.source();
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_is_one_word() {
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
    }

    /// `is_rpc()` and `rpc_error()` answer alike for every kind of error,
    /// a failed task's included.
    #[test]
    fn is_rpc_exactly_when_there_is_an_rpc_error() {
        // What `Outcome::into_result` gives for a failed, cancelled and
        // expired task.
        let failed = Error::new(Kind::TaskFailed(RpcError::new(-32603, "boom")));
        assert!(
            failed.to_string().contains("the task failed: boom"),
            "{failed}"
        );
        let errors = [
            Error::rpc(RpcError::new(-32602, "no")),
            Error::rpc(RpcError::new(-32000, "slow down")).with_http(429, None),
            failed,
            Error::new(Kind::Cancelled),
            Error::new(Kind::Expired),
            Error::transport("reset"),
            Error::protocol("bad"),
            Error::new(Kind::Refused("HTTP 404".into())),
            Error::new(Kind::ServerCancelled {
                reason: None,
                partial: false,
            }),
        ];
        for e in &errors {
            assert_eq!(e.is_rpc(), e.rpc_error().is_some(), "{e}");
        }
        assert_eq!(errors.iter().filter(|e| e.is_rpc()).count(), 3);
    }

    #[test]
    fn not_found_needs_a_task_method() {
        let e = Error::rpc(RpcError::new(-32602, "no such task")).with_method("tasks/get");
        assert!(e.is_task_not_found() && e.is_rpc());
        let e = Error::rpc(RpcError::new(-32602, "unknown tool")).with_method("tools/call");
        assert!(!e.is_task_not_found());
    }

    #[test]
    fn a_task_id_echoed_by_the_server_is_redacted() {
        let id = TaskId::new("5f0c2a9e-secret-token");
        let e = Error::rpc(RpcError::new(-32602, "unknown task: 5f0c2a9e-secret-token"))
            .with_method("tasks/get")
            .with_task(&id);
        let text = e.to_string();
        assert_eq!(
            text,
            "tasks/get: the server answered with an error: unknown task: #a4a92dff (code -32602) (task #a4a92dff)"
        );
        assert!(!format!("{e:?}").contains("token"));
        // The raw error stays available to code that asks for it.
        assert!(e.rpc_error().unwrap().message.contains("secret-token"));
        // Short ids are not replaced inside words.
        let e = Error::rpc(RpcError::new(-32602, "no task x here"))
            .with_method("tasks/get")
            .with_task(&TaskId::new("x"));
        assert!(e.to_string().contains("no task x here"));
    }

    #[test]
    fn an_opaque_id_echoed_by_the_server_is_redacted_in_every_field() {
        let raw = format!("gw:v1 \"tenant\"  café\t{}", "Zx9".repeat(100));
        let id = TaskId::new(raw.as_str());
        let mut echo = RpcError::new(-32602, format!("unknown task {raw}"));
        echo.data = Some(serde_json::json!({ "taskId": raw }));
        let cancelled = Kind::ServerCancelled {
            reason: Some(format!("task {raw} is gone")),
            partial: false,
        };
        for kind in [Kind::Rpc(echo.clone()), Kind::TaskFailed(echo), cancelled] {
            let e = Error::new(kind).with_method("tasks/get").with_task(&id);
            for shown in [e.to_string(), format!("{e:?}")] {
                assert!(!shown.contains("Zx9Zx9"), "{shown}");
                assert!(shown.contains(&id.redacted()), "{shown}");
            }
        }
    }

    #[test]
    fn a_timed_out_tool_call_has_an_unknown_outcome() {
        let timeout = || {
            Error::new(Kind::Timeout {
                after: Duration::from_secs(1),
                discarded: 0,
            })
        };
        let e = timeout().with_method("tools/call");
        assert!(e.is_timeout() && e.is_outcome_unknown());
        let e = timeout().with_method("tasks/get");
        assert!(e.is_timeout() && !e.is_outcome_unknown());
    }

    #[test]
    fn a_server_cancelled_tool_call_has_an_unknown_outcome() {
        let e = Error::new(Kind::ServerCancelled {
            reason: Some("shutting down".into()),
            partial: true,
        })
        .with_method("tools/call");
        assert!(e.is_server_cancelled() && e.is_outcome_unknown());
        assert!(!e.is_timeout() && !e.is_transport());
        assert_eq!(
            e.to_string(),
            "tools/call: the server cancelled the request: shutting down; the tool may have partly run"
        );
        let e = Error::new(Kind::ServerCancelled {
            reason: None,
            partial: false,
        })
        .with_method("tools/list");
        assert!(e.is_server_cancelled() && !e.is_outcome_unknown());
        assert_eq!(
            e.to_string(),
            "tools/list: the server cancelled the request (it gave no reason)"
        );
    }

    #[test]
    fn an_http_refusal_keeps_its_status_and_challenge() {
        let e = Error::new(Kind::Refused(
            r#"HTTP 401 Unauthorized: {"error":"invalid_token"}"#.into(),
        ))
        .with_method("tools/call")
        .with_http(401, Some(r#"Bearer error="invalid_token""#.into()));
        assert_eq!(e.http_status(), Some(401));
        assert_eq!(
            e.www_authenticate(),
            Some(r#"Bearer error="invalid_token""#)
        );
        assert!(!e.is_transport() && !e.is_outcome_unknown() && !e.is_rpc());
        assert!(e.is_refused());
        assert_eq!(
            e.to_string(),
            r#"tools/call: the server refused the request: HTTP 401 Unauthorized: {"error":"invalid_token"}"#
        );
        assert!(format!("{e:?}").contains("http_status: 401"));
        let e = Error::rpc(RpcError::new(-32600, "bad")).with_http(400, None);
        assert_eq!((e.http_status(), e.www_authenticate()), (Some(400), None));
        assert_eq!(Error::transport("reset").http_status(), None);
    }

    #[test]
    fn overload_is_429_or_503_and_retry_after_is_capped() {
        let refusal = |status| {
            Error::transport(format!("HTTP {status}"))
                .with_method("tasks/get")
                .with_http(status, None)
        };
        assert!(refusal(429).is_overloaded() && refusal(503).is_overloaded());
        for status in [408, 500, 502, 504, 400] {
            assert!(!refusal(status).is_overloaded(), "{status}");
        }
        // A JSON-RPC error sent with the status is overload too.
        let e = Error::rpc(RpcError::new(-32000, "slow down")).with_http(429, None);
        assert!(e.is_overloaded() && e.is_rpc());
        assert!(!Error::rpc(RpcError::new(-32000, "slow down")).is_overloaded());
        assert_eq!(refusal(429).retry_after(), None);
        let e = refusal(429).with_retry_after(Some(Duration::from_secs(3)));
        assert_eq!(e.retry_after(), Some(Duration::from_secs(3)));
        assert!(format!("{e:?}").contains("retry_after: 3s"), "{e:?}");
        let e = refusal(503).with_retry_after(Some(Duration::from_secs(86_400)));
        assert_eq!(e.retry_after(), Some(MAX_RETRY_AFTER));
        // Only with the reply's status.
        assert_eq!(
            Error::transport("x")
                .with_retry_after(Some(Duration::from_secs(1)))
                .retry_after(),
            None
        );
    }

    #[test]
    fn display_redacts_the_task_id() {
        let e = Error::new(Kind::Deadline {
            after: Duration::from_secs(1),
            what: Waited::Task,
        })
        .with_method("tasks/get")
        .with_task(&TaskId::new("secret-token-123"));
        let text = e.to_string();
        assert!(
            text.contains("#4035b3cc") && !text.contains("token"),
            "{text}"
        );
        assert!(!format!("{e:?}").contains("token"));
    }
}
