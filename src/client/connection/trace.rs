//! The request span: one `mcp_tasks.request` span per request the
//! connection sends, with its method, id, duration (in microseconds) and, on failure, the
//! kind of error.

use std::future::Future;
use std::pin::Pin;

use tokio::time::Instant;
use tracing::field::Empty;
use tracing::{Instrument, Span};

use crate::error::Error;

/// The span of one request, a child of the current span (the task span
/// while a task's wait runs). Disabled, and free, without a subscriber.
pub(super) fn request_span(method: &str) -> Span {
    tracing::debug_span!(
        "mcp_tasks.request",
        method,
        request_id = Empty,
        duration_us = Empty,
        error = Empty,
        rpc_code = Empty,
        http_status = Empty,
    )
}

/// Runs a request's `exchange` inside its `span`, boxed, recording its
/// duration and error.
pub(super) fn timed<'a, T: Send + 'a>(
    span: Span,
    exchange: impl Future<Output = Result<T, Error>> + Send + 'a,
) -> Pin<Box<dyn Future<Output = Result<T, Error>> + Send + 'a>> {
    Box::pin(async move {
        let timing = Timing::start(&span);
        let result = exchange.instrument(span.clone()).await;
        timing.finish(result.as_ref().err());
        result
    })
}

/// Records a traced request's duration, and its error, when it ends. A
/// request whose future is dropped first (a cancelled wait) records
/// `error = "abandoned"`.
struct Timing<'a> {
    span: &'a Span,
    started: Instant,
    done: bool,
}

impl<'a> Timing<'a> {
    fn start(span: &'a Span) -> Self {
        Timing {
            span,
            started: Instant::now(),
            done: false,
        }
    }

    fn finish(mut self, error: Option<&Error>) {
        self.done = true;
        if let Some(e) = error {
            self.span.record("error", e.kind_name());
            if let Some(rpc) = e.rpc_error() {
                self.span.record("rpc_code", rpc.code);
            }
            if let Some(status) = e.http_status() {
                self.span.record("http_status", status);
            }
        }
    }
}

impl Drop for Timing<'_> {
    fn drop(&mut self) {
        let us = u64::try_from(self.started.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.span.record("duration_us", us);
        if !self.done {
            self.span.record("error", "abandoned");
        }
    }
}
