//! What questions that wait for a person cost a tracker.
//!
//! ```sh
//! cargo bench --features test-util,sqlite --bench questions -- [--tasks N] [--secs S]
//! ```
//!
//! - **Reads per second** of one tracker over `--tasks` records (default
//!   2,000) against the scripted server on the in-memory transport, every
//!   task an hour long with a 100 ms interval, so the worker never runs
//!   out of due records: once with no task asking, once with one task in
//!   ten asking a question nobody answers for the whole run.
//! - **Store calls per question**: each question seen costs one
//!   `TaskStore::ask` (the first read that lists it; later reads of the
//!   same question write nothing), each answer one `TaskStore::answer`,
//!   and the answer's `taken` mark rides on the step's `save`.
//!
//! Figures are printed; nothing is asserted. On SQLite and in memory.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use mcp_tasks::Client;
use mcp_tasks::TaskRef;
use mcp_tasks::protocol::{ElicitResult, InputRequest, InputRequests, InputResponse};
use mcp_tasks::store::backend::{Claim, Fence, NewTask, Reservation, StepReport};
use mcp_tasks::store::{
    Answers, Ending, Filter, Forgotten, MemoryStore, Questions, RecordId, Schedule, SqliteStore,
    StoreResult, TaskRecord, TaskStore, Tracker,
};
use mcp_tasks::testing::{ScriptedTool, TaskScript, TestServer};
use serde_json::json;

fn main() {
    let mut tasks = 2_000usize;
    let mut secs = 5u64;
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    while let Some(a) = args.next() {
        match a.as_str() {
            "--tasks" => tasks = args.next().and_then(|v| v.parse().ok()).unwrap_or(tasks),
            "--secs" => secs = args.next().and_then(|v| v.parse().ok()).unwrap_or(secs),
            _ => {}
        }
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        println!("tasks: {tasks}, {secs} s a run");
        println!("| store | none asking, reads/s | 1 in 10 asking, reads/s | ratio |");
        println!("|---|---|---|---|");
        for store in ["memory", "sqlite"] {
            let none = reads(store, tasks, 0, secs).await;
            let tenth = reads(store, tasks, tasks / 10, secs).await;
            println!(
                "| {store} | {none:.0} | {tenth:.0} | {:.2}× |",
                tenth / none
            );
        }
        println!();
        for store in ["memory", "sqlite"] {
            let calls = per_question(store).await;
            println!(
                "{store}: store calls for 10 tasks, 2 questions each, answered from elsewhere:"
            );
            for (method, n) in calls {
                println!("  {method}: {n}");
            }
        }
    });
}

fn form() -> InputRequest {
    InputRequest::form(
        "Approve?",
        json!({"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}),
    )
}

fn asked(keys: &[&str]) -> InputRequests {
    keys.iter().map(|k| ((*k).to_owned(), form())).collect()
}

fn server() -> TestServer {
    let hour = Duration::from_secs(3_600);
    TestServer::new()
        .keep_requests(false)
        .tool(ScriptedTool::task(
            "job",
            TaskScript::new()
                .poll_interval(Duration::from_millis(100))
                .working(hour, "going")
                .complete(hour, mcp_tasks::protocol::CallToolResult::text("never")),
        ))
        .tool(ScriptedTool::task(
            "ask",
            TaskScript::new()
                .poll_interval(Duration::from_millis(100))
                .input(Duration::from_millis(1), asked(&["approve"]))
                .complete_with_inputs(Duration::from_millis(1)),
        ))
        .tool(ScriptedTool::task(
            "ask2",
            TaskScript::new()
                .poll_interval(Duration::from_millis(20))
                .input(Duration::from_millis(1), asked(&["a", "b"]))
                .complete_with_inputs(Duration::from_millis(1)),
        ))
}

async fn reads(store: &str, tasks: usize, asking: usize, secs: u64) -> f64 {
    match store {
        "memory" => reads_on(MemoryStore::new(), tasks, asking, secs).await,
        _ => reads_on(SqliteStore::memory().unwrap(), tasks, asking, secs).await,
    }
}

async fn reads_on<S: TaskStore + Clone>(store: S, tasks: usize, asking: usize, secs: u64) -> f64 {
    let server = server();
    let client = Client::connect(server.connect()).await.unwrap();
    let tracker = Tracker::builder(store, client.clone()).build();
    for i in 0..tasks {
        let tool = if i < asking { "ask" } else { "job" };
        tracker.call_tool(client.task(), tool, ()).await.unwrap();
    }
    let run = {
        let tracker = tracker.clone();
        tokio::spawn(async move { tracker.run(|_| async { true }).await })
    };
    // Warm up: every task read once, the questions recorded.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before = server.count("tasks/get");
    let start = Instant::now();
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let rate = (server.count("tasks/get") - before) as f64 / start.elapsed().as_secs_f64();
    run.abort();
    let waiting = tracker
        .store()
        .list(&Filter::all().asking())
        .await
        .unwrap()
        .len();
    assert_eq!(waiting, asking, "the asking tasks wait all run long");
    rate
}

async fn per_question(store: &str) -> BTreeMap<&'static str, usize> {
    match store {
        "memory" => per_question_on(MemoryStore::new()).await,
        _ => per_question_on(SqliteStore::memory().unwrap()).await,
    }
}

async fn per_question_on<S: TaskStore + Clone>(store: S) -> BTreeMap<&'static str, usize> {
    let server = server();
    let client = Client::connect(server.connect()).await.unwrap();
    let counting = Counting {
        inner: store,
        calls: Arc::default(),
    };
    let tracker = Tracker::builder(counting.clone(), client.clone())
        .idle(Duration::from_millis(10))
        .build();
    let mut ids = Vec::new();
    for _ in 0..10 {
        let started = tracker.call_tool(client.task(), "ask2", ()).await.unwrap();
        ids.push(started.record().unwrap());
    }
    let run = {
        let tracker = tracker.clone();
        tokio::spawn(async move { tracker.run(|_| async { true }).await })
    };
    // Let every question be seen, and read a few more times unanswered.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let yes: InputResponse = ElicitResult::accept(json!({"ok": true})).into();
    for id in &ids {
        for key in ["a", "b"] {
            tracker.answer(*id, key, yes.clone()).await.unwrap();
        }
    }
    loop {
        let done = tracker
            .store()
            .inner
            .list(&Filter::all().state(mcp_tasks::store::RecordState::Delivered))
            .await
            .unwrap()
            .len();
        if done == ids.len() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    run.abort();
    counting.calls.lock().unwrap().clone()
}

/// A store that counts the calls made to it.
#[derive(Clone)]
struct Counting<S> {
    inner: S,
    calls: Arc<Mutex<BTreeMap<&'static str, usize>>>,
}

impl<S> Counting<S> {
    fn count(&self, method: &'static str) {
        *self.calls.lock().unwrap().entry(method).or_default() += 1;
    }
}

impl<S: TaskStore> TaskStore for Counting<S> {
    async fn insert(&self, task: NewTask) -> StoreResult<RecordId> {
        self.count("insert");
        self.inner.insert(task).await
    }
    async fn reserve(
        &self,
        task: NewTask,
        worker: &str,
        until: SystemTime,
    ) -> StoreResult<Reservation> {
        self.count("reserve");
        self.inner.reserve(task, worker, until).await
    }
    async fn start(
        &self,
        id: RecordId,
        fence: Fence,
        reference: &TaskRef,
        schedule: &Schedule,
        progress: StepReport,
    ) -> StoreResult<()> {
        self.count("start");
        self.inner
            .start(id, fence, reference, schedule, progress)
            .await
    }
    async fn get(&self, id: RecordId) -> StoreResult<Option<TaskRecord>> {
        self.count("get");
        self.inner.get(id).await
    }
    async fn claim(&self, claim: Claim<'_>) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        self.count("claim");
        self.inner.claim(claim).await
    }
    async fn renew(&self, id: RecordId, fence: Fence, until: SystemTime) -> StoreResult<()> {
        self.count("renew");
        self.inner.renew(id, fence, until).await
    }
    async fn release(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        self.count("release");
        self.inner.release(id, fence).await
    }
    async fn release_worker(&self, worker: &str) -> StoreResult<u64> {
        self.count("release_worker");
        self.inner.release_worker(worker).await
    }
    async fn ask(
        &self,
        id: RecordId,
        fence: Fence,
        asked: &InputRequests,
        now: SystemTime,
    ) -> StoreResult<(Questions, Answers)> {
        self.count("ask");
        self.inner.ask(id, fence, asked, now).await
    }
    async fn answer_by(
        &self,
        id: RecordId,
        key: &str,
        response: &InputResponse,
        by: mcp_tasks::store::Answerer,
        now: SystemTime,
    ) -> StoreResult<()> {
        self.count("answer");
        self.inner.answer_by(id, key, response, by, now).await
    }
    async fn record_answer(
        &self,
        id: RecordId,
        fence: Fence,
        key: &str,
        response: &InputResponse,
    ) -> StoreResult<InputResponse> {
        self.count("record_answer");
        self.inner.record_answer(id, fence, key, response).await
    }
    async fn save(&self, id: RecordId, fence: Fence, progress: StepReport) -> StoreResult<()> {
        self.count(if progress.taken.is_empty() {
            "save"
        } else {
            "save (with taken answers)"
        });
        self.inner.save(id, fence, progress).await
    }
    async fn finish(&self, id: RecordId, fence: Fence, ending: &Ending) -> StoreResult<()> {
        self.count("finish");
        self.inner.finish(id, fence, ending).await
    }
    async fn acknowledge(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        self.count("acknowledge");
        self.inner.acknowledge(id, fence).await
    }
    async fn forget(&self, id: RecordId, now: SystemTime) -> StoreResult<Forgotten> {
        self.count("forget");
        self.inner.forget(id, now).await
    }
    async fn prune(&self, older_than: SystemTime, limit: usize) -> StoreResult<usize> {
        self.count("prune");
        self.inner.prune(older_than, limit).await
    }
    async fn request_cancel(&self, id: RecordId, now: SystemTime) -> StoreResult<bool> {
        self.count("request_cancel");
        self.inner.request_cancel(id, now).await
    }
    async fn remove(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        self.count("remove");
        self.inner.remove(id, fence).await
    }
    async fn list(&self, filter: &Filter) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        self.inner.list(filter).await
    }
    async fn next_due(&self) -> StoreResult<Option<SystemTime>> {
        self.inner.next_due().await
    }
}
