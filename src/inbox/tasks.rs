//! The tasks page: every record, newest first, in pages, with filters and
//! the counts per state.

use std::fmt::Write;
use std::sync::Arc;

use axum::extract::{Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use serde::Deserialize;

use super::html::{Nav, cut, esc, query_value, when};
use super::{App, now, respond, store_trouble};
use crate::protocol::TaskStatus;
use crate::store::{Filter, RecordId, RecordState, TaskRecord, TaskStore};

/// The filters, as the page's form sends them.
#[derive(Debug, Default, Deserialize)]
pub(super) struct TasksQuery {
    #[serde(default)]
    state: String,
    #[serde(default)]
    scope: String,
    #[serde(default)]
    tool: String,
    #[serde(default)]
    key: String,
    #[serde(default)]
    server: String,
    #[serde(default)]
    before: Option<String>,
}

impl TasksQuery {
    /// The query string of these filters, `before` left out.
    fn filters(&self) -> String {
        let mut q = String::new();
        for (k, v) in [
            ("state", &self.state),
            ("scope", &self.scope),
            ("tool", &self.tool),
            ("server", &self.server),
            ("key", &self.key),
        ] {
            if !v.is_empty() {
                let _ = write!(
                    q,
                    "{}{k}={}",
                    if q.is_empty() { "" } else { "&" },
                    query_value(v)
                );
            }
        }
        q
    }
}

/// The states the filter offers: (value, label).
const STATES: [(&str, &str); 8] = [
    ("", "any"),
    ("open", "open"),
    ("asking", "asking"),
    ("undelivered", "ended, undelivered"),
    ("delivered", "ended, delivered"),
    ("completed", "ended: completed"),
    ("failed", "ended: failed"),
    ("cancelled", "ended: cancelled"),
];

pub(super) async fn page<S: TaskStore>(
    State(app): State<Arc<App<S>>>,
    headers: HeaderMap,
    Query(q): Query<TasksQuery>,
) -> Response {
    let base = app.base();
    let size = app.shared.options.page_size;
    let mut filter = Filter::all().newest_first().limit(size + 1);
    match q.state.as_str() {
        "open" => filter = filter.state(RecordState::Open),
        "asking" => filter = filter.asking(),
        "undelivered" => filter = filter.state(RecordState::Undelivered),
        "delivered" => filter = filter.state(RecordState::Delivered),
        // A status an ending gives: only ended records have it.
        "completed" => filter = filter.status(TaskStatus::Completed),
        "failed" => filter = filter.status(TaskStatus::Failed),
        "cancelled" => filter = filter.status(TaskStatus::Cancelled),
        _ => {}
    }
    for (value, set) in [
        (&q.scope, Filter::scope as fn(Filter, String) -> Filter),
        (&q.tool, Filter::tool),
        (&q.server, Filter::server),
        (&q.key, Filter::key),
    ] {
        if !value.is_empty() {
            filter = set(filter, value.clone());
        }
    }
    if let Some(before) = q.before.as_deref().and_then(|b| b.parse::<i64>().ok()) {
        filter = filter.before(RecordId(before));
    }
    let now = now();
    let counts = app
        .store
        .counts(now - app.shared.options.overdue_after)
        .await;
    let records = match app.store.list(&filter).await {
        Ok(r) => r,
        Err(e) => return store_trouble(base, &e),
    };
    let more = records.len() > size;
    let mut body = String::with_capacity(16 * 1024);
    body.push_str("<h1>Tasks</h1>");
    match counts {
        Ok(c) => {
            let _ = write!(
                body,
                "<p class=\"counts\"><span>{} open</span> <span>{} asking</span> \
                 <span>{} overdue</span> <span>{} ended, undelivered</span> \
                 <span>{} ended, delivered</span></p>",
                c.open, c.asking, c.overdue, c.undelivered, c.delivered
            );
        }
        Err(e) => {
            let _ = write!(
                body,
                "<p class=\"error\">No counts: {}</p>",
                esc(&e.to_string())
            );
        }
    }
    filters_form(&mut body, base, &q);
    body.push_str(
        "<table class=\"tasks\"><thead><tr><th>#</th><th>tool</th><th>status</th>\
         <th>message</th><th>scope</th><th>key</th><th>created</th><th>next read</th>\
         <th>failed reads</th><th>worker</th><th>task</th></tr></thead><tbody>",
    );
    let mut last = None;
    let shown = records.len().min(size);
    for record in records.into_iter().take(size) {
        match record {
            Ok(r) => {
                last = Some(r.id);
                row(&mut body, base, &r, now);
            }
            Err(e) => {
                last = e.record().or(last);
                let _ = write!(
                    body,
                    "<tr class=\"corrupt\"><td>{}</td><td colspan=\"10\">corrupt: {}</td></tr>",
                    e.record().map_or_else(|| "?".into(), |id| id.to_string()),
                    esc(&e.to_string())
                );
            }
        }
    }
    if shown == 0 {
        body.push_str("<tr><td colspan=\"11\" class=\"hint\">No task records.</td></tr>");
    }
    body.push_str("</tbody></table>");
    if more && let Some(last) = last {
        let filters = q.filters();
        let _ = write!(
            body,
            "<p class=\"pages\"><a href=\"{}/tasks?{}{}before={}\">Older →</a></p>",
            esc(base),
            esc(&filters),
            if filters.is_empty() { "" } else { "&amp;" },
            last
        );
    }
    let mut live = format!("{base}/tasks");
    let filters = q.filters();
    let query = match q.before.as_deref() {
        Some(b) if !b.is_empty() => format!(
            "{filters}{}before={}",
            if filters.is_empty() { "" } else { "&" },
            query_value(b)
        ),
        _ => filters,
    };
    if !query.is_empty() {
        live.push('?');
        live.push_str(&query);
    }
    respond(
        base,
        &headers,
        StatusCode::OK,
        "Tasks",
        Nav::Tasks,
        &live,
        body,
    )
}

fn filters_form(body: &mut String, base: &str, q: &TasksQuery) {
    let _ = write!(
        body,
        "<form class=\"filters\" method=\"get\" action=\"{}/tasks\">",
        esc(base)
    );
    body.push_str("<label>state <select name=\"state\">");
    for (value, label) in STATES {
        let _ = write!(
            body,
            "<option value=\"{value}\"{}>{label}</option>",
            if q.state == value { " selected" } else { "" }
        );
    }
    body.push_str("</select></label>");
    for (name, value) in [
        ("scope", &q.scope),
        ("tool", &q.tool),
        ("server", &q.server),
        ("key", &q.key),
    ] {
        let _ = write!(
            body,
            "<label>{name} <input name=\"{name}\" value=\"{}\"></label>",
            esc(value)
        );
    }
    body.push_str("<button>Filter</button></form>");
}

/// The status a row shows: how the task ended, else the server's status.
pub(super) fn status_word(r: &TaskRecord) -> String {
    match &r.ending {
        Some(crate::store::Ending::Completed { result }) if result.is_error => "tool error".into(),
        Some(e) => e.name().replace('_', " "),
        None if r.cancel_requested => format!("{} (cancel asked)", r.status.as_str()),
        None => r.status.as_str().replace('_', " "),
    }
}

/// The CSS class of a status: `open`, `asking`, `ok`, `bad`.
pub(super) fn status_class(r: &TaskRecord) -> &'static str {
    match &r.ending {
        Some(crate::store::Ending::Completed { result }) if !result.is_error => "ok",
        Some(_) => "bad",
        None if r.open_questions().next().is_some() => "asking",
        None => "open",
    }
}

fn row(body: &mut String, base: &str, r: &TaskRecord, now: std::time::SystemTime) {
    let worker = r
        .lease
        .as_ref()
        .filter(|l| l.until > now)
        .map_or(String::new(), |l| esc(&l.owner).to_string());
    let due = if r.ending.is_none() {
        when(r.due, now)
    } else {
        String::new()
    };
    let _ = write!(
        body,
        "<tr><td><a href=\"{base}/tasks/{id}\">{id}</a></td><td>{tool}</td>\
         <td><span class=\"status {class}\">{status}</span></td><td class=\"message\">{message}</td>\
         <td>{scope}</td><td>{key}</td><td>{created}</td><td>{due}</td><td>{failed}</td>\
         <td>{worker}</td><td><code>{task}</code></td></tr>",
        base = esc(base),
        id = r.id,
        tool = esc(&cut(&r.tool, 80)),
        class = status_class(r),
        status = esc(&status_word(r)),
        message = esc(&cut(r.status_message.as_deref().unwrap_or(""), 200)),
        scope = esc(&cut(&r.scope, 60)),
        key = esc(&cut(r.key.as_deref().unwrap_or(""), 60)),
        created = when(r.created, now),
        failed = r.failed_reads,
        task = if r.is_started() {
            r.reference.task_id().redacted()
        } else {
            "(not started)".into()
        },
    );
}
