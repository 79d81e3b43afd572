//! The questions page: every open question with a form built from what
//! it asks (answered through `answer.rs`).

use std::fmt::Write;
use std::sync::Arc;
use std::time::SystemTime;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;

use super::form::{self, Entered};
use super::html::{Nav, cut, esc, when};
use super::{App, now, respond, store_trouble};
use crate::store::{Filter, Question, QuestionKind, TaskRecord, TaskStore};

/// The most records the questions page shows, the oldest question first
/// (each with its form: about 0.8 KB a question).
const SHOWN: usize = 50;

/// Which page an answer's form was on, to go back to it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Back {
    Task,
    Questions,
}

/// An answer the store refused, to show next to its form.
#[derive(Debug)]
pub(super) struct Refused {
    pub(super) key: String,
    pub(super) reason: String,
    /// The field the reason names, if any.
    pub(super) field: Option<String>,
    pub(super) entered: Entered,
}

pub(super) async fn page<S: TaskStore>(
    State(app): State<Arc<App<S>>>,
    headers: HeaderMap,
) -> Response {
    list(&app, &headers, StatusCode::OK, None).await
}

pub(super) async fn list<S: TaskStore>(
    app: &App<S>,
    headers: &HeaderMap,
    status: StatusCode,
    refused: Option<(&TaskRecord, &Refused)>,
) -> Response {
    let base = app.base();
    let records = match app
        .store
        .list(&Filter::all().asking().limit(SHOWN + 1))
        .await
    {
        Ok(r) => r,
        Err(e) => return store_trouble(base, &e),
    };
    let now = now();
    let mut body = String::with_capacity(16 * 1024);
    body.push_str("<h1>Questions</h1>");
    if let Some((r, why)) = refused
        && !records.iter().flatten().any(|x| x.id == r.id)
    {
        // The question closed since: say so where the form was.
        let _ = write!(
            body,
            "<p class=\"refusal\" role=\"alert\">Task {}: {}</p>",
            r.id,
            esc(&why.reason)
        );
    }
    let more = records.len() > SHOWN;
    let mut asked = 0;
    for record in records.iter().take(SHOWN) {
        match record {
            Ok(r) => {
                for (key, q) in r.open_questions() {
                    asked += 1;
                    let why = refused.filter(|(x, _)| x.id == r.id).map(|(_, w)| w);
                    question(&mut body, base, r, key, q, Back::Questions, why, now);
                }
                // A refused question that is no longer open.
                if let Some((x, why)) = refused
                    && x.id == r.id
                    && r.open_questions().all(|(k, _)| k != why.key)
                {
                    let _ = write!(
                        body,
                        "<p class=\"refusal\" role=\"alert\">Task {}: {}</p>",
                        r.id,
                        esc(&why.reason)
                    );
                }
            }
            Err(e) => {
                let _ = write!(
                    body,
                    "<section class=\"question corrupt\"><p>Task {}: corrupt: {}</p></section>",
                    e.record().map_or_else(|| "?".into(), |id| id.to_string()),
                    esc(&e.to_string())
                );
            }
        }
    }
    if asked == 0 {
        body.push_str("<p class=\"hint\" id=\"none\">No question waits for an answer.</p>");
    }
    if more {
        let _ = write!(
            body,
            "<p class=\"hint\">The {SHOWN} tasks that have waited longest; more are asking \
             (<a href=\"{}/tasks?state=asking\">all of them</a>).</p>",
            esc(base)
        );
    }
    let live = format!("{base}/questions");
    respond(
        base,
        headers,
        status,
        "Questions",
        Nav::Questions,
        &live,
        body,
    )
}

/// One question of record `r`: what it asks, and while it is open and
/// unanswered, the form that answers it.
#[allow(clippy::too_many_arguments)]
pub(super) fn question(
    body: &mut String,
    base: &str,
    r: &TaskRecord,
    key: &str,
    q: &Question,
    back: Back,
    refused: Option<&Refused>,
    now: SystemTime,
) {
    let answer = r.answers.get(key);
    let open = !q.is_closed() && answer.is_none() && r.ending.is_none();
    let state = match (answer, q.is_closed()) {
        (Some(a), _) if a.taken => "answered; the server took it",
        (Some(_), _) => "answered; waiting for a worker to send it",
        (None, true) => "closed",
        (None, false) if r.ending.is_some() => "closed: the task ended",
        (None, false) => "open",
    };
    let _ = write!(
        body,
        "<section class=\"question{}\" data-key=\"{}\"><header><a href=\"{}/tasks/{}\">Task {}</a> \
         <span>{}</span> asks ({}, {}): <span class=\"qstate\">{}</span></header>",
        if open { " open" } else { "" },
        esc(key),
        esc(base),
        r.id,
        r.id,
        esc(&cut(&r.tool, 80)),
        q.kind(),
        when(q.first_seen, now),
        state
    );
    if let Some(m) = q.message() {
        let _ = write!(body, "<p class=\"message\">{}</p>", esc(&cut(m, 4_000)));
    }
    let refused = refused.filter(|w| w.key == key);
    if !open {
        if let Some(w) = refused {
            let _ = write!(
                body,
                "<p class=\"refusal\" role=\"alert\">{}</p>",
                esc(&w.reason)
            );
        }
        body.push_str("</section>");
        return;
    }
    match q.kind() {
        QuestionKind::Form | QuestionKind::Url => {}
        other => {
            let json = serde_json::to_string_pretty(&q.request).unwrap_or_default();
            let _ = write!(
                body,
                "<p class=\"hint\">A {other} request: the worker's input handlers answer it; \
                 this page cannot.</p><pre class=\"json\">{}</pre></section>",
                esc(&cut(&json, 4_000))
            );
            return;
        }
    }
    let _ = write!(
        body,
        "<form method=\"post\" action=\"{}/tasks/{}/answer\" class=\"answer\">\
         <input type=\"hidden\" name=\"_key\" value=\"{}\">\
         <input type=\"hidden\" name=\"_back\" value=\"{}\">",
        esc(base),
        r.id,
        esc(key),
        match back {
            Back::Task => "task",
            Back::Questions => "questions",
        }
    );
    let id = format!("r{}-{}", r.id, fnv(key));
    let general = refused.filter(|w| w.field.is_none());
    if let Some(w) = general {
        let _ = write!(
            body,
            "<p class=\"refusal\" role=\"alert\">{}</p>",
            esc(&w.reason)
        );
    }
    let accept = match (q.schema(), q.url()) {
        (Some(schema), _) => {
            let field = refused.and_then(|w| w.field.as_deref().map(|f| (f, w.reason.as_str())));
            form::render(body, &id, schema, refused.map(|w| &w.entered), field);
            "Accept"
        }
        (None, Some(url)) => {
            let safe = url.starts_with("https://") || url.starts_with("http://");
            if safe {
                let _ = write!(
                    body,
                    "<p>Open <a href=\"{u}\" rel=\"noopener noreferrer\" target=\"_blank\">{t}</a>, \
                     then say when it is done.</p>",
                    u = esc(url),
                    t = esc(&cut(url, 200))
                );
            } else {
                let _ = write!(
                    body,
                    "<p>Visit (not a web address, so not a link): <code>{}</code></p>",
                    esc(&cut(url, 200))
                );
            }
            "Done"
        }
        (None, None) => "Accept",
    };
    let _ = write!(
        body,
        "<div class=\"actions\"><button name=\"_action\" value=\"accept\">{accept}</button> \
         <button name=\"_action\" value=\"decline\" formnovalidate>Decline</button> \
         <button name=\"_action\" value=\"cancel\" formnovalidate>Cancel</button></div>\
         </form></section>"
    );
}

/// A short digest of a question's key, for element ids.
fn fnv(key: &str) -> String {
    format!("{:08x}", crate::protocol::fnv::fnv1a_32(key.as_bytes()))
}
