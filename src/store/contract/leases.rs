//! Leases given back: one record at once, or every lease of a worker.

use super::*;

/// The first record `worker` claims of `id` at `now`, if it may.
async fn claim_one<S: TaskStore>(
    store: &S,
    worker: &str,
    id: RecordId,
    now: SystemTime,
) -> Option<TaskRecord> {
    claim_record(store, worker, id, now).await.pop()
}

/// `release` ends a lease now and changes nothing else; a stale fence
/// releases nothing.
pub(super) async fn a_lease_is_given_back_at_once<S: TaskStore>(store: &S) {
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
pub(super) async fn a_workers_name_gives_its_leases_back<S: TaskStore>(store: &S) {
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

/// `save_all` answers each save as `save` would, in the order given:
/// written, stale (claimed since), not found (gone); a record named twice
/// ends as the later save left it, whichever of them touches questions.
pub(super) async fn saves_written_together_are_each_answered<S: TaskStore>(store: &S) {
    let mut ids = Vec::new();
    for n in 90..95 {
        ids.push(store.insert(new_task(n, t(0))).await.unwrap());
    }
    let [a, b, stale, gone, twice] = ids[..] else {
        unreachable!()
    };
    let fence = |id| async move { held(store, "s1", id, t(0)).await };
    let (fa, fb, fs, fg, ft) = (
        fence(a).await,
        fence(b).await,
        fence(stale).await,
        fence(gone).await,
        fence(twice).await,
    );
    // Taken by another worker once the lease ran out; removed.
    held(store, "s2", stale, t(100)).await;
    store.remove(gone, fg).await.unwrap();
    let said = |status, message: &str, due| StepReport {
        status,
        status_message: Some(message.into()),
        poll_interval_ms: Some(700),
        failed_reads: 0,
        due,
        taken: Vec::new(),
        offered: Vec::new(),
    };
    let answers = store
        .save_all(vec![
            (a, fa, said(TaskStatus::Working, "a", t(500))),
            // One that touches the questions (an offer of none asked),
            // then a plain one: written in that order all the same.
            (
                twice,
                ft,
                StepReport {
                    offered: vec!["none-asked".into()],
                    ..said(TaskStatus::Working, "first", t(501))
                },
            ),
            (stale, fs, said(TaskStatus::Working, "late", t(502))),
            (b, fb, said(TaskStatus::InputRequired, "b", t(503))),
            (gone, fg, said(TaskStatus::Working, "gone", t(504))),
            (twice, ft, said(TaskStatus::Working, "second", t(505))),
        ])
        .await;
    let seen: Vec<&str> = answers
        .iter()
        .map(|a| match a {
            Ok(()) => "written",
            Err(e) if e.is_stale() => "stale",
            Err(e) if e.is_not_found() => "not found",
            Err(_) => "failed",
        })
        .collect();
    assert_eq!(
        seen,
        [
            "written",
            "written",
            "stale",
            "written",
            "not found",
            "written"
        ]
    );
    for (id, status, message, due) in [
        (a, TaskStatus::Working, "a", t(500)),
        (b, TaskStatus::InputRequired, "b", t(503)),
        (twice, TaskStatus::Working, "second", t(505)),
    ] {
        let r = store.get(id).await.unwrap().unwrap();
        assert_eq!(
            (
                r.status,
                r.status_message.as_deref(),
                r.due,
                r.poll_interval_ms
            ),
            (status, Some(message), due, Some(700)),
            "{id}"
        );
        assert!(
            r.lease.as_ref().is_none_or(|l| l.until <= t(0)),
            "given up: {r:?}"
        );
    }
    let r = store.get(stale).await.unwrap().unwrap();
    assert_eq!(
        r.status_message.as_deref(),
        Some("queued"),
        "the stale save wrote nothing"
    );
    assert!(store.get(gone).await.unwrap().is_none());
    // Nothing to write: no answer.
    assert!(store.save_all(Vec::new()).await.is_empty());
}
