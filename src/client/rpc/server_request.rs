//! Requests from the server, the one-shot means to answer each, and the
//! server's `notifications/cancelled` for one still being answered.

use std::collections::HashMap;
use std::sync::{Mutex, Weak};

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::{mpsc, oneshot};

use crate::error::Error;
use crate::protocol::{RequestId, RpcError};
use crate::transport::Outbound;

/// A request from the server, and the means to answer it once.
pub(crate) struct ServerRequest {
    pub(crate) method: String,
    pub(crate) params: Option<Box<RawValue>>,
    pub(crate) responder: Responder,
    /// Resolves when the server cancels this request.
    pub(crate) cancelled: Cancelled,
}

/// The server's requests that are queued or being answered, by id: where
/// a `notifications/cancelled` from the server for one of them goes. Its
/// own lock, never taken while a [`Responder`] is dropped under the
/// tables' lock.
#[derive(Default)]
pub(super) struct Serving {
    next: u64,
    entries: HashMap<RequestId, (u64, oneshot::Sender<Option<String>>)>,
    /// The ids of the last requests answered, newest last: a late
    /// cancellation of one of them names the server's request, not one of
    /// the client's that happens to share its id.
    answered: std::collections::VecDeque<RequestId>,
}

/// How many answered request ids are remembered.
const ANSWERED_MEMORY: usize = 64;

impl Serving {
    /// Records a request; the returned number tells its entry from a later
    /// request that reuses the id.
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

    fn forget(&mut self, id: &RequestId, serial: u64) {
        if self.entries.get(id).is_some_and(|(n, _)| *n == serial) {
            self.entries.remove(id);
            if self.answered.len() == ANSWERED_MEMORY {
                self.answered.pop_front();
            }
            self.answered.push_back(id.clone());
        }
    }

    /// Whether a request of the server's under `id` was answered lately.
    pub(super) fn answered_lately(&self, id: &RequestId) -> bool {
        self.answered.contains(id)
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

/// Answers one request from the server. Dropping it answers nothing (the
/// server's own timeout applies).
pub(crate) struct Responder {
    pub(super) out: mpsc::WeakSender<Outbound>,
    pub(super) id: RequestId,
    /// The entry in the table of requests being answered, removed when
    /// this is answered or dropped.
    pub(super) serving: Option<(Weak<Mutex<Serving>>, u64)>,
}

impl Drop for Responder {
    fn drop(&mut self) {
        if let Some((serving, serial)) = self.serving.take()
            && let Some(serving) = serving.upgrade()
        {
            serving.lock().unwrap().forget(&self.id, serial);
        }
    }
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
    pub(crate) fn try_error(self, error: RpcError) {
        let json = serde_json::json!({"jsonrpc": "2.0", "id": self.id, "error": error}).to_string();
        self.try_send(json);
    }

    /// Answers with a result without waiting (best effort, as `try_error`).
    pub(super) fn try_result(self, result: serde_json::Value) {
        let json =
            serde_json::json!({"jsonrpc": "2.0", "id": self.id, "result": result}).to_string();
        self.try_send(json);
    }

    fn try_send(self, json: String) {
        if let Some(out) = self.out.upgrade() {
            let _ = out.try_send(Outbound::response(json, self.id.clone()));
        }
    }

    async fn send(self, json: String) -> Result<(), Error> {
        let out = self
            .out
            .upgrade()
            .ok_or_else(|| Error::transport("the connection is closed"))?;
        out.send(Outbound::response(json, self.id.clone()))
            .await
            .map_err(|_| Error::transport("the connection is closed"))
    }
}
