//! The connection: request ids, the pending-request table, notification
//! routing and timeouts. Two background tasks drive the transport: a writer
//! that owns the sink and a reader that owns the stream.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot, watch};

use crate::error::{Error, Kind};
use crate::protocol::jsonrpc::OutRequest;
use crate::protocol::method::{self, Method};
use crate::protocol::{Message, RequestId, RpcError};
use crate::transport::{Inbound, MessageSink, MessageStream, Outbound, Transport};

/// How many outgoing messages may queue before senders wait.
const OUTGOING_CAPACITY: usize = 256;
/// How many pushes may wait for a slow subscription consumer; past that the
/// consumer is told it lagged and re-reads instead of the queue growing.
pub(crate) const SUBSCRIPTION_CAPACITY: usize = 64;

/// What the reader hands a waiting request.
enum Reply {
    Result(Box<RawValue>),
    Error(RpcError),
    /// The transport could not deliver the request.
    NotSent(String),
    /// An HTTP error status without a response.
    Http(Box<HttpFailure>),
}

/// What an [`Inbound::HttpError`] carries to its request.
struct HttpFailure {
    status: u16,
    www_authenticate: Option<String>,
    error: Option<RpcError>,
    reason: String,
}

impl HttpFailure {
    /// The error for the request. `tools_call` marks a `tools/call`, whose
    /// outcome is unknown when a `5xx` reply may have come after the tool ran.
    fn into_error(self, tools_call: bool) -> Error {
        let HttpFailure {
            status,
            www_authenticate,
            error,
            reason,
        } = self;
        let error = match error {
            Some(e) => Error::rpc(e),
            // A server or gateway failure: the request may have been run.
            None if status >= 500 && tools_call => Error::new(Kind::OutcomeUnknown(reason)),
            // Transient (`5xx`), or a refusal that asks for a later retry.
            None if status >= 500 || status == 408 || status == 429 => Error::transport(reason),
            // Refused before it ran (`3xx`, `4xx`): not lost, not retried.
            None => Error::new(Kind::Refused(reason)),
        };
        error.with_http(status, www_authenticate)
    }
}

/// What a subscription receives.
#[derive(Debug)]
pub(crate) enum SubEvent {
    /// A notification on the stream.
    Notification {
        method: String,
        params: Option<Box<RawValue>>,
    },
    /// Some notifications were dropped because the consumer was slow.
    Lagged,
}

struct SubEntry {
    tx: mpsc::Sender<SubEvent>,
    lagged: Arc<AtomicBool>,
}

impl SubEntry {
    /// Queues an event, marking the consumer lagged when its queue is
    /// full. `false` when the consumer is gone.
    fn send(&self, event: SubEvent) -> bool {
        match self.tx.try_send(event) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                self.lagged.store(true, Ordering::Release);
                true
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

#[derive(Default)]
struct Tables {
    pending: HashMap<RequestId, oneshot::Sender<Result<Reply, String>>>,
    subscriptions: HashMap<RequestId, SubEntry>,
    /// `notifications/progress` by `progressToken`.
    progress: HashMap<RequestId, SubEntry>,
    /// Where requests from the server go, once someone answers them.
    server_requests: Option<mpsc::Sender<ServerRequest>>,
    /// Where `notifications/tasks` that no open subscription claims go
    /// (untagged, or tagged with a stream that is gone), once someone listens.
    task_pushes: Option<SubEntry>,
    /// Why the connection closed, once it has.
    closed: Option<String>,
}

pub(crate) struct Shared {
    tables: Mutex<Tables>,
    next_id: AtomicI64,
    /// The writer's queue, held weakly (responses to the server's requests
    /// are written through it; it must not keep the connection open).
    out: mpsc::WeakSender<Outbound>,
    /// Flips to `true` once, when the connection closes.
    closed_tx: watch::Sender<bool>,
    /// Messages skipped as unreadable or unmatched.
    discarded: AtomicU64,
}

impl Shared {
    fn close(&self, reason: String) {
        let mut t = self.tables.lock().unwrap();
        if t.closed.is_none() {
            t.closed = Some(reason.clone());
        }
        for (_, tx) in t.pending.drain() {
            let _ = tx.send(Err(reason.clone()));
        }
        t.subscriptions.clear();
        t.progress.clear();
        t.server_requests = None;
        t.task_pushes = None;
        drop(t);
        self.closed_tx.send_replace(true);
    }

    /// Counts a message that was skipped: it may have been a lost reply.
    fn discard(&self) {
        self.discarded.fetch_add(1, Ordering::Relaxed);
    }

    fn dispatch(&self, msg: Message) {
        match msg {
            Message::Response { id, result } => self.complete(&id, Reply::Result(result)),
            Message::Error {
                id: Some(id),
                error,
            } => self.complete(&id, Reply::Error(error)),
            Message::Error { id: None, error } => {
                // Often the reply to a request the server could not read.
                self.discard();
                tracing::warn!(
                    code = error.code,
                    "the server sent an error without an id: {}",
                    error.message
                );
            }
            Message::Notification { method, params } => self.route(method, params),
            Message::Request { id, method, params } => self.serve(id, method, params),
        }
    }

    /// Hands a request from the server to whoever answers them; without
    /// anyone, it is ignored (2026-07-28 servers never send requests).
    fn serve(&self, id: RequestId, method: String, params: Option<Box<RawValue>>) {
        let mut t = self.tables.lock().unwrap();
        let Some(tx) = &t.server_requests else {
            tracing::warn!(%method, "ignoring a request from the server: nothing answers it");
            return;
        };
        let request = ServerRequest {
            method,
            params,
            responder: Responder {
                out: self.out.clone(),
                id,
            },
        };
        match tx.try_send(request) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(r)) => {
                // A flood: refuse at once rather than queue without bound
                // or leave the server waiting.
                tracing::warn!(method = %r.method, "too many requests from the server waiting; refusing one");
                let error = RpcError::new(
                    crate::protocol::error_codes::INTERNAL_ERROR,
                    "the client is busy: too many requests waiting",
                );
                r.responder.try_error(error);
            }
            Err(mpsc::error::TrySendError::Closed(_)) => t.server_requests = None,
        }
    }

    /// Fails one request (or ends one subscription) whose reply is lost.
    fn lose(&self, id: &RequestId, reason: String) {
        let mut t = self.tables.lock().unwrap();
        if let Some(tx) = t.pending.remove(id) {
            let _ = tx.send(Err(reason));
        } else {
            t.subscriptions.remove(id);
        }
    }

    fn complete(&self, id: &RequestId, reply: Reply) {
        let mut t = self.tables.lock().unwrap();
        if let Some(tx) = t.pending.remove(id) {
            let _ = tx.send(Ok(reply));
        } else if t.subscriptions.remove(id).is_some() {
            // The server ended a listen stream with a final response: dropping
            // the sender ends the subscription.
        } else {
            self.discard();
            tracing::debug!(%id, "a response for no pending request (late or unknown id)");
        }
    }

    fn route(&self, method: String, params: Option<Box<RawValue>>) {
        let sub_id = params.as_deref().and_then(subscription_id_of);
        let mut t = self.tables.lock().unwrap();
        if method == method::NOTIFICATIONS_CANCELLED {
            // On stdio, a server ends a listen stream this way.
            if let Some(id) = params.as_deref().and_then(cancelled_request_id) {
                t.subscriptions.remove(&id);
            }
            return;
        }
        if method == method::NOTIFICATIONS_PROGRESS
            && let Some(token) = params.as_deref().and_then(progress_token_of)
        {
            if let Some(entry) = t.progress.get(&token)
                && !entry.send(SubEvent::Notification { method, params })
            {
                t.progress.remove(&token);
            }
            return;
        }
        if let Some(entry) = sub_id.as_ref().and_then(|id| t.subscriptions.get(id)) {
            if entry.send(SubEvent::Notification { method, params }) {
                return;
            }
            if let Some(id) = sub_id {
                t.subscriptions.remove(&id);
            }
            return;
        }
        // Task pushes are correlated by task id, not by stream: some servers
        // send them on the request's own stream, without a subscription id.
        if method == method::NOTIFICATIONS_TASKS {
            if let Some(entry) = &t.task_pushes
                && !entry.send(SubEvent::Notification { method, params })
            {
                t.task_pushes = None;
            }
            return;
        }
        tracing::debug!(%method, "a notification for no open subscription");
    }

    pub(crate) fn pending_len(&self) -> usize {
        self.tables.lock().unwrap().pending.len()
    }
}

fn subscription_id_of(params: &RawValue) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    struct P {
        #[serde(rename = "_meta")]
        meta: Option<M>,
    }
    #[derive(serde::Deserialize)]
    struct M {
        #[serde(rename = "io.modelcontextprotocol/subscriptionId")]
        id: Option<RequestId>,
    }
    serde_json::from_str::<P>(params.get()).ok()?.meta?.id
}

fn progress_token_of(params: &RawValue) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct P {
        progress_token: RequestId,
    }
    serde_json::from_str::<P>(params.get())
        .ok()
        .map(|p| p.progress_token)
}

fn cancelled_request_id(params: &RawValue) -> Option<RequestId> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct P {
        request_id: RequestId,
    }
    serde_json::from_str::<P>(params.get())
        .ok()
        .map(|p| p.request_id)
}

/// The client's end of a connection. Dropping the last clone closes it.
#[derive(Clone)]
pub(crate) struct Connection {
    out: mpsc::Sender<Outbound>,
    shared: Arc<Shared>,
}

/// A connection held weakly (by the listen watcher, which must not keep it
/// open).
pub(crate) struct WeakConnection {
    out: mpsc::WeakSender<Outbound>,
    shared: Weak<Shared>,
}

impl WeakConnection {
    /// The connection, while some client still holds it.
    pub(crate) fn upgrade(&self) -> Option<Connection> {
        Some(Connection {
            out: self.out.upgrade()?,
            shared: self.shared.upgrade()?,
        })
    }
}

impl Connection {
    /// A handle that does not keep the connection open.
    pub(crate) fn downgrade(&self) -> WeakConnection {
        WeakConnection {
            out: self.out.downgrade(),
            shared: Arc::downgrade(&self.shared),
        }
    }

    /// Opens the transport and spawns the reader and writer tasks.
    pub(crate) async fn open<T: Transport>(transport: T) -> Result<Connection, Error> {
        let (sink, stream) = transport
            .connect()
            .await
            .map_err(|e| Error::transport(e.to_string()).with_source(e))?;
        let (out, rx) = mpsc::channel(OUTGOING_CAPACITY);
        let shared = Arc::new(Shared {
            tables: Mutex::new(Tables::default()),
            next_id: AtomicI64::new(1),
            out: out.downgrade(),
            closed_tx: watch::Sender::new(false),
            discarded: AtomicU64::new(0),
        });
        tokio::spawn(write_loop(sink, rx, shared.clone()));
        tokio::spawn(read_loop(stream, shared.clone()));
        Ok(Connection { out, shared })
    }

    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Number(self.shared.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// Why the connection closed, if it has.
    pub(crate) fn closed_reason(&self) -> Option<String> {
        self.shared.tables.lock().unwrap().closed.clone()
    }

    /// Resolves once the connection has closed (at once if it already has).
    pub(crate) async fn closed(&self) {
        let mut rx = self.shared.closed_tx.subscribe();
        // The sender lives as long as `self`; an error cannot happen here.
        let _ = rx.wait_for(|closed| *closed).await;
    }

    /// How many messages from the server were skipped as unreadable or
    /// unmatched.
    pub(crate) fn discarded(&self) -> u64 {
        self.shared.discarded.load(Ordering::Relaxed)
    }

    /// Takes the notifications/tasks that no open subscription claims.
    /// A second call replaces the first receiver.
    pub(crate) fn task_pushes(&self) -> Pushes {
        let (tx, rx) = mpsc::channel(SUBSCRIPTION_CAPACITY);
        let lagged = Arc::new(AtomicBool::new(false));
        let mut t = self.shared.tables.lock().unwrap();
        if t.closed.is_none() {
            t.task_pushes = Some(SubEntry {
                tx,
                lagged: lagged.clone(),
            });
        }
        Pushes { rx, lagged }
    }

    /// Takes the requests the server sends, each with the means to answer
    /// it. Until this is called they are ignored; a second call replaces
    /// the first receiver.
    pub(crate) fn server_requests(&self) -> mpsc::Receiver<ServerRequest> {
        let (tx, rx) = mpsc::channel(SUBSCRIPTION_CAPACITY);
        let mut t = self.shared.tables.lock().unwrap();
        if t.closed.is_none() {
            t.server_requests = Some(tx);
        }
        rx
    }

    /// Routes `notifications/progress` carrying `token` to the returned
    /// watch, until it is dropped.
    #[cfg_attr(not(test), allow(dead_code))] // progress reporting comes with the initialize era
    pub(crate) fn progress(&self, token: RequestId) -> ProgressWatch {
        let (tx, rx) = mpsc::channel(SUBSCRIPTION_CAPACITY);
        let lagged = Arc::new(AtomicBool::new(false));
        let mut t = self.shared.tables.lock().unwrap();
        if t.closed.is_none() {
            t.progress.insert(
                token.clone(),
                SubEntry {
                    tx,
                    lagged: lagged.clone(),
                },
            );
        }
        ProgressWatch {
            shared: Arc::downgrade(&self.shared),
            token,
            rx,
        }
    }

    /// Sends a request and waits for its result.
    ///
    /// Dropping the returned future (or a timeout) removes the request from
    /// the table and sends `notifications/cancelled`.
    pub(crate) async fn request<P: Serialize>(
        &self,
        method: &str,
        name: Option<String>,
        params: P,
        timeout: Duration,
    ) -> Result<Box<RawValue>, Error> {
        let (id, json) = self.encode(method, params)?;
        let (tx, rx) = oneshot::channel();
        {
            let mut t = self.shared.tables.lock().unwrap();
            if let Some(reason) = &t.closed {
                return Err(Error::transport(reason.clone()));
            }
            t.pending.insert(id.clone(), tx);
        }
        let mut guard = PendingGuard {
            conn: self,
            id: Some(id.clone()),
        };
        let mut msg = Outbound::request(json, method, id);
        msg.name = name;
        let lost_outcome = Method::of(method).loses_outcome_with_its_reply();
        let discarded_before = self.discarded();
        if self.out.send(msg).await.is_err() {
            return Err(Error::transport("the connection is closed"));
        }
        let reply = match tokio::time::timeout(timeout, rx).await {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err("the connection closed".to_owned()),
            Err(_) => {
                let discarded = self.discarded().saturating_sub(discarded_before);
                return Err(Error::new(Kind::Timeout {
                    after: timeout,
                    discarded,
                }));
            }
        };
        guard.id = None;
        match reply {
            Ok(Reply::Result(raw)) => Ok(raw),
            Ok(Reply::Error(e)) => Err(Error::rpc(e)),
            // Never delivered: even a tools/call is known not to have run.
            Ok(Reply::NotSent(reason)) => Err(Error::transport(reason)),
            Ok(Reply::Http(failure)) => Err(failure.into_error(lost_outcome)),
            // The request was sent and its reply is lost: a tool may have run.
            Err(reason) if lost_outcome => Err(Error::new(Kind::OutcomeUnknown(reason))),
            Err(reason) => Err(Error::transport(reason)),
        }
    }

    /// Numbers a request and writes its JSON.
    fn encode<P: Serialize>(&self, method: &str, params: P) -> Result<(RequestId, String), Error> {
        let id = self.next_id();
        let json = serde_json::to_string(&OutRequest {
            jsonrpc: "2.0",
            id: &id,
            method,
            params,
        })
        .map_err(|e| Error::builder(format!("the request does not serialize: {e}")))?;
        Ok((id, json))
    }

    /// Opens a listen stream: sends the request and routes notifications
    /// tagged with its id to the returned subscription.
    pub(crate) async fn subscribe<P: Serialize>(
        &self,
        method: &'static str,
        params: P,
    ) -> Result<Subscription, Error> {
        let (id, json) = self.encode(method, params)?;
        let (tx, rx) = mpsc::channel(SUBSCRIPTION_CAPACITY);
        let lagged = Arc::new(AtomicBool::new(false));
        {
            let mut t = self.shared.tables.lock().unwrap();
            if let Some(reason) = &t.closed {
                return Err(Error::transport(reason.clone()).with_method(method));
            }
            t.subscriptions.insert(
                id.clone(),
                SubEntry {
                    tx,
                    lagged: lagged.clone(),
                },
            );
        }
        let sub = Subscription {
            conn: self.clone(),
            id: id.clone(),
            rx,
            lagged,
        };
        let msg = Outbound::request(json, method, id);
        self.out
            .send(msg)
            .await
            .map_err(|_| Error::transport("the connection is closed").with_method(method))?;
        Ok(sub)
    }

    /// Sends a notification.
    pub(crate) async fn notify<P: Serialize>(&self, method: &str, params: P) -> Result<(), Error> {
        let json = serde_json::to_string(&serde_json::json!({
            "jsonrpc": "2.0", "method": method, "params": params
        }))
        .map_err(|e| Error::builder(format!("the notification does not serialize: {e}")))?;
        self.out
            .send(Outbound::new(json, method))
            .await
            .map_err(|_| Error::transport("the connection is closed"))
    }

    /// Forgets a request and tells the server (stdio: `notifications/cancelled`;
    /// HTTP transports drop the response stream instead).
    fn abandon(&self, id: RequestId, is_subscription: bool) {
        {
            let mut t = self.shared.tables.lock().unwrap();
            let known = if is_subscription {
                t.subscriptions.remove(&id).is_some()
            } else {
                t.pending.remove(&id).is_some()
            };
            if !known || t.closed.is_some() {
                return;
            }
        }
        let json = serde_json::json!({
            "jsonrpc": "2.0",
            "method": method::NOTIFICATIONS_CANCELLED,
            "params": { "requestId": id, "reason": "the client no longer waits for this request" }
        })
        .to_string();
        let mut msg = Outbound::new(json, method::NOTIFICATIONS_CANCELLED);
        msg.cancels = Some(id);
        if self.out.try_send(msg).is_err() {
            tracing::debug!("outgoing queue full; the cancellation notice was not sent");
        }
    }

    /// Requests waiting for a reply.
    pub(crate) fn pending_len(&self) -> usize {
        self.shared.pending_len()
    }
}

struct PendingGuard<'a> {
    conn: &'a Connection,
    id: Option<RequestId>,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        if let Some(id) = self.id.take() {
            self.conn.abandon(id, false);
        }
    }
}

/// An open listen stream. Dropping it ends the stream on the server.
pub(crate) struct Subscription {
    conn: Connection,
    id: RequestId,
    rx: mpsc::Receiver<SubEvent>,
    lagged: Arc<AtomicBool>,
}

impl Subscription {
    /// The next event; `None` when the stream ended (final response, server
    /// cancel, or closed connection).
    pub(crate) async fn next(&mut self) -> Option<SubEvent> {
        if self.lagged.swap(false, Ordering::AcqRel) {
            return Some(SubEvent::Lagged);
        }
        let ev = self.rx.recv().await;
        if ev.is_some() && self.lagged.swap(false, Ordering::AcqRel) {
            return Some(SubEvent::Lagged);
        }
        ev
    }
}

/// A request from the server, and the means to answer it once.
pub(crate) struct ServerRequest {
    pub(crate) method: String,
    pub(crate) params: Option<Box<RawValue>>,
    pub(crate) responder: Responder,
}

/// Answers one request from the server. Dropping it answers nothing (the
/// server's own timeout applies).
pub(crate) struct Responder {
    out: mpsc::WeakSender<Outbound>,
    id: RequestId,
}

impl Responder {
    /// The id of the request this answers.
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// Answers with a result.
    pub(crate) async fn result<R: Serialize>(self, result: &R) -> Result<(), Error> {
        let json = serde_json::to_string(&serde_json::json!({
            "jsonrpc": "2.0", "id": self.id, "result": result
        }))
        .map_err(|e| Error::builder(format!("the response does not serialize: {e}")))?;
        self.send(json).await
    }

    /// Answers with an error.
    pub(crate) async fn error(self, error: RpcError) -> Result<(), Error> {
        let json = serde_json::json!({"jsonrpc": "2.0", "id": self.id, "error": error}).to_string();
        self.send(json).await
    }

    /// Answers with an error without waiting (best effort: dropped when
    /// the writer's queue is full).
    fn try_error(self, error: RpcError) {
        let json = serde_json::json!({"jsonrpc": "2.0", "id": self.id, "error": error}).to_string();
        if let Some(out) = self.out.upgrade() {
            let _ = out.try_send(Outbound::response(json, self.id));
        }
    }

    async fn send(self, json: String) -> Result<(), Error> {
        let out = self
            .out
            .upgrade()
            .ok_or_else(|| Error::transport("the connection is closed"))?;
        out.send(Outbound::response(json, self.id))
            .await
            .map_err(|_| Error::transport("the connection is closed"))
    }
}

/// `notifications/progress` for one token; dropping it stops the routing.
#[cfg_attr(not(test), allow(dead_code))]
pub(crate) struct ProgressWatch {
    shared: Weak<Shared>,
    token: RequestId,
    rx: mpsc::Receiver<SubEvent>,
}

#[cfg_attr(not(test), allow(dead_code))]
impl ProgressWatch {
    /// The next progress notification's params; `None` once the
    /// connection closed.
    pub(crate) async fn next(&mut self) -> Option<Option<Box<RawValue>>> {
        match self.rx.recv().await? {
            SubEvent::Notification { params, .. } => Some(params),
            SubEvent::Lagged => Some(None),
        }
    }
}

impl Drop for ProgressWatch {
    fn drop(&mut self) {
        if let Some(shared) = self.shared.upgrade() {
            shared.tables.lock().unwrap().progress.remove(&self.token);
        }
    }
}

/// The task pushes no subscription claimed (see [`Connection::task_pushes`]).
pub(crate) struct Pushes {
    rx: mpsc::Receiver<SubEvent>,
    lagged: Arc<AtomicBool>,
}

impl Pushes {
    /// The next push, or `Lagged` when some were dropped; `None` once the
    /// connection closed.
    pub(crate) async fn next(&mut self) -> Option<SubEvent> {
        if self.lagged.swap(false, Ordering::AcqRel) {
            return Some(SubEvent::Lagged);
        }
        self.rx.recv().await
    }
}

impl Drop for Subscription {
    fn drop(&mut self) {
        self.conn.abandon(self.id.clone(), true);
    }
}

async fn write_loop<S: MessageSink>(
    mut sink: S,
    mut rx: mpsc::Receiver<Outbound>,
    shared: Arc<Shared>,
) {
    while let Some(msg) = rx.recv().await {
        if let Err(e) = sink.send(msg).await {
            shared.close(format!("could not send to the server: {e}"));
            break;
        }
    }
    sink.close().await;
}

async fn read_loop<S: MessageStream>(mut stream: S, shared: Arc<Shared>) {
    let reason = loop {
        match stream.recv().await {
            Ok(Some(Inbound::Message(text))) => match Message::from_json(&text) {
                Ok(msg) => shared.dispatch(msg),
                Err(e) => {
                    shared.discard();
                    tracing::warn!("skipping a malformed message from the server: {e}");
                }
            },
            Ok(Some(Inbound::Invalid(why))) => {
                shared.discard();
                tracing::warn!("skipping unreadable input from the server: {why}");
            }
            Ok(Some(Inbound::Lost { id, reason })) => shared.lose(&id, reason),
            Ok(Some(Inbound::NotSent { id, reason })) => {
                shared.complete(&id, Reply::NotSent(reason));
            }
            Ok(Some(Inbound::HttpError {
                id,
                status,
                www_authenticate,
                response,
                reason,
            })) => {
                let error = match response.as_deref().map(Message::from_json) {
                    Some(Ok(Message::Error { error, .. })) => Some(error),
                    _ => None,
                };
                let failure = HttpFailure {
                    status,
                    www_authenticate,
                    error,
                    reason,
                };
                shared.complete(&id, Reply::Http(Box::new(failure)));
            }
            Ok(None) => break "the server closed the connection".to_owned(),
            Err(e) => break format!("reading from the server failed: {e}"),
        }
    };
    shared.close(reason);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::{OutboundKind, memory};

    async fn open() -> (Connection, memory::MemorySink, memory::MemoryStream) {
        let (ours, theirs) = memory::pair();
        let conn = Connection::open(ours).await.unwrap();
        let (sink, stream) = theirs.connect().await.unwrap();
        (conn, sink, stream)
    }

    async fn from_client(stream: &mut memory::MemoryStream) -> serde_json::Value {
        match stream.recv().await.unwrap() {
            Some(Inbound::Message(text)) => serde_json::from_str(&text).unwrap(),
            other => panic!("expected a message, got {other:?}"),
        }
    }

    #[tokio::test]
    async fn a_request_from_the_server_is_handed_over_and_answered_under_its_id() {
        let (conn, mut sink, mut stream) = open().await;
        let mut requests = conn.server_requests();
        let ask = r#"{"jsonrpc":"2.0","id":"s-1","method":"elicitation/create","params":{"message":"ok?"}}"#;
        sink.send(Outbound::new(ask.into(), "test")).await.unwrap();
        let request = requests.recv().await.unwrap();
        assert_eq!(request.method, "elicitation/create");
        assert_eq!(request.params.unwrap().get(), r#"{"message":"ok?"}"#);
        assert_eq!(request.responder.id(), &RequestId::String("s-1".into()));
        request
            .responder
            .result(&serde_json::json!({"action": "accept"}))
            .await
            .unwrap();
        let answer = from_client(&mut stream).await;
        assert_eq!(
            answer,
            serde_json::json!({"jsonrpc": "2.0", "id": "s-1", "result": {"action": "accept"}})
        );
        // An error answer, too.
        let ask = r#"{"jsonrpc":"2.0","id":7,"method":"roots/list"}"#;
        sink.send(Outbound::new(ask.into(), "test")).await.unwrap();
        let request = requests.recv().await.unwrap();
        request
            .responder
            .error(RpcError::new(-32601, "no roots"))
            .await
            .unwrap();
        let answer = from_client(&mut stream).await;
        assert_eq!(answer["id"], 7);
        assert_eq!(answer["error"]["code"], -32601);
    }

    /// A transport whose sink hands the client's messages over whole, kind
    /// included.
    struct Recording {
        outbound: mpsc::UnboundedSender<Outbound>,
        inbound: mpsc::UnboundedReceiver<Inbound>,
    }
    struct RecordingSink(mpsc::UnboundedSender<Outbound>);
    struct RecordingStream(mpsc::UnboundedReceiver<Inbound>);
    impl MessageSink for RecordingSink {
        async fn send(&mut self, message: Outbound) -> std::io::Result<()> {
            let _ = self.0.send(message);
            Ok(())
        }
        async fn close(&mut self) {}
    }
    impl MessageStream for RecordingStream {
        async fn recv(&mut self) -> std::io::Result<Option<Inbound>> {
            Ok(self.0.recv().await)
        }
    }
    impl Transport for Recording {
        type Sink = RecordingSink;
        type Stream = RecordingStream;
        async fn connect(self) -> std::io::Result<(RecordingSink, RecordingStream)> {
            Ok((RecordingSink(self.outbound), RecordingStream(self.inbound)))
        }
    }

    #[tokio::test]
    async fn every_message_says_what_kind_it_is() {
        let (out_tx, mut out_rx) = mpsc::unbounded_channel();
        let (in_tx, in_rx) = mpsc::unbounded_channel();
        let conn = Connection::open(Recording {
            outbound: out_tx,
            inbound: in_rx,
        })
        .await
        .unwrap();
        let mut requests = conn.server_requests();
        // A request, abandoned: its notifications/cancelled follows.
        let _ = conn
            .request(
                "tools/list",
                None,
                serde_json::json!({}),
                Duration::from_millis(1),
            )
            .await;
        let request = out_rx.recv().await.unwrap();
        assert_eq!(
            (request.kind, request.method.as_str()),
            (OutboundKind::Request, "tools/list")
        );
        assert!(request.id.is_some());
        let cancel = out_rx.recv().await.unwrap();
        assert_eq!(cancel.kind, OutboundKind::Notification);
        assert_eq!(cancel.method, "notifications/cancelled");
        // A response to the server's request.
        let ask = r#"{"jsonrpc":"2.0","id":"s-9","method":"ping"}"#;
        in_tx.send(Inbound::Message(ask.into())).unwrap();
        let responder = requests.recv().await.unwrap().responder;
        responder.result(&serde_json::json!({})).await.unwrap();
        let response = out_rx.recv().await.unwrap();
        assert_eq!(response.kind, OutboundKind::Response);
        assert_eq!(response.id, Some(RequestId::String("s-9".into())));
        assert!(response.method.is_empty());
    }

    #[tokio::test]
    async fn progress_is_routed_by_its_token_until_the_watch_is_dropped() {
        let (conn, mut sink, _stream) = open().await;
        let mut watch = conn.progress(RequestId::String("tok".into()));
        let note = |token: &str, n: u32| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"notifications/progress","params":{{"progressToken":"{token}","progress":{n}}}}}"#
            )
        };
        sink.send(Outbound::new(note("other", 1), "test"))
            .await
            .unwrap();
        sink.send(Outbound::new(note("tok", 2), "test"))
            .await
            .unwrap();
        let params = watch.next().await.unwrap().unwrap();
        assert!(params.get().contains(r#""progress":2"#), "{}", params.get());
        drop(watch);
        assert!(conn.shared.tables.lock().unwrap().progress.is_empty());
    }
}
