//! The contract every [`TaskStore`] keeps, checked against each store:
//! the memory store here, the database stores in their own modules or
//! test binaries (through `store::contract`, with `test-util`).

use std::time::{Duration, SystemTime};

use super::*;
use crate::protocol::{ElicitResult, TaskId};

/// A moment well clear of the real clock, so that the checks set time.
fn t(secs: u64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(1_900_000_000 + secs)
}

fn new_task(n: u32, due: SystemTime) -> NewTask {
    NewTask {
        unique_key: false,
        reference: TaskRef::new(TaskId::new(format!("task-{n}-secret")), Some("srv".into()))
            .with_protocol_version("2026-07-28"),
        tool: "export".into(),
        key: Some(format!("key-{n}")),
        scope: if n.is_multiple_of(2) { "even" } else { "odd" }.into(),
        status: TaskStatus::Working,
        status_message: Some("queued".into()),
        poll_interval_ms: Some(250),
        due,
        ending: None,
        schedule: Schedule::default(),
    }
}

fn claim(worker: &str, limit: usize, now: SystemTime) -> Claim<'_> {
    Claim {
        worker,
        limit,
        now,
        lease: Duration::from_secs(30),
        record: None,
    }
}

async fn claimed<S: TaskStore>(store: &S, c: Claim<'_>) -> Vec<TaskRecord> {
    store
        .claim(c)
        .await
        .unwrap()
        .into_iter()
        .map(Result::unwrap)
        .collect()
}

fn progress(due: SystemTime) -> Progress {
    Progress {
        status: TaskStatus::InputRequired,
        status_message: Some("half way".into()),
        poll_interval_ms: None,
        failed_reads: 2,
        due,
        taken: Vec::new(),
        offered: Vec::new(),
    }
}

fn form(field: &str) -> crate::protocol::InputRequest {
    crate::protocol::InputRequest::form(
        "Approve?",
        serde_json::json!({
            "type": "object",
            "properties": {field: {"type": "boolean"}},
            "required": [field],
        }),
    )
}

fn asked(keys: &[&str]) -> InputRequests {
    keys.iter().map(|k| ((*k).to_owned(), form("ok"))).collect()
}

/// Every check, on an empty store.
#[cfg_attr(not(feature = "test-util"), allow(unreachable_pub))]
pub async fn contract<S: TaskStore>(store: &S) {
    records_come_back_as_inserted(store).await;
    claims_take_due_records_once_oldest_first(store).await;
    a_stale_fence_cannot_write(store).await;
    answers_and_progress_are_kept(store).await;
    endings_are_delivered_until_acknowledged(store).await;
    cancel_and_remove(store).await;
    listings_filter(store).await;
    questions_are_recorded_and_closed(store).await;
    answers_come_from_anywhere_once(store).await;
    an_answer_during_a_step_makes_the_record_due(store).await;
    records_that_ask_are_listed_oldest_question_first(store).await;
    a_schedule_is_kept(store).await;
    a_unique_key_names_one_record(store).await;
    a_reserved_key_is_started_once(store).await;
    a_record_says_how_its_task_stands(store).await;
    a_record_is_forgotten_unless_a_worker_holds_it(store).await;
    delivered_records_are_pruned_oldest_first_in_batches(store).await;
    a_lease_is_given_back_at_once(store).await;
    a_workers_name_gives_its_leases_back(store).await;
}

async fn records_come_back_as_inserted<S: TaskStore>(store: &S) {
    let a = store.insert(new_task(1, t(10))).await.unwrap();
    let b = store.insert(new_task(2, t(10))).await.unwrap();
    assert_ne!(a, b);
    let r = store.get(a).await.unwrap().expect("the record");
    assert_eq!(r.id, a);
    assert_eq!(r.reference.task_id().expose(), "task-1-secret");
    assert_eq!(r.reference.server(), Some("srv"));
    assert_eq!(r.reference.protocol_version(), Some("2026-07-28"));
    assert_eq!(r.tool, "export");
    assert_eq!(r.key.as_deref(), Some("key-1"));
    assert_eq!(r.scope, "odd");
    assert_eq!(r.status, TaskStatus::Working);
    assert_eq!(r.status_message.as_deref(), Some("queued"));
    assert_eq!(r.poll_interval_ms, Some(250));
    assert_eq!(r.due, t(10));
    assert_eq!(r.failed_reads, 0);
    assert!(r.lease.is_none());
    assert!(r.answers.is_empty());
    assert!(!r.cancel_requested && r.ending.is_none() && !r.delivered);
    assert!(!format!("{r:?}").contains("task-1-secret"), "{r:?}");
    assert!(store.get(RecordId(987_654)).await.unwrap().is_none());
    // Leave nothing due for the next checks.
    for id in [a, b] {
        let c = claimed(
            store,
            Claim {
                record: Some(id),
                ..claim("w", 1, t(0))
            },
        )
        .await;
        store.remove(id, c[0].fence().unwrap()).await.unwrap();
    }
}

async fn claims_take_due_records_once_oldest_first<S: TaskStore>(store: &S) {
    let late = store.insert(new_task(3, t(200))).await.unwrap();
    let early = store.insert(new_task(4, t(100))).await.unwrap();
    let later = store.insert(new_task(5, t(300))).await.unwrap();
    assert!(
        claimed(store, claim("w1", 10, t(99))).await.is_empty(),
        "nothing due"
    );

    let got = claimed(store, claim("w1", 2, t(250))).await;
    let ids: Vec<RecordId> = got.iter().map(|r| r.id).collect();
    assert_eq!(ids, [early, late], "due ones, oldest due first");
    let lease = got[0].lease.clone().unwrap();
    assert_eq!(lease.owner, "w1");
    assert_eq!(lease.until, t(280));
    assert!(
        claimed(store, claim("w2", 10, t(250))).await.is_empty(),
        "held"
    );

    // The lease runs out: another worker takes the records, with newer fences.
    let again = claimed(store, claim("w2", 10, t(400))).await;
    let ids: Vec<RecordId> = again.iter().map(|r| r.id).collect();
    assert_eq!(ids, [early, late, later]);
    for r in &again {
        assert_eq!(r.lease.as_ref().unwrap().owner, "w2");
    }
    assert!(again[0].fence().unwrap() > got[0].fence().unwrap());
    assert!(again[1].fence().unwrap() > got[1].fence().unwrap());
    assert_eq!(
        store.next_due().await.unwrap(),
        Some(t(430)),
        "the leases' end"
    );

    // A record claimed alone, due or not.
    let far = store.insert(new_task(6, t(10_000))).await.unwrap();
    let one = claimed(
        store,
        Claim {
            record: Some(far),
            ..claim("w3", 10, t(400))
        },
    )
    .await;
    assert_eq!(one.len(), 1);
    assert_eq!(one[0].id, far);
    for r in again.iter().chain(&one) {
        store.remove(r.id, r.fence().unwrap()).await.unwrap();
    }
    assert_eq!(store.next_due().await.unwrap(), None);
}

async fn a_stale_fence_cannot_write<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(7, t(0))).await.unwrap();
    let first = claimed(store, claim("w1", 1, t(10))).await.remove(0);
    let old = first.fence().unwrap();
    // w1 stalls past its lease; w2 takes over.
    let second = claimed(store, claim("w2", 1, t(100))).await.remove(0);
    let new = second.fence().unwrap();

    let refused = [
        store.save(id, old, progress(t(500))).await.unwrap_err(),
        store.renew(id, old, t(999)).await.unwrap_err(),
        store
            .record_answer(id, old, "q", &ElicitResult::decline().into())
            .await
            .unwrap_err(),
        store.finish(id, old, &Ending::Cancelled).await.unwrap_err(),
        store.acknowledge(id, old).await.unwrap_err(),
        store.remove(id, old).await.unwrap_err(),
    ];
    for e in refused {
        assert!(e.is_stale(), "{e}");
        assert_eq!(e.record(), Some(id));
    }
    let r = store.get(id).await.unwrap().unwrap();
    assert_eq!(r.status, TaskStatus::Working, "nothing written");
    assert!(r.ending.is_none() && r.answers.is_empty());

    store.renew(id, new, t(1_000)).await.unwrap();
    assert_eq!(
        store.get(id).await.unwrap().unwrap().lease.unwrap().until,
        t(1_000)
    );
    let missing = store.save(RecordId(987_654), new, progress(t(0))).await;
    assert!(missing.unwrap_err().is_not_found());
    store.remove(id, new).await.unwrap();
    assert!(store.get(id).await.unwrap().is_none());
}

async fn answers_and_progress_are_kept<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(8, t(0))).await.unwrap();
    let fence = claimed(store, claim("w", 1, t(0))).await[0]
        .fence()
        .unwrap();
    let yes: InputResponse = ElicitResult::accept(serde_json::json!({"ok": true})).into();
    let no: InputResponse = ElicitResult::decline().into();
    store
        .ask(id, fence, &asked(&["confirm", "other"]), t(0))
        .await
        .unwrap();
    let standing = store.record_answer(id, fence, "confirm", &yes).await;
    assert_eq!(standing.unwrap(), yes);
    store.record_answer(id, fence, "other", &no).await.unwrap();
    // A handler's second answer does not replace the first.
    let standing = store.record_answer(id, fence, "other", &yes).await;
    assert_eq!(standing.unwrap(), no, "the first answer stands");
    let r = store.get(id).await.unwrap().unwrap();
    assert_eq!(r.answers["confirm"].response, yes);
    assert!(!r.answers["confirm"].taken);

    let mut p = progress(t(60));
    p.taken = vec!["confirm".into()];
    store.save(id, fence, p).await.unwrap();
    let r = store.get(id).await.unwrap().unwrap();
    assert!(r.answers["confirm"].taken && !r.answers["other"].taken);
    assert_eq!(r.status, TaskStatus::InputRequired);
    assert_eq!(r.status_message.as_deref(), Some("half way"));
    assert_eq!(r.poll_interval_ms, None);
    assert_eq!(r.failed_reads, 2);
    assert_eq!(r.due, t(60));
    // Saving gives the record up: it is claimable once due.
    assert!(claimed(store, claim("w2", 5, t(59))).await.is_empty());
    assert_eq!(store.next_due().await.unwrap(), Some(t(60)));
    let again = claimed(store, claim("w2", 5, t(60))).await;
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].answers.len(), 2);
    store.remove(id, again[0].fence().unwrap()).await.unwrap();
}

async fn endings_are_delivered_until_acknowledged<S: TaskStore>(store: &S) {
    let endings = [
        Ending::Completed {
            result: crate::protocol::CallToolResult::text("done")
                .with_structured(serde_json::json!({"rows": 3})),
        },
        Ending::Failed {
            error: RpcError::new(-32603, "boom"),
        },
        Ending::Cancelled,
        Ending::Expired,
        Ending::Unreachable {
            reason: "gone".into(),
        },
    ];
    let mut ids = Vec::new();
    for (n, ending) in endings.iter().enumerate() {
        let id = store.insert(new_task(20 + n as u32, t(0))).await.unwrap();
        let fence = claimed(
            store,
            Claim {
                record: Some(id),
                ..claim("w", 1, t(0))
            },
        )
        .await[0]
            .fence()
            .unwrap();
        store.finish(id, fence, ending).await.unwrap();
        ids.push(id);
    }
    // The worker that saw the end keeps its lease, to deliver it.
    assert!(claimed(store, claim("w2", 10, t(0))).await.is_empty());
    // Once that lease runs out, ended records await delivery, whatever
    // their due time.
    let got = claimed(store, claim("w", 10, t(40))).await;
    assert_eq!(got.len(), endings.len());
    for (r, ending) in got.iter().zip(&endings) {
        assert_eq!(
            r.ending.as_ref(),
            Some(ending),
            "an ending comes back as written"
        );
        assert!(!r.delivered);
    }
    // Not acknowledged: delivered again once the lease runs out.
    let again = claimed(store, claim("w", 10, t(100))).await;
    assert_eq!(again.len(), endings.len());
    assert!(again[0].fence().unwrap() > got[0].fence().unwrap());
    for r in &again {
        store.acknowledge(r.id, r.fence().unwrap()).await.unwrap();
    }
    assert!(claimed(store, claim("w", 10, t(10_000))).await.is_empty());
    let delivered = store
        .list(&Filter::all().state(RecordState::Delivered))
        .await
        .unwrap();
    assert_eq!(delivered.len(), endings.len());
    assert!(delivered.iter().all(|r| r.as_ref().unwrap().delivered));
    assert!(!store.request_cancel(ids[0], t(0)).await.unwrap(), "ended");
}

async fn cancel_and_remove<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(30, t(5_000))).await.unwrap();
    assert!(store.request_cancel(id, t(50)).await.unwrap());
    let r = store.get(id).await.unwrap().unwrap();
    assert!(r.cancel_requested);
    assert_eq!(r.due, t(50), "due at once");
    let got = claimed(store, claim("w", 10, t(50))).await;
    assert_eq!(got.len(), 1);
    assert!(got[0].cancel_requested);
    assert!(!store.request_cancel(RecordId(987_654), t(0)).await.unwrap());
    store.remove(id, got[0].fence().unwrap()).await.unwrap();
}

async fn listings_filter<S: TaskStore>(store: &S) {
    let before = store.list(&Filter::all()).await.unwrap().len();
    let even_before = store
        .list(&Filter::all().scope("even"))
        .await
        .unwrap()
        .len();
    for n in 40..46 {
        store.insert(new_task(n, t(0))).await.unwrap();
    }
    let all = store.list(&Filter::all()).await.unwrap();
    assert_eq!(all.len(), before + 6);
    let even = store.list(&Filter::all().scope("even")).await.unwrap();
    assert_eq!(even.len(), even_before + 3);
    assert!(even.iter().all(|r| r.as_ref().unwrap().scope == "even"));
    let open = store
        .list(&Filter::all().scope("odd").state(RecordState::Open).limit(2))
        .await
        .unwrap();
    assert_eq!(open.len(), 2);
    let ids: Vec<RecordId> = open.iter().map(|r| r.as_ref().unwrap().id).collect();
    assert!(ids[0] < ids[1], "oldest first");
}

#[tokio::test]
async fn the_memory_store_keeps_the_contract() {
    contract(&MemoryStore::new()).await;
}

async fn questions_are_recorded_and_closed<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(50, t(0))).await.unwrap();
    let r = claimed(
        store,
        Claim {
            record: Some(id),
            ..claim("w", 1, t(0))
        },
    )
    .await
    .remove(0);
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

async fn answers_come_from_anywhere_once<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(51, t(5_000))).await.unwrap();
    let fence = claimed(
        store,
        Claim {
            record: Some(id),
            ..claim("w", 1, t(0))
        },
    )
    .await[0]
        .fence()
        .unwrap();
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
    let got = claimed(
        store,
        Claim {
            record: Some(id),
            ..claim("w", 1, t(20))
        },
    )
    .await;
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
    let fence = claimed(
        store,
        Claim {
            record: Some(id),
            ..claim("w", 1, t(0))
        },
    )
    .await[0]
        .fence()
        .unwrap();
    store.finish(id, fence, &Ending::Cancelled).await.unwrap();
    let late = store.answer(id, "b", &yes, t(30)).await.unwrap_err();
    assert!(matches!(refusal(late), Refusal::Closed { .. }));
    store.remove(id, fence).await.unwrap();
}

async fn an_answer_during_a_step_makes_the_record_due<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(52, t(0))).await.unwrap();
    let fence = claimed(
        store,
        Claim {
            record: Some(id),
            ..claim("w", 1, t(0))
        },
    )
    .await[0]
        .fence()
        .unwrap();
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
    let got = claimed(
        store,
        Claim {
            record: Some(id),
            ..claim("w", 1, SystemTime::now())
        },
    )
    .await;
    let fence = got[0].fence().unwrap();
    store.save(id, fence, progress(far)).await.unwrap();
    assert_eq!(store.get(id).await.unwrap().unwrap().due, far);
    let fence = claimed(
        store,
        Claim {
            record: Some(id),
            ..claim("w", 1, far)
        },
    )
    .await[0]
        .fence()
        .unwrap();
    store.remove(id, fence).await.unwrap();
}

async fn records_that_ask_are_listed_oldest_question_first<S: TaskStore>(store: &S) {
    let mut ids = Vec::new();
    for (n, seen) in [(60, t(300)), (61, t(100)), (62, t(200))] {
        let id = store.insert(new_task(n, t(0))).await.unwrap();
        let fence = claimed(
            store,
            Claim {
                record: Some(id),
                ..claim("w", 1, t(0))
            },
        )
        .await[0]
            .fence()
            .unwrap();
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
        let r = claimed(
            store,
            Claim {
                record: Some(id),
                ..claim("w", 1, t(10_000))
            },
        )
        .await;
        store.remove(id, r[0].fence().unwrap()).await.unwrap();
    }
}

async fn a_schedule_is_kept<S: TaskStore>(store: &S) {
    let schedule = Schedule {
        interval_ms: Some(250),
        floor_ms: Some(10),
        ceiling_ms: None,
        deadline_ms: Some(row::millis(t(77))),
    };
    let id = store
        .insert(NewTask {
            schedule,
            ..new_task(70, t(0))
        })
        .await
        .unwrap();
    let r = store.get(id).await.unwrap().unwrap();
    assert_eq!(r.schedule, schedule);
    assert_eq!(r.schedule.deadline(), Some(t(77)));
    let fence = claimed(
        store,
        Claim {
            record: Some(id),
            ..claim("w", 1, t(0))
        },
    )
    .await[0]
        .fence()
        .unwrap();
    store.remove(id, fence).await.unwrap();
}

fn keyed(n: u32, key: &str, scope: &str, unique: bool) -> NewTask {
    NewTask {
        key: Some(key.into()),
        scope: scope.into(),
        unique_key: unique,
        ..new_task(n, t(0))
    }
}

async fn a_unique_key_names_one_record<S: TaskStore>(store: &S) {
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

async fn a_reserved_key_is_started_once<S: TaskStore>(store: &S) {
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
/// Once a task ended, its record's status is the one its ending implies,
/// whatever the task last said before (`working`, `input_required`), in
/// every read: `get`, a claim for delivery, a listing.
async fn a_record_says_how_its_task_stands<S: TaskStore>(store: &S) {
    let endings = [
        (
            Ending::Completed {
                result: crate::protocol::CallToolResult::text("done"),
            },
            TaskStatus::Completed,
        ),
        (
            Ending::Failed {
                error: RpcError::new(-32603, "boom"),
            },
            TaskStatus::Failed,
        ),
        (Ending::Cancelled, TaskStatus::Cancelled),
        // Cancelled by the client at the task's lifetime.
        (Ending::Expired, TaskStatus::Cancelled),
        (
            Ending::Unreachable {
                reason: "gone".into(),
            },
            TaskStatus::Failed,
        ),
    ];
    let mut ids = Vec::new();
    for (n, (ending, status)) in endings.iter().enumerate() {
        assert_eq!(ending.status(), *status, "{ending:?}");
        for before in [TaskStatus::Working, TaskStatus::InputRequired] {
            let id = store.insert(new_task(60 + n as u32, t(0))).await.unwrap();
            let c = Claim {
                record: Some(id),
                ..claim("w", 1, t(0))
            };
            let fence = claimed(store, c).await[0].fence().unwrap();
            store
                .save(
                    id,
                    fence,
                    Progress {
                        status: before,
                        ..progress(t(0))
                    },
                )
                .await
                .unwrap();
            let c = Claim {
                record: Some(id),
                ..claim("w", 1, t(0))
            };
            let fence = claimed(store, c).await[0].fence().unwrap();
            store.finish(id, fence, ending).await.unwrap();
            let r = store.get(id).await.unwrap().unwrap();
            assert_eq!(r.status, *status, "{before:?} then {ending:?}");
            ids.push((id, *status));
        }
        // Recorded after its end.
        let id = store
            .insert(NewTask {
                ending: Some(ending.clone()),
                ..new_task(70 + n as u32, t(0))
            })
            .await
            .unwrap();
        let r = store.get(id).await.unwrap().unwrap();
        assert_eq!(r.status, *status, "inserted with {ending:?}");
        ids.push((id, *status));
    }
    // A claim for delivery and a listing say the same.
    for (id, status) in &ids {
        let c = Claim {
            record: Some(*id),
            ..claim("w", 1, t(1_000))
        };
        let r = claimed(store, c).await.pop().expect("claimed for delivery");
        assert_eq!(r.status, *status, "claimed");
        store.acknowledge(r.id, r.fence().unwrap()).await.unwrap();
    }
    let listed = store
        .list(&Filter::all().state(RecordState::Delivered))
        .await
        .unwrap();
    for (id, status) in &ids {
        let r = listed
            .iter()
            .map(|r| r.as_ref().unwrap())
            .find(|r| r.id == *id)
            .expect("listed");
        assert_eq!(r.status, *status, "listed");
    }
}

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
async fn a_record_is_forgotten_unless_a_worker_holds_it<S: TaskStore>(store: &S) {
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
async fn delivered_records_are_pruned_oldest_first_in_batches<S: TaskStore>(store: &S) {
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

/// The first record `worker` claims of `id` at `now`, if it may.
async fn claim_one<S: TaskStore>(
    store: &S,
    worker: &str,
    id: RecordId,
    now: SystemTime,
) -> Option<TaskRecord> {
    let c = Claim {
        record: Some(id),
        ..claim(worker, 1, now)
    };
    claimed(store, c).await.pop()
}

/// `release` ends a lease now and changes nothing else; a stale fence
/// releases nothing.
async fn a_lease_is_given_back_at_once<S: TaskStore>(store: &S) {
    let id = store.insert(new_task(80, t(0))).await.unwrap();
    let held = claim_one(store, "r1", id, t(0)).await.expect("claimed");
    let fence = held.fence().unwrap();
    assert!(claim_one(store, "r2", id, t(1)).await.is_none(), "held");
    store.release(id, fence).await.unwrap();
    let r = store.get(id).await.unwrap().unwrap();
    let lease = r.lease.as_ref().expect("the lease is kept, ended");
    assert!(lease.until <= t(1), "{lease:?}");
    assert_eq!((lease.owner.as_str(), lease.fence), ("r1", fence));
    assert_eq!(
        (
            r.status,
            &r.status_message,
            r.due,
            r.failed_reads,
            &r.ending
        ),
        (
            held.status,
            &held.status_message,
            held.due,
            held.failed_reads,
            &held.ending
        ),
        "nothing else changed"
    );
    // Claimable at once, long before the lease would have run out.
    let again = claim_one(store, "r2", id, t(1))
        .await
        .expect("claimable now");
    assert!(again.fence().unwrap() > fence);
    let e = store.release(id, fence).await.unwrap_err();
    assert!(e.is_stale(), "{e}");
    let e = store.release(RecordId(987_654), fence).await.unwrap_err();
    assert!(e.is_not_found(), "{e}");
    // The newer holder's lease stands.
    assert!(claim_one(store, "r1", id, t(2)).await.is_none());
    store
        .save(id, again.fence().unwrap(), progress(t(100_000)))
        .await
        .unwrap();
}

/// `release_worker` gives back every live lease of one name, open and
/// ended records alike, and no other name's; the old fences are refused
/// once the records are claimed again.
async fn a_workers_name_gives_its_leases_back<S: TaskStore>(store: &S) {
    let open = store.insert(new_task(81, t(0))).await.unwrap();
    let ended = store
        .insert(NewTask {
            ending: Some(Ending::Cancelled),
            ..new_task(82, t(0))
        })
        .await
        .unwrap();
    let other = store.insert(new_task(83, t(0))).await.unwrap();
    let mut fences = Vec::new();
    for id in [open, ended] {
        let r = claim_one(store, "gone", id, t(0)).await.expect("claimed");
        fences.push(r.fence().unwrap());
    }
    let theirs = claim_one(store, "alive", other, t(0)).await.unwrap();
    assert_eq!(store.release_worker("gone").await.unwrap(), 2);
    assert_eq!(store.release_worker("gone").await.unwrap(), 0, "once");
    assert_eq!(store.release_worker("nobody").await.unwrap(), 0);
    for (id, old) in [open, ended].into_iter().zip(fences) {
        let r = claim_one(store, "gone", id, t(1))
            .await
            .expect("claimable now");
        assert!(r.fence().unwrap() > old);
        let e = store.save(id, old, progress(t(5))).await.unwrap_err();
        assert!(e.is_stale(), "{e}");
        match r.ending {
            Some(_) => store.acknowledge(id, r.fence().unwrap()).await.unwrap(),
            None => store
                .save(id, r.fence().unwrap(), progress(t(100_000)))
                .await
                .unwrap(),
        }
    }
    assert!(
        claim_one(store, "gone", other, t(1)).await.is_none(),
        "another name's lease stands"
    );
    store
        .save(other, theirs.fence().unwrap(), progress(t(100_000)))
        .await
        .unwrap();
}
