//! Questions and answers: recorded and closed, answered from anywhere
//! once, an answer making the record due, listings of records that ask.

use super::*;

pub(super) async fn questions_are_recorded_and_closed<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(50, t(0))).await.unwrap();
    let r = claim_record(store, "w", id, t(0)).await.remove(0);
    let fence = r.fence().unwrap();
    assert!(r.questions.is_empty());
    let (questions, answers) = store
        .ask(id, fence, &asked(&["a", "b"]), t(1))
        .await
        .unwrap();
    assert_eq!(questions.len(), 2);
    assert!(answers.is_empty());
    assert_eq!(questions["a"].first_seen, t(1));
    assert_eq!(questions["a"].kind(), QuestionKind::Form);
    assert_eq!(questions["a"].message(), Some("Approve?"));
    let r = store.get(id).await.unwrap().unwrap();
    assert_eq!(r.questions, questions, "kept in the record");
    assert_eq!(r.asking_since(), Some(t(1)));
    // The server stops asking "a": it closes; "b" keeps its first sighting.
    let (questions, _) = store
        .ask(id, fence, &asked(&["b", "c"]), t(5))
        .await
        .unwrap();
    assert_eq!(questions["a"].closed, Some(t(5)));
    assert_eq!(questions["b"].first_seen, t(1));
    assert_eq!(questions["c"].first_seen, t(5));
    // Nothing listed: every question closes.
    let (questions, _) = store
        .ask(id, fence, &InputRequests::new(), t(6))
        .await
        .unwrap();
    assert!(questions.values().all(Question::is_closed));
    assert_eq!(store.get(id).await.unwrap().unwrap().asking_since(), None);
    let stale = store
        .ask(id, Fence(fence.0 - 1), &asked(&["d"]), t(7))
        .await;
    assert!(stale.unwrap_err().is_stale());
    store.remove(id, fence).await.unwrap();
}

pub(super) async fn answers_come_from_anywhere_once<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(51, t(5_000))).await.unwrap();
    let fence = held(store, "w", id, t(0)).await;
    store
        .ask(id, fence, &asked(&["a", "b", "gone"]), t(1))
        .await
        .unwrap();
    store
        .ask(id, fence, &asked(&["a", "b"]), t(2))
        .await
        .unwrap();
    store.save(id, fence, progress(t(5_000))).await.unwrap();

    let yes: InputResponse = ElicitResult::accept(serde_json::json!({"ok": true})).into();
    let refusal = |e: StoreError| e.refusal().cloned().unwrap_or_else(|| panic!("{e}"));
    // Checked before anything is stored.
    let bad = store
        .answer(
            id,
            "a",
            &ElicitResult::accept(serde_json::json!({})).into(),
            t(10),
        )
        .await
        .unwrap_err();
    assert!(bad.is_refused(), "{bad}");
    assert!(matches!(refusal(bad), Refusal::Invalid { .. }));
    let unknown = store.answer(id, "zz", &yes, t(10)).await.unwrap_err();
    assert!(matches!(refusal(unknown), Refusal::NoSuchQuestion { .. }));
    let closed = store.answer(id, "gone", &yes, t(10)).await.unwrap_err();
    assert!(matches!(refusal(closed), Refusal::Closed { .. }));
    let nobody = store.answer(RecordId(987_654), "a", &yes, t(10)).await;
    assert!(nobody.unwrap_err().is_not_found());
    let r = store.get(id).await.unwrap().unwrap();
    assert!(r.answers.is_empty(), "nothing stored");
    assert_eq!(r.due, t(5_000), "nor made due");

    // The first answer wins, and the record is due at once.
    store.answer(id, "a", &yes, t(20)).await.unwrap();
    let second = store
        .answer(id, "a", &ElicitResult::decline().into(), t(21))
        .await
        .unwrap_err();
    assert!(matches!(refusal(second), Refusal::Answered { .. }));
    let r = store.get(id).await.unwrap().unwrap();
    assert_eq!(r.answers["a"].response, yes);
    assert!(!r.answers["a"].taken);
    assert_eq!(r.due, t(20), "due at once");
    assert_eq!(
        r.open_questions().map(|(k, _)| k).collect::<Vec<_>>(),
        ["b"]
    );
    // A worker claims it, finds the answer, and the server takes it.
    let got = claim_record(store, "w", id, t(20)).await;
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].answers.len(), 1);
    let fence = got[0].fence().unwrap();
    let mut p = progress(t(6_000));
    p.taken = vec!["a".into()];
    p.offered = vec!["b".into()];
    store.save(id, fence, p).await.unwrap();
    let r = store.get(id).await.unwrap().unwrap();
    assert!(r.answers["a"].taken);
    assert!(r.questions["b"].offered && !r.questions["a"].offered);
    assert_eq!(
        r.due,
        t(6_000),
        "no answer since the claim: the step's due time"
    );
    // Once the task ended, nothing more is taken.
    let fence = held(store, "w", id, t(0)).await;
    store.finish(id, fence, &Ending::Cancelled).await.unwrap();
    let late = store.answer(id, "b", &yes, t(30)).await.unwrap_err();
    assert!(matches!(refusal(late), Refusal::Closed { .. }));
    store.remove(id, fence).await.unwrap();
}

pub(super) async fn an_answer_during_a_step_makes_the_record_due<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(52, t(0))).await.unwrap();
    let fence = held(store, "w", id, t(0)).await;
    store.ask(id, fence, &asked(&["a"]), t(1)).await.unwrap();
    // Answered from elsewhere while the worker holds the record: its save
    // must not push the read that sends the answer to the step's due time.
    let yes: InputResponse = ElicitResult::accept(serde_json::json!({"ok": true})).into();
    store
        .answer(id, "a", &yes, SystemTime::now())
        .await
        .unwrap();
    // Whole milliseconds, as the database stores keep times.
    let far = row::time(row::millis(SystemTime::now() + Duration::from_secs(3_600)));
    store.save(id, fence, progress(far)).await.unwrap();
    let r = store.get(id).await.unwrap().unwrap();
    assert!(r.due <= SystemTime::now(), "due at once, not in an hour");
    // The claim that takes the answer clears the nudge.
    let got = claim_record(store, "w", id, SystemTime::now()).await;
    let fence = got[0].fence().unwrap();
    store.save(id, fence, progress(far)).await.unwrap();
    assert_eq!(store.get(id).await.unwrap().unwrap().due, far);
    let fence = held(store, "w", id, far).await;
    store.remove(id, fence).await.unwrap();
}

pub(super) async fn records_that_ask_are_listed_oldest_question_first<S: TaskStore>(store: &S) {
    let mut ids = Vec::new();
    for (n, seen) in [(60, t(300)), (61, t(100)), (62, t(200))] {
        let id = store.insert(new_task(n, t(0))).await.unwrap();
        let fence = held(store, "w", id, t(0)).await;
        store.ask(id, fence, &asked(&["q"]), seen).await.unwrap();
        store.save(id, fence, progress(t(9_000))).await.unwrap();
        ids.push(id);
    }
    let quiet = store.insert(new_task(63, t(0))).await.unwrap();
    let listed: Vec<RecordId> = store
        .list(&Filter::all().asking())
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().id)
        .collect();
    assert_eq!(
        listed,
        [ids[1], ids[2], ids[0]],
        "across scopes, oldest question first"
    );
    assert!(!listed.contains(&quiet));
    let odd: Vec<RecordId> = store
        .list(&Filter::all().asking().scope("odd"))
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.unwrap().id)
        .collect();
    assert_eq!(odd, [ids[1]]);
    // Answered: no longer waits.
    let yes: InputResponse = ElicitResult::accept(serde_json::json!({"ok": true})).into();
    store.answer(ids[1], "q", &yes, t(400)).await.unwrap();
    let listed = store.list(&Filter::all().asking().limit(1)).await.unwrap();
    assert_eq!(listed[0].as_ref().unwrap().id, ids[2]);
    for id in ids.into_iter().chain([quiet]) {
        let r = claim_record(store, "w", id, t(10_000)).await;
        store.remove(id, r[0].fence().unwrap()).await.unwrap();
    }
}
