//! Retention: forgetting one record, pruning delivered ones in batches.

use super::*;

/// A record claimed alone at `now` and finished; delivered too with
/// `acknowledge`.
async fn ended<S: TaskStore>(store: &S, n: u32, now: SystemTime, acknowledge: bool) -> RecordId {
    let id = store.insert(new_task(n, now)).await.unwrap();
    let c = Claim {
        record: Some(id),
        ..claim("w", 1, now)
    };
    let fence = claimed(store, c).await[0].fence().unwrap();
    store.finish(id, fence, &Ending::Cancelled).await.unwrap();
    if acknowledge {
        store.acknowledge(id, fence).await.unwrap();
    }
    id
}

/// `forget` removes one record in any state, unless a worker holds it.
pub(super) async fn a_record_is_forgotten_unless_a_worker_holds_it<S: TaskStore>(store: &S) {
    let missing = store.forget(RecordId(987_654), t(0)).await.unwrap();
    assert_eq!(missing, Forgotten::Missing);

    // Open and free: removed (its task is not cancelled: nothing is sent).
    let open = store.insert(new_task(90, t(0))).await.unwrap();
    assert_eq!(store.forget(open, t(0)).await.unwrap(), Forgotten::Removed);
    assert!(store.get(open).await.unwrap().is_none());
    assert_eq!(store.forget(open, t(0)).await.unwrap(), Forgotten::Missing);

    // Held by a worker: kept until its lease runs out.
    let held = store.insert(new_task(91, t(0))).await.unwrap();
    let c = Claim {
        record: Some(held),
        ..claim("w9", 1, t(100))
    };
    let fence = claimed(store, c).await[0].fence().unwrap();
    let refused = store.forget(held, t(110)).await.unwrap();
    assert_eq!(
        refused,
        Forgotten::Held {
            owner: "w9".into(),
            until: t(130)
        }
    );
    assert!(store.get(held).await.unwrap().is_some(), "kept while held");
    store.renew(held, fence, t(140)).await.unwrap();
    assert_eq!(
        store.forget(held, t(140)).await.unwrap(),
        Forgotten::Removed
    );
    assert!(store.get(held).await.unwrap().is_none());

    // An ending that awaits delivery, held by the worker that saw it.
    let undelivered = ended(store, 92, t(200), false).await;
    let refused = store.forget(undelivered, t(210)).await.unwrap();
    assert!(matches!(refused, Forgotten::Held { .. }), "{refused:?}");
    assert_eq!(
        store.forget(undelivered, t(230)).await.unwrap(),
        Forgotten::Removed
    );

    // Delivered: never held.
    let delivered = ended(store, 93, t(300), true).await;
    assert_eq!(
        store.forget(delivered, t(300)).await.unwrap(),
        Forgotten::Removed
    );
    assert!(store.get(delivered).await.unwrap().is_none());
}

/// Retention: `prune` removes delivered records recorded and last changed
/// before its cutoff, at most its limit per call, the oldest first, and
/// never an open record or an ending that awaits delivery.
pub(super) async fn delivered_records_are_pruned_oldest_first_in_batches<S: TaskStore>(store: &S) {
    // Real moments: a store stamps `created` and `updated` on its clock.
    let pause = || std::thread::sleep(Duration::from_millis(20));
    assert_eq!(store.prune(SystemTime::UNIX_EPOCH, 100).await.unwrap(), 0);
    let open = store.insert(new_task(94, t(10_000))).await.unwrap();
    let undelivered = ended(store, 95, t(0), false).await;
    for n in 96..99 {
        ended(store, n, t(0), true).await;
    }
    // Recorded before the cutoff, delivered after it.
    let late = store.insert(new_task(99, t(0))).await.unwrap();
    pause();
    let cutoff = SystemTime::now();
    pause();
    let c = Claim {
        record: Some(late),
        ..claim("w", 1, t(0))
    };
    let fence = claimed(store, c).await[0].fence().unwrap();
    store.finish(late, fence, &Ending::Cancelled).await.unwrap();
    store.acknowledge(late, fence).await.unwrap();

    let before = delivered(store).await;
    let prunable = before.iter().filter(|id| **id != late).count();
    assert!(prunable >= 3, "{before:?}");
    assert_eq!(store.prune(cutoff, 0).await.unwrap(), 0, "a limit of none");

    // The oldest first, two at a time.
    assert_eq!(store.prune(cutoff, 2).await.unwrap(), 2);
    let left = delivered(store).await;
    assert_eq!(left, before[2..], "the two oldest went");
    let mut removed = 2;
    loop {
        let n = store.prune(cutoff, 2).await.unwrap();
        assert!(n <= 2, "{n} removed with a limit of 2");
        removed += n;
        if n < 2 {
            break;
        }
    }
    assert_eq!(removed, prunable);
    assert_eq!(delivered(store).await, [late], "delivered after the cutoff");
    assert!(
        store.get(open).await.unwrap().is_some(),
        "an open record stays"
    );
    let r = store
        .get(undelivered)
        .await
        .unwrap()
        .expect("an ending to deliver stays");
    assert!(!r.delivered);

    // A later cutoff takes the last one; open and undelivered records
    // stay, however old.
    pause();
    assert_eq!(store.prune(SystemTime::now(), 100).await.unwrap(), 1);
    assert!(delivered(store).await.is_empty());
    assert_eq!(store.prune(SystemTime::now(), 100).await.unwrap(), 0);
    assert!(store.get(open).await.unwrap().is_some());
    assert!(store.get(undelivered).await.unwrap().is_some());
}

/// The delivered records, the oldest recorded first.
async fn delivered<S: TaskStore>(store: &S) -> Vec<RecordId> {
    let mut ids: Vec<(SystemTime, RecordId)> = store
        .list(&Filter::all().state(RecordState::Delivered))
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap())
        .map(|r| (r.created, r.id))
        .collect();
    ids.sort();
    ids.into_iter().map(|(_, id)| id).collect()
}
