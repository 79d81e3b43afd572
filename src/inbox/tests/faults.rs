//! A store that fails: away (a clear 503), or holding a corrupt record (shown as such, the rest intact).

use super::*;
use crate::testing::HookedStore;

/// A store that can be away (every call refused), or hold a corrupt
/// record (`get` and `list` report it as such).
fn faulty(
    inner: MemoryStore,
    away: &Arc<AtomicBool>,
    corrupt: Option<RecordId>,
) -> HookedStore<MemoryStore> {
    let away = away.clone();
    HookedStore::new(inner)
        .before(move |_| match away.load(Ordering::SeqCst) {
            true => Err(StoreError::unavailable("connection refused")),
            false => Ok(()),
        })
        .read(move |_, r| match Some(r.id) == corrupt {
            true => Err(StoreError::corrupt(
                Some(r.id),
                "its answers are not valid: <b>bad</b>",
            )),
            false => Ok(r),
        })
}

#[tokio::test]
async fn a_store_that_is_away_gives_a_clear_503() {
    let away = Arc::new(AtomicBool::new(false));
    let store = faulty(store(2).await, &away, None);
    let app = app(store);
    assert_eq!(get(&app, "/tasks").await.status, StatusCode::OK);
    away.store(true, Ordering::SeqCst);
    for r in [
        get(&app, "/tasks").await,
        get(&app, "/tasks/1").await,
        get(&app, "/questions").await,
        get(&app, "/metrics").await,
        post(&app, "/tasks/1/answer", "_key=q&_action=decline").await,
        post(&app, "/tasks/2/cancel", "").await,
    ] {
        assert_eq!(r.status, StatusCode::SERVICE_UNAVAILABLE, "{}", r.body);
        assert!(
            r.body.contains("unavailable") || r.body.contains("did not answer"),
            "{}",
            r.body
        );
    }
    away.store(false, Ordering::SeqCst);
    assert_eq!(
        get(&app, "/tasks").await.status,
        StatusCode::OK,
        "back once the store is"
    );
}

#[tokio::test]
async fn a_corrupt_record_is_shown_as_such_and_the_rest_intact() {
    let store = faulty(store(3).await, &Arc::default(), Some(RecordId(2)));
    let app = app(store);
    let r = get(&app, "/tasks").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.body.contains("<tr class=\"corrupt\"><td>2</td>"),
        "{}",
        r.body
    );
    assert!(r.body.contains("&lt;b&gt;bad&lt;/b&gt;"));
    assert!(r.body.contains("href=\"/tasks/3\"") && r.body.contains("href=\"/tasks/1\""));
    let r = get(&app, "/tasks/2").await;
    assert_eq!(r.status, StatusCode::INTERNAL_SERVER_ERROR);
    assert!(r.body.contains("is corrupt"), "{}", r.body);
    assert_eq!(get(&app, "/questions").await.status, StatusCode::OK);
}
