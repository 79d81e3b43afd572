//! Unique keys: one record per key and scope, reserved before the call.

use super::*;

fn keyed(n: u32, key: &str, scope: &str, unique: bool) -> NewTask {
    NewTask {
        key: Some(key.into()),
        scope: scope.into(),
        unique_key: unique,
        ..new_task(n, t(0))
    }
}

pub(super) async fn a_unique_key_names_one_record<S: TaskStore>(store: &S) {
    let first = store
        .insert(keyed(900, "order-17", "keys", true))
        .await
        .unwrap();
    let e = store
        .insert(keyed(901, "order-17", "keys", true))
        .await
        .unwrap_err();
    assert!(e.is_duplicate(), "{e}");
    assert_eq!(e.record(), Some(first), "names the record that has the key");
    // Another scope, or a key the label shares, is another record.
    let other = store
        .insert(keyed(902, "order-17", "keys-2", true))
        .await
        .unwrap();
    let shared = store
        .insert(keyed(903, "order-17", "keys", false))
        .await
        .unwrap();
    let again = store
        .insert(keyed(904, "order-17", "keys", false))
        .await
        .unwrap();
    let found: Vec<RecordId> = store
        .list(&Filter::all().scope("keys").key("order-17"))
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().id)
        .collect();
    assert_eq!(found, [first, shared, again]);
    let r = store.get(first).await.unwrap().unwrap();
    assert!(r.unique_key && r.is_started());
    assert!(!store.get(shared).await.unwrap().unwrap().unique_key);
    let everywhere = store.list(&Filter::all().key("order-17")).await.unwrap();
    assert_eq!(everywhere.len(), 4, "{other:?}");
    assert!(
        store
            .list(&Filter::all().key("nothing"))
            .await
            .unwrap()
            .is_empty()
    );
}

pub(super) async fn a_reserved_key_is_started_once<S: TaskStore>(store: &S) {
    let unstarted = NewTask {
        reference: TaskRef::new(TaskId::new(String::new()), None),
        ..keyed(910, "order-18", "keys", true)
    };
    let Reservation::Reserved { id, fence } = store
        .reserve(unstarted.clone(), "w1", t(1_030))
        .await
        .unwrap()
    else {
        panic!("a new key is reserved");
    };
    // Reserved once: a second try, or an insert, finds it.
    assert_eq!(
        store
            .reserve(unstarted.clone(), "w2", t(1_030))
            .await
            .unwrap(),
        Reservation::Taken(id)
    );
    let e = store
        .insert(keyed(911, "order-18", "keys", true))
        .await
        .unwrap_err();
    assert_eq!(e.record(), Some(id), "{e}");
    let r = store.get(id).await.unwrap().unwrap();
    assert!(!r.is_started(), "no task yet");
    let lease = r.lease.expect("held by the one that reserved it");
    assert_eq!(
        (lease.owner.as_str(), lease.fence, lease.until),
        ("w1", fence, t(1_030))
    );
    // Held while the call runs: nobody else claims it.
    assert!(
        claimed(store, claim("w2", 100, t(1_000)))
            .await
            .iter()
            .all(|r| r.id != id)
    );

    let reference = TaskRef::new(TaskId::new("task-918-secret"), Some("srv".into()))
        .with_protocol_version("2026-07-28");
    let schedule = Schedule {
        interval_ms: Some(500),
        ..Schedule::default()
    };
    store
        .start(id, fence, &reference, &schedule, progress(t(1_060)))
        .await
        .unwrap();
    let r = store.get(id).await.unwrap().unwrap();
    assert!(r.is_started());
    assert_eq!(r.reference, reference);
    assert_eq!(r.schedule, schedule);
    assert_eq!((r.status, r.due), (TaskStatus::InputRequired, t(1_060)));
    // Started once: a second start is refused.
    let e = store
        .start(id, fence, &reference, &schedule, progress(t(1_060)))
        .await
        .unwrap_err();
    assert!(e.is_stale(), "{e}");

    // A reservation whose holder stopped: claimable once its lease ran
    // out, still without a task.
    let Reservation::Reserved { id: lost, .. } = store
        .reserve(
            NewTask {
                reference: TaskRef::new(TaskId::new(String::new()), None),
                ..keyed(912, "order-19", "keys", true)
            },
            "w1",
            t(1_030),
        )
        .await
        .unwrap()
    else {
        panic!("a new key is reserved");
    };
    let later = claimed(store, claim("w2", 100, t(1_031))).await;
    let found = later
        .iter()
        .find(|r| r.id == lost)
        .expect("claimed after the lease");
    assert!(!found.is_started());
}
