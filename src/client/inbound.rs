//! Requests from the server, answered (`ping` is answered by the reader
//! itself, so it never waits behind a handler): elicitation,
//! sampling and roots by the same [`InputHandlers`] that answer input
//! rounds and task input, validated the same way; anything else with
//! `-32601`. A server never waits on silence, unless it cancels its
//! request (`notifications/cancelled`): then the handler is stopped (its
//! future dropped, or never started if the request still waited) and
//! nothing is sent, as the specification asks. At most one request is
//! served at a time, and at most a channel's worth (64) waits: past that
//! the reader refuses them at once with `-32603` (RELIABILITY.md), so a
//! flood cannot grow memory.

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::rpc::{Connection, ServerRequest};
use super::wire::Registry;
use crate::input::InputHandlers;
use crate::protocol::{InputRequest, RpcError, error_codes, related_task};

/// Starts answering the server's requests on `conn` with `handlers`. The
/// task ends when the connection closes.
///
/// A request tagged with a 2025-11-25 task the client follows
/// (`related-task`) goes to `tasks` instead: the task's handle answers it.
pub(crate) fn serve(conn: &Connection, handlers: InputHandlers, tasks: Option<Arc<Registry>>) {
    let requests = conn.server_requests();
    tokio::spawn(run(requests, handlers, tasks));
}

async fn run(
    mut requests: mpsc::Receiver<ServerRequest>,
    handlers: InputHandlers,
    tasks: Option<Arc<Registry>>,
) {
    while let Some(request) = requests.recv().await {
        answer(request, &handlers, tasks.as_deref()).await;
    }
}

async fn answer(request: ServerRequest, handlers: &InputHandlers, tasks: Option<&Registry>) {
    let ServerRequest {
        method,
        params,
        responder,
        cancelled,
    } = request;
    let answering = async {
        let params: Value = params
            .and_then(|p| serde_json::from_str(p.get()).ok())
            .unwrap_or_else(|| json!({}));
        let related = params.as_object().and_then(related_task);
        let parsed =
            serde_json::from_value::<InputRequest>(json!({"method": method, "params": params}));
        let (parsed, responder) = match (parsed, related, tasks) {
            (Ok(input), Some(task), Some(tasks)) => {
                match tasks.hold(&task, input.clone(), responder) {
                    // The task's handle answers it.
                    None => return Ok(()),
                    Some(responder) => {
                        tracing::debug!(task = ?task, %method, "a request for a task the client does not follow");
                        (Ok(input), responder)
                    }
                }
            }
            (parsed, _, _) => (parsed, responder),
        };
        match parsed {
            Ok(input) if handlers.can_answer(&input) => {
                let key = responder.id().to_string();
                match handlers.answer(&key, &input).await {
                    Ok(response) => responder.result(&response).await,
                    Err(e) => {
                        let error = RpcError::new(error_codes::INTERNAL_ERROR, e.to_string());
                        responder.error(error).await
                    }
                }
            }
            Ok(_) | Err(_) => {
                let error = RpcError::new(
                    error_codes::METHOD_NOT_FOUND,
                    format!("this client does not answer {method}"),
                );
                responder.error(error).await
            }
        }
    };
    let sent = tokio::select! {
        // A request cancelled while it waited in the queue is not started.
        biased;
        reason = cancelled.wait() => {
            tracing::debug!(
                %method,
                reason = reason.as_deref(),
                "the server cancelled its request; stopped answering it"
            );
            return;
        }
        sent = answering => sent,
    };
    if let Err(e) = sent {
        tracing::debug!(%method, "could not answer a request from the server: {e}");
    }
}
