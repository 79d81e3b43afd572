//! Listings a page needs: newest first by tool, keyset pages, counts.

use super::*;

pub(super) async fn listings_page_newest_first_by_tool<S: TaskStore>(store: &S) {
    let mut ids = Vec::new();
    for n in 900..907 {
        let mut task = new_task(n, t(0));
        task.tool = format!("pager-{}", n % 2);
        ids.push(store.insert(task).await.unwrap());
    }
    let page = |f: Filter| async move {
        store
            .list(&f)
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.unwrap().id)
            .collect::<Vec<_>>()
    };
    let first = page(Filter::all().tool("pager-0").newest_first().limit(2)).await;
    assert_eq!(first, vec![ids[6], ids[4]], "newest first, of its tool");
    let second = page(
        Filter::all()
            .tool("pager-0")
            .newest_first()
            .before(first[1])
            .limit(2),
    )
    .await;
    assert_eq!(second, vec![ids[2], ids[0]], "the next page");
    let last = page(Filter::all().tool("pager-0").newest_first().before(ids[0])).await;
    assert!(last.is_empty(), "nothing before the oldest");
    let odd = page(Filter::all().tool("pager-1")).await;
    assert_eq!(odd, vec![ids[1], ids[3], ids[5]], "oldest first by default");
    assert!(page(Filter::all().tool("no-such-tool")).await.is_empty());
}

pub(super) async fn counts_say_how_records_stand<S: TaskStore>(store: &S) {
    let now = t(2_000_000);
    let before = store.counts(now).await.unwrap();
    let all = store.list(&Filter::all()).await.unwrap().len() as u64;
    assert_eq!(before.total(), all, "{before:?}");
    // One open and overdue, one open and due later, asking; one ended
    // and undelivered; one delivered.
    store.insert(new_task(950, t(1_000))).await.unwrap();
    let asking = store.insert(new_task(951, t(3_000_000))).await.unwrap();
    let ended = store.insert(new_task(952, t(3_000_000))).await.unwrap();
    let delivered = store.insert(new_task(953, t(3_000_000))).await.unwrap();
    let held = claim_record(store, "w", asking, now).await;
    store
        .ask(
            asking,
            held[0].fence().unwrap(),
            &asked(&["q"]),
            t(1_500_000),
        )
        .await
        .unwrap();
    for id in [ended, delivered] {
        let held = claim_record(store, "w", id, now).await;
        let fence = held[0].fence().unwrap();
        store.finish(id, fence, &Ending::Cancelled).await.unwrap();
        if id == delivered {
            store.acknowledge(id, fence).await.unwrap();
        }
    }
    let after = store.counts(now).await.unwrap();
    assert_eq!(after.open, before.open + 2, "{after:?}");
    assert_eq!(after.asking, before.asking + 1, "{after:?}");
    assert_eq!(after.undelivered, before.undelivered + 1, "{after:?}");
    assert_eq!(after.delivered, before.delivered + 1, "{after:?}");
    assert_eq!(after.overdue, before.overdue + 1, "{after:?}");
    let oldest = after.asking_since.unwrap();
    assert!(oldest <= t(1_500_000), "{after:?}");
    let listed = store.list(&Filter::all()).await.unwrap();
    assert_eq!(after.total(), listed.len() as u64);
}

pub(super) async fn listings_filter_by_status<S: TaskStore>(store: &S) {
    let mut ids = Vec::new();
    for n in 960..963 {
        let mut task = new_task(n, t(0));
        task.tool = "by-status".into();
        ids.push(store.insert(task).await.unwrap());
    }
    for (id, ending) in [
        (ids[0], Ending::Cancelled),
        (
            ids[1],
            Ending::Failed {
                error: RpcError::new(-1, "no"),
            },
        ),
    ] {
        let held = claim_record(store, "w", id, t(10)).await;
        store
            .finish(id, held[0].fence().unwrap(), &ending)
            .await
            .unwrap();
    }
    let of = |status| async move {
        store
            .list(&Filter::all().tool("by-status").status(status))
            .await
            .unwrap()
            .into_iter()
            .map(|r| r.unwrap().id)
            .collect::<Vec<_>>()
    };
    assert_eq!(of(TaskStatus::Cancelled).await, [ids[0]]);
    assert_eq!(of(TaskStatus::Failed).await, [ids[1]]);
    assert_eq!(
        of(TaskStatus::Working).await,
        [ids[2]],
        "open, as last read"
    );
    assert!(of(TaskStatus::Completed).await.is_empty());
}
