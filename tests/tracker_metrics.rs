//! The tracker's figures through the `metrics` facade: what a recorder
//! the application installed sees after a worker tracked tasks.

mod support;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock};

use mcp_tasks::Client;
use mcp_tasks::store::{MemoryStore, TaskStore, Tracker};
use metrics::{
    Counter, CounterFn, Gauge, Histogram, HistogramFn, Key, KeyName, Metadata, Recorder,
    SharedString, Unit,
};
use serde_json::json;
use support::*;

/// Every counter's total and every histogram's samples, by metric and
/// labels (`name{k=v,…}`, labels sorted).
#[derive(Default)]
struct Book {
    counters: Mutex<BTreeMap<String, u64>>,
    samples: Mutex<BTreeMap<String, Vec<f64>>>,
}

struct Figure {
    key: String,
    book: Arc<Book>,
}

impl CounterFn for Figure {
    fn increment(&self, n: u64) {
        *self
            .book
            .counters
            .lock()
            .unwrap()
            .entry(self.key.clone())
            .or_default() += n;
    }
    fn absolute(&self, n: u64) {
        self.book
            .counters
            .lock()
            .unwrap()
            .insert(self.key.clone(), n);
    }
}

impl HistogramFn for Figure {
    fn record(&self, value: f64) {
        self.book
            .samples
            .lock()
            .unwrap()
            .entry(self.key.clone())
            .or_default()
            .push(value);
    }
}

struct Keeping(Arc<Book>);

impl Keeping {
    fn figure(&self, key: &Key) -> Arc<Figure> {
        let mut labels: Vec<String> = key
            .labels()
            .map(|l| format!("{}={}", l.key(), l.value()))
            .collect();
        labels.sort();
        Arc::new(Figure {
            key: format!("{}{{{}}}", key.name(), labels.join(",")),
            book: self.0.clone(),
        })
    }
}

impl Recorder for Keeping {
    fn describe_counter(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_gauge(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn describe_histogram(&self, _: KeyName, _: Option<Unit>, _: SharedString) {}
    fn register_counter(&self, key: &Key, _: &Metadata<'_>) -> Counter {
        Counter::from_arc(self.figure(key))
    }
    fn register_gauge(&self, _: &Key, _: &Metadata<'_>) -> Gauge {
        Gauge::noop()
    }
    fn register_histogram(&self, key: &Key, _: &Metadata<'_>) -> Histogram {
        Histogram::from_arc(self.figure(key))
    }
}

/// The process's recorder (one per test binary); each test names its own
/// worker, so their figures never mix.
fn book() -> &'static Arc<Book> {
    static BOOK: OnceLock<Arc<Book>> = OnceLock::new();
    BOOK.get_or_init(|| {
        let book = Arc::new(Book::default());
        metrics::set_global_recorder(Keeping(book.clone())).expect("the only recorder");
        book
    })
}

fn counter(name: &str, labels: &str) -> u64 {
    let key = format!("{name}{{{labels}}}");
    book()
        .counters
        .lock()
        .unwrap()
        .get(&key)
        .copied()
        .unwrap_or(0)
}

fn tracker(store: MemoryStore, client: &Client, worker: &str) -> Tracker<MemoryStore, Client> {
    Tracker::builder(store, client.clone())
        .worker(worker)
        .min_poll_interval(ms(5))
        .build()
}

/// Passes until `n` endings were acknowledged, bounded.
async fn endings(tracker: &Tracker<MemoryStore, Client>, n: usize) {
    let mut seen = 0;
    for _ in 0..1_000 {
        let pass = tracker.pass(|_| async { true }).await.unwrap();
        seen += pass.delivered;
        if seen >= n {
            return;
        }
        tokio::time::sleep(ms(5)).await;
    }
    panic!("only {seen} of {n} endings after 1,000 passes");
}

#[tokio::test]
async fn reads_claims_endings_and_deliveries_are_counted() {
    book();
    let server = tracker_server();
    let client = client(&server).await;
    let tracker = tracker(MemoryStore::new(), &client, "counted");
    for tool in ["export", "broken"] {
        tracker
            .call_tool(client.task(), tool, json!({}))
            .await
            .unwrap();
    }
    endings(&tracker, 2).await;

    let reads = server.count("tasks/get") as u64;
    assert!(reads >= 2, "{reads}");
    assert_eq!(
        counter("mcp_tasks_tracker_reads_total", "result=ok,worker=counted"),
        reads,
        "every read the server saw, counted once"
    );
    assert_eq!(
        counter(
            "mcp_tasks_tracker_reads_total",
            "result=failed,worker=counted"
        ),
        0
    );
    for kind in ["completed", "failed"] {
        assert_eq!(
            counter(
                "mcp_tasks_tracker_endings_total",
                &format!("ending={kind},worker=counted")
            ),
            1,
            "{kind}"
        );
    }
    assert_eq!(
        counter(
            "mcp_tasks_tracker_deliveries_total",
            "result=acknowledged,worker=counted"
        ),
        2
    );
    // Each read and each delivery held a claimed record.
    let claimed = counter("mcp_tasks_tracker_claimed_records_total", "worker=counted");
    assert!(
        claimed >= reads,
        "{claimed} records claimed for {reads} reads"
    );
    assert!(counter("mcp_tasks_tracker_claims_total", "worker=counted") >= 1);
}

#[tokio::test]
async fn an_input_handlers_time_is_recorded_with_its_result() {
    book();
    let server = tracker_server();
    let handlers = accept_forms();
    let client = client_with(&server, handlers).await;
    let tracker = tracker(MemoryStore::new(), &client, "asked");
    let id = tracker
        .call_tool(client.task(), "approve", ())
        .await
        .unwrap()
        .record()
        .unwrap();
    endings(&tracker, 1).await;
    assert!(tracker.store().get(id).await.unwrap().unwrap().delivered);

    let samples = book().samples.lock().unwrap().clone();
    let answered = &samples["mcp_tasks_tracker_handler_seconds{result=answered,worker=asked}"];
    assert_eq!(answered.len(), 1, "one question, one handler call");
    assert!(answered[0] >= 0.0);
    assert!(
        !samples.contains_key("mcp_tasks_tracker_handler_seconds{result=timed_out,worker=asked}")
    );
}
