//! One request's exchange: the POST, then its reply read as JSON or SSE and
//! handed to the client message by message.

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::sync::mpsc;

use super::Shared;
use super::sse::Events;
use crate::protocol::RequestId;
use crate::transport::Inbound;

/// How long the rest of an SSE body is read after the final response, so
/// the connection can go back to the pool.
const DRAIN: Duration = Duration::from_secs(1);
/// Most of an unexpected body quoted in an error.
const QUOTE: usize = 200;

/// Why an exchange produced no response.
enum Failure {
    /// The POST never reached the server.
    NotSent(String),
    /// The POST was sent; its reply is lost.
    Lost(String),
}

/// The reply of one request, in flight.
pub(super) struct Exchange {
    shared: Arc<Shared>,
    id: RequestId,
    method: String,
    headers: HeaderMap,
    body: String,
    tx: mpsc::Sender<Inbound>,
}

/// Forgets an exchange in the in-flight table when it ends, however it ends.
struct Registered {
    shared: Arc<Shared>,
    id: RequestId,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.shared.in_flight.lock().unwrap().remove(&self.id);
    }
}

impl Exchange {
    pub(super) fn new(
        shared: Arc<Shared>,
        id: RequestId,
        method: String,
        headers: HeaderMap,
        body: String,
        tx: mpsc::Sender<Inbound>,
    ) -> Self {
        Exchange {
            shared,
            id,
            method,
            headers,
            body,
            tx,
        }
    }

    /// Sends the POST and reads the reply to its end. Cancellation aborts
    /// this future, which drops the reply: on HTTP that is the signal.
    pub(super) async fn run(mut self) {
        let _registered = Registered {
            shared: self.shared.clone(),
            id: self.id.clone(),
        };
        let listen = self.method == "subscriptions/listen";
        let outcome = match self.shared.timeout {
            Some(limit) if !listen => tokio::time::timeout(limit, self.talk())
                .await
                .unwrap_or_else(|_| {
                    Err(Failure::Lost(format!("no complete reply within {limit:?}")))
                }),
            _ => self.talk().await,
        };
        let inbound = match outcome {
            Ok(()) => return,
            Err(Failure::NotSent(reason)) => Inbound::NotSent {
                id: self.id.clone(),
                reason,
            },
            Err(Failure::Lost(reason)) => Inbound::Lost {
                id: self.id.clone(),
                reason,
            },
        };
        tracing::debug!(method = %self.method, id = %self.id, "{inbound:?}");
        let _ = self.tx.send(inbound).await;
    }

    async fn talk(&mut self) -> Result<(), Failure> {
        let response = self
            .shared
            .client
            .post(self.shared.url.clone())
            .headers(std::mem::take(&mut self.headers))
            .body(std::mem::take(&mut self.body))
            .send()
            .await
            .map_err(|e| {
                if e.is_connect() || e.is_builder() {
                    Failure::NotSent(describe(e))
                } else {
                    Failure::Lost(describe(e))
                }
            })?;
        let status = response.status();
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("text/event-stream"));
        if is_sse {
            self.read_sse(response, status).await
        } else {
            let body = read_limited(response, self.shared.max_message_size).await?;
            self.read_json(status, &body).await
        }
    }

    async fn read_json(&self, status: StatusCode, body: &[u8]) -> Result<(), Failure> {
        let text = String::from_utf8_lossy(body);
        if text.trim().is_empty() {
            return Err(Failure::Lost(if status.is_success() {
                format!("the server answered HTTP {status} with no response")
            } else {
                format!("HTTP {status}")
            }));
        }
        match self.forward(text.trim()).await {
            Some(Step::Final) => Ok(()),
            Some(Step::More) => Err(Failure::Lost(format!(
                "HTTP {status}: the reply holds no response to this request"
            ))),
            None => Err(Failure::Lost(format!(
                "HTTP {status}: the reply is not a JSON-RPC message: {}",
                quote(&text)
            ))),
        }
    }

    async fn read_sse(
        &self,
        response: reqwest::Response,
        status: StatusCode,
    ) -> Result<(), Failure> {
        let body = http::Response::from(response).into_body();
        let mut events = Events::new(
            http_body_util::BodyDataStream::new(body),
            self.shared.max_message_size,
        );
        while let Some(event) = events.next().await {
            let text = event.map_err(Failure::Lost)?;
            match self.forward(&text).await {
                Some(Step::Final) => {
                    // Anything after the response is ignored; reading to the
                    // end lets the connection be reused.
                    let _ = tokio::time::timeout(DRAIN, async {
                        while events.next().await.is_some() {}
                    })
                    .await;
                    return Ok(());
                }
                Some(Step::More) => {}
                None => {
                    let _ = self
                        .tx
                        .send(Inbound::Invalid(format!(
                            "an SSE event that is not a JSON-RPC message: {}",
                            quote(&text)
                        )))
                        .await;
                }
            }
        }
        Err(Failure::Lost(if status.is_success() {
            "the response stream ended before the response".to_owned()
        } else {
            format!("HTTP {status}: the response stream ended before the response")
        }))
    }

    /// Hands one message to the client. `None` when it is not JSON-RPC.
    async fn forward(&self, text: &str) -> Option<Step> {
        let peek: Peek = serde_json::from_str(text).ok()?;
        let (message, step) = if peek.method.is_some() {
            (text.to_owned(), Step::More)
        } else if peek.result.is_none() && peek.error.is_none() {
            return None;
        } else {
            match &peek.id {
                Some(id) if *id == self.id => {
                    let learned = (self.method == "tools/list" && peek.result.is_some())
                        .then(|| self.shared.tools.learn(text))
                        .flatten();
                    (learned.unwrap_or_else(|| text.to_owned()), Step::Final)
                }
                // An error the server could not tie to a request answers this POST.
                None if peek.error.is_some() => (with_id(text, &self.id)?, Step::Final),
                _ => {
                    tracing::debug!(id = %self.id, "a reply names another request; passing it on");
                    (text.to_owned(), Step::More)
                }
            }
        };
        if self.tx.send(Inbound::Message(message)).await.is_err() {
            return Some(Step::Final); // the client is gone: stop reading
        }
        Some(step)
    }
}

/// What a forwarded message means for the exchange.
enum Step {
    /// The response to this request: the exchange is done.
    Final,
    /// A notification (or someone else's message): keep reading.
    More,
}

/// Enough of a message to route it.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<IgnoredAny>,
    #[serde(default)]
    result: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<IgnoredAny>,
}

/// `text` with its `id` set to `id`.
fn with_id(text: &str, id: &RequestId) -> Option<String> {
    let mut value: Value = serde_json::from_str(text).ok()?;
    value
        .as_object_mut()?
        .insert("id".into(), serde_json::to_value(id).ok()?);
    Some(value.to_string())
}

async fn read_limited(mut response: reqwest::Response, max: usize) -> Result<Vec<u8>, Failure> {
    let mut body = Vec::new();
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|e| Failure::Lost(format!("the reply broke: {}", describe(e))))?
    {
        if body.len() + chunk.len() > max {
            return Err(Failure::Lost(format!(
                "the reply is larger than {max} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Sends a notification: a POST whose answer (`202 Accepted`) carries nothing.
pub(super) async fn notify(shared: Arc<Shared>, method: String, headers: HeaderMap, body: String) {
    let send = shared
        .client
        .post(shared.url.clone())
        .headers(headers)
        .body(body)
        .send();
    match tokio::time::timeout(Duration::from_secs(30), send).await {
        Ok(Ok(r)) if r.status().is_success() => {}
        Ok(Ok(r)) => {
            tracing::debug!(%method, status = %r.status(), "the server refused a notification")
        }
        Ok(Err(e)) => tracing::debug!(%method, "a notification was not delivered: {}", describe(e)),
        Err(_) => tracing::debug!(%method, "a notification was not answered in time"),
    }
}

/// A reqwest error with its causes, without the URL (which may hold secrets).
fn describe(e: reqwest::Error) -> String {
    let e = e.without_url();
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// The start of an unexpected body, on one line.
fn quote(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    match text.char_indices().nth(QUOTE) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}
