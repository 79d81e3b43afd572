//! What the reader and the requesters share: the tables of pending
//! requests and open streams, and the routing of every message the server
//! sends (replies by id, pushes by subscription, task or progress token,
//! requests from the server to whoever answers them, the server's
//! cancellations to the request they name, and every other notification
//! to the client layer).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::value::RawValue;
use tokio::sync::{Notify, mpsc, oneshot};
use tokio::time::Instant;

use super::notifications::{Dropped, Notification, hand_over};
use super::server_request::{Answers, Immediate, Responder, ServerRequest, Serving};
use crate::error::{Error, Kind};
use crate::protocol::method;
use crate::protocol::{Message, RequestId, RpcError};
use crate::transport::Outbound;

/// What the reader hands a waiting request.
pub(super) enum Reply {
    Result(Box<RawValue>),
    Error(RpcError),
    /// The transport could not deliver the request.
    NotSent(String),
    /// No connection to the server could be made.
    Unreachable(String),
    /// An HTTP error status without a response.
    Http(Box<HttpFailure>),
    /// The server sent `notifications/cancelled` for the request, with
    /// its reason.
    Cancelled(Option<String>),
}

/// What an [`Inbound::HttpError`] carries to its request.
pub(super) struct HttpFailure {
    pub(super) status: u16,
    pub(super) www_authenticate: Option<String>,
    pub(super) retry_after: Option<std::time::Duration>,
    pub(super) error: Option<RpcError>,
    pub(super) reason: String,
}

impl HttpFailure {
    /// The error for the request. `tools_call` marks a `tools/call`, whose
    /// outcome is unknown when a `5xx` reply may have come after the tool ran.
    pub(super) fn into_error(self, tools_call: bool) -> Error {
        let HttpFailure {
            status,
            www_authenticate,
            retry_after,
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
        error
            .with_http(status, www_authenticate)
            .with_retry_after(retry_after)
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

pub(super) struct SubEntry {
    pub(super) tx: mpsc::Sender<SubEvent>,
    pub(super) lagged: Arc<AtomicBool>,
    /// Where a listen stream keeps the server's error, when the server
    /// ended it with one (`None` for other streams).
    pub(super) refusal: Option<Arc<OnceLock<RpcError>>>,
}

impl SubEntry {
    /// Queues an event, marking the consumer lagged when its queue is
    /// full, and counting what is dropped in `dropped`. `false` when the
    /// consumer is gone.
    fn send(&self, event: SubEvent, dropped: &Dropped) -> bool {
        match self.tx.try_send(event) {
            Ok(()) => true,
            Err(mpsc::error::TrySendError::Full(_)) => {
                dropped.add();
                self.lagged.store(true, Ordering::Release);
                true
            }
            Err(mpsc::error::TrySendError::Closed(_)) => false,
        }
    }
}

#[derive(Default)]
pub(super) struct Tables {
    pub(super) pending: HashMap<RequestId, oneshot::Sender<Result<Reply, String>>>,
    pub(super) subscriptions: HashMap<RequestId, SubEntry>,
    /// `notifications/progress` by `progressToken`.
    pub(super) progress: HashMap<RequestId, SubEntry>,
    /// Where requests from the server go, once someone answers them.
    pub(super) server_requests: Option<mpsc::Sender<ServerRequest>>,
    /// Where `notifications/tasks` that no open subscription claims go
    /// (untagged, or tagged with a stream that is gone), once someone listens.
    pub(super) task_pushes: Option<SubEntry>,
    /// Where notifications nothing above claims go, once someone takes them.
    pub(super) notifications: Option<mpsc::Sender<Notification>>,
    /// Why the connection closed, once it has.
    pub(super) closed: Option<String>,
}

pub(crate) struct Shared {
    pub(super) tables: Mutex<Tables>,
    pub(super) next_id: AtomicI64,
    /// The writer's queue, held weakly (responses to the server's requests
    /// are written through it; it must not keep the connection open).
    pub(super) out: mpsc::WeakSender<Outbound>,
    /// Set once, when the connection closes, before `closed_wake` wakes
    /// every wait. A `Notify` rather than a `watch`: each sleeping task
    /// waits on it, and its future is a third the size.
    pub(super) is_closed: AtomicBool,
    /// Wakes the waits of [`Connection::closing`](super::Connection::closing).
    pub(super) closed_wake: Notify,
    /// Messages skipped as unreadable or unmatched.
    pub(super) discarded: AtomicU64,
    /// Times closing the transport had to end the server by force (see
    /// [`Closed::forced`](crate::transport::Closed::forced)).
    pub(super) killed: AtomicU64,
    /// Asks the writer to close the transport now (see
    /// [`Connection::close`](super::Connection::close)); the writer
    /// answers on the enclosed sender once the transport is closed.
    pub(super) closer: mpsc::Sender<oneshot::Sender<std::io::Result<()>>>,
    /// The protocol version the client settled on, for the writer to tell
    /// the transport before its next message (see
    /// [`Connection::negotiated`](super::Connection::negotiated)).
    pub(super) negotiated: tokio::sync::watch::Sender<Option<Arc<str>>>,
    /// The unreadable input before the first JSON-RPC message.
    pub(super) preamble: super::preamble::Preamble,
    /// The server's requests queued or being answered (their cancellation).
    pub(super) serving: Arc<Mutex<Serving>>,
    /// What became of the answers to the server's requests.
    pub(super) answers: Arc<Answers>,
    /// Unclaimed notifications dropped because the client layer was behind.
    pub(super) notifications_dropped: Dropped,
    /// No task is read before this moment: the latest end of a
    /// `Retry-After` the server sent (see [`Shared::hold_off`]).
    pub(super) not_before: Mutex<Option<Instant>>,
}

impl Shared {
    /// Holds every task read back until `until` (a server's `Retry-After`
    /// ran out); a later moment already held wins.
    pub(super) fn hold_off(&self, until: Instant) {
        let mut held = self.not_before.lock().unwrap();
        if held.is_none_or(|at| at < until) {
            *held = Some(until);
        }
    }

    /// The moment before which no task is read, while it is to come.
    pub(super) fn not_before(&self) -> Option<Instant> {
        let mut held = self.not_before.lock().unwrap();
        match *held {
            Some(at) if at > Instant::now() => Some(at),
            Some(_) => {
                *held = None;
                None
            }
            None => None,
        }
    }

    pub(super) fn close(&self, reason: String) {
        // First: an answer still on its way now counts as dropped.
        self.answers.close();
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
        t.notifications = None;
        drop(t);
        self.serving.lock().unwrap().clear();
        self.is_closed.store(true, Ordering::Release);
        self.closed_wake.notify_waiters();
    }

    /// Counts a message that was skipped: it may have been a lost reply.
    pub(super) fn discard(&self) {
        self.discarded.fetch_add(1, Ordering::Relaxed);
    }

    /// Forgets a request and tells the server (stdio: `notifications/cancelled`;
    /// HTTP transports drop the response stream instead).
    pub(super) fn abandon(&self, id: RequestId, is_subscription: bool) {
        {
            let mut t = self.tables.lock().unwrap();
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
        let Some(out) = self.out.upgrade() else {
            return;
        };
        if out.try_send(msg).is_err() {
            tracing::debug!("outgoing queue full; the cancellation notice was not sent");
        }
    }

    /// Routes one message from the server; a request the reader answers
    /// itself gives back that answer, to send (see [`Shared::serve`]).
    pub(super) fn dispatch(&self, msg: Message) -> Option<Immediate> {
        match msg {
            Message::Response { id, result } => self.complete(&id, Reply::Result(result)),
            Message::Error {
                id: Some(id),
                error,
            } => self.complete(&id, Reply::Error(error)),
            Message::Request { id, method, params } => return self.serve(id, method, params),
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
        }
        None
    }

    /// Hands a request from the server to whoever answers them. What the
    /// reader answers itself comes back, to be sent once the tables are
    /// let go: a `ping`'s result, `-32601` when nothing answers requests
    /// (before anyone takes them, or on a session that answers none), and
    /// `-32603` when too many wait. A request repeating the id of one
    /// answered lately, or being answered, is ignored and counted.
    fn serve(
        &self,
        id: RequestId,
        method: String,
        params: Option<Box<RawValue>>,
    ) -> Option<Immediate> {
        let mut t = self.tables.lock().unwrap();
        if !self.serving.lock().unwrap().admit(&id) {
            self.answers.repeat(&id, &method);
            return None;
        }
        let plain = |id| Responder::new(self.out.clone(), id, None, self.answers.clone());
        if method == method::PING {
            // Answered at once, in every era and from the first message,
            // never queued behind a handler that waits on a person.
            return Some(Immediate {
                responder: plain(id),
                answer: Ok(serde_json::json!({})),
            });
        }
        let Some(tx) = &t.server_requests else {
            tracing::debug!(%method, "refusing a request from the server: nothing answers it");
            return Some(Immediate {
                responder: plain(id),
                answer: Err(not_answered(&method)),
            });
        };
        // Recorded before it is queued, so that a cancellation that comes
        // while it waits finds it; the responder forgets it once answered
        // (or refused, or dropped).
        let (serial, cancelled) = self.serving.lock().unwrap().insert(id.clone());
        let responder = Responder::new(
            self.out.clone(),
            id,
            Some((Arc::downgrade(&self.serving), serial)),
            self.answers.clone(),
        );
        let request = ServerRequest {
            method,
            params,
            responder,
            cancelled,
        };
        match tx.try_send(request) {
            Ok(()) => None,
            Err(mpsc::error::TrySendError::Full(r)) => {
                // A flood: refuse rather than queue without bound or leave
                // the server waiting.
                tracing::warn!(method = %r.method, "too many requests from the server waiting; refusing one");
                let error = RpcError::new(
                    crate::protocol::error_codes::INTERNAL_ERROR,
                    "the client is busy: too many requests waiting",
                );
                Some(Immediate {
                    responder: r.responder,
                    answer: Err(error),
                })
            }
            Err(mpsc::error::TrySendError::Closed(r)) => {
                t.server_requests = None;
                Some(Immediate {
                    answer: Err(not_answered(&r.method)),
                    responder: r.responder,
                })
            }
        }
    }

    /// Fails one request (or ends one subscription) whose reply is lost.
    pub(super) fn lose(&self, id: &RequestId, reason: String) {
        let mut t = self.tables.lock().unwrap();
        if let Some(tx) = t.pending.remove(id) {
            let _ = tx.send(Err(reason));
        } else {
            t.subscriptions.remove(id);
        }
    }

    pub(super) fn complete(&self, id: &RequestId, reply: Reply) {
        let mut t = self.tables.lock().unwrap();
        if let Some(tx) = t.pending.remove(id) {
            let _ = tx.send(Ok(reply));
        } else if let Some(entry) = t.subscriptions.remove(id) {
            // The server ended a listen stream with a final response: dropping
            // the sender ends the subscription; an error is kept for it.
            if let (Reply::Error(e), Some(refusal)) = (reply, entry.refusal) {
                let _ = refusal.set(e);
            }
        } else {
            self.discard();
            tracing::debug!(%id, "a response for no pending request (late or unknown id)");
        }
    }

    fn route(&self, method: String, params: Option<Box<RawValue>>) {
        let sub_id = params.as_deref().and_then(subscription_id_of);
        let mut t = self.tables.lock().unwrap();
        if method == method::NOTIFICATIONS_CANCELLED {
            let Some((id, reason)) = params.as_deref().and_then(cancelled_params) else {
                self.discard();
                tracing::debug!("skipping a notifications/cancelled without a readable requestId");
                return;
            };
            // The request ids of the two directions may coincide. The
            // specification has a cancellation name a request its sender
            // sent, so a request of the server's being answered goes first.
            let mut serving = self.serving.lock().unwrap();
            let cancelled_its_own = serving.cancel(&id, reason.clone());
            // A late cancellation of a request of the server's the client
            // has answered already is not about the client's request that
            // shares the id.
            let late = !cancelled_its_own && serving.answered_lately(&id);
            drop(serving);
            if cancelled_its_own {
                tracing::debug!(%id, "the server cancelled one of its requests");
            } else if late {
                tracing::debug!(%id, "a late cancellation of a request already answered");
            } else if let Some(tx) = t.pending.remove(&id) {
                // A request the client waits on ends at once.
                let _ = tx.send(Ok(Reply::Cancelled(reason)));
            } else if t.subscriptions.remove(&id).is_none() {
                // On stdio, a server ends a listen stream this way (above).
                tracing::debug!(%id, "a cancellation for no request in flight");
            }
            return;
        }
        if method == method::NOTIFICATIONS_PROGRESS
            && let Some(token) = params.as_deref().and_then(progress_token_of)
        {
            if let Some(entry) = t.progress.get(&token)
                && !entry.send(
                    SubEvent::Notification { method, params },
                    &self.notifications_dropped,
                )
            {
                t.progress.remove(&token);
            }
            return;
        }
        if let Some(entry) = sub_id.as_ref().and_then(|id| t.subscriptions.get(id)) {
            if entry.send(
                SubEvent::Notification { method, params },
                &self.notifications_dropped,
            ) {
                return;
            }
            if let Some(id) = sub_id {
                t.subscriptions.remove(&id);
            }
            return;
        }
        // Task pushes are correlated by task id, not by stream: some servers
        // send them on the request's own stream, without a subscription id.
        // A 2025-11-25 status notification goes the same way on a
        // 2026-07-28 session (the watcher reads the task at once); on an
        // initialize-era session nobody takes these pushes, and it goes on
        // to the notification dispatcher.
        let status = method == method::NOTIFICATIONS_TASKS_STATUS;
        if method == method::NOTIFICATIONS_TASKS || (status && t.task_pushes.is_some()) {
            if let Some(entry) = &t.task_pushes
                && !entry.send(
                    SubEvent::Notification { method, params },
                    &self.notifications_dropped,
                )
            {
                t.task_pushes = None;
            }
            return;
        }
        if method == method::NOTIFICATIONS_PROGRESS {
            tracing::debug!(%method, "a progress notification without a readable token");
            return;
        }
        hand_over(
            &mut t.notifications,
            &self.notifications_dropped,
            method,
            params,
        );
    }

    pub(crate) fn pending_len(&self) -> usize {
        self.tables.lock().unwrap().pending.len()
    }
}

/// The refusal of a request nothing in the client answers.
fn not_answered(method: &str) -> RpcError {
    RpcError::new(
        crate::protocol::error_codes::METHOD_NOT_FOUND,
        format!("this client does not answer {method}"),
    )
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

/// The longest reason of a server's cancellation kept for the error.
const MAX_REASON_CHARS: usize = 512;

/// `requestId` and `reason` of a `notifications/cancelled` (a reason that
/// is not a string reads as none).
fn cancelled_params(params: &RawValue) -> Option<(RequestId, Option<String>)> {
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct P {
        request_id: RequestId,
        #[serde(default)]
        reason: Option<serde_json::Value>,
    }
    let p = serde_json::from_str::<P>(params.get()).ok()?;
    let reason = match p.reason {
        Some(serde_json::Value::String(r)) if r.chars().count() > MAX_REASON_CHARS => Some(
            format!("{}…", r.chars().take(MAX_REASON_CHARS).collect::<String>()),
        ),
        Some(serde_json::Value::String(r)) if !r.is_empty() => Some(r),
        _ => None,
    };
    Some((p.request_id, reason))
}
