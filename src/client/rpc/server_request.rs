//! Requests from the server, and the one-shot means to answer each.

use serde::Serialize;
use serde_json::value::RawValue;
use tokio::sync::mpsc;

use crate::error::Error;
use crate::protocol::{RequestId, RpcError};
use crate::transport::Outbound;

/// A request from the server, and the means to answer it once.
pub(crate) struct ServerRequest {
    pub(crate) method: String,
    pub(crate) params: Option<Box<RawValue>>,
    pub(crate) responder: Responder,
}

/// Answers one request from the server. Dropping it answers nothing (the
/// server's own timeout applies).
pub(crate) struct Responder {
    pub(super) out: mpsc::WeakSender<Outbound>,
    pub(super) id: RequestId,
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
