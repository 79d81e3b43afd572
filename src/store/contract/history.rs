//! A record's history: one entry per change, none for a write that
//! changes nothing, bounded with the newest kept and the dropped counted.

use super::*;

fn events(r: &TaskRecord) -> Vec<Event> {
    r.history.entries.iter().map(|e| e.event.clone()).collect()
}

async fn history_of<S: TaskStore>(store: &S, id: RecordId) -> Vec<Event> {
    events(&store.get(id).await.unwrap().expect("the record"))
}

pub(super) async fn each_change_adds_one_history_entry<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(90, t(0))).await.unwrap();
    let created = Event::Created {
        status: TaskStatus::Working,
        message: Some("queued".into()),
    };
    let r = store.get(id).await.unwrap().unwrap();
    assert_eq!(events(&r), std::slice::from_ref(&created));
    assert!(!r.history.is_cut());

    // A read that finds what the record already says adds nothing.
    let fence = held(store, "w1", id, t(0)).await;
    let same = StepReport {
        status: TaskStatus::Working,
        status_message: Some("queued".into()),
        ..progress(t(0))
    };
    store.save(id, fence, same.clone()).await.unwrap();
    assert_eq!(
        history_of(store, id).await,
        std::slice::from_ref(&created),
        "no change"
    );
    // A lease given back is no takeover, whoever claims next.
    let fence = held(store, "w2", id, t(1)).await;
    store.save(id, fence, progress(t(0))).await.unwrap();
    let status = Event::Status {
        status: TaskStatus::InputRequired,
        message: Some("half way".into()),
    };
    assert_eq!(
        history_of(store, id).await,
        [created.clone(), status.clone()]
    );
    let fence = held(store, "w1", id, t(2)).await;
    store.save(id, fence, progress(t(0))).await.unwrap();
    assert_eq!(
        history_of(store, id).await.len(),
        2,
        "the same status again"
    );

    // Questions: each new key once; answers say who gave them.
    let fence = held(store, "w1", id, t(3)).await;
    store
        .ask(id, fence, &asked(&["a", "b", "c"]), t(3))
        .await
        .unwrap();
    store
        .ask(id, fence, &asked(&["a", "b", "c"]), t(4))
        .await
        .unwrap();
    let yes: InputResponse = ElicitResult::accept(serde_json::json!({"ok": true})).into();
    store
        .answer_by(id, "a", &yes, Answerer::Page, t(5))
        .await
        .unwrap();
    store.answer(id, "c", &yes, t(5)).await.unwrap();
    store.record_answer(id, fence, "b", &yes).await.unwrap();
    // Refused answers add nothing.
    store
        .answer_by(id, "a", &yes, Answerer::CommandLine, t(6))
        .await
        .unwrap_err();
    store.record_answer(id, fence, "a", &yes).await.unwrap();
    let mut taken = progress(t(0));
    taken.taken = vec!["a".into()];
    store.save(id, fence, taken).await.unwrap();

    // A cancel asked for twice is one entry.
    assert!(store.request_cancel(id, t(7)).await.unwrap());
    assert!(store.request_cancel(id, t(7)).await.unwrap());

    // A lease that ran out, claimed by another worker: a takeover.
    held(store, "w1", id, t(8)).await;
    let fence = held(store, "w3", id, t(8) + Duration::from_secs(60)).await;
    // The ending and its delivery, once each.
    store.finish(id, fence, &Ending::Cancelled).await.unwrap();
    store.finish(id, fence, &Ending::Cancelled).await.unwrap();
    store.acknowledge(id, fence).await.unwrap();
    store.acknowledge(id, fence).await.unwrap();

    let answered = |key: &str, by| Event::Answered {
        key: key.into(),
        by,
    };
    let r = store.get(id).await.unwrap().unwrap();
    assert_eq!(
        events(&r),
        [
            created,
            status,
            Event::Asked { key: "a".into() },
            Event::Asked { key: "b".into() },
            Event::Asked { key: "c".into() },
            answered("a", Answerer::Page),
            answered("c", Answerer::Application),
            answered("b", Answerer::Handler),
            Event::Taken { key: "a".into() },
            Event::CancelRequested,
            Event::TakenOver {
                from: "w1".into(),
                to: "w3".into(),
            },
            Event::Ended {
                ending: "cancelled".into(),
            },
            Event::Delivered,
        ]
    );
    assert_eq!(r.history.dropped, 0);
    // Entries written from a given clock keep it.
    let at = |name: &str| {
        r.history
            .entries
            .iter()
            .find(|e| e.event.name() == name)
            .map(|e| e.at)
    };
    assert_eq!(at("asked"), Some(t(3)));
    assert_eq!(at("cancel_requested"), Some(t(7)));
    store.forget(id, t(9)).await.unwrap();
}

pub(super) async fn the_history_keeps_the_newest_and_counts_the_dropped<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(91, t(0))).await.unwrap();
    let rounds = MAX_HISTORY + 8;
    let long = "x".repeat(MAX_HISTORY_TEXT * 5);
    for round in 0..rounds {
        let fence = held(store, "w", id, t(round as u64)).await;
        let message = if round + 1 == rounds {
            long.clone()
        } else {
            format!("step {round}")
        };
        let p = StepReport {
            status: TaskStatus::Working,
            status_message: Some(message),
            ..progress(t(0))
        };
        store.save(id, fence, p).await.unwrap();
    }
    let r = store.get(id).await.unwrap().unwrap();
    let h = &r.history;
    assert_eq!(h.entries.len(), MAX_HISTORY, "bounded");
    // The created entry and the oldest statuses went, counted.
    assert_eq!(h.dropped, (1 + rounds - MAX_HISTORY) as u64);
    assert!(h.is_cut());
    let message = |e: &HistoryEntry| match &e.event {
        Event::Status { message, .. } => message.clone().unwrap_or_default(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        message(&h.entries[0]),
        format!("step {}", rounds - MAX_HISTORY)
    );
    assert_eq!(
        message(&h.entries[MAX_HISTORY - 2]),
        format!("step {}", rounds - 2)
    );
    // Server text is cut in the history, kept whole in the record.
    let last = message(h.entries.last().unwrap());
    assert_eq!(last.chars().count(), MAX_HISTORY_TEXT);
    assert_eq!(r.status_message.as_deref(), Some(long.as_str()));
    // Past the bound, a write that changes nothing still adds nothing.
    let fence = held(store, "w", id, t(1_000)).await;
    let same = StepReport {
        status: TaskStatus::Working,
        status_message: Some(long.clone()),
        ..progress(t(0))
    };
    store.save(id, fence, same).await.unwrap();
    assert_eq!(store.get(id).await.unwrap().unwrap().history, *h);
    store.forget(id, t(2_000)).await.unwrap();
}

/// A claimed record brings only the history its claim added (a takeover,
/// or nothing), whichever way it was claimed; `get` reads the whole.
pub(super) async fn a_claim_brings_only_the_history_it_added<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(91, t(0))).await.unwrap();
    let fence = held(store, "w1", id, t(0)).await;
    store.save(id, fence, progress(t(0))).await.unwrap();
    assert_eq!(history_of(store, id).await.len(), 2, "created, a status");

    // Given back by its save: no takeover, and no history.
    let r = claim_record(store, "w2", id, t(1)).await.remove(0);
    assert_eq!(r.history, History::default());
    // Its lease runs out, and a claim of due records takes it over.
    let mut due = claimed(store, claim("w3", 1_000, t(1) + Duration::from_secs(60))).await;
    due.retain(|r| r.id == id);
    let [r] = due.as_slice() else {
        panic!("the record, claimed: {due:?}");
    };
    let took = Event::TakenOver {
        from: "w2".into(),
        to: "w3".into(),
    };
    assert_eq!(events(r), std::slice::from_ref(&took));
    assert_eq!(r.history.dropped, 0);
    assert_eq!(r.history.entries[0].at, t(1) + Duration::from_secs(60));
    assert_eq!(history_of(store, id).await.len(), 3);
    assert_eq!(history_of(store, id).await.last(), Some(&took));
    store.forget(id, t(200)).await.unwrap();
}
