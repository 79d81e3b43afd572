//! One request's exchange: the POST, then its reply read as JSON or SSE and
//! handed to the client message by message.

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use tokio::sync::{OwnedSemaphorePermit, mpsc};

use super::body::read_limited;
use super::headers::PROTOCOL_VERSION_HEADER;
use super::post::{batch_items, is_sse};
use super::send::{SendError, Sent};
use super::sse::Events;
use super::{SESSION_HEADER, Shared, retry_after, session};
use crate::error::describe_reqwest as describe;
use crate::protocol::method;
use crate::protocol::{RequestId, RpcError, TaskId};
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
    /// No connection to the server could be made: the POST was not sent.
    Unreachable(String),
    /// The POST was sent; its reply is lost.
    Lost(String),
    /// The reply has an error status and no response to this request.
    Status(Box<StatusFailure>),
}

/// An error status, and what came with it.
struct StatusFailure {
    status: StatusCode,
    www_authenticate: Option<String>,
    /// The wait the reply's `Retry-After` asks for.
    retry_after: Option<Duration>,
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
    /// The session id this request carries, until a `404` has renewed it.
    sent_session: Option<reqwest::header::HeaderValue>,
    /// The task a `tasks/*` request names, which the server may echo in
    /// a body the errors quote.
    task: Option<TaskId>,
    /// The slot of [`Http::max_in_flight`](super::Http::max_in_flight)
    /// this request holds, if any: given back when the reply asks the
    /// client a question, which the request then waits on.
    slot: Mutex<Option<OwnedSemaphorePermit>>,
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
        task: Option<TaskId>,
        tx: mpsc::Sender<Inbound>,
    ) -> Self {
        let sent_session = headers
            .get(SESSION_HEADER)
            .filter(|_| method != method::INITIALIZE)
            .cloned();
        Exchange {
            shared,
            id,
            method,
            headers,
            body,
            tx,
            session: None,
            sent_session,
            task,
            slot: Mutex::new(None),
        }
    }

    /// Whether this request waits on something other than the server's
    /// work, and so takes no slot: a `subscriptions/listen` stream, open
    /// on purpose, and an initialize-era `tasks/result`, open until its
    /// task ends (it carries the task's questions).
    fn waits_on_more_than_the_server(&self) -> bool {
        self.method == method::SUBSCRIPTIONS_LISTEN || self.method == method::TASKS_RESULT
    }

    /// The start of an unexpected body, on one line, within [`QUOTE`]
    /// characters, with the task this request names hidden wherever the
    /// server echoes it (before the quote can cut the id short).
    fn quote(&self, text: &str) -> String {
        match &self.task {
            Some(task) => crate::human::quote(&task.hidden_in(text), QUOTE),
            None => crate::human::quote(text, QUOTE),
        }
    }

    /// Sends the POST and reads the reply to its end. Cancellation aborts
    /// this future, which drops the reply: on HTTP that is the signal.
    pub(super) async fn run(mut self) {
        let _registered = Registered {
            shared: self.shared.clone(),
            id: self.id.clone(),
        };
        let listen = self.method == method::SUBSCRIPTIONS_LISTEN;
        if !self.waits_on_more_than_the_server() {
            let slot = self.shared.slot().await;
            *self.slot.lock().unwrap() = slot;
        }
        let outcome = match self.shared.timeout {
            Some(limit) if !listen => tokio::time::timeout(limit, self.converse())
                .await
                .unwrap_or_else(|_| {
                    Err(Failure::Lost(format!(
                        "no complete reply within {}",
                        crate::human::duration(limit)
                    )))
                }),
            _ => self.converse().await,
        };
        let inbound = match outcome {
            Ok(()) => return,
            Err(Failure::NotSent(reason)) => Inbound::NotSent {
                id: self.id.clone(),
                reason,
            },
            Err(Failure::Unreachable(reason)) => Inbound::Unreachable {
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
                    retry_after,
                    response,
                    reason,
                } = *failure;
                // The body may echo a task id: the status only.
                tracing::debug!(method = %self.method, id = %self.id, %status, ?retry_after, "the server answered with an error status");
                let _ = self
                    .tx
                    .send(Inbound::HttpError {
                        id: self.id.clone(),
                        status: status.as_u16(),
                        www_authenticate,
                        retry_after,
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

    /// One exchange; when its `404` says the session it carried is gone,
    /// renews the session and, for a read, sends the request once more.
    async fn converse(&mut self) -> Result<(), Failure> {
        let again = self
            .sent_session
            .clone()
            .map(|lost| (lost, self.headers.clone(), self.body.clone()));
        let outcome = self.talk().await;
        let (Err(Failure::Status(failure)), Some((lost, mut headers, body))) = (&outcome, again)
        else {
            return outcome;
        };
        if !session::session_gone(failure.status, failure.response.as_deref()) {
            return outcome;
        }
        self.sent_session = None;
        let lost_reason = format!("the server lost the session (HTTP {})", failure.status);
        let refusal = |reason: String| {
            Failure::Status(Box::new(StatusFailure {
                status: failure.status,
                www_authenticate: failure.www_authenticate.clone(),
                retry_after: failure.retry_after,
                response: None,
                reason,
            }))
        };
        // Boxed, as rare as it is large.
        if let Err(why) = Box::pin(session::renew(&self.shared, &lost, &self.tx)).await {
            return Err(refusal(format!(
                "{lost_reason}, and a new one could not be started: {why}"
            )));
        }
        if self.method == method::TOOLS_CALL {
            // The tool may not run twice behind the caller's back.
            return Err(refusal(format!(
                "{lost_reason}; a new session was started, but a tools/call is not sent \
                 again on its own: call the tool again if it should run"
            )));
        }
        match self.shared.session.lock().unwrap().clone() {
            Some(session) => headers.insert(SESSION_HEADER, session),
            None => headers.remove(SESSION_HEADER),
        };
        if headers.contains_key(PROTOCOL_VERSION_HEADER)
            && let Ok(version) = HeaderValue::from_str(&self.shared.version())
        {
            headers.insert(PROTOCOL_VERSION_HEADER, version);
        }
        tracing::debug!(method = %self.method, id = %self.id, "sending the request again in the new session");
        self.headers = headers;
        self.body = body;
        self.talk().await
    }

    async fn talk(&mut self) -> Result<(), Failure> {
        let headers = std::mem::take(&mut self.headers);
        let body = bytes::Bytes::from(std::mem::take(&mut self.body));
        let shared = &self.shared;
        let Sent { response, refusal } = shared.post(headers, body).await.map_err(|e| match e {
            SendError::Http(e) if e.is_connect() => {
                Failure::Unreachable(format!("{}: {}", authority(&shared.url), describe(e)))
            }
            SendError::Http(e) if e.is_builder() => Failure::NotSent(describe(e)),
            SendError::Http(e) => Failure::Lost(describe(e)),
            SendError::Auth(why) => Failure::NotSent(why),
        })?;
        let status = response.status();
        let www_authenticate = www_authenticate(response.headers());
        // Read on every status that is not `2xx` (`429` and `503` above all).
        let retry_after = (!status.is_success())
            .then(|| retry_after::of(response.headers(), SystemTime::now()))
            .flatten();
        if self.method == method::INITIALIZE {
            self.session = response.headers().get(SESSION_HEADER).cloned();
        }
        let refused = |response: Option<String>, reason: String| {
            Failure::Status(Box::new(StatusFailure {
                status,
                www_authenticate: www_authenticate.clone(),
                retry_after,
                response,
                reason,
            }))
        };
        if let Some(why) = refusal {
            return Err(refused(None, why));
        }
        if is_sse(response.headers()) {
            // Boxed: a stream's reader (resumption included) would make
            // every exchange's future, JSON ones too, as large as itself.
            Box::pin(self.read_sse(response, status, refused)).await
        } else {
            let body = read_limited(response, self.shared.max_message_size)
                .await
                .map_err(|e| Failure::Lost(e.to_string()))?;
            self.read_json(status, text_of(body), refused).await
        }
    }

    /// Reads a whole JSON reply: one message (or, from a 2025-03-26
    /// server, a batch of them), which must answer this POST.
    ///
    /// Whatever the reply holds, the exchange ends here, so no reply ever
    /// leaves its request waiting for the timeout.
    async fn read_json(
        &self,
        status: StatusCode,
        text: String,
        refused: impl Fn(Option<String>, String) -> Failure,
    ) -> Result<(), Failure> {
        let ok = status.is_success();
        let mut answered = false;
        let mut lost = None;
        let batch = self.batch(&text);
        // The whole text, kept for the errors that quote it (a reply with
        // an error status, a batch); a single message moves on as it is.
        let whole = (batch.is_some() || !ok).then(|| text.clone());
        let items = match batch {
            Some(items) => items,
            None if text.is_empty() => Vec::new(),
            None => vec![text],
        };
        for item in items {
            match self.route(item) {
                Routed::Final(message) => {
                    self.send(message).await;
                    answered = true;
                }
                Routed::Error(message) if ok || answered => {
                    self.send(message).await;
                    answered = true;
                }
                Routed::Error(response) => {
                    return Err(refused(Some(response), format!("HTTP {status}")));
                }
                Routed::More(message) | Routed::Request(message) => {
                    self.send(message).await;
                    lost.get_or_insert_with(|| {
                        format!("HTTP {status}: the reply holds no response to this request")
                    });
                }
                Routed::NotRpc(item) => {
                    lost.get_or_insert_with(|| {
                        format!(
                            "HTTP {status}: the reply is not a JSON-RPC message: {}",
                            self.quote(whole.as_deref().unwrap_or(&item))
                        )
                    });
                }
            }
        }
        if answered {
            return Ok(());
        }
        let lost =
            lost.unwrap_or_else(|| format!("the server answered HTTP {status} with no response"));
        let whole = whole.unwrap_or_default();
        Err(if ok {
            Failure::Lost(lost)
        } else if whole.is_empty() {
            refused(None, format!("HTTP {status} with no body"))
        } else {
            refused(None, format!("HTTP {status}: {}", self.quote(&whole)))
        })
    }

    /// Reads an SSE reply until the response to this request. On an
    /// initialize-era connection, a stream that ends (or breaks) before it,
    /// after its events carried ids, is resumed with a `GET` carrying
    /// `Last-Event-ID`, after the server's `retry` delay.
    async fn read_sse(
        &self,
        response: reqwest::Response,
        status: StatusCode,
        refused: impl Fn(Option<String>, String) -> Failure,
    ) -> Result<(), Failure> {
        let mut events = Events::of(response, self.shared.max_message_size);
        let mut failures: u32 = 0;
        loop {
            let delivered = events.messages();
            let broke = match self.read_events(&mut events, status, &refused).await? {
                None => return Ok(()),
                Some(broke) => broke,
            };
            // Only a message is progress: a stream of a priming event
            // alone is one more failure, however often it comes.
            if events.messages() > delivered {
                failures = 0;
            }
            let resumable = status.is_success()
                && !events.oversized()
                && events.last_id().is_some()
                && self.shared.in_session_era()
                && failures < session::MAX_FAILURES;
            if !resumable {
                return Err(match broke {
                    Some(reason) => Failure::Lost(reason),
                    None if status.is_success() => {
                        Failure::Lost("the response stream ended before the response".to_owned())
                    }
                    None => refused(
                        None,
                        format!("HTTP {status}: the response stream ended before the response"),
                    ),
                });
            }
            tokio::time::sleep(session::retry_delay(events.retry(), failures)).await;
            failures += 1;
            let last_id = events.last_id().map(str::to_owned);
            tracing::debug!(method = %self.method, id = %self.id, "resuming the response stream");
            match session::open_get(&self.shared, last_id.as_deref()).await {
                Ok(response) => {
                    let resume = events.take_resume();
                    events = Events::of(response, self.shared.max_message_size).resuming(resume);
                }
                Err(session::Refusal::Status(got)) => {
                    return Err(Failure::Lost(format!(
                        "the response stream ended before the response, and resuming it \
                         was refused (HTTP {got})"
                    )));
                }
                Err(session::Refusal::Failed(why)) => {
                    // The old stream, at its end, stays: the next round
                    // reads nothing from it and tries again after the
                    // delay, while attempts remain.
                    tracing::debug!("resuming the response stream failed: {why}");
                }
            }
        }
    }

    /// Reads events until the response to this request: `None` once it
    /// came, else why the stream stopped (`Some(reason)` when it broke,
    /// `None` when it ended).
    async fn read_events(
        &self,
        events: &mut Events,
        status: StatusCode,
        refused: &impl Fn(Option<String>, String) -> Failure,
    ) -> Result<Option<Option<String>>, Failure> {
        while let Some(event) = events.next().await {
            let text = match event {
                Ok(text) => text,
                Err(reason) => return Ok(Some(Some(reason))),
            };
            let mut answered = false;
            let items = self.batch(&text).unwrap_or_else(|| vec![text]);
            for item in items {
                match self.route(item) {
                    Routed::Final(message) => {
                        self.send(message).await;
                        answered = true;
                    }
                    Routed::Error(response) if !status.is_success() && !answered => {
                        return Err(refused(Some(response), format!("HTTP {status}")));
                    }
                    Routed::Error(message) => {
                        self.send(message).await;
                        answered = true;
                    }
                    Routed::More(message) => {
                        if !self.send(message).await {
                            return Ok(None); // the client is gone: stop reading
                        }
                    }
                    Routed::Request(message) => {
                        // From now on the reply waits on the answer (a
                        // person, maybe, or the application's other
                        // requests): the slot goes back before the
                        // question reaches the client.
                        drop(self.slot.lock().unwrap().take());
                        if !self.send(message).await {
                            return Ok(None);
                        }
                    }
                    Routed::NotRpc(item) => {
                        let _ = self
                            .tx
                            .send(Inbound::Invalid(format!(
                                "an SSE event that is not a JSON-RPC message: {}",
                                self.quote(&item)
                            )))
                            .await;
                    }
                }
            }
            if answered {
                // Anything after the response is ignored; reading to the
                // end lets the connection be reused.
                let _ =
                    tokio::time::timeout(DRAIN, async { while events.next().await.is_some() {} })
                        .await;
                return Ok(None);
            }
        }
        Ok(Some(None))
    }

    /// Hands one message to the client; `false` when the client is gone.
    /// The reply to `initialize` also keeps its session id first.
    async fn send(&self, message: String) -> bool {
        if self.method == method::INITIALIZE {
            self.shared.keep_session(self.session.clone());
        }
        self.tx.send(Inbound::Message(message)).await.is_ok()
    }

    /// The messages of a JSON text that is a batch, on an initialize-era
    /// connection, where one may come (a batch is no reply in 2026-07-28);
    /// `None` when the text is one message.
    fn batch(&self, text: &str) -> Option<Vec<String>> {
        if self.method == method::INITIALIZE || self.shared.accepts_batches() {
            batch_items(text)
        } else {
            None
        }
    }

    /// What one message of the reply is to this exchange (the message
    /// moves on as it came, unless its id must be set).
    fn route(&self, text: String) -> Routed {
        // An object only: serde would read a JSON array as a struct, field
        // by field (batches are split before they get here).
        if !text.trim_start().starts_with('{') {
            return Routed::NotRpc(text);
        }
        let Ok(peek) = serde_json::from_str::<Peek>(&text) else {
            return Routed::NotRpc(text);
        };
        if peek.method.is_some() {
            return if peek.id.is_some() {
                Routed::Request(text)
            } else {
                Routed::More(text)
            };
        }
        if peek.error.is_some() {
            return match &peek.id {
                Some(id) if *id == self.id => Routed::Error(text),
                Some(id) if self.shared.in_flight.lock().unwrap().contains_key(id) => {
                    tracing::debug!(id = %self.id, "a reply names another request; passing it on");
                    Routed::More(text)
                }
                // No id, `null`, or one the client never sent ("server-error"):
                // the server could not tie its error to a request, and this
                // POST is the request it answers.
                _ => match with_id(&text, &self.id) {
                    Some(message) => Routed::Error(message),
                    None => Routed::NotRpc(text),
                },
            };
        }
        if peek.result.is_none() {
            return Routed::NotRpc(text);
        }
        match &peek.id {
            Some(id) if *id == self.id => {
                let learned = (self.method == "tools/list")
                    .then(|| self.shared.tools.learn(&text))
                    .flatten();
                Routed::Final(learned.unwrap_or(text))
            }
            _ => {
                tracing::debug!(id = %self.id, "a reply names another request; passing it on");
                Routed::More(text)
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
    /// A request of the server's (a question to the client): pass it on,
    /// keep reading.
    Request(String),
    /// Not a JSON-RPC message the client could read (the text, to quote).
    NotRpc(String),
}

/// Enough of a message to route it. `error` is read in full: a body such as
/// `{"error": "invalid_token"}` is no JSON-RPC error.
#[derive(Deserialize)]
struct Peek {
    #[serde(default)]
    id: Option<RequestId>,
    #[serde(default)]
    method: Option<IgnoredAny>,
    /// `null` too: `"result": null` is a response.
    #[serde(default, deserialize_with = "crate::protocol::present")]
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

/// A reply's text without the whitespace around it, invalid UTF-8
/// replaced; the bytes become the text without a copy when they can.
fn text_of(body: Vec<u8>) -> String {
    let text = String::from_utf8(body)
        .unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
    let trimmed = text.trim();
    if trimmed.len() == text.len() {
        text
    } else {
        trimmed.to_owned()
    }
}

/// `host:port` of `url`, for an error that says where nothing answered
/// (never the path or query, which may hold a secret).
fn authority(url: &reqwest::Url) -> String {
    let host = url.host_str().unwrap_or("?");
    match url.port_or_known_default() {
        Some(port) if host.contains(':') => format!("[{host}]:{port}"),
        Some(port) => format!("{host}:{port}"),
        None => host.to_owned(),
    }
}
