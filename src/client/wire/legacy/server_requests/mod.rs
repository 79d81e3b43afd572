//! Requests from the server, answered (`ping` is answered by the reader
//! itself, from the first message on, so it never waits behind a handler
//! or the handshake): elicitation,
//! sampling and roots by the same [`InputHandlers`] that answer input
//! rounds and task input, validated the same way; anything else with
//! `-32601`. A server never waits on silence, unless it cancels its
//! request (`notifications/cancelled`): then the handler is stopped (its
//! future dropped, or never started if the request still waited) and
//! nothing is sent, as the specification asks. At most one request is
//! served at a time, and at most a channel's worth (64) waits: past that
//! the reader refuses them with `-32603` (RELIABILITY.md), so a flood
//! cannot grow memory. Requests sent during the handshake wait in that
//! queue and are answered once the session is up (a 2026-07-28 session
//! refuses them all with `-32601`: its input comes in results).
//!
//! On a 2025-11-25 session that declared them, an elicitation or sampling
//! request carrying `params.task` becomes a task the client hosts
//! ([`Host`]): answered at once with its creation result, its handler run
//! in the background, and the server's `tasks/*` requests answered here
//! (without waiting on a handler). Elsewhere `params.task` is ignored.

pub(crate) mod hosted_tasks;

use std::sync::Arc;

use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::tasks::Registry;
use crate::client::connection::ServerRequest;
use crate::input::InputHandlers;
use crate::protocol::{InputRequest, RpcError, error_codes, related_task};
use hosted_tasks::Host;

/// Starts answering the server's `requests` (taken from the connection
/// before the handshake, so that those sent during it wait) with
/// `handlers`. The task ends when the connection closes.
///
/// A request tagged with a 2025-11-25 task the client follows
/// (`related-task`) goes to `tasks` instead: the task's handle answers it.
/// With `host`, task-augmented requests become hosted tasks and `tasks/*`
/// requests are answered for them.
pub(crate) fn serve(
    requests: mpsc::Receiver<ServerRequest>,
    handlers: InputHandlers,
    tasks: Option<Arc<Registry>>,
    host: Option<Arc<Host>>,
) {
    tokio::spawn(run(requests, handlers, tasks, host));
}

async fn run(
    mut requests: mpsc::Receiver<ServerRequest>,
    handlers: InputHandlers,
    tasks: Option<Arc<Registry>>,
    host: Option<Arc<Host>>,
) {
    while let Some(request) = requests.recv().await {
        answer(request, &handlers, tasks.as_deref(), host.as_ref()).await;
    }
    if let Some(host) = host {
        host.close();
    }
}

async fn answer(
    request: ServerRequest,
    handlers: &InputHandlers,
    tasks: Option<&Registry>,
    host: Option<&Arc<Host>>,
) {
    let ServerRequest {
        method,
        params,
        responder,
        cancelled,
    } = request;
    let mut params: Value = params
        .and_then(|p| serde_json::from_str(p.get()).ok())
        .unwrap_or_else(|| json!({}));
    if let Some(host) = host
        && hosted_tasks::is_task_method(&method)
    {
        if let Err(e) = host.serve(&method, &params, responder, cancelled).await {
            tracing::debug!(%method, "could not answer a request from the server: {e}");
        }
        return;
    }
    // The task opt-in is not part of the request the handler sees.
    let task = params
        .as_object_mut()
        .and_then(|p| p.remove("task"))
        .filter(|t| !t.is_null());
    let related = params.as_object().and_then(related_task);
    let parsed =
        serde_json::from_value::<InputRequest>(json!({"method": method, "params": params}));
    let hosting = host.is_some()
        && task.is_some()
        && parsed
            .as_ref()
            .is_ok_and(|input| hosted_tasks::may_host(input) && handlers.can_answer(input));
    // A question for a task a handle follows goes to that handle, with the
    // means to withdraw it if the server cancels it.
    let (responder, cancelled) = match (&parsed, related, tasks) {
        (Ok(input), Some(task_id), Some(tasks)) if !hosting => {
            match tasks.hold(&task_id, input.clone(), responder, cancelled) {
                None => return,
                Some(given_back) => {
                    tracing::debug!(task = ?task_id, %method, "a request for a task the client does not follow");
                    given_back
                }
            }
        }
        _ => (responder, cancelled),
    };
    let answering = async {
        if hosting && let (Some(host), Some(task), Ok(input)) = (host, task.as_ref(), &parsed) {
            let Value::Object(task) = task else {
                let error =
                    RpcError::new(error_codes::INVALID_PARAMS, "params.task must be an object");
                return responder.error(error).await;
            };
            let key = responder.id().to_string();
            return match host.accept(task, input.clone(), handlers.clone(), key) {
                Ok(created) => responder.result(&created).await,
                Err(error) => responder.error(error).await,
            };
        }
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
