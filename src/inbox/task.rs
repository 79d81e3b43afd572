//! A task's page: its record, its outcome, its questions, its history,
//! and cancel.

use std::fmt::Write;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};

use super::html::{Nav, cut, esc, utc, when};
use super::questions::{Back, Refused, question};
use super::tasks::{status_class, status_word};
use super::timeline::timeline;
use super::{Addressed, App, no_record, now, respond, store_trouble, trouble};
use crate::store::{Ending, Forgotten, RecordState, TaskRecord, TaskStore};

/// The most characters of a result a page shows; the rest is behind a
/// link to the whole.
const SHOWN: usize = 20_000;

pub(super) async fn page<S: TaskStore>(
    State(app): State<Arc<App<S>>>,
    headers: HeaderMap,
    Addressed(id): Addressed,
) -> Response {
    let base = app.base();
    match app.store.get(id).await {
        Ok(Some(r)) => render(base, &headers, StatusCode::OK, &r, None),
        Ok(None) => no_record(base, id),
        Err(e) if e.is_corrupt() => trouble(
            base,
            StatusCode::INTERNAL_SERVER_ERROR,
            "A corrupt record",
            &format!("{e}. It is left as it is, for a person to look at."),
        ),
        Err(e) => store_trouble(base, &e),
    }
}

/// The page of record `r`, with `refused` shown next to its question's form.
pub(super) fn render(
    base: &str,
    headers: &HeaderMap,
    status: StatusCode,
    r: &TaskRecord,
    refused: Option<&Refused>,
) -> Response {
    let now = now();
    let mut body = String::with_capacity(8 * 1024);
    let _ = write!(
        body,
        "<h1>Task {} <small>{}</small> <span class=\"status {}\" id=\"status\">{}</span></h1>",
        r.id,
        esc(&cut(&r.tool, 200)),
        status_class(r),
        esc(&status_word(r))
    );
    if let Some(m) = &r.status_message {
        let _ = write!(
            body,
            "<p class=\"message\" id=\"message\">{}</p>",
            esc(&cut(m, 4_000))
        );
    }
    let state = match RecordState::of(r) {
        RecordState::Open => "open",
        RecordState::Undelivered => "ended; the outcome awaits delivery to the application",
        RecordState::Delivered => "ended and delivered",
    };
    body.push_str("<dl class=\"record\">");
    let mut item = |k: &str, v: String| {
        let _ = write!(body, "<dt>{k}</dt><dd>{v}</dd>");
    };
    item("record", state.into());
    item("scope", esc(&r.scope).to_string());
    if let Some(k) = &r.key {
        item(
            "key",
            format!("{}{}", esc(k), if r.unique_key { " (unique)" } else { "" }),
        );
    }
    item(
        "task",
        if r.is_started() {
            format!(
                "<code>{}</code> (redacted)",
                r.reference.task_id().redacted()
            )
        } else {
            "not started: the call's answer was never recorded".into()
        },
    );
    if let Some(s) = r.reference.server() {
        item("server", esc(s).to_string());
    }
    if let Some(v) = r.reference.protocol_version() {
        item("protocol", esc(v).to_string());
    }
    item(
        "created",
        format!("{} ({})", when(r.created, now), utc(r.created)),
    );
    item("updated", when(r.updated, now));
    if r.ending.is_none() {
        item("next read", when(r.due, now));
    }
    item("failed reads", r.failed_reads.to_string());
    if let Some(l) = &r.lease {
        if l.until > now {
            item(
                "worker",
                format!("{} (holds it until {})", esc(&l.owner), when(l.until, now)),
            );
        } else {
            item("worker", format!("{} (last to hold it)", esc(&l.owner)));
        }
    }
    if r.cancel_requested {
        item("cancel", "asked for".into());
    }
    if let Some(d) = r.schedule.deadline() {
        item("lifetime ends", when(d, now));
    }
    body.push_str("</dl>");
    if r.ending.is_none() && !r.cancel_requested {
        let _ = write!(
            body,
            "<form method=\"post\" action=\"{}/tasks/{}/cancel\" class=\"cancel\">\
             <button class=\"danger\" id=\"cancel\">Cancel this task</button></form>",
            esc(base),
            r.id
        );
    }
    if RecordState::of(r) == RecordState::Delivered {
        let _ = write!(
            body,
            "<form method=\"post\" action=\"{}/tasks/{}/forget\" class=\"cancel\">\
             <button class=\"danger\" id=\"forget\">Forget this record</button> \
             <span class=\"hint\">(its outcome was delivered; the record goes from the \
             store)</span></form>",
            esc(base),
            r.id
        );
    }
    if let Some(e) = &r.ending {
        outcome(&mut body, base, r, e);
    }
    if !r.questions.is_empty() {
        body.push_str("<h2>Questions</h2>");
        for (key, q) in r.questions.iter().rev() {
            question(&mut body, base, r, key, q, Back::Task, refused, now);
        }
    }
    timeline(&mut body, &r.history, now);
    let live = format!("{base}/tasks/{}", r.id);
    respond(
        base,
        headers,
        status,
        &format!("Task {}", r.id),
        Nav::None,
        &live,
        body,
    )
}

fn outcome(body: &mut String, base: &str, r: &TaskRecord, e: &Ending) {
    body.push_str("<h2>Outcome</h2><div class=\"outcome\" id=\"outcome\">");
    let whole = |body: &mut String, len: usize| {
        if len > SHOWN {
            let _ = write!(
                body,
                "<p class=\"hint\">Cut at {SHOWN} characters. <a href=\"{}/tasks/{}/result\">\
                 The whole outcome</a> ({len} bytes as JSON).</p>",
                esc(base),
                r.id
            );
        }
    };
    match e {
        Ending::Completed { result } => {
            if result.is_error {
                body.push_str("<p class=\"bad\">The tool reported an error.</p>");
            } else {
                body.push_str("<p class=\"ok\">Completed.</p>");
            }
            let text = result.joined_text();
            if !text.is_empty() {
                let _ = write!(
                    body,
                    "<pre class=\"text\">{}</pre>",
                    esc(&cut(&text, SHOWN))
                );
                whole(body, text.len());
            }
            if let Some(s) = &result.structured_content {
                let json = serde_json::to_string_pretty(s).unwrap_or_default();
                let _ = write!(
                    body,
                    "<h3>Structured content</h3><pre class=\"json\">{}</pre>",
                    esc(&cut(&json, SHOWN))
                );
                whole(body, json.len());
            }
        }
        Ending::Failed { error } => {
            let _ = write!(
                body,
                "<p class=\"bad\">Failed: error {} — {}</p>",
                error.code,
                esc(&cut(&error.message, 4_000))
            );
            if let Some(d) = &error.data {
                let json = serde_json::to_string_pretty(d).unwrap_or_default();
                let _ = write!(
                    body,
                    "<pre class=\"json\">{}</pre>",
                    esc(&cut(&json, SHOWN))
                );
                whole(body, json.len());
            }
        }
        Ending::Cancelled => body.push_str("<p class=\"bad\">Cancelled.</p>"),
        Ending::Expired => {
            body.push_str("<p class=\"bad\">Expired: its lifetime passed before it finished.</p>")
        }
        Ending::StartUnknown => body.push_str(
            "<p class=\"bad\">Whether the task was ever started is unknown: the call was not \
             made again.</p>",
        ),
        Ending::Unreachable { reason } => {
            let _ = write!(
                body,
                "<p class=\"bad\">Unreachable: {}</p>",
                esc(&cut(reason, 4_000))
            );
        }
    }
    body.push_str("</div>");
}

/// The whole outcome of a record, as JSON (served as text, never run).
pub(super) async fn result<S: TaskStore>(
    State(app): State<Arc<App<S>>>,
    Addressed(id): Addressed,
) -> Response {
    let base = app.base();
    match app.store.get(id).await {
        Ok(Some(TaskRecord {
            ending: Some(e), ..
        })) => (
            [(header::CONTENT_TYPE, "application/json")],
            serde_json::to_string_pretty(&e).unwrap_or_default(),
        )
            .into_response(),
        Ok(_) => trouble(
            base,
            StatusCode::NOT_FOUND,
            "No outcome",
            &format!("Task record {id} has no outcome (yet)."),
        ),
        Err(e) => store_trouble(base, &e),
    }
}

/// Asks for the task to be cancelled; the worker that next claims it
/// sends `tasks/cancel`.
pub(super) async fn cancel<S: TaskStore>(
    State(app): State<Arc<App<S>>>,
    Addressed(id): Addressed,
) -> Response {
    let base = app.base();
    match app.store.request_cancel(id, now()).await {
        Ok(true) => Redirect::to(&format!("{base}/tasks/{id}")).into_response(),
        Ok(false) => match app.store.get(id).await {
            // Ended already: its page says how.
            Ok(Some(_)) => Redirect::to(&format!("{base}/tasks/{id}")).into_response(),
            Ok(None) => no_record(base, id),
            Err(e) => store_trouble(base, &e),
        },
        Err(e) => store_trouble(base, &e),
    }
}

/// Forgets a delivered record (its outcome was delivered, nothing is lost);
/// any other record stays, with a page that says why.
pub(super) async fn forget<S: TaskStore>(
    State(app): State<Arc<App<S>>>,
    Addressed(id): Addressed,
) -> Response {
    let base = app.base();
    let delivered = match app.store.get(id).await {
        Ok(Some(r)) => RecordState::of(&r) == RecordState::Delivered,
        Ok(None) => false,
        Err(e) => return store_trouble(base, &e),
    };
    if !delivered {
        return trouble(
            base,
            StatusCode::CONFLICT,
            "Not forgotten",
            &format!(
                "Task record {id} is not a delivered one: only a record whose outcome was \
                 delivered is forgotten here."
            ),
        );
    }
    match app.store.forget(id, now()).await {
        Ok(Forgotten::Removed) | Ok(Forgotten::Missing) => {
            Redirect::to(&format!("{base}/tasks")).into_response()
        }
        Ok(Forgotten::Held { owner, .. }) => trouble(
            base,
            StatusCode::CONFLICT,
            "Not forgotten",
            &format!("Worker {owner} holds task record {id}; try again later."),
        ),
        Err(e) => store_trouble(base, &e),
    }
}
