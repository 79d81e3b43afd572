//! The crate's error type: opaque, one word wide, queried by predicates.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

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

/// Advice the client adds to an error it recognises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Hint {
    /// A server on the 2025-11-25 task model refused a `tools/call` that
    /// lacked the legacy `task` opt-in, and the client did not send it
    /// because it had not listed the tool.
    ListToolsForTaskOptIn,
}

impl Hint {
    fn text(self) -> &'static str {
        match self {
            Hint::ListToolsForTaskOptIn => {
                "the server wants the 2025-11-25 `task` opt-in for this tool: call list_tools() first so the client knows the tool wants a task"
            }
        }
    }
}

/// What an HTTP reply that failed its request said besides its body.
#[derive(Debug)]
struct HttpReply {
    status: u16,
    www_authenticate: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum Kind {
    #[error("connection to the server failed: {0}")]
    Transport(String),
    #[error("the request timed out after {after:?}{}", discarded_note(*discarded))]
    Timeout {
        after: Duration,
        /// Messages skipped as unreadable or unmatched while it waited.
        discarded: u64,
    },
    #[error("the wait did not end within {0:?}; the task runs on")]
    Deadline(Duration),
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
        });
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
            Kind::Timeout { .. } => "timeout",
            Kind::Deadline(_) => "deadline",
            Kind::Protocol(_) => "protocol",
            Kind::Rpc(_) => "rpc",
            Kind::OutcomeUnknown(_) => "outcome_unknown",
            Kind::Refused(_) => "refused",
            Kind::ServerCancelled { .. } => "server_cancelled",
            Kind::Input(_) => "input",
            Kind::Builder(_) => "builder",
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

    /// A whole wait (many requests) did not end within its deadline.
    ///
    /// Waits that time out hand the task back, so nothing is lost; see
    /// [`Task::finish`](crate::Task::finish).
    pub fn is_deadline(&self) -> bool {
        matches!(self.inner.kind, Kind::Deadline(_))
    }

    /// The connection failed or closed (child exited, socket reset, …).
    pub fn is_transport(&self) -> bool {
        matches!(
            self.inner.kind,
            Kind::Transport(_) | Kind::OutcomeUnknown(_)
        )
    }

    /// The server sent something the protocol does not allow (malformed
    /// JSON, an unknown `resultType`, a task where none may be).
    pub fn is_protocol(&self) -> bool {
        matches!(self.inner.kind, Kind::Protocol(_))
    }

    /// The server answered with a JSON-RPC error.
    pub fn is_rpc(&self) -> bool {
        matches!(self.inner.kind, Kind::Rpc(_))
    }

    /// The server's JSON-RPC error, when it sent one.
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
    pub fn is_missing_capability(&self) -> bool {
        self.rpc_code() == Some(error_codes::MISSING_REQUIRED_CLIENT_CAPABILITY)
            || self.inner.hint == Some(Hint::ListToolsForTaskOptIn)
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

    /// The task ended `failed`; [`Error::rpc_error`] holds its error.
    pub fn is_task_failed(&self) -> bool {
        matches!(self.inner.kind, Kind::TaskFailed(_))
    }

    /// The task ended `cancelled`.
    pub fn is_cancelled(&self) -> bool {
        matches!(self.inner.kind, Kind::Cancelled)
    }

    /// The task outlived the lifetime set with `with_ttl`; the client cancelled it.
    pub fn is_expired(&self) -> bool {
        matches!(self.inner.kind, Kind::Expired)
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

    /// Servers often echo the task id in their messages ("unknown task:
    /// <id>"); replace it with its short form so that showing the error
    /// never shows the secret. Ids under [`MIN_SCRUBBED_ID`] characters
    /// are left alone: replacing them would garble the text.
    fn scrub(&self, text: String) -> String {
        match &self.inner.task_id {
            Some(id) if id.expose().chars().count() >= MIN_SCRUBBED_ID => {
                text.replace(id.expose(), &id.redacted())
            }
            _ => text,
        }
    }

    fn rpc_code(&self) -> Option<i64> {
        match &self.inner.kind {
            Kind::Rpc(e) => Some(e.code),
            _ => None,
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

/// The shortest task id that [`Error::scrub`] hides in server messages.
const MIN_SCRUBBED_ID: usize = 8;

/// Text shown as is by `Debug`.
struct Redacted(String);

impl fmt::Debug for Redacted {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut d = f.debug_struct("mcp_tasks::Error");
        d.field(
            "kind",
            &Redacted(self.scrub(format!("{:?}", self.inner.kind))),
        );
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
        }
        if let Some(s) = &self.inner.source {
            d.field("source", s);
        }
        if let Some(h) = self.inner.hint {
            d.field("hint", &h.text());
        }
        d.finish()
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(m) = &self.inner.method {
            write!(f, "{m}: ")?;
        }
        f.write_str(&self.scrub(self.inner.kind.to_string()))?;
        if let Some(h) = self.inner.hint {
            write!(f, "; {}", h.text())?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_is_one_word() {
        assert_eq!(std::mem::size_of::<Error>(), std::mem::size_of::<usize>());
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
            "tasks/get: the server answered with an error: unknown task: 5f0c… (code -32602) (task 5f0c…)"
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
        assert!(!e.is_timeout() && !e.is_transport() && !e.is_cancelled());
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
    fn display_redacts_the_task_id() {
        let e = Error::new(Kind::Deadline(Duration::from_secs(1)))
            .with_method("tasks/get")
            .with_task(&TaskId::new("secret-token-123"));
        let text = e.to_string();
        assert!(text.contains("secr…") && !text.contains("token"), "{text}");
        assert!(!format!("{e:?}").contains("token"));
    }
}
