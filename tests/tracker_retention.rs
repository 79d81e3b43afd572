//! Retention: a tracker with `retain` removes delivered records older than
//! its setting, a bounded batch per pass, and nothing else; without it,
//! records stay.

mod support;

use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use mcp_tasks::protocol::TaskId;
use mcp_tasks::store::backend::{Claim, NewTask};
use mcp_tasks::store::{Ending, Filter, MemoryStore, RecordId, RecordState, TaskStore, Tracker};
use mcp_tasks::{Client, TaskRef};
use support::*;

fn new_task(n: u32, due: SystemTime, ending: Option<Ending>) -> NewTask {
    let reference = TaskRef::new(TaskId::new(format!("task-{n}")), None);
    working_task(reference, due, ending)
}

/// `n` records whose ending was delivered, as a worker leaves them.
async fn delivered(store: &MemoryStore, n: u32) {
    for i in 0..n {
        let id = store
            .insert(new_task(i, SystemTime::now(), Some(Ending::Cancelled)))
            .await
            .unwrap();
        let claimed = store
            .claim(Claim {
                worker: "earlier",
                limit: 1,
                now: SystemTime::now(),
                lease: Duration::from_secs(30),
                record: Some(id),
            })
            .await
            .unwrap();
        let fence = claimed[0].as_ref().unwrap().fence().unwrap();
        store.acknowledge(id, fence).await.unwrap();
    }
}

async fn count(store: &MemoryStore, state: RecordState) -> usize {
    store.list(&Filter::all().state(state)).await.unwrap().len()
}

fn tracker(
    store: &MemoryStore,
    client: &Client,
    retain: Option<Duration>,
) -> Tracker<MemoryStore, Client> {
    let builder = Tracker::builder(store.clone(), client.clone()).worker("w1");
    match retain {
        Some(age) => builder.retain(age).build(),
        None => builder.build(),
    }
}

#[tokio::test]
async fn a_pass_removes_one_batch_of_delivered_records_older_than_the_retention() {
    let server = tracker_server();
    let client = client(&server).await;
    let store = MemoryStore::new();
    delivered(&store, 2_500).await;
    let later = SystemTime::now() + Duration::from_secs(3600);
    let open = store.insert(new_task(9_001, later, None)).await.unwrap();
    let ended = Some(Ending::Cancelled);
    let undelivered = store
        .insert(new_task(9_002, SystemTime::now(), ended))
        .await
        .unwrap();
    std::thread::sleep(ms(20));

    // Off by default; a retention longer than the records' age keeps them.
    for retain in [None, Some(Duration::from_secs(3600))] {
        let pass = tracker(&store, &client, retain)
            .pass(|_| async { false })
            .await
            .unwrap();
        assert_eq!(pass.pruned, 0, "{retain:?}");
        assert_eq!(count(&store, RecordState::Delivered).await, 2_500);
    }

    // Older than the retention: one batch of at most 1,000 per pass.
    let tracker = tracker(&store, &client, Some(ms(10)));
    let mut pruned = Vec::new();
    for _ in 0..4 {
        let pass = tracker.pass(|_| async { false }).await.unwrap();
        pruned.push(pass.pruned);
    }
    assert_eq!(pruned, [1_000, 1_000, 500, 0]);
    assert_eq!(count(&store, RecordState::Delivered).await, 0);
    // An open task, and an ending not yet acknowledged, stay.
    assert!(store.get(open).await.unwrap().is_some());
    let r = store
        .get(undelivered)
        .await
        .unwrap()
        .expect("undelivered stays");
    assert!(!r.delivered);
}

#[tokio::test]
async fn run_removes_what_it_delivered_once_older_than_the_retention() {
    let server = tracker_server();
    let client = client(&server).await;
    let store = MemoryStore::new();
    let tracker = Tracker::builder(store.clone(), client.clone())
        .min_poll_interval(ms(5))
        .idle(ms(10))
        .retain(ms(1))
        .build();
    let id = tracker
        .call_tool(client.task(), "export", ())
        .await
        .unwrap()
        .record()
        .expect("a task");
    let seen: Arc<Mutex<Vec<RecordId>>> = Arc::default();
    let worker = {
        let (tracker, seen) = (tracker.clone(), seen.clone());
        tokio::spawn(async move {
            tracker
                .run(move |d| {
                    seen.lock().unwrap().push(d.id());
                    async { true }
                })
                .await
        })
    };
    let mut gone = false;
    for _ in 0..1_000 {
        if !seen.lock().unwrap().is_empty() && store.get(id).await.unwrap().is_none() {
            gone = true;
            break;
        }
        tokio::time::sleep(ms(10)).await;
    }
    worker.abort();
    assert_eq!(*seen.lock().unwrap(), [id], "delivered once");
    assert!(gone, "the delivered record stayed");
}
