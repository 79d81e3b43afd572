//! The task inbox: web pages over a [`TaskStore`] where people see every
//! tracked task, cancel one, and answer the questions tasks ask.
//!
//! [`router`] gives an [`axum::Router`] to mount in an application's own
//! HTTP server (feature `inbox`); `mcp-tasks serve` serves it on its own.
//! The pages need only the store: an answer or a cancel is written to the
//! store, and the worker that next claims the record sends it to the
//! server.
//!
//! ```no_run
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! use mcp_tasks::inbox::{Options, router};
//! use mcp_tasks::store::MemoryStore;
//!
//! let store = MemoryStore::new(); // the workers' store
//! let app = axum::Router::new().nest("/inbox", router(store, Options::new().base("/inbox")));
//! # let _ = app;
//! # Ok(()) }
//! ```
//!
//! # Pages
//!
//! - **Tasks** (`/tasks`): every record, newest first, in pages, filtered
//!   by state, scope, tool, server and the caller's key, with the counts
//!   per state.
//! - **A task** (`/tasks/ID`, by the record's id): everything its record
//!   holds, its outcome, its questions with their forms, and a button to
//!   cancel it, or to forget it once its outcome was delivered. A large
//!   result is cut, with a link to the whole.
//! - **Questions** (`/questions`): every open question, oldest first, each
//!   with a form built from its requested schema (or a link and "done",
//!   for a URL), answered through [`TaskStore::answer`]: its checks and its
//!   first-answer-wins rule hold, and a refused answer shows the reason
//!   next to the field it names.
//! - **Metrics** (`/metrics`): the Prometheus text format: records by
//!   state, records asking and the age of the oldest question, records
//!   overdue.
//!
//! The task and list pages refresh themselves every second and a half
//! while open (a small script polls the same page), and leave a form alone
//! while a person fills it in.
//!
//! # Safe by default
//!
//! - Without an [access token](Options::access_token) the router answers
//!   only requests addressed to a loopback name (`localhost`, `127.0.0.1`,
//!   `[::1]`, by the `Host` header), which also turns away another site
//!   that points its own name at this address (DNS rebinding). Mounted on
//!   any other address, it needs a token: a request carries it as a bearer
//!   token, or in the cookie that opening any page with `?token=…` once
//!   sets (`HttpOnly`, `SameSite=Strict`).
//! - Every change is a POST, refused when it comes from another site
//!   (`Sec-Fetch-Site`, else `Origin`, against the request's host).
//! - Everything that came from a server or a store (status messages,
//!   questions, schemas, results) is escaped; every answer carries a strict
//!   Content-Security-Policy (the page's own script and style only), and
//!   may not be framed.
//! - Task ids are secrets: a page shows only their redacted digest, and
//!   addresses name the record's id, never the task's.

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use axum::Router;
use axum::extract::{FromRequestParts, Path};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware;
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{get, post};

use crate::store::{RecordId, StoreError, TaskStore};

mod answer;
mod form;
mod guard;
mod html;
mod metrics;
mod questions;
mod task;
mod tasks;
#[cfg(test)]
mod tests;
mod timeline;

use html::{Nav, esc, page};

/// How the inbox is served: what [`router`] takes.
#[derive(Clone)]
pub struct Options {
    base: String,
    access_token: Option<String>,
    page_size: usize,
    overdue_after: Duration,
}

impl std::fmt::Debug for Options {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Options")
            .field("base", &self.base)
            .field("access_token", &self.access_token.as_ref().map(|_| "…"))
            .field("page_size", &self.page_size)
            .field("overdue_after", &self.overdue_after)
            .finish()
    }
}

impl Default for Options {
    fn default() -> Self {
        Options::new()
    }
}

impl Options {
    /// Loopback only, no token, 50 records a page, overdue after a minute.
    pub fn new() -> Options {
        Options {
            base: String::new(),
            access_token: None,
            page_size: 50,
            overdue_after: Duration::from_secs(60),
        }
    }

    /// The path the router is mounted under (`/inbox` for
    /// `Router::nest("/inbox", …)`), for the links its pages write.
    /// Default: none (mounted at the root).
    pub fn base(mut self, path: impl Into<String>) -> Options {
        self.base = path.into().trim_end_matches('/').to_owned();
        self
    }

    /// The access token every request must carry (a bearer token, or the
    /// cookie `?token=…` sets). Needed on any address other than loopback;
    /// make it long and random.
    pub fn access_token(mut self, token: impl Into<String>) -> Options {
        self.access_token = Some(token.into());
        self
    }

    /// How many records a page of the task list shows (at least 1).
    pub fn page_size(mut self, n: usize) -> Options {
        self.page_size = n.max(1);
        self
    }

    /// How long past its due time an open record counts as overdue in the
    /// metrics and the counts: a few of the workers' intervals.
    pub fn overdue_after(mut self, after: Duration) -> Options {
        self.overdue_after = after;
        self
    }
}

/// What every handler shares, whatever the store.
struct Shared {
    options: Options,
}

/// A handler's state: the store and the options.
struct App<S> {
    store: S,
    shared: Arc<Shared>,
}

impl<S> App<S> {
    fn base(&self) -> &str {
        &self.shared.options.base
    }
}

/// The inbox's pages over `store`, to mount in an application's router
/// (see the [module documentation](self)).
pub fn router<S: TaskStore>(store: S, options: Options) -> Router {
    let shared = Arc::new(Shared { options });
    let app = Arc::new(App {
        store,
        shared: Arc::clone(&shared),
    });
    let base = shared.options.base.clone();
    Router::new()
        .route(
            "/",
            get(move || async move { Redirect::to(&format!("{base}/tasks")) }),
        )
        .route("/tasks", get(tasks::page::<S>))
        .route("/tasks/{id}", get(task::page::<S>))
        .route("/tasks/{id}/result", get(task::result::<S>))
        .route("/tasks/{id}/cancel", post(task::cancel::<S>))
        .route("/tasks/{id}/forget", post(task::forget::<S>))
        .route("/tasks/{id}/answer", post(answer::answer::<S>))
        .route("/questions", get(questions::page::<S>))
        .route("/metrics", get(metrics::metrics::<S>))
        .route("/assets/style.css", get(style))
        .route("/assets/live.js", get(script))
        .fallback(not_found::<S>)
        .with_state(app)
        .layer(middleware::from_fn_with_state(shared, guard::guard))
}

/// An HTML page as a response.
struct Page(String);

impl IntoResponse for Page {
    fn into_response(self) -> Response {
        ([(header::CONTENT_TYPE, "text/html; charset=utf-8")], self.0).into_response()
    }
}

/// A page, or only its live region when `live.js` asks for it.
fn respond(
    app_base: &str,
    headers: &HeaderMap,
    status: StatusCode,
    title: &str,
    nav: Nav,
    live_url: &str,
    body: String,
) -> Response {
    if headers.contains_key("x-inbox-live") {
        return (status, Page(body)).into_response();
    }
    (status, Page(page(app_base, title, nav, live_url, &body))).into_response()
}

/// A page that says what went wrong, with the status that fits.
fn trouble(base: &str, status: StatusCode, title: &str, what: &str) -> Response {
    let body = format!(
        "<h1>{}</h1><p class=\"error\">{}</p>",
        esc(title),
        esc(what)
    );
    (status, Page(page(base, title, Nav::None, "", &body))).into_response()
}

/// A store error as a page: 404 for no such record, 503 for a store that
/// is away, 500 otherwise.
fn store_trouble(base: &str, e: &StoreError) -> Response {
    if e.is_not_found() {
        trouble(base, StatusCode::NOT_FOUND, "No such task", &e.to_string())
    } else if e.is_unavailable() {
        trouble(
            base,
            StatusCode::SERVICE_UNAVAILABLE,
            "The task store is away",
            &format!("{e}. The page will work again once the store is back."),
        )
    } else {
        trouble(
            base,
            StatusCode::INTERNAL_SERVER_ERROR,
            "The task store failed",
            &e.to_string(),
        )
    }
}

/// The 404 page for a record id the store does not hold.
fn no_record(base: &str, id: RecordId) -> Response {
    trouble(
        base,
        StatusCode::NOT_FOUND,
        "No such task",
        &format!("There is no task record {id}."),
    )
}

/// The record id an address names (`/tasks/{id}…`), taken from its path;
/// an id that is not a number is answered with the 404 page of
/// [`record_id`].
struct Addressed(RecordId);

impl<S: TaskStore> FromRequestParts<Arc<App<S>>> for Addressed {
    type Rejection = Response;

    async fn from_request_parts(
        parts: &mut Parts,
        app: &Arc<App<S>>,
    ) -> Result<Self, Self::Rejection> {
        let Path(raw) = Path::<String>::from_request_parts(parts, app)
            .await
            .map_err(IntoResponse::into_response)?;
        record_id(app.base(), &raw)
            .map(Addressed)
            .map_err(|page| *page)
    }
}

/// A record id from an address, or a 404 page.
fn record_id(base: &str, raw: &str) -> Result<RecordId, Box<Response>> {
    raw.parse::<i64>().map(RecordId).map_err(|_| {
        Box::new(trouble(
            base,
            StatusCode::NOT_FOUND,
            "No such task",
            &format!("{:?} is not a task record's number.", html::cut(raw, 40)),
        ))
    })
}

fn now() -> SystemTime {
    SystemTime::now()
}

async fn style() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/css; charset=utf-8")],
        include_str!("assets/style.css"),
    )
}

async fn script() -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "text/javascript; charset=utf-8")],
        include_str!("assets/live.js"),
    )
}

async fn not_found<S>(axum::extract::State(app): axum::extract::State<Arc<App<S>>>) -> Response {
    trouble(
        app.base(),
        StatusCode::NOT_FOUND,
        "Not found",
        "There is no such page.",
    )
}
