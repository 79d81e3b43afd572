//! A store that fails: away (a clear 503), or holding a corrupt record (shown as such, the rest intact).

use super::*;

/// A store that can be away, or hold a corrupt record.
#[derive(Clone)]
struct Faulty {
    inner: MemoryStore,
    away: Arc<AtomicBool>,
    corrupt: Option<RecordId>,
}

impl Faulty {
    fn check(&self) -> StoreResult<()> {
        if self.away.load(Ordering::SeqCst) {
            Err(StoreError::unavailable("connection refused"))
        } else {
            Ok(())
        }
    }

    fn spoil(&self, r: StoreResult<TaskRecord>) -> StoreResult<TaskRecord> {
        match r {
            Ok(r) if Some(r.id) == self.corrupt => Err(StoreError::corrupt(
                Some(r.id),
                "its answers are not valid: <b>bad</b>",
            )),
            other => other,
        }
    }
}

impl TaskStore for Faulty {
    async fn insert(&self, task: NewTask) -> StoreResult<RecordId> {
        self.check()?;
        self.inner.insert(task).await
    }
    async fn get(&self, id: RecordId) -> StoreResult<Option<TaskRecord>> {
        self.check()?;
        self.inner
            .get(id)
            .await?
            .map(|r| self.spoil(Ok(r)))
            .transpose()
    }
    async fn reserve(
        &self,
        task: NewTask,
        worker: &str,
        until: SystemTime,
    ) -> StoreResult<Reservation> {
        self.inner.reserve(task, worker, until).await
    }
    async fn start(
        &self,
        id: RecordId,
        fence: Fence,
        reference: &TaskRef,
        schedule: &Schedule,
        progress: StepReport,
    ) -> StoreResult<()> {
        self.inner
            .start(id, fence, reference, schedule, progress)
            .await
    }
    async fn claim(&self, claim: Claim<'_>) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        self.inner.claim(claim).await
    }
    async fn renew(&self, id: RecordId, fence: Fence, until: SystemTime) -> StoreResult<()> {
        self.inner.renew(id, fence, until).await
    }
    async fn release(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        self.inner.release(id, fence).await
    }
    async fn release_worker(&self, worker: &str) -> StoreResult<u64> {
        self.inner.release_worker(worker).await
    }
    async fn ask(
        &self,
        id: RecordId,
        fence: Fence,
        asked: &InputRequests,
        now: SystemTime,
    ) -> StoreResult<(Questions, Answers)> {
        self.inner.ask(id, fence, asked, now).await
    }
    async fn answer_by(
        &self,
        id: RecordId,
        key: &str,
        response: &InputResponse,
        by: Answerer,
        now: SystemTime,
    ) -> StoreResult<()> {
        self.check()?;
        self.inner.answer_by(id, key, response, by, now).await
    }
    async fn record_answer(
        &self,
        id: RecordId,
        fence: Fence,
        key: &str,
        response: &InputResponse,
    ) -> StoreResult<InputResponse> {
        self.inner.record_answer(id, fence, key, response).await
    }
    async fn save(&self, id: RecordId, fence: Fence, progress: StepReport) -> StoreResult<()> {
        self.inner.save(id, fence, progress).await
    }
    async fn finish(&self, id: RecordId, fence: Fence, ending: &Ending) -> StoreResult<()> {
        self.inner.finish(id, fence, ending).await
    }
    async fn acknowledge(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        self.inner.acknowledge(id, fence).await
    }
    async fn request_cancel(&self, id: RecordId, now: SystemTime) -> StoreResult<bool> {
        self.check()?;
        self.inner.request_cancel(id, now).await
    }
    async fn remove(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        self.inner.remove(id, fence).await
    }
    async fn forget(&self, id: RecordId, now: SystemTime) -> StoreResult<Forgotten> {
        self.check()?;
        self.inner.forget(id, now).await
    }
    async fn prune(&self, older_than: SystemTime, limit: usize) -> StoreResult<usize> {
        self.inner.prune(older_than, limit).await
    }
    async fn list(&self, filter: &Filter) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        self.check()?;
        Ok(self
            .inner
            .list(filter)
            .await?
            .into_iter()
            .map(|r| self.spoil(r))
            .collect())
    }
    async fn next_due(&self) -> StoreResult<Option<SystemTime>> {
        self.inner.next_due().await
    }
}

#[tokio::test]
async fn a_store_that_is_away_gives_a_clear_503() {
    let away = Arc::new(AtomicBool::new(false));
    let store = Faulty {
        inner: store(2).await,
        away: away.clone(),
        corrupt: None,
    };
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
    let store = Faulty {
        inner: store(3).await,
        away: Arc::new(AtomicBool::new(false)),
        corrupt: Some(RecordId(2)),
    };
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
