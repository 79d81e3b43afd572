//! `GET /metrics`: how the store stands, in the Prometheus text format.

use std::fmt::Write;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::{App, now};
use crate::store::{Counts, TaskStore};

/// The exposition format's content type.
const TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

pub(super) async fn metrics<S: TaskStore>(State(app): State<Arc<App<S>>>) -> Response {
    let now = now();
    match app
        .store
        .counts(now - app.shared.options.overdue_after)
        .await
    {
        Ok(c) => ([(header::CONTENT_TYPE, TEXT)], text(&c, now)).into_response(),
        Err(e) => (
            StatusCode::SERVICE_UNAVAILABLE,
            [(header::CONTENT_TYPE, TEXT)],
            format!("# the task store did not answer: {e}\n"),
        )
            .into_response(),
    }
}

/// The exposition of `c`, read at `now`.
pub(super) fn text(c: &Counts, now: std::time::SystemTime) -> String {
    let mut out = String::with_capacity(1024);
    out.push_str(
        "# HELP mcp_tasks_records Task records, by state: open (the task runs), undelivered \
         (it ended; the application has not taken its outcome), delivered.\n\
         # TYPE mcp_tasks_records gauge\n",
    );
    for (state, n) in [
        ("open", c.open),
        ("undelivered", c.undelivered),
        ("delivered", c.delivered),
    ] {
        let _ = writeln!(out, "mcp_tasks_records{{state=\"{state}\"}} {n}");
    }
    let age = c
        .asking_since
        .and_then(|t| now.duration_since(t).ok())
        .map_or(0.0, |d| d.as_secs_f64());
    let _ = write!(
        out,
        "# HELP mcp_tasks_records_asking Open task records with a question that waits for an \
         answer.\n# TYPE mcp_tasks_records_asking gauge\nmcp_tasks_records_asking {}\n\
         # HELP mcp_tasks_oldest_question_age_seconds How long the oldest question that waits \
         for an answer has waited (0 when none does).\n\
         # TYPE mcp_tasks_oldest_question_age_seconds gauge\n\
         mcp_tasks_oldest_question_age_seconds {age:.3}\n\
         # HELP mcp_tasks_records_overdue Open task records whose next read is overdue: workers \
         falling behind, or none running.\n# TYPE mcp_tasks_records_overdue gauge\n\
         mcp_tasks_records_overdue {}\n\
         # HELP mcp_tasks_undelivered_endings Ended tasks whose outcome the application has not \
         taken.\n# TYPE mcp_tasks_undelivered_endings gauge\nmcp_tasks_undelivered_endings {}\n",
        c.asking, c.overdue, c.undelivered
    );
    out
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, SystemTime};

    use super::*;

    #[test]
    fn every_figure_is_exposed() {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000_000);
        let c = Counts {
            open: 3,
            asking: 1,
            undelivered: 2,
            delivered: 7,
            overdue: 1,
            asking_since: Some(now - Duration::from_millis(90_500)),
        };
        let t = text(&c, now);
        for line in [
            "mcp_tasks_records{state=\"open\"} 3",
            "mcp_tasks_records{state=\"undelivered\"} 2",
            "mcp_tasks_records{state=\"delivered\"} 7",
            "mcp_tasks_records_asking 1",
            "mcp_tasks_oldest_question_age_seconds 90.500",
            "mcp_tasks_records_overdue 1",
            "mcp_tasks_undelivered_endings 2",
        ] {
            assert!(t.lines().any(|l| l == line), "{line} in\n{t}");
        }
        // Every sample has its HELP and TYPE.
        assert_eq!(t.matches("# TYPE").count(), 5);
    }
}
