//! One request's exchange: the POST, then its reply read as JSON or SSE and
//! handed to the client message by message.

use std::error::Error as _;
use std::sync::Arc;
use std::time::Duration;

use reqwest::StatusCode;
use reqwest::header::{CONTENT_TYPE, HeaderMap, WWW_AUTHENTICATE};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::sync::mpsc;

use super::Shared;
use super::sse::Events;
use crate::protocol::method;
use crate::protocol::{RequestId, RpcError};
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
    /// The reply has an error status and no response to this request.
    Status(Box<StatusFailure>),
}

/// An error status, and what came with it.
struct StatusFailure {
    status: StatusCode,
    www_authenticate: Option<String>,
    /// The JSON-RPC error response the body holds, its id set to this request's.
    response: Option<String>,
    reason: String,
}

/// The reply of one request, in flight.
pub(super) struct Exchange {
    shared: Arc<Shared>,
    id: RequestId,
    method: String,
    headers: HeaderMap,
    body: String,
    tx: mpsc::Sender<Inbound>,
    /// The session id an `initialize` reply carried.
    session: Option<reqwest::header::HeaderValue>,
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
            session: None,
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
            Err(Failure::Status(failure)) => {
                let StatusFailure {
                    status,
                    www_authenticate,
                    response,
                    reason,
                } = *failure;
                // The body may echo a task id: the status only.
                tracing::debug!(method = %self.method, id = %self.id, %status, "the server answered with an error status");
                let _ = self
                    .tx
                    .send(Inbound::HttpError {
                        id: self.id.clone(),
                        status: status.as_u16(),
                        www_authenticate,
                        response,
                        reason,
                    })
                    .await;
                return;
            }
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
        let www_authenticate = www_authenticate(response.headers());
        if self.method == method::INITIALIZE {
            self.session = response.headers().get("mcp-session-id").cloned();
        }
        let is_sse = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.split(';').next())
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("text/event-stream"));
        let refused = |response: Option<String>, reason: String| {
            Failure::Status(Box::new(StatusFailure {
                status,
                www_authenticate: www_authenticate.clone(),
                response,
                reason,
            }))
        };
        if is_sse {
            self.read_sse(response, status, refused).await
        } else {
            let body = read_limited(response, self.shared.max_message_size).await?;
            self.read_json(status, &body, refused).await
        }
    }

    /// Reads a whole JSON reply: one message, which must answer this POST.
    ///
    /// Whatever the reply holds, the exchange ends here, so no reply ever
    /// leaves its request waiting for the timeout.
    async fn read_json(
        &self,
        status: StatusCode,
        body: &[u8],
        refused: impl Fn(Option<String>, String) -> Failure,
    ) -> Result<(), Failure> {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        let routed = (!text.is_empty()).then(|| self.route(text));
        let ok = status.is_success();
        let lost = match routed {
            Some(Routed::Final(message)) => {
                self.send(message).await;
                return Ok(());
            }
            Some(Routed::Error(message)) if ok => {
                self.send(message).await;
                return Ok(());
            }
            Some(Routed::Error(response)) => {
                return Err(refused(Some(response), format!("HTTP {status}")));
            }
            Some(Routed::More(message)) => {
                self.send(message).await;
                format!("HTTP {status}: the reply holds no response to this request")
            }
            Some(Routed::NotRpc) => format!(
                "HTTP {status}: the reply is not a JSON-RPC message: {}",
                quote(text)
            ),
            None => format!("the server answered HTTP {status} with no response"),
        };
        Err(if ok {
            Failure::Lost(lost)
        } else if text.is_empty() {
            refused(None, format!("HTTP {status} with no body"))
        } else {
            refused(None, format!("HTTP {status}: {}", quote(text)))
        })
    }

    async fn read_sse(
        &self,
        response: reqwest::Response,
        status: StatusCode,
        refused: impl Fn(Option<String>, String) -> Failure,
    ) -> Result<(), Failure> {
        let body = http::Response::from(response).into_body();
        let mut events = Events::new(
            http_body_util::BodyDataStream::new(body),
            self.shared.max_message_size,
        );
        while let Some(event) = events.next().await {
            let text = event.map_err(Failure::Lost)?;
            let message = match self.route(&text) {
                Routed::Final(message) => Some(message),
                Routed::Error(response) if !status.is_success() => {
                    return Err(refused(Some(response), format!("HTTP {status}")));
                }
                Routed::Error(message) => Some(message),
                Routed::More(message) => {
                    if !self.send(message).await {
                        return Ok(()); // the client is gone: stop reading
                    }
                    None
                }
                Routed::NotRpc => {
                    let _ = self
                        .tx
                        .send(Inbound::Invalid(format!(
                            "an SSE event that is not a JSON-RPC message: {}",
                            quote(&text)
                        )))
                        .await;
                    None
                }
            };
            if let Some(message) = message {
                self.send(message).await;
                // Anything after the response is ignored; reading to the
                // end lets the connection be reused.
                let _ =
                    tokio::time::timeout(DRAIN, async { while events.next().await.is_some() {} })
                        .await;
                return Ok(());
            }
        }
        Err(if status.is_success() {
            Failure::Lost("the response stream ended before the response".to_owned())
        } else {
            refused(
                None,
                format!("HTTP {status}: the response stream ended before the response"),
            )
        })
    }

    /// Hands one message to the client; `false` when the client is gone.
    /// The reply to `initialize` also settles the session first.
    async fn send(&self, message: String) -> bool {
        if self.method == method::INITIALIZE {
            self.shared.initialized(self.session.clone(), &message);
        }
        self.tx.send(Inbound::Message(message)).await.is_ok()
    }

    /// What one message of the reply is to this exchange.
    fn route(&self, text: &str) -> Routed {
        // An object only: serde would read a JSON array as a struct, field
        // by field, and a batch is no reply in 2026-07-28.
        if !text.trim_start().starts_with('{') {
            return Routed::NotRpc;
        }
        let Ok(peek) = serde_json::from_str::<Peek>(text) else {
            return Routed::NotRpc;
        };
        if peek.method.is_some() {
            return Routed::More(text.to_owned());
        }
        if peek.error.is_some() {
            return match &peek.id {
                Some(id) if *id == self.id => Routed::Error(text.to_owned()),
                Some(id) if self.shared.in_flight.lock().unwrap().contains_key(id) => {
                    tracing::debug!(id = %self.id, "a reply names another request; passing it on");
                    Routed::More(text.to_owned())
                }
                // No id, `null`, or one the client never sent ("server-error"):
                // the server could not tie its error to a request, and this
                // POST is the request it answers.
                _ => match with_id(text, &self.id) {
                    Some(message) => Routed::Error(message),
                    None => Routed::NotRpc,
                },
            };
        }
        if peek.result.is_none() {
            return Routed::NotRpc;
        }
        match &peek.id {
            Some(id) if *id == self.id => {
                let learned = (self.method == "tools/list")
                    .then(|| self.shared.tools.learn(text))
                    .flatten();
                Routed::Final(learned.unwrap_or_else(|| text.to_owned()))
            }
            _ => {
                tracing::debug!(id = %self.id, "a reply names another request; passing it on");
                Routed::More(text.to_owned())
            }
        }
    }
}

/// What one message of a reply is to the exchange reading it.
enum Routed {
    /// The response to this request: the exchange is done.
    Final(String),
    /// A JSON-RPC error answering this request (its id set to this
    /// request's): the exchange is done.
    Error(String),
    /// A notification (or someone else's message): pass it on, keep reading.
    More(String),
    /// Not a JSON-RPC message the client could read.
    NotRpc,
}

/// Enough of a message to route it. `error` is read in full: a body such as
/// `{"error": "invalid_token"}` is no JSON-RPC error.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<IgnoredAny>,
    #[serde(default)]
    result: Option<IgnoredAny>,
    #[serde(default)]
    error: Option<RpcError>,
}

/// The `WWW-Authenticate` challenges of a reply, as one value.
fn www_authenticate(headers: &HeaderMap) -> Option<String> {
    let values: Vec<&str> = headers
        .get_all(WWW_AUTHENTICATE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .collect();
    (!values.is_empty()).then(|| values.join(", "))
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
