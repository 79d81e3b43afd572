//! The initialize era's session over Streamable HTTP (2025-03-26 to
//! 2025-11-25): the server's own `GET` stream, the resumption of a broken
//! stream with `Last-Event-ID`, the renewal of a session the server lost,
//! and its end with `DELETE`. None of it happens on 2026-07-28.

use std::io;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue};
use serde::Deserialize;
use serde::de::IgnoredAny;
use tokio::sync::mpsc;

use super::body::read_limited;
use super::headers::PROTOCOL_VERSION_HEADER;
use super::post::{self, is_sse, split_batch};
use super::send::{SendError, Sent, with_token};
use super::sse::{Events, Resume};
use super::{SESSION_HEADER, Shared};
use crate::error::describe_reqwest as describe;
use crate::protocol::RequestId;
use crate::protocol::method;
use crate::transport::{Inbound, Outbound};

/// The first wait before reconnecting, doubled after each attempt in a
/// row that delivered no message.
const BASE_DELAY: Duration = Duration::from_secs(1);
/// The longest `retry` a server may ask for; a longer one is cut to this.
const MAX_SERVER_RETRY: Duration = Duration::from_secs(300);
/// The longest wait the client's own backoff reaches.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// Attempts in a row that deliver no message before a stream is given up.
pub(super) const MAX_FAILURES: u32 = 5;
/// Bound on opening a `GET` (up to its status line and headers).
const OPEN_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound on renewing a lost session (the `initialize` exchange).
const RENEW_TIMEOUT: Duration = Duration::from_secs(30);
/// Bound on the `DELETE` that ends a session, unless [`super::Http::close_timeout`] says otherwise.
pub(super) const DELETE_TIMEOUT: Duration = Duration::from_secs(2);
/// `Last-Event-ID`: where a resumed SSE stream starts from.
const LAST_EVENT_ID: &str = "last-event-id";

/// How long to wait before reconnecting after `failures` attempts in a
/// row that delivered no message: the client's own backoff (1 s, doubled
/// per failure, up to 30 s), or the server's `retry` when that is longer
/// (up to 5 min). A `retry` is a lower bound only: `retry: 0` never makes
/// the client reconnect sooner than its backoff.
pub(super) fn retry_delay(retry: Option<Duration>, failures: u32) -> Duration {
    let backoff = BASE_DELAY
        .saturating_mul(1 << failures.min(8))
        .min(MAX_BACKOFF);
    let asked = retry.unwrap_or_default().min(MAX_SERVER_RETRY);
    backoff.max(asked)
}

/// Why a `GET` gave no stream.
pub(super) enum Refusal {
    /// The server answered, with no stream: it offers none (`405`, say).
    Status(StatusCode),
    /// The `GET` failed (no connection, no answer in time).
    Failed(String),
}

/// Opens a `GET` on the endpoint for the server's SSE stream, with the
/// session id, the negotiated version and, when resuming, `Last-Event-ID`.
pub(super) async fn open_get(
    shared: &Shared,
    last_id: Option<&str>,
) -> Result<reqwest::Response, Refusal> {
    let mut headers = session_headers(shared);
    headers.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
    if let Some(id) = last_id.and_then(|id| HeaderValue::from_str(id).ok()) {
        headers.insert(LAST_EVENT_ID, id);
    }
    let send = shared.send(|token| {
        shared
            .client
            .get(shared.url.clone())
            .headers(with_token(headers.clone(), token))
    });
    let response = match tokio::time::timeout(OPEN_TIMEOUT, send).await {
        Ok(Ok(Sent {
            response,
            refusal: None,
        })) => response,
        Ok(Ok(Sent {
            response,
            refusal: Some(why),
        })) => {
            tracing::debug!("the GET stream was refused: {why}");
            return Err(Refusal::Status(response.status()));
        }
        Ok(Err(SendError::Http(e))) => return Err(Refusal::Failed(describe(e))),
        Ok(Err(SendError::Auth(why))) => return Err(Refusal::Failed(why)),
        Err(_) => {
            return Err(Refusal::Failed(format!(
                "no answer within {}",
                crate::human::duration(OPEN_TIMEOUT)
            )));
        }
    };
    let status = response.status();
    if !status.is_success() || !is_sse(response.headers()) {
        return Err(Refusal::Status(status));
    }
    Ok(response)
}

/// The user's headers, the session id and `MCP-Protocol-Version`: what
/// every request of the session carries besides its own.
fn session_headers(shared: &Shared) -> HeaderMap {
    let mut headers = shared.base_headers.clone();
    if let Ok(version) = HeaderValue::from_str(&shared.version()) {
        headers.insert(PROTOCOL_VERSION_HEADER, version);
    }
    if let Some(session) = shared.session.lock().unwrap().clone() {
        headers.insert(SESSION_HEADER, session);
    }
    headers
}

/// Runs the server's own stream until the transport closes: opens it,
/// hands its messages to the client, and opens it again (with
/// `Last-Event-ID`, after [`retry_delay`]) when it ends or breaks. Stops
/// quietly when the server offers no stream, and after [`MAX_FAILURES`]
/// attempts in a row that delivered no message: a stream of priming
/// events, comments or empty events alone counts as a failure, as does
/// one that could not be opened.
pub(super) async fn listen(shared: Arc<Shared>, tx: mpsc::Sender<Inbound>) {
    let mut resume = Resume::default();
    let mut failures: u32 = 0;
    loop {
        match open_get(&shared, resume.last_id()).await {
            Err(Refusal::Status(status)) => {
                tracing::debug!(%status, "the server offers no GET stream");
                return;
            }
            Err(Refusal::Failed(reason)) => {
                tracing::debug!("the GET stream could not be opened: {reason}");
                failures += 1;
            }
            Ok(response) => {
                let mut events = Events::of(response, shared.max_message_size)
                    .resuming(std::mem::take(&mut resume));
                while let Some(event) = events.next().await {
                    match event {
                        Ok(text) => {
                            if !deliver(&shared, &tx, &text).await {
                                return; // the client is gone
                            }
                        }
                        Err(reason) => {
                            tracing::debug!("the GET stream broke: {reason}");
                            break;
                        }
                    }
                }
                resume = events.take_resume();
                // A stream that delivered no message (a priming event
                // alone, or only a replay of what it sent before) backs
                // off like a failure.
                if events.messages() > 0 {
                    failures = 0;
                } else {
                    failures += 1;
                }
            }
        }
        if failures >= MAX_FAILURES {
            tracing::debug!("giving up the GET stream after {failures} attempts in a row");
            return;
        }
        tokio::time::sleep(retry_delay(resume.retry(), failures.saturating_sub(1))).await;
    }
}

/// Enough of a message to tell a response from the rest.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<IgnoredAny>,
}

/// Hands the messages of one event of the `GET` stream to the client;
/// `false` when the client is gone. A response to a request whose own
/// reply is still being read ends that reading: the response is here.
async fn deliver(shared: &Shared, tx: &mpsc::Sender<Inbound>, text: &str) -> bool {
    for item in split_batch(text) {
        let Ok(peek) = serde_json::from_str::<Peek>(&item) else {
            let _ = tx
                .send(Inbound::Invalid(
                    "an event of the GET stream that is not a JSON-RPC message".to_owned(),
                ))
                .await;
            continue;
        };
        if tx.send(Inbound::Message(item)).await.is_err() {
            return false;
        }
        if let (None, Some(id)) = (peek.method, peek.id) {
            shared.cancel(&id);
        }
    }
    true
}

/// Whether a `404` reply means the session is gone: any `404`, except a
/// JSON-RPC "method not found" (`-32601`), which answers the request.
pub(super) fn session_gone(status: StatusCode, response: Option<&str>) -> bool {
    #[derive(Deserialize)]
    struct Reply {
        error: Option<Code>,
    }
    #[derive(Deserialize)]
    struct Code {
        code: i64,
    }
    if status != StatusCode::NOT_FOUND {
        return false;
    }
    let code = response
        .and_then(|r| serde_json::from_str::<Reply>(r).ok())
        .and_then(|r| r.error)
        .map(|e| e.code);
    code != Some(-32601)
}

/// Renews the session `lost` (the server answered `404` to a request that
/// carried it): sends the client's `initialize` again under a fresh id,
/// reads its reply here (the client never sees it), keeps the new session
/// id (and the version the client negotiated), sends `notifications/initialized` and reopens the `GET`
/// stream. When several requests lost the same session, the first renews
/// it and the others find it renewed.
pub(super) async fn renew(
    shared: &Arc<Shared>,
    lost: &HeaderValue,
    tx: &mpsc::Sender<Inbound>,
) -> Result<(), String> {
    let _renewing = shared.renewal.lock().await;
    if shared.closed.load(Ordering::SeqCst) {
        return Err("the transport is closed".to_owned());
    }
    match shared.session.lock().unwrap().as_ref() {
        Some(current) if current == lost => {}
        Some(_) => return Ok(()), // renewed by another request meanwhile
        None => return Err("an earlier attempt to renew it failed".to_owned()),
    }
    tracing::debug!("the server lost the session; starting a new one");
    shared.stop_listening();
    // Requests sent meanwhile still carry the lost session: their `404`
    // brings them here, after this renewal, to find the new one.
    let request = shared.initialize.lock().unwrap().clone();
    let renewed = match request {
        None => Err("no initialize request to send again".to_owned()),
        Some(request) => {
            match tokio::time::timeout(RENEW_TIMEOUT, initialize(shared, &request, tx)).await {
                Ok(result) => result,
                Err(_) => Err(format!(
                    "no initialize reply within {}",
                    crate::human::duration(RENEW_TIMEOUT)
                )),
            }
        }
    };
    let session = match renewed {
        Ok(session) => session,
        // The lost id stays: the next request that carries it gets `404`
        // again and tries again (a server restarting answers later), rather
        // than going out without a session for good.
        Err(why) => return Err(why),
    };
    *shared.session.lock().unwrap() = session;
    let json = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_owned();
    let notification = Outbound::new(json, method::NOTIFICATIONS_INITIALIZED);
    let headers = shared.headers_for(&notification)?;
    post::notify(
        shared.clone(),
        notification.method,
        headers,
        notification.json,
    )
    .await;
    shared.start_listening(tx.clone());
    Ok(())
}

/// Sends `request` (the client's `initialize`) again under a fresh id,
/// checks that its reply is a result and returns the new session id.
async fn initialize(
    shared: &Arc<Shared>,
    request: &str,
    tx: &mpsc::Sender<Inbound>,
) -> Result<Option<HeaderValue>, String> {
    let id = shared.internal_id();
    let mut value: serde_json::Value =
        serde_json::from_str(request).map_err(|e| format!("the initialize request: {e}"))?;
    let Some(object) = value.as_object_mut() else {
        return Err("the initialize request is not an object".to_owned());
    };
    object.insert(
        "id".to_owned(),
        serde_json::to_value(&id).map_err(|e| e.to_string())?,
    );
    let outbound = Outbound::request(value.to_string(), method::INITIALIZE, id.clone());
    let mut headers = shared.headers_for(&outbound)?;
    headers.remove(SESSION_HEADER); // a new session, not the lost one
    let body = bytes::Bytes::from(outbound.json);
    let Sent { response, refusal } = shared.post(headers, body).await.map_err(|e| match e {
        SendError::Http(e) => format!("initialize: {}", describe(e)),
        SendError::Auth(why) => format!("initialize: {why}"),
    })?;
    if let Some(why) = refusal {
        return Err(format!("initialize: {why}"));
    }
    let status = response.status();
    let session = response.headers().get(SESSION_HEADER).cloned();
    let reply = if is_sse(response.headers()) {
        let mut events = Events::of(response, shared.max_message_size);
        let mut found = None;
        while let Some(event) = events.next().await {
            let text = event?;
            for item in split_batch(&text) {
                match serde_json::from_str::<Peek>(&item) {
                    Ok(Peek {
                        id: Some(got),
                        method: None,
                    }) if got == id => found = Some(item),
                    // What the server sends beside the reply is the client's.
                    Ok(Peek {
                        method: Some(_), ..
                    }) => {
                        let _ = tx.send(Inbound::Message(item)).await;
                    }
                    _ => {}
                }
            }
            if found.is_some() {
                break;
            }
        }
        found
    } else {
        let body = read_limited(response, shared.max_message_size)
            .await
            .map_err(|e| format!("initialize: {e}"))?;
        let text = String::from_utf8_lossy(&body).into_owned();
        split_batch(&text).into_iter().find(|item| {
            matches!(
                serde_json::from_str::<Peek>(item),
                Ok(Peek { id: Some(got), method: None }) if got == id
            )
        })
    };
    let Some(reply) = reply else {
        return Err(format!("initialize: HTTP {status} with no reply"));
    };
    #[derive(Deserialize)]
    struct Reply {
        result: Option<IgnoredAny>,
        error: Option<crate::protocol::RpcError>,
    }
    match serde_json::from_str::<Reply>(&reply) {
        Ok(Reply {
            result: Some(_), ..
        }) if status.is_success() => Ok(session),
        Ok(Reply {
            error: Some(error), ..
        }) => Err(format!(
            "initialize: HTTP {status}, error {}: {}",
            error.code,
            crate::human::quote(&error.message, 200)
        )),
        _ => Err(format!("initialize: HTTP {status} with no result")),
    }
}

/// Ends the session, if one is held: a `DELETE` with its id, bounded by
/// [`Shared::close_timeout`]. Any answer is an end (a `405` says the
/// server ends sessions itself, a `404` that it already did); no answer
/// in time, or none at all, is an error.
pub(super) async fn end(shared: &Shared) -> io::Result<()> {
    let headers = session_headers(shared);
    let Some(_) = shared.session.lock().unwrap().take() else {
        return Ok(());
    };
    let delete = shared.send(|token| {
        shared
            .client
            .delete(shared.url.clone())
            .headers(with_token(headers.clone(), token))
    });
    let limit = shared.close_timeout;
    match tokio::time::timeout(limit, delete).await {
        Ok(Ok(sent)) => {
            tracing::debug!(status = %sent.response.status(), "ended the session");
            Ok(())
        }
        Ok(Err(SendError::Http(e))) => Err(io::Error::other(format!(
            "the session's DELETE failed: {}",
            describe(e)
        ))),
        Ok(Err(SendError::Auth(why))) => Err(io::Error::other(format!(
            "the session's DELETE was not sent: {why}"
        ))),
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("the session's DELETE was not answered within {limit:?}"),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_retry_delay_backs_off_and_takes_retry_as_a_lower_bound() {
        assert_eq!(retry_delay(None, 0), Duration::from_secs(1));
        assert_eq!(retry_delay(None, 2), Duration::from_secs(4));
        let half = Duration::from_millis(500);
        assert_eq!(retry_delay(Some(half), 0), BASE_DELAY, "never sooner");
        assert_eq!(retry_delay(Some(Duration::ZERO), 3), Duration::from_secs(8));
        assert_eq!(retry_delay(None, 30), MAX_BACKOFF);
        let long = Duration::from_secs(120);
        assert_eq!(
            retry_delay(Some(long), 3),
            long,
            "the server's own longer wait is kept"
        );
        assert_eq!(retry_delay(Some(Duration::MAX), 0), MAX_SERVER_RETRY);
    }

    proptest::proptest! {
        /// Whatever the server's `retry`, the wait never shrinks as the
        /// failures in a row grow, is never below the backoff nor the
        /// server's (bounded) `retry`, and stays within 5 min.
        #[test]
        fn the_retry_delay_is_monotonic_and_bounded(
            retry_ms in proptest::option::of(0u64..1_000_000),
            failures in 0u32..64,
        ) {
            let retry = retry_ms.map(Duration::from_millis);
            let now = retry_delay(retry, failures);
            let next = retry_delay(retry, failures + 1);
            proptest::prop_assert!(next >= now);
            proptest::prop_assert!(now >= BASE_DELAY);
            proptest::prop_assert!(now >= retry.unwrap_or_default().min(MAX_SERVER_RETRY));
            proptest::prop_assert!(now <= MAX_SERVER_RETRY);
        }
    }

    #[test]
    fn a_404_is_a_lost_session_unless_it_names_an_unknown_method() {
        let unknown = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32601,"message":"no"}}"#;
        let gone =
            r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32001,"message":"Session not found"}}"#;
        assert!(session_gone(StatusCode::NOT_FOUND, None));
        assert!(session_gone(StatusCode::NOT_FOUND, Some(gone)));
        assert!(!session_gone(StatusCode::NOT_FOUND, Some(unknown)));
        assert!(!session_gone(StatusCode::BAD_REQUEST, None));
    }
}
