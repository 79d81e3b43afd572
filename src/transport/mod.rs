//! How messages reach the server: the [`Transport`] trait and its implementations.
//!
//! A transport carries whole JSON-RPC messages, one at a time, in both
//! directions. [`Transport::connect`] opens it and splits it into a
//! [`MessageSink`] (client to server) and a [`MessageStream`] (server to
//! client), which the client drives from two tasks, so neither direction
//! ever waits on the other.
//!
//! | transport | use | feature |
//! |---|---|---|
//! | [`Stdio`] | spawn the server as a child process | `stdio` (default) |
#![cfg_attr(
    feature = "http",
    doc = "| [`Http`] | a remote server over Streamable HTTP | `http` |"
)]
#![cfg_attr(
    not(feature = "http"),
    doc = "| `Http` | a remote server over Streamable HTTP | `http` |"
)]
//! | [`LineTransport`] | newline-framed JSON over any `AsyncRead + AsyncWrite` (TCP, Unix sockets) | `stdio` |
//! | [`memory::pair`] | an in-process pair, for tests and embedded servers | always |

use std::fmt;
use std::future::Future;
use std::io;
use std::sync::Arc;
use std::time::Duration;

use crate::protocol::RequestId;

mod batch;
#[cfg(feature = "http")]
mod http;
#[cfg(feature = "stdio")]
mod line;
pub mod memory;
#[cfg(feature = "stdio")]
mod stdio;

#[cfg(feature = "oauth")]
#[cfg_attr(docsrs, doc(cfg(feature = "oauth")))]
pub use http::auth;
#[cfg(feature = "http")]
#[cfg_attr(docsrs, doc(cfg(feature = "http")))]
pub use http::{Http, HttpSink, HttpStream};
#[cfg(feature = "stdio")]
#[cfg_attr(docsrs, doc(cfg(feature = "stdio")))]
pub use line::LineTransport;
#[cfg(feature = "stdio")]
#[cfg_attr(docsrs, doc(cfg(feature = "stdio")))]
pub use stdio::{Stderr, Stdio};

/// The largest message accepted by default: 16 MiB.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = 16 * 1024 * 1024;

/// Something the client can talk to a server through.
///
/// Implement it to carry MCP over a channel this crate does not know; the
/// three provided transports show the shape.
pub trait Transport: Send + 'static {
    /// The sending half.
    type Sink: MessageSink;
    /// The receiving half.
    type Stream: MessageStream;

    /// Opens the transport (spawning a process, say) and splits it in two.
    fn connect(self) -> impl Future<Output = io::Result<(Self::Sink, Self::Stream)>> + Send;
}

/// What kind of JSON-RPC message an [`Outbound`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum OutboundKind {
    /// A request: its reply comes back under its `id`.
    Request,
    /// A notification: nothing comes back.
    Notification,
    /// A response to a request from the server, under the server's `id`.
    Response,
}

/// One outgoing JSON-RPC message, serialized, with what a transport may need
/// to route it (HTTP headers, say) without parsing it again: the client
/// states its kind, method, id and routing name on every message it
/// writes, and, once negotiation settled it, the protocol version the
/// message is in. A wrapper that passes messages on passes all of it on
/// with them: there is nothing else to forward.
///
/// `Debug` shows the method, the id and the size of the JSON, never the
/// JSON itself or the routing name: on `tasks/*` both carry a task id,
/// which may act as a bearer token.
#[derive(Clone)]
#[non_exhaustive]
pub struct Outbound {
    /// The message as JSON text, without a trailing newline.
    pub json: String,
    /// What kind of message it is, so a transport need not guess from the
    /// id or the method.
    pub kind: OutboundKind,
    /// The JSON-RPC method (for requests and notifications; empty for a
    /// response).
    pub method: String,
    /// The request id (for requests, and the id a response answers).
    pub id: Option<RequestId>,
    /// What the request acts on, as its params name it: the tool name on
    /// `tools/call`, the prompt name on `prompts/get`, the URI on
    /// `resources/read`, the task id on `tasks/*`. The client sets it on
    /// every request of those methods, so a transport takes it from here
    /// rather than reading the message; a wrapper that changes those
    /// params must change this too.
    pub name: Option<String>,
    /// The request id a `notifications/cancelled` refers to.
    pub cancels: Option<RequestId>,
    /// The protocol version the message is in. The client sets it on every
    /// message once the version is settled (after `server/discover` or the
    /// `initialize` handshake, or from the start when the builder pins
    /// one), and changes it only if the server asks for another version
    /// (`-32022`). `None` on the negotiation's own messages: the probe in
    /// the newest version, or `initialize`, which carries its offer in its
    /// params. Streamable HTTP sends it as `MCP-Protocol-Version`, and
    /// reads from it whether the server keeps a session; a transport that
    /// carries messages as they are (stdio, the in-memory pair) ignores it.
    pub protocol_version: Option<Arc<str>>,
}

impl fmt::Debug for Outbound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Outbound")
            .field("kind", &self.kind)
            .field("method", &self.method)
            .field("id", &self.id)
            .field("json_bytes", &self.json.len())
            .field("name", &self.name.as_ref().map(|_| "…"))
            .field("cancels", &self.cancels)
            .field("protocol_version", &self.protocol_version)
            .finish()
    }
}

impl Outbound {
    /// A notification (or any message without an id) with only its JSON
    /// and method.
    pub fn new(json: String, method: impl Into<String>) -> Self {
        Outbound {
            json,
            kind: OutboundKind::Notification,
            method: method.into(),
            id: None,
            name: None,
            cancels: None,
            protocol_version: None,
        }
    }

    /// A request with its id.
    pub fn request(json: String, method: impl Into<String>, id: RequestId) -> Self {
        Outbound {
            kind: OutboundKind::Request,
            id: Some(id),
            ..Outbound::new(json, method)
        }
    }

    /// The same message, stating that it is in protocol `version`
    /// ([`Outbound::protocol_version`]).
    pub fn in_version(mut self, version: impl Into<Arc<str>>) -> Self {
        self.protocol_version = Some(version.into());
        self
    }

    /// A response to the server's request `id`.
    pub fn response(json: String, id: RequestId) -> Self {
        Outbound {
            kind: OutboundKind::Response,
            id: Some(id),
            ..Outbound::new(json, String::new())
        }
    }
}

/// What a [`MessageStream`] yields.
///
/// `Debug` shows the size of a message, not its text, which may carry task
/// ids (see [`Outbound`]).
#[derive(Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Inbound {
    /// One message as text.
    Message(String),
    /// Bytes that are not a message (not UTF-8, say). The client reports and skips them.
    Invalid(String),
    /// The reply to one request is lost (an HTTP response stream broke, say),
    /// but the connection lives on. The client fails that request alone with
    /// a transport error: a read is retried by the wait that sent it, a
    /// `tools/call` reports [`Error::is_outcome_unknown`](crate::Error::is_outcome_unknown).
    Lost {
        /// The request whose reply is lost.
        id: RequestId,
        /// Why, for the error message.
        reason: String,
    },
    /// A request never reached the server (its connection could not be
    /// opened, say). The client fails that request alone with a transport
    /// error; unlike [`Inbound::Lost`], a `tools/call` is then known not to
    /// have run.
    NotSent {
        /// The request that was not sent.
        id: RequestId,
        /// Why, for the error message.
        reason: String,
    },
    /// A request never reached the server because no connection to it
    /// could be made: nothing listens at the address, the host is unknown,
    /// the TLS handshake failed. The client fails that request alone with
    /// an error that is [`Error::is_connect`](crate::Error::is_connect)
    /// (and [`Error::is_transport`](crate::Error::is_transport)); as with
    /// [`Inbound::NotSent`], a `tools/call` is known not to have run.
    Unreachable {
        /// The request that was not sent.
        id: RequestId,
        /// Why, for the error message.
        reason: String,
    },
    /// The server (or a proxy) answered one request with an HTTP status
    /// that is not `2xx`, and no response to it. The client fails that
    /// request alone, with an error whose
    /// [`Error::http_status`](crate::Error::http_status) is `status`: a
    /// JSON-RPC error when `response` holds one, else a refusal (`3xx`,
    /// `4xx`) or a transport error (`5xx`, `408`, `429`).
    ///
    /// A `retry_after` holds the client's next reads of every task back
    /// (see [`Error::retry_after`](crate::Error::retry_after)); the
    /// client caps it at 5 minutes.
    HttpError {
        /// The request the reply answers.
        id: RequestId,
        /// The HTTP status.
        status: u16,
        /// The `WWW-Authenticate` header, when the reply has one.
        www_authenticate: Option<String>,
        /// The wait the reply's `Retry-After` header asks for, from the
        /// moment it came (delta-seconds as they are, an HTTP-date less the
        /// current time, a date already past as zero), when it has one.
        retry_after: Option<Duration>,
        /// The JSON-RPC error response the body holds, as JSON text with
        /// its `id` set to `id`, if the body holds one.
        response: Option<String>,
        /// What the reply said, for the error message (the status and the
        /// start of the body).
        reason: String,
    },
}

impl fmt::Debug for Inbound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Inbound::Message(text) => f
                .debug_struct("Message")
                .field("bytes", &text.len())
                .finish(),
            Inbound::Invalid(why) => f.debug_tuple("Invalid").field(why).finish(),
            Inbound::Lost { id, reason } => f
                .debug_struct("Lost")
                .field("id", id)
                .field("reason", reason)
                .finish(),
            Inbound::NotSent { id, reason } => f
                .debug_struct("NotSent")
                .field("id", id)
                .field("reason", reason)
                .finish(),
            Inbound::Unreachable { id, reason } => f
                .debug_struct("Unreachable")
                .field("id", id)
                .field("reason", reason)
                .finish(),
            Inbound::HttpError {
                id,
                status,
                www_authenticate,
                retry_after,
                response,
                reason,
            } => f
                .debug_struct("HttpError")
                .field("id", id)
                .field("status", status)
                .field("www_authenticate", www_authenticate)
                .field("retry_after", retry_after)
                .field("response_bytes", &response.as_ref().map(String::len))
                .field("reason", reason)
                .finish(),
        }
    }
}

/// The sending half of a transport.
pub trait MessageSink: Send + 'static {
    /// Sends one message.
    fn send(&mut self, message: Outbound) -> impl Future<Output = io::Result<()>> + Send;

    /// Ends the connection gracefully: for a child process, closes its
    /// stdin, waits for it to exit, and ends it (and its process group)
    /// by signals after a bound; for an
    /// HTTP session, sends its `DELETE`; for an in-memory pair, drops the
    /// sending end.
    ///
    /// Called once, by the client's writer, after the last message: either
    /// when [`Client::close`](crate::Client::close) asks for it (which
    /// awaits this future and returns its outcome), or when the last
    /// clone of the client is dropped (then nobody awaits it, and it may
    /// be cut short when the runtime stops). No [`send`](MessageSink::send)
    /// follows it.
    ///
    /// # Contract
    ///
    /// The future must end within a bound of its own (a transport that
    /// waits for its peer documents how long, and makes it settable), so
    /// that `Client::close` is bounded too. An `Err` says the close could
    /// not be done as it should (the `DELETE` went unanswered); the
    /// connection is closed either way. A peer that had to be ended by
    /// force (a child killed) is closed: that is `Ok`, with
    /// [`Closed::by_force`], which the client counts in
    /// [`ClientStats::servers_killed`](crate::ClientStats::servers_killed).
    fn close(&mut self) -> impl Future<Output = io::Result<Closed>> + Send;
}

/// How a connection ended, as [`MessageSink::close`] says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub struct Closed {
    /// Whether the peer had to be ended by force: a child process that did
    /// not exit once its stdin closed, and was sent a signal.
    pub forced: bool,
}

impl Closed {
    /// The peer let go when asked.
    pub fn gracefully() -> Closed {
        Closed { forced: false }
    }

    /// The peer had to be ended by force.
    pub fn by_force() -> Closed {
        Closed { forced: true }
    }
}

/// The receiving half of a transport.
pub trait MessageStream: Send + 'static {
    /// The next message; `Ok(None)` when the peer closed the connection.
    ///
    /// An `Err` is fatal: the client fails every pending request with it and
    /// stops reading.
    fn recv(&mut self) -> impl Future<Output = io::Result<Option<Inbound>>> + Send;
}
