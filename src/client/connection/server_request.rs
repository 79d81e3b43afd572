//! Requests from the server, the one-shot means to answer each, the
//! server's `notifications/cancelled` for one still being answered, and
//! the record of recent request ids that keeps a repeated one from being
//! answered twice.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet, VecDeque};
use std::hash::BuildHasher;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use crate::error::Error;
use crate::protocol::{RequestId, RpcError, error_codes};
use crate::transport::Outbound;

/// What the connection knows of its answers to the server's requests,
/// shared by the reader, the writer and every [`Responder`].
pub(super) struct Answers {
    /// Answers that could not be sent: the connection was gone, the
    /// writer's queue stayed full for [`ANSWER_WAIT`], or the reader's
    /// own answers passed [`QUICK_ANSWER_BYTES`].
    dropped: AtomicU64,
    /// Requests ignored because they repeated the id of one answered or
    /// being answered.
    repeated: AtomicU64,
    /// Set when the connection closes: nothing is sent after it.
    closed: AtomicBool,
    /// The answers the reader gives itself (a `ping`'s result, a
    /// refusal), for the writer, which takes them as it takes the
    /// outgoing queue. Never waited on: see [`Answers::queue`].
    quick: mpsc::UnboundedSender<Outbound>,
    /// What `quick` holds, in bytes (see [`quick_cost`]).
    quick_bytes: AtomicUsize,
}

/// The most the answers the reader gives itself may hold while they wait
/// for the writer: 8 MiB, about 50,000 `ping` results.
///
/// The reader never waits for the writer. A server that writes requests
/// without reading its stdin fills the pipe to it, and the writer waits
/// until it reads again; had the reader waited for room too, it would
/// stop reading the very pipe the server is stuck writing to, and
/// neither would move again. So the reader reads on, and its answers
/// wait here, up to this bound; past it, a server that still has not read
/// loses the answer (counted in [`Answers::dropped`]), rather than the
/// client's memory growing without end.
pub(super) const QUICK_ANSWER_BYTES: usize = 8 * 1024 * 1024;

/// What one queued answer costs against [`QUICK_ANSWER_BYTES`]: its JSON
/// and the message around it.
fn quick_cost(message: &Outbound) -> usize {
    message.json.len() + std::mem::size_of::<Outbound>()
}

/// The writer's end of the queue of the reader's own answers.
pub(super) struct QuickAnswers {
    rx: mpsc::UnboundedReceiver<Outbound>,
    answers: Arc<Answers>,
}

impl QuickAnswers {
    /// The next answer, once there is one (never `None` while the
    /// connection's [`Answers`] live).
    pub(super) async fn recv(&mut self) -> Option<Outbound> {
        let message = self.rx.recv().await?;
        self.answers
            .quick_bytes
            .fetch_sub(quick_cost(&message), Ordering::Relaxed);
        Some(message)
    }

    /// Closes the queue and counts what is left in it as dropped.
    pub(super) fn drop_all(&mut self, why: &str) {
        self.rx.close();
        while let Ok(message) = self.rx.try_recv() {
            if let Some(id) = &message.id {
                self.answers.drop_one(id, why);
            }
        }
    }
}

impl Answers {
    /// The record of a connection's answers, and the writer's end of the
    /// queue of the reader's own answers.
    pub(super) fn new() -> (Arc<Answers>, QuickAnswers) {
        let (quick, rx) = mpsc::unbounded_channel();
        let answers = Arc::new(Answers {
            dropped: AtomicU64::new(0),
            repeated: AtomicU64::new(0),
            closed: AtomicBool::new(false),
            quick,
            quick_bytes: AtomicUsize::new(0),
        });
        let writer = QuickAnswers {
            rx,
            answers: answers.clone(),
        };
        (answers, writer)
    }

    /// Queues one of the reader's own answers for the writer, without
    /// waiting; past [`QUICK_ANSWER_BYTES`] it is dropped and counted.
    fn queue(&self, id: &RequestId, message: Outbound) {
        let cost = quick_cost(&message);
        let held = self.quick_bytes.fetch_add(cost, Ordering::Relaxed);
        if held + cost > QUICK_ANSWER_BYTES {
            self.quick_bytes.fetch_sub(cost, Ordering::Relaxed);
            self.drop_one(
                id,
                "the server sent more requests than the client can hold answers for \
                 without reading them",
            );
        } else if self.quick.send(message).is_err() {
            self.quick_bytes.fetch_sub(cost, Ordering::Relaxed);
            self.drop_one(id, "the connection is closed");
        }
    }

    /// How many answers could not be sent.
    pub(super) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// How many requests were ignored as repeats.
    pub(super) fn repeated(&self) -> u64 {
        self.repeated.load(Ordering::Relaxed)
    }

    /// Counts a request ignored as a repeat.
    pub(super) fn repeat(&self, id: &RequestId, method: &str) {
        self.repeated.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(%id, %method, "ignoring a request that repeats the id of one already answered");
    }

    /// Marks the connection closed: every answer from now on is dropped.
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
    }

    fn is_closed(&self) -> bool {
        self.closed.load(Ordering::Acquire)
    }

    /// Counts the answer to the server's request `id` as not sent, and
    /// says why.
    pub(super) fn drop_one(&self, id: &RequestId, why: &str) {
        self.dropped.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(%id, "the answer to a request from the server was not sent: {why}");
    }
}

/// A request from the server, and the means to answer it once.
pub(crate) struct ServerRequest {
    pub(crate) method: String,
    pub(crate) params: Option<Box<RawValue>>,
    pub(crate) responder: Responder,
    /// Resolves when the server cancels this request.
    pub(crate) cancelled: Cancelled,
}

/// How many ids of the server's requests are remembered, newest first: a
/// request that repeats one of them (a server replaying its stream after a
/// reconnection, say) is ignored, not answered twice. A request still
/// being answered is known by its id however many came since.
pub(super) const RECENT_REQUESTS: usize = 1024;

/// The longest the connection waits for room in its outgoing queue to
/// answer a request of the server's; past it the answer is dropped and
/// counted (the transport is stuck).
pub(super) const ANSWER_WAIT: Duration = Duration::from_secs(10);

/// The server's requests that are queued or being answered, by id: where
/// a `notifications/cancelled` from the server for one of them goes; and
/// the ids of the latest ones, to tell a repeated request. Its own lock,
/// never taken while a [`Responder`] is dropped under it.
#[derive(Default)]
pub(super) struct Serving {
    next: u64,
    entries: HashMap<RequestId, (u64, oneshot::Sender<Option<String>>)>,
    /// The ids of the last [`RECENT_REQUESTS`] requests, oldest first, as
    /// keyed 64-bit hashes: a few kilobytes whatever the server's ids hold.
    recent: VecDeque<u64>,
    /// The same hashes, to look up.
    recent_ids: HashSet<u64>,
    /// The hasher's random keys (a server cannot aim at a collision).
    keys: RandomState,
}

impl Serving {
    /// Takes note of a request's id; `false` when a request under it is
    /// being answered or came lately: this one is a repeat.
    pub(super) fn admit(&mut self, id: &RequestId) -> bool {
        let key = self.keys.hash_one(id);
        if self.entries.contains_key(id) || self.recent_ids.contains(&key) {
            return false;
        }
        if self.recent.len() == RECENT_REQUESTS
            && let Some(oldest) = self.recent.pop_front()
        {
            self.recent_ids.remove(&oldest);
        }
        self.recent.push_back(key);
        self.recent_ids.insert(key);
        true
    }

    /// Records a request being answered; the returned number tells its
    /// entry from a later request that reuses the id.
    pub(super) fn insert(&mut self, id: RequestId) -> (u64, Cancelled) {
        let (tx, rx) = oneshot::channel();
        self.next += 1;
        self.entries.insert(id, (self.next, tx));
        (self.next, Cancelled(rx))
    }

    /// Cancels the request under `id`, if one is being answered; `false`
    /// when none is.
    pub(super) fn cancel(&mut self, id: &RequestId, reason: Option<String>) -> bool {
        match self.entries.remove(id) {
            Some((_, tx)) => {
                let _ = tx.send(reason);
                true
            }
            None => false,
        }
    }

    /// Forgets an answered (or dropped) request; `false` when it was no
    /// longer recorded: the server cancelled it.
    fn forget(&mut self, id: &RequestId, serial: u64) -> bool {
        if self.entries.get(id).is_some_and(|(n, _)| *n == serial) {
            self.entries.remove(id);
            true
        } else {
            false
        }
    }

    /// Whether a request of the server's under `id` came lately and is no
    /// longer being answered: a cancellation naming it comes too late.
    pub(super) fn answered_lately(&self, id: &RequestId) -> bool {
        !self.entries.contains_key(id) && self.recent_ids.contains(&self.keys.hash_one(id))
    }

    pub(super) fn clear(&mut self) {
        self.entries.clear();
    }

    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.entries.len()
    }
}

/// Resolves with the server's reason once it cancels the request; never
/// otherwise (a connection that closes leaves it pending: the answer then
/// goes nowhere anyway).
pub(crate) struct Cancelled(oneshot::Receiver<Option<String>>);

impl Cancelled {
    /// Whether the server has cancelled the request by now (checked once:
    /// the caller drops the request when it has).
    pub(crate) fn has_fired(&mut self) -> bool {
        self.0.try_recv().is_ok()
    }

    /// Waits for the server to cancel the request.
    pub(crate) async fn wait(self) -> Option<String> {
        match self.0.await {
            Ok(reason) => reason,
            Err(_) => std::future::pending().await,
        }
    }
}

/// Answers one request from the server, once.
///
/// Dropping it unanswered still answers: with `-32603`, unless the server
/// cancelled the request (then nothing is sent, as the specification
/// asks). An answer that cannot be sent (the connection is gone, or its
/// queue stays full for [`ANSWER_WAIT`]) is counted in
/// [`Answers::dropped`].
pub(crate) struct Responder {
    out: mpsc::WeakSender<Outbound>,
    id: RequestId,
    /// The entry in the table of requests being answered, removed when
    /// this is answered or dropped.
    serving: Option<(Weak<Mutex<Serving>>, u64)>,
    answers: Arc<Answers>,
    /// Whether an answer was sent (or counted as dropped).
    settled: bool,
}

impl Drop for Responder {
    fn drop(&mut self) {
        let cancelled = match self.serving.take() {
            Some((serving, serial)) => serving
                .upgrade()
                .is_none_or(|serving| !serving.lock().unwrap().forget(&self.id, serial)),
            None => false,
        };
        if self.settled {
            return;
        }
        if self.answers.is_closed() {
            self.answers
                .drop_one(&self.id, "the connection closed first");
        } else if !cancelled {
            tracing::debug!(id = %self.id, "a request from the server was dropped unanswered; refusing it");
            let error = RpcError::new(
                error_codes::INTERNAL_ERROR,
                "the client dropped this request without answering it",
            );
            self.send_soon(error_json(&self.id, &error));
        }
    }
}

impl Responder {
    /// The means to answer request `id` through `out`; `serving` is its
    /// entry among the requests being answered, if it has one.
    pub(super) fn new(
        out: mpsc::WeakSender<Outbound>,
        id: RequestId,
        serving: Option<(Weak<Mutex<Serving>>, u64)>,
        answers: Arc<Answers>,
    ) -> Responder {
        Responder {
            out,
            id,
            serving,
            answers,
            settled: false,
        }
    }

    /// The id of the request this answers.
    pub(crate) fn id(&self) -> &RequestId {
        &self.id
    }

    /// Answers with a result, waiting (up to [`ANSWER_WAIT`]) for room in
    /// the outgoing queue.
    pub(crate) async fn result<R: Serialize>(mut self, result: &R) -> Result<(), Error> {
        let json = match serde_json::to_string(&serde_json::json!({
            "jsonrpc": "2.0", "id": self.id, "result": result
        })) {
            Ok(json) => json,
            Err(e) => {
                // Dropping `self` refuses the request instead.
                return Err(Error::builder(format!(
                    "the response does not serialize: {e}"
                )));
            }
        };
        self.send(json).await
    }

    /// Answers with an error, as [`Responder::result`].
    pub(crate) async fn error(mut self, error: RpcError) -> Result<(), Error> {
        let json = error_json(&self.id, &error);
        self.send(json).await
    }

    /// Answers with an error without waiting: queued at once when there is
    /// room, else sent by a task of its own once there is (within
    /// [`ANSWER_WAIT`]).
    pub(crate) fn try_error(mut self, error: RpcError) {
        let json = error_json(&self.id, &error);
        self.send_soon(json);
    }

    async fn send(&mut self, json: String) -> Result<(), Error> {
        self.settled = true;
        let Some(out) = self.out.upgrade().filter(|_| !self.answers.is_closed()) else {
            self.answers.drop_one(&self.id, "the connection is closed");
            return Err(Error::transport("the connection is closed"));
        };
        deliver(
            &out,
            Outbound::response(json, self.id.clone()),
            &self.answers,
        )
        .await
    }

    fn send_soon(&mut self, json: String) {
        self.settled = true;
        let Some(out) = self.out.upgrade().filter(|_| !self.answers.is_closed()) else {
            self.answers.drop_one(&self.id, "the connection is closed");
            return;
        };
        match out.try_send(Outbound::response(json, self.id.clone())) {
            Ok(()) => {}
            Err(mpsc::error::TrySendError::Full(message)) => {
                let answers = self.answers.clone();
                match tokio::runtime::Handle::try_current() {
                    Ok(runtime) => {
                        runtime.spawn(async move {
                            let _ = deliver(&out, message, &answers).await;
                        });
                    }
                    Err(_) => answers.drop_one(&self.id, "the outgoing queue is full"),
                }
            }
            Err(mpsc::error::TrySendError::Closed(_)) => {
                self.answers.drop_one(&self.id, "the connection is closed");
            }
        }
    }
}

/// Queues an answer for the writer, waiting up to [`ANSWER_WAIT`] for room;
/// an answer that does not get in is counted as dropped.
async fn deliver(
    out: &mpsc::Sender<Outbound>,
    message: Outbound,
    answers: &Answers,
) -> Result<(), Error> {
    let id = message.id.clone();
    let why = match tokio::time::timeout(ANSWER_WAIT, out.send(message)).await {
        Ok(Ok(())) => return Ok(()),
        Ok(Err(_)) => "the connection is closed",
        Err(_) => "the outgoing queue stayed full",
    };
    if let Some(id) = &id {
        answers.drop_one(id, why);
    }
    Err(Error::transport(why))
}

fn error_json(id: &RequestId, error: &RpcError) -> String {
    serde_json::json!({"jsonrpc": "2.0", "id": id, "error": error}).to_string()
}

/// An answer the reader gives at once (a `ping`'s, or a refusal), sent
/// after it lets go of the tables.
pub(super) struct Immediate {
    pub(super) responder: Responder,
    pub(super) answer: Result<serde_json::Value, RpcError>,
}

impl Immediate {
    /// Queues the answer for the writer without waiting (see
    /// [`QUICK_ANSWER_BYTES`] for why the reader never waits).
    pub(super) fn send(self) {
        let mut responder = self.responder;
        let json = match self.answer {
            Ok(result) => {
                serde_json::json!({"jsonrpc": "2.0", "id": responder.id, "result": result})
                    .to_string()
            }
            Err(error) => error_json(&responder.id, &error),
        };
        responder.settled = true;
        if responder.answers.is_closed() {
            responder
                .answers
                .drop_one(&responder.id, "the connection is closed");
            return;
        }
        let message = Outbound::response(json, responder.id.clone());
        responder.answers.queue(&responder.id, message);
    }
}
