//! The record itself: what goes in comes back, claims, fencing, progress,
//! endings, cancel and removal, listings, the schedule, the status.

use super::*;

pub(super) async fn records_come_back_as_inserted<S: TaskStore>(store: &S) {
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
        let c = claim_record(store, "w", id, t(0)).await;
        store.remove(id, c[0].fence().unwrap()).await.unwrap();
    }
}

pub(super) async fn claims_take_due_records_once_oldest_first<S: TaskStore>(store: &S) {
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

pub(super) async fn a_stale_fence_cannot_write<S: TaskStore>(store: &S) {
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

pub(super) async fn answers_and_progress_are_kept<S: TaskStore>(store: &S) {
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

pub(super) async fn endings_are_delivered_until_acknowledged<S: TaskStore>(store: &S) {
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
        let fence = held(store, "w", id, t(0)).await;
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

pub(super) async fn cancel_and_remove<S: TaskStore>(store: &S) {
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

pub(super) async fn listings_filter<S: TaskStore>(store: &S) {
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

pub(super) async fn a_schedule_is_kept<S: TaskStore>(store: &S) {
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
    let fence = held(store, "w", id, t(0)).await;
    store.remove(id, fence).await.unwrap();
}

/// Once a task ended, its record's status is the one its ending implies,
/// whatever the task last said before (`working`, `input_required`), in
/// every read: `get`, a claim for delivery, a listing.
pub(super) async fn a_record_says_how_its_task_stands<S: TaskStore>(store: &S) {
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
                    StepReport {
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
