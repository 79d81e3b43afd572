//! Answering the server's input requests: elicitation, sampling, roots.
//!
//! Install handlers on the client with [`ClientBuilder::input_handlers`](crate::ClientBuilder::input_handlers).
//! They answer both flows: MRTR rounds of a plain `tools/call`, and tasks in
//! `input_required`. The handlers you install decide the capabilities the
//! client declares, so a server never asks for what the client cannot answer.
//!
//! Every answer is checked before it is sent ([`validate`]): an elicitation
//! answer must fit its request (no content on decline, the form's required
//! fields on accept, no content for URL mode), a sampling answer needs a
//! role, content and model, and roots must be `file://` URIs.
//!
//! The crate never opens a URL itself: URL elicitations are only handed to
//! the `elicitation_url` handler, and without one they are left unanswered.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use serde_json::{Map, Value};

use crate::error::{BoxError, Error};
use crate::protocol::{
    ClientCapabilities, CreateMessageRequest, CreateMessageResult, ElicitRequest, ElicitResult,
    ElicitationCapability, InputRequest, InputResponse, ListRootsRequest, ListRootsResult,
    SamplingCapability,
};

mod ledger;
mod validate;

pub(crate) use ledger::Ledger;
pub use validate::{InvalidAnswer, validate};

/// The most input requests of one round (one `input_required` result, or a
/// task's questions at one time) the handlers are run for. A round that
/// asks more runs no handler: a `tools/call`, `prompts/get` or
/// `resources/read` fails with `is_protocol()`, and a task stops at
/// `InputRequired`, to be answered by hand.
pub const MAX_INPUTS_PER_ROUND: usize = 64;

/// A form elicitation, as handed to a form handler.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct FormRequest {
    /// What to tell the user.
    pub message: String,
    /// The flat JSON Schema of the expected answer.
    pub requested_schema: Value,
}

/// A URL elicitation, as handed to a URL handler. Show the full URL and ask
/// for consent before opening it.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct UrlRequest {
    /// What to tell the user.
    pub message: String,
    /// The URL the server wants the user to visit.
    pub url: String,
    /// The server's id for this elicitation (2025-11-25 servers send one).
    /// When the user is done at the URL, the server says so with
    /// `notifications/elicitation/complete` naming this id, which reaches
    /// the [`InputHandlers::on_elicitation_complete`] callback.
    pub elicitation_id: Option<String>,
}

type HandlerFuture<T> = Pin<Box<dyn Future<Output = Result<T, BoxError>> + Send>>;
type Handler<Req, Resp> = Arc<dyn Fn(Req) -> HandlerFuture<Resp> + Send + Sync>;

/// An async callback that observes something and answers nothing (the
/// client's notification handlers).
pub(crate) type Callback<T> =
    Arc<dyn Fn(T) -> Pin<Box<dyn Future<Output = ()> + Send>> + Send + Sync>;

/// Erases an async closure into a [`Callback`].
pub(crate) fn callback<T, F, Fut>(f: F) -> Callback<T>
where
    F: Fn(T) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = ()> + Send + 'static,
{
    Arc::new(move |value| Box::pin(f(value)))
}

fn erase<Req, Resp, F, Fut>(f: F) -> Handler<Req, Resp>
where
    F: Fn(Req) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Resp, BoxError>> + Send + 'static,
{
    Arc::new(move |req| Box::pin(f(req)))
}

/// The client's answers to input requests, one optional handler per kind.
///
/// Handlers are async closures returning `Result<Answer, BoxError>`. An
/// `Err` stops the wait with an error that carries the task handle.
///
/// # Examples
///
/// ```
/// use mcp_tasks::input::InputHandlers;
/// use mcp_tasks::protocol::ElicitResult;
/// use serde_json::json;
///
/// let handlers = InputHandlers::new()
///     .elicitation_form(|req| async move {
///         println!("server asks: {}", req.message);
///         Ok(ElicitResult::accept(json!({ "approved": true })))
///     });
/// assert!(handlers.capabilities().elicitation.is_some());
/// ```
#[derive(Clone, Default)]
pub struct InputHandlers {
    form: Option<Handler<FormRequest, ElicitResult>>,
    url: Option<Handler<UrlRequest, ElicitResult>>,
    sampling: Option<Handler<CreateMessageRequest, CreateMessageResult>>,
    roots: Option<Handler<ListRootsRequest, ListRootsResult>>,
    elicitation_complete: Option<Callback<String>>,
}

impl fmt::Debug for InputHandlers {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("InputHandlers")
            .field("elicitation_form", &self.form.is_some())
            .field("elicitation_url", &self.url.is_some())
            .field("sampling", &self.sampling.is_some())
            .field("roots", &self.roots.is_some())
            .field(
                "on_elicitation_complete",
                &self.elicitation_complete.is_some(),
            )
            .finish()
    }
}

impl InputHandlers {
    /// No handlers: every input request is left to the caller.
    pub fn new() -> Self {
        Self::default()
    }

    /// Answers form elicitations (`elicitation/create`, mode `form` or absent).
    pub fn elicitation_form<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(FormRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, BoxError>> + Send + 'static,
    {
        self.form = Some(erase(handler));
        self
    }

    /// Answers URL elicitations. The handler decides whether and how the
    /// user opens the URL; the crate never opens it.
    pub fn elicitation_url<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(UrlRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ElicitResult, BoxError>> + Send + 'static,
    {
        self.url = Some(erase(handler));
        self
    }

    /// Called with the `elicitationId` of each
    /// `notifications/elicitation/complete` the server sends (2025-11-25):
    /// the user finished what a URL elicitation sent them to do (see
    /// [`UrlRequest::elicitation_id`]). 2026-07-28 servers never send it.
    ///
    /// It observes and answers nothing, and it declares no capability. It
    /// runs on its own task, one notification at a time, off the
    /// connection's reader; when it falls behind by more than 64
    /// notifications, further ones are dropped and counted in
    /// [`ClientStats::dropped_notifications`](crate::ClientStats::dropped_notifications).
    ///
    /// # Examples
    ///
    /// ```
    /// use mcp_tasks::input::InputHandlers;
    /// use mcp_tasks::protocol::ElicitResult;
    ///
    /// let handlers = InputHandlers::new()
    ///     .elicitation_url(|req| async move {
    ///         println!("please open {} (id {:?})", req.url, req.elicitation_id);
    ///         Ok(ElicitResult::accept_empty())
    ///     })
    ///     .on_elicitation_complete(|id| async move {
    ///         println!("elicitation {id} is done");
    ///     });
    /// # let _ = handlers;
    /// ```
    pub fn on_elicitation_complete<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(String) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        self.elicitation_complete = Some(callback(handler));
        self
    }

    /// The callback for `notifications/elicitation/complete`, when installed.
    pub(crate) fn elicitation_complete(&self) -> Option<&Callback<String>> {
        self.elicitation_complete.as_ref()
    }

    /// Answers `sampling/createMessage` with the client's model.
    pub fn sampling<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(CreateMessageRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<CreateMessageResult, BoxError>> + Send + 'static,
    {
        self.sampling = Some(erase(handler));
        self
    }

    /// Answers `roots/list`.
    pub fn roots<F, Fut>(mut self, handler: F) -> Self
    where
        F: Fn(ListRootsRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<ListRootsResult, BoxError>> + Send + 'static,
    {
        self.roots = Some(erase(handler));
        self
    }

    /// The client capabilities these handlers justify (without extensions).
    pub fn capabilities(&self) -> ClientCapabilities {
        let mut caps = ClientCapabilities::default();
        if self.form.is_some() || self.url.is_some() {
            caps.elicitation = Some(ElicitationCapability {
                form: self.form.as_ref().map(|_| Map::new()),
                url: self.url.as_ref().map(|_| Map::new()),
            });
        }
        if self.sampling.is_some() {
            caps.sampling = Some(SamplingCapability::default());
        }
        if self.roots.is_some() {
            caps.roots = Some(Map::new());
        }
        caps
    }

    /// Whether an elicitation handler (form or URL) is installed.
    pub(crate) fn answers_elicitation(&self) -> bool {
        self.form.is_some() || self.url.is_some()
    }

    /// Whether a sampling handler is installed.
    pub(crate) fn answers_sampling(&self) -> bool {
        self.sampling.is_some()
    }

    /// Whether the handlers answer a round of `count` requests at all:
    /// at most [`MAX_INPUTS_PER_ROUND`].
    pub(crate) fn answers_round_of(count: usize) -> bool {
        count <= MAX_INPUTS_PER_ROUND
    }

    /// Whether a handler is installed for this request's kind.
    pub(crate) fn can_answer(&self, request: &InputRequest) -> bool {
        match request {
            InputRequest::Elicitation(ElicitRequest::Form { .. }) => self.form.is_some(),
            InputRequest::Elicitation(ElicitRequest::Url { .. }) => self.url.is_some(),
            InputRequest::Sampling(_) => self.sampling.is_some(),
            InputRequest::Roots(_) => self.roots.is_some(),
            _ => false,
        }
    }

    /// Runs the handler for `request` and validates its answer.
    ///
    /// # Errors
    ///
    /// [`Error::is_input`] when no handler fits, the handler fails, or its
    /// answer does not fit the request.
    pub(crate) async fn answer(
        &self,
        key: &str,
        request: &InputRequest,
    ) -> Result<InputResponse, Error> {
        let failed = |e: BoxError| {
            Error::input(format!("the handler for input {key:?} failed: {e}")).with_source(e)
        };
        let missing = || {
            Error::input(format!(
                "no handler for input {key:?} ({})",
                request.method()
            ))
        };
        let response: InputResponse = match request {
            InputRequest::Elicitation(ElicitRequest::Form {
                message,
                requested_schema,
            }) => {
                let h = self.form.as_ref().ok_or_else(missing)?;
                h(FormRequest {
                    message: message.clone(),
                    requested_schema: requested_schema.clone(),
                })
                .await
                .map_err(failed)?
                .into()
            }
            InputRequest::Elicitation(ElicitRequest::Url {
                message,
                url,
                elicitation_id,
            }) => {
                let h = self.url.as_ref().ok_or_else(missing)?;
                h(UrlRequest {
                    message: message.clone(),
                    url: url.clone(),
                    elicitation_id: elicitation_id.clone(),
                })
                .await
                .map_err(failed)?
                .into()
            }
            InputRequest::Sampling(r) => {
                let h = self.sampling.as_ref().ok_or_else(missing)?;
                h(r.clone()).await.map_err(failed)?.into()
            }
            InputRequest::Roots(r) => {
                let h = self.roots.as_ref().ok_or_else(missing)?;
                h(r.clone()).await.map_err(failed)?.into()
            }
            _ => return Err(missing()),
        };
        validate(request, &response).map_err(|why| {
            Error::input(format!("the answer to input {key:?} is invalid: {why}"))
        })?;
        Ok(response)
    }
}
