//! What only a worker knows, counted through the `metrics` facade (feature
//! `metrics`), so that the application's own exporter (Prometheus,
//! StatsD, OpenTelemetry) picks it up beside its other figures. Without
//! the feature, or without a recorder installed, each call does nothing.
//!
//! The names and labels are listed in [`Tracker`](super::Tracker)'s docs.

use std::time::Duration;

/// The label `worker` of every figure of one tracker, made once from its
/// name: a figure clones it (a reference count), not the name.
#[derive(Debug, Clone)]
pub(super) struct Worker {
    #[cfg(feature = "metrics")]
    label: metrics::Label,
}

impl Worker {
    /// The label of the worker named `name`.
    #[cfg_attr(not(feature = "metrics"), allow(unused_variables))]
    pub(super) fn new(name: &str) -> Worker {
        Worker {
            #[cfg(feature = "metrics")]
            label: metrics::Label::new("worker", std::sync::Arc::<str>::from(name)),
        }
    }
}

#[cfg(feature = "metrics")]
fn counter(name: &'static str, worker: &Worker, labels: &[(&'static str, &'static str)], n: u64) {
    let mut all = Vec::with_capacity(1 + labels.len());
    all.push(worker.label.clone());
    all.extend(labels.iter().map(|&(k, v)| metrics::Label::new(k, v)));
    metrics::counter!(name, all).increment(n);
}

#[cfg(not(feature = "metrics"))]
fn counter(_: &'static str, _: &Worker, _: &[(&'static str, &'static str)], _: u64) {}

/// A claim that took `records`.
pub(super) fn claimed(worker: &Worker, records: usize) {
    counter("mcp_tasks_tracker_claims_total", worker, &[], 1);
    counter(
        "mcp_tasks_tracker_claimed_records_total",
        worker,
        &[],
        records as u64,
    );
}

/// A read of a task's state, and whether it answered.
pub(super) fn read(worker: &Worker, ok: bool) {
    let result = if ok { "ok" } else { "failed" };
    counter(
        "mcp_tasks_tracker_reads_total",
        worker,
        &[("result", result)],
        1,
    );
}

/// A lease renewal: `ok`, `lost` (another worker holds the record) or
/// `failed` (the store did not answer).
pub(super) fn renewal(worker: &Worker, result: &'static str) {
    counter(
        "mcp_tasks_tracker_renewals_total",
        worker,
        &[("result", result)],
        1,
    );
}

/// A write refused because another worker holds the record.
pub(super) fn stale_write(worker: &Worker) {
    counter("mcp_tasks_tracker_stale_writes_total", worker, &[], 1);
}

/// A task seen ending, by the kind of its ending.
pub(super) fn ended(worker: &Worker, ending: &'static str) {
    counter(
        "mcp_tasks_tracker_endings_total",
        worker,
        &[("ending", ending)],
        1,
    );
}

/// An ending handed to the application, and whether it acknowledged it.
pub(super) fn delivered(worker: &Worker, acknowledged: bool) {
    let result = if acknowledged {
        "acknowledged"
    } else {
        "declined"
    };
    counter(
        "mcp_tasks_tracker_deliveries_total",
        worker,
        &[("result", result)],
        1,
    );
}

/// The time an input handler took for one question: `answered`, `failed`
/// or `timed_out`.
#[cfg(feature = "metrics")]
pub(super) fn handler(worker: &Worker, result: &'static str, took: Duration) {
    let labels = vec![worker.label.clone(), metrics::Label::new("result", result)];
    metrics::histogram!("mcp_tasks_tracker_handler_seconds", labels).record(took.as_secs_f64());
}

/// The time an input handler took (nothing without the feature).
#[cfg(not(feature = "metrics"))]
pub(super) fn handler(_: &Worker, _: &'static str, _: Duration) {}
