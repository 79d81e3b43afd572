//! What the exchange and the session both need: a POST whose answer
//! carries nothing (a notification, a response to the server), and the
//! reading of replies (is it SSE, is it a batch, what did reqwest say).

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{CONTENT_TYPE, HeaderMap};

use super::Shared;
use super::send::{SendError, Sent};
use crate::error::describe_reqwest as describe;
pub(super) use crate::transport::batch::batch_items;

/// The messages of one JSON text: the elements of a batch (a non-empty
/// array, which 2025-03-26 allowed), else the text itself.
pub(super) fn split_batch(text: &str) -> Vec<String> {
    batch_items(text).unwrap_or_else(|| vec![text.to_owned()])
}

/// Whether a reply is an SSE stream.
pub(super) fn is_sse(headers: &HeaderMap) -> bool {
    headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("text/event-stream"))
}

/// Sends a notification: a POST whose answer (`202 Accepted`) carries nothing.
pub(super) async fn notify(shared: Arc<Shared>, method: String, headers: HeaderMap, body: String) {
    let body = bytes::Bytes::from(body);
    let send = shared.post(headers, body);
    match tokio::time::timeout(Duration::from_secs(30), send).await {
        Ok(Ok(Sent { response, refusal })) if response.status().is_success() => {
            debug_assert!(refusal.is_none());
        }
        Ok(Ok(Sent { response, refusal })) => {
            let status = response.status();
            match refusal {
                Some(why) => tracing::debug!(%method, %status, "a notification was refused: {why}"),
                None => tracing::debug!(%method, %status, "the server refused a notification"),
            }
        }
        Ok(Err(SendError::Http(e))) => {
            tracing::debug!(%method, "a notification was not delivered: {}", describe(e))
        }
        Ok(Err(SendError::Auth(why))) => {
            tracing::debug!(%method, "a notification was not sent: {why}")
        }
        Err(_) => tracing::debug!(%method, "a notification was not answered in time"),
    }
}
