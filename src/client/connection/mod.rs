//! The connection: request ids, the pending-request table, notification
//! routing and timeouts. Two background tasks drive the transport: a writer
//! that owns the sink and a reader that owns the stream.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::{Notify, mpsc, oneshot, watch};
use tokio::time::Instant;

use crate::error::{Error, Kind};
use crate::protocol::jsonrpc::OutRequest;
use crate::protocol::method::Method;
use crate::protocol::{Message, RequestId};
use crate::transport::{Inbound, MessageSink, MessageStream, Outbound, OutboundKind, Transport};

mod notifications;
mod preamble;
mod progress;
mod server_request;
mod shared;
mod streams;
mod trace;

pub(crate) use notifications::{NOTIFICATION_CAPACITY, Notification};
use progress::Elapsed;
pub(crate) use progress::{ProgressFn, ProgressWatch, Pump, Tracking, later};
pub(crate) use server_request::{Cancelled, Responder, ServerRequest};
pub(crate) use shared::SubEvent;
use shared::{HttpFailure, Reply, Shared, SubEntry, Tables};
pub(crate) use streams::{Pushes, Subscription};

/// How many outgoing messages may queue before senders wait.
const OUTGOING_CAPACITY: usize = 256;
/// How many pushes may wait for a slow subscription consumer; past that the
/// consumer is told it lagged and re-reads instead of the queue growing.
pub(crate) const SUBSCRIPTION_CAPACITY: usize = 64;

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
        let (closer, close_rx) = mpsc::channel(1);
        let (negotiated, version_rx) = watch::channel(None);
        let (answers, quick) = server_request::Answers::new();
        let shared = Arc::new(Shared {
            tables: Mutex::new(Tables::default()),
            next_id: AtomicI64::new(1),
            out: out.downgrade(),
            is_closed: AtomicBool::new(false),
            closed_wake: Notify::new(),
            discarded: AtomicU64::new(0),
            killed: AtomicU64::new(0),
            closer,
            negotiated,
            preamble: Default::default(),
            serving: Arc::default(),
            answers,
            notifications_dropped: Default::default(),
            not_before: Mutex::new(None),
        });
        let queues = Queues { rx, quick };
        tokio::spawn(write_loop(
            sink,
            queues,
            close_rx,
            version_rx,
            shared.clone(),
        ));
        tokio::spawn(read_loop(stream, shared.clone()));
        Ok(Connection { out, shared })
    }

    /// Settles the protocol version: every message this connection writes
    /// from now on states it ([`Outbound::protocol_version`]).
    pub(crate) fn negotiated(&self, version: &str) {
        self.shared
            .negotiated
            .send_replace(Some(Arc::from(version)));
    }

    pub(crate) fn next_id(&self) -> RequestId {
        RequestId::Number(self.shared.next_id.fetch_add(1, Ordering::Relaxed))
    }

    /// The moment before which no wait reads a task (the end of the
    /// latest `Retry-After` the server sent), while it is to come.
    pub(crate) fn not_before(&self) -> Option<Instant> {
        self.shared.not_before()
    }

    /// Closes the connection for every holder and waits for the transport
    /// to end it (see [`MessageSink::close`]): requests still waiting fail
    /// with [`CLOSED_BY_CLIENT`], and so does every later one. `Ok` at once
    /// when the writer has already closed the transport.
    pub(crate) async fn close(&self) -> std::io::Result<()> {
        let (tx, rx) = oneshot::channel();
        if self.shared.closer.send(tx).await.is_err() {
            return Ok(()); // the writer is gone: the transport is closed
        }
        // Dropped unanswered when another close got there first.
        rx.await.unwrap_or(Ok(()))
    }

    /// What the server sent before any JSON-RPC message, when all it sent
    /// so far is unreadable (a banner, a usage text): for the error of a
    /// handshake that fails.
    pub(crate) fn unread_preamble(&self) -> Option<String> {
        self.shared.preamble.unread()
    }

    /// [`unread_preamble`](Connection::unread_preamble), once the reader
    /// has read all there is when the connection has closed (waiting at
    /// most `within`): a program that printed a usage text and exited may
    /// fail a send before its output was read, and its words belong in
    /// the error.
    pub(crate) async fn settled_preamble(&self, within: Duration) -> Option<String> {
        if self.shared.is_closed.load(Ordering::Acquire) {
            let _ = tokio::time::timeout(within, self.shared.preamble.ended()).await;
        }
        self.shared.preamble.unread()
    }

    /// Why the connection closed, if it has.
    pub(crate) fn closed_reason(&self) -> Option<String> {
        self.shared.tables.lock().unwrap().closed.clone()
    }

    /// Resolves once the connection has closed (at once if it has).
    pub(crate) async fn closed(&self) {
        // A `Notified` hears `notify_waiters` from the moment it is made,
        // so a close between the check and the await is not missed.
        let notified = self.shared.closed_wake.notified();
        if self.shared.is_closed.load(Ordering::Acquire) {
            return;
        }
        notified.await;
    }

    /// How many messages from the server were skipped as unreadable or
    /// unmatched.
    pub(crate) fn discarded(&self) -> u64 {
        self.shared.discarded.load(Ordering::Relaxed)
    }

    /// How many answers to the server's requests could not be sent (the
    /// connection was gone, or its writer stuck).
    pub(crate) fn dropped_answers(&self) -> u64 {
        self.shared.answers.dropped()
    }

    /// How many times closing the transport had to end the server by
    /// force.
    pub(crate) fn servers_killed(&self) -> u64 {
        self.shared.killed.load(Ordering::Relaxed)
    }

    /// How many of the server's requests were ignored because they
    /// repeated the id of one answered lately (or being answered).
    pub(crate) fn repeated_requests(&self) -> u64 {
        self.shared.answers.repeated()
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
                refusal: None,
            });
        }
        Pushes { rx, lagged }
    }

    /// Takes the requests the server sends, each with the means to answer
    /// it. Until this is called (and once the receiver is closed) they are
    /// refused with `-32601`; `ping` never comes here, the reader answers
    /// it. A second call replaces the first receiver.
    pub(crate) fn server_requests(&self) -> mpsc::Receiver<ServerRequest> {
        let (tx, rx) = mpsc::channel(SUBSCRIPTION_CAPACITY);
        let mut t = self.shared.tables.lock().unwrap();
        if t.closed.is_none() {
            t.server_requests = Some(tx);
        }
        rx
    }

    /// Takes the notifications no table of the connection claims: not
    /// replies, progress, task pushes, listen streams or cancellations.
    /// Until this is called they are ignored; a second call replaces the
    /// first receiver. At most [`NOTIFICATION_CAPACITY`] wait; past that
    /// they are dropped and counted in [`Connection::notifications_dropped`].
    pub(crate) fn notifications(&self) -> mpsc::Receiver<Notification> {
        let (tx, rx) = mpsc::channel(NOTIFICATION_CAPACITY);
        let mut t = self.shared.tables.lock().unwrap();
        if t.closed.is_none() {
            t.notifications = Some(tx);
        }
        rx
    }

    /// How many unclaimed notifications were dropped because their
    /// receiver was behind.
    pub(crate) fn notifications_dropped(&self) -> u64 {
        self.shared.notifications_dropped.count()
    }

    /// Counts a message the client layer skipped as malformed.
    pub(crate) fn discard(&self) {
        self.shared.discard();
    }

    /// Routes `notifications/progress` carrying `token` to the returned
    /// watch, until it is dropped.
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
                    refusal: None,
                },
            );
        }
        ProgressWatch {
            shared: Arc::downgrade(&self.shared),
            token,
            rx,
        }
    }

    /// Progress tracking for one call under a fresh token: each report
    /// goes to `on_progress` and restarts the request's timeout, within
    /// `total` in all.
    pub(crate) fn track(&self, on_progress: ProgressFn, total: Duration) -> Tracking {
        let token = RequestId::String(format!(
            "progress-{}",
            self.shared.next_id.fetch_add(1, Ordering::Relaxed)
        ));
        Tracking::new(self.progress(token), on_progress, total)
    }

    /// Sends a request and waits for its result. `name` is what it acts on
    /// ([`Outbound::name`]): the caller states it for every method that
    /// has one.
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
        self.request_tracked(method, name, params, timeout, None)
            .await
    }

    /// As [`Connection::request`]; with `tracking`, progress reports reach
    /// its callback while the request waits, and each restarts `timeout`
    /// (the params must carry the tracking's token).
    ///
    /// Each request is a `mcp_tasks.request` span (see `trace.rs`), a child
    /// of the current span: the task span when a task's wait sends it.
    pub(crate) async fn request_tracked<P: Serialize>(
        &self,
        method: &str,
        name: Option<String>,
        params: P,
        timeout: Duration,
        tracking: Option<&mut Tracking>,
    ) -> Result<Box<RawValue>, Error> {
        let (id, json) = self.encode(method, params)?;
        let span = trace::request_span(method);
        if span.is_disabled() {
            // Nothing to record: no span is held while the request waits.
            drop(span);
            self.exchange(method, name, id, json, timeout, tracking)
                .await
        } else {
            span.record("request_id", tracing::field::display(&id));
            // Boxed: only traced requests pay for the larger future.
            let exchange = self.exchange(method, name, id, json, timeout, tracking);
            trace::timed(span, exchange).await
        }
    }

    /// Sends one encoded request and waits for its reply.
    async fn exchange(
        &self,
        method: &str,
        name: Option<String>,
        id: RequestId,
        json: String,
        timeout: Duration,
        tracking: Option<&mut Tracking>,
    ) -> Result<Box<RawValue>, Error> {
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
        let waited = match tracking {
            None => tokio::time::timeout(timeout, rx)
                .await
                .map_err(|_| Elapsed(timeout)),
            Some(tracking) => tracking.wait(rx, timeout).await,
        };
        let reply = match waited {
            Ok(Ok(reply)) => reply,
            Ok(Err(_)) => Err("the connection closed".to_owned()),
            Err(Elapsed(after)) => {
                let discarded = self.discarded().saturating_sub(discarded_before);
                return Err(Error::new(Kind::Timeout { after, discarded }));
            }
        };
        guard.id = None;
        match reply {
            Ok(Reply::Result(raw)) => Ok(raw),
            Ok(Reply::Error(e)) => Err(Error::rpc(e)),
            Ok(Reply::Cancelled(reason)) => Err(Error::new(Kind::ServerCancelled {
                reason,
                partial: lost_outcome,
            })),
            // Never delivered: even a tools/call is known not to have run.
            Ok(Reply::NotSent(reason)) => Err(Error::transport(reason)),
            Ok(Reply::Unreachable(reason)) => Err(Error::new(Kind::Unreachable(reason))),
            Ok(Reply::Http(failure)) => {
                let error = failure.into_error(lost_outcome);
                // The server asked for a pause: every wait of this
                // connection honours it (a request sent by hand does not).
                if let Some(wait) = error.retry_after().filter(|w| !w.is_zero()) {
                    self.shared.hold_off(Instant::now() + wait);
                }
                Err(error)
            }
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
        let refusal = Arc::new(std::sync::OnceLock::new());
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
                    refusal: Some(refusal.clone()),
                },
            );
        }
        let sub = Subscription {
            shared: self.shared.clone(),
            id: id.clone(),
            rx,
            lagged,
            refusal,
        };
        let msg = Outbound::request(json, method, id);
        self.out
            .send(msg)
            .await
            .map_err(|_| Error::transport("the connection is closed").with_method(method))?;
        Ok(sub)
    }

    /// Whether the listen stream `id` is still open: not ended by the
    /// server, nor dropped, nor gone with the connection.
    pub(crate) fn is_listening(&self, id: &RequestId) -> bool {
        self.shared
            .tables
            .lock()
            .unwrap()
            .subscriptions
            .contains_key(id)
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

    /// Forgets a request and tells the server; see [`Shared::abandon`].
    fn abandon(&self, id: RequestId, is_subscription: bool) {
        self.shared.abandon(id, is_subscription);
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

/// Why the connection closed when [`Connection::close`] closed it.
pub(crate) const CLOSED_BY_CLIENT: &str = "the client was closed";

/// What the writer writes: the outgoing queue, and the answers the reader
/// gives itself (see [`server_request::QUICK_ANSWER_BYTES`]).
struct Queues {
    rx: mpsc::Receiver<Outbound>,
    quick: server_request::QuickAnswers,
}

impl Queues {
    /// The next message from either queue (neither starves the other);
    /// `None` once the last sender of the outgoing queue is gone.
    async fn next(&mut self) -> Option<Outbound> {
        tokio::select! {
            Some(answer) = self.quick.recv() => Some(answer),
            msg = self.rx.recv() => msg,
        }
    }
}

/// Writes the outgoing messages until the last sender is gone, a send
/// fails, or [`Connection::close`] asks; then closes the transport (and
/// tells the one who asked how that went). A close request cuts short a
/// send in progress: the connection is ending anyway.
async fn write_loop<S: MessageSink>(
    mut sink: S,
    mut queues: Queues,
    mut close_rx: mpsc::Receiver<oneshot::Sender<std::io::Result<()>>>,
    version_rx: watch::Receiver<Option<Arc<str>>>,
    shared: Arc<Shared>,
) {
    let asked = loop {
        let msg = tokio::select! {
            biased;
            Some(asked) = close_rx.recv() => break Some(asked),
            msg = queues.next() => msg,
        };
        let Some(mut msg) = msg else { break None };
        let answering = (msg.kind == OutboundKind::Response)
            .then(|| msg.id.clone())
            .flatten();
        // The version settled before this message was queued goes with it.
        msg.protocol_version.clone_from(&version_rx.borrow());
        tokio::select! {
            biased;
            Some(asked) = close_rx.recv() => {
                if let Some(id) = &answering {
                    shared.answers.drop_one(id, "the client was closed");
                }
                break Some(asked);
            }
            sent = sink.send(msg) => if let Err(e) = sent {
                shared.close(format!("could not send to the server: {e}"));
                if let Some(id) = &answering {
                    shared.answers.drop_one(id, "the transport failed");
                }
                break None;
            },
        }
    };
    if asked.is_some() {
        shared.close(CLOSED_BY_CLIENT.to_owned());
    }
    // What is still queued goes nowhere: its answers are counted.
    queues.rx.close();
    while let Ok(msg) = queues.rx.try_recv() {
        if let (OutboundKind::Response, Some(id)) = (msg.kind, &msg.id) {
            shared.answers.drop_one(id, "the connection closed");
        }
    }
    queues.quick.drop_all("the connection closed");
    let closed = sink.close().await;
    match &closed {
        Err(e) => tracing::debug!("the transport did not close gracefully: {e}"),
        Ok(how) if how.forced => {
            shared.killed.fetch_add(1, Ordering::Relaxed);
        }
        Ok(_) => {}
    }
    if let Some(asked) = asked {
        let _ = asked.send(closed.map(drop));
    }
}

async fn read_loop<S: MessageStream>(mut stream: S, shared: Arc<Shared>) {
    let reason = loop {
        match stream.recv().await {
            Ok(Some(Inbound::Message(text))) => match Message::from_json(&text) {
                Ok(msg) => {
                    shared.preamble.heard();
                    // Never waits: see `server_request::QUICK_ANSWER_BYTES`.
                    if let Some(answer) = shared.dispatch(msg) {
                        answer.send();
                    }
                }
                Err(e) => {
                    shared.preamble.skipped(&e.to_string());
                    shared.discard();
                    tracing::warn!("skipping a malformed message from the server: {e}");
                }
            },
            Ok(Some(Inbound::Invalid(why))) => {
                shared.preamble.skipped(&why);
                shared.discard();
                tracing::warn!("skipping unreadable input from the server: {why}");
            }
            Ok(Some(Inbound::Lost { id, reason })) => shared.lose(&id, reason),
            Ok(Some(Inbound::NotSent { id, reason })) => {
                shared.complete(&id, Reply::NotSent(reason));
            }
            Ok(Some(Inbound::Unreachable { id, reason })) => {
                shared.complete(&id, Reply::Unreachable(reason));
            }
            Ok(Some(Inbound::HttpError {
                id,
                status,
                www_authenticate,
                retry_after,
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
                    retry_after,
                    error,
                    reason,
                };
                shared.complete(&id, Reply::Http(Box::new(failure)));
            }
            Ok(None) => break "the server closed the connection".to_owned(),
            // The peer is gone, and the transport says how (a child's exit).
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break e.to_string(),
            Err(e) => break format!("reading from the server failed: {e}"),
        }
    };
    shared.preamble.end();
    shared.close(reason);
}

#[cfg(test)]
mod tests;
