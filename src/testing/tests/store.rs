//! [`HookedStore`]: a store with hooks that pass keeps the store contract;
//! hooks that fail stop a call, replace its answer, or spoil one record.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, SystemTime};

use crate::protocol::{TaskId, TaskStatus};
use crate::store::backend::NewTask;
use crate::store::{Filter, MemoryStore, RecordId, Schedule, StoreError, TaskStore, contract};
use crate::task::TaskRef;
use crate::testing::{HookedStore, StoreCall, StoreReply};

fn task(n: u32) -> NewTask {
    NewTask {
        reference: TaskRef::new(TaskId::new(format!("task-{n}")), None),
        tool: "export".into(),
        key: None,
        unique_key: false,
        scope: String::new(),
        status: TaskStatus::Working,
        status_message: None,
        poll_interval_ms: None,
        due: SystemTime::now() + Duration::from_secs(3600),
        ending: None,
        schedule: Schedule::default(),
    }
}

#[tokio::test]
async fn a_store_with_hooks_that_pass_keeps_the_contract() {
    let (before, after) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let store = HookedStore::new(MemoryStore::new())
        .before({
            let before = before.clone();
            move |_| {
                before.fetch_add(1, Ordering::SeqCst);
                Ok(())
            }
        })
        .read(|_, r| Ok(r))
        .after_async({
            let after = after.clone();
            move |_, _| {
                after.fetch_add(1, Ordering::SeqCst);
                async { Ok(()) }
            }
        });
    contract(&store).await;
    let (before, after) = (before.load(Ordering::SeqCst), after.load(Ordering::SeqCst));
    assert!(before > 20, "every call went through the hooks: {before}");
    assert_eq!(before, after);
}

#[tokio::test]
async fn a_failure_before_a_call_stops_it() {
    let store = HookedStore::new(MemoryStore::new()).before(|call| match call {
        StoreCall::Insert { .. } => Err(StoreError::unavailable("away")),
        _ => Ok(()),
    });
    let e = store.insert(task(1)).await.unwrap_err();
    assert!(e.is_unavailable(), "{e}");
    assert!(store.inner().list(&Filter::all()).await.unwrap().is_empty());
    assert!(store.list(&Filter::all()).await.unwrap().is_empty());
}

#[tokio::test]
async fn a_failure_after_a_call_replaces_its_answer_but_not_its_effect() {
    let store = HookedStore::new(MemoryStore::new()).after(|call, reply| match (call, reply) {
        (StoreCall::Insert { .. }, Ok(StoreReply::Id(_))) => Err(StoreError::unavailable("away")),
        _ => Ok(()),
    });
    assert!(store.insert(task(1)).await.unwrap_err().is_unavailable());
    let kept = store.list(&Filter::all()).await.unwrap();
    assert_eq!(kept.len(), 1, "the insert took effect");
}

#[tokio::test]
async fn a_read_hook_spoils_one_record_and_leaves_the_rest() {
    let store = HookedStore::new(MemoryStore::new()).read(|_, r| match r.id {
        RecordId(2) => Err(StoreError::corrupt(Some(r.id), "bad")),
        _ => Ok(r),
    });
    for n in 1..=3 {
        store.insert(task(n)).await.unwrap();
    }
    let listed = store.list(&Filter::all()).await.unwrap();
    let ok: Vec<bool> = listed.iter().map(Result::is_ok).collect();
    assert_eq!(ok, [true, false, true]);
    assert!(store.get(RecordId(2)).await.unwrap_err().is_corrupt());
    assert!(store.get(RecordId(3)).await.unwrap().is_some());
}
