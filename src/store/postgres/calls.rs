//! The [`TaskStore`] calls.

use super::*;

impl TaskStore for PostgresStore {
    async fn insert(&self, task: NewTask) -> StoreResult<RecordId> {
        let conn = self.conn().await?;
        let ending = task.ending.as_ref().map(row::ending_json);
        let r = &task.reference;
        let result = conn
            .client
            .query_one(
                &conn.st.insert,
                &[
                    &r.task_id().expose(),
                    &r.server(),
                    &r.protocol_version(),
                    &task.tool,
                    &task.key,
                    &task.scope,
                    &millis(SystemTime::now()),
                    &task.status.as_str(),
                    &task.status_message,
                    &row::interval_column(task.poll_interval_ms),
                    &millis(task.due),
                    &ending,
                    &row::schedule_json(&task.schedule),
                ],
            )
            .await;
        match result {
            Ok(row) => row
                .try_get(0)
                .map(RecordId)
                .map_err(|e| StoreError::other("an insert returned no id").with_source(e)),
            Err(e) => Err(self.fail(&conn, e).await),
        }
    }

    async fn get(&self, id: RecordId) -> StoreResult<Option<TaskRecord>> {
        let conn = self.conn().await?;
        match conn.client.query_opt(&conn.st.get, &[&id.0]).await {
            Ok(row) => row.as_ref().map(decode).transpose(),
            Err(e) => Err(self.fail(&conn, e).await),
        }
    }

    async fn claim(&self, claim: Claim<'_>) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        if claim.limit == 0 {
            return Ok(Vec::new());
        }
        let conn = self.conn().await?;
        let now = millis(claim.now);
        let until = claim.now.checked_add(claim.lease).map_or(i64::MAX, millis);
        let rows = match claim.record {
            Some(id) => {
                conn.client
                    .query(&conn.st.claim_one, &[&now, &claim.worker, &until, &id.0])
                    .await
            }
            None => {
                conn.client
                    .query(
                        &conn.st.claim_due,
                        &[&now, &claim.worker, &until, &big(claim.limit)],
                    )
                    .await
            }
        };
        match rows {
            Ok(rows) => Ok(Self::records(&rows)),
            Err(e) => Err(self.fail(&conn, e).await),
        }
    }

    async fn renew(&self, id: RecordId, fence: Fence, until: SystemTime) -> StoreResult<()> {
        let conn = self.conn().await?;
        self.fenced(
            &conn,
            id,
            &conn.st.renew,
            &[&id.0, &fence.0, &millis(until)],
        )
        .await
    }

    async fn ask(
        &self,
        id: RecordId,
        fence: Fence,
        asked: &InputRequests,
        now: SystemTime,
    ) -> StoreResult<(Questions, Answers)> {
        let conn = self.conn().await?;
        let ((), book) = self
            .rewrite(&conn, id, Some(fence), now, false, |book| {
                let changed = questions::ask(&mut book.questions, asked, now);
                Ok(Change::when(changed, ()))
            })
            .await?;
        Ok((book.questions, book.answers))
    }

    async fn answer(
        &self,
        id: RecordId,
        key: &str,
        response: &InputResponse,
        now: SystemTime,
    ) -> StoreResult<()> {
        let conn = self.conn().await?;
        self.rewrite(&conn, id, None, now, true, |book| {
            questions::answer(
                &book.questions,
                &mut book.answers,
                book.ended,
                key,
                response,
            )
            .map_err(|why| StoreError::refused(id, why))?;
            Ok(Change::Write(()))
        })
        .await?;
        Ok(())
    }

    async fn record_answer(
        &self,
        id: RecordId,
        fence: Fence,
        key: &str,
        response: &InputResponse,
    ) -> StoreResult<InputResponse> {
        let conn = self.conn().await?;
        let now = SystemTime::now();
        let (standing, _) = self
            .rewrite(&conn, id, Some(fence), now, false, |book| {
                match questions::answer(
                    &book.questions,
                    &mut book.answers,
                    book.ended,
                    key,
                    response,
                ) {
                    Ok(()) => Ok(Change::Write(response.clone())),
                    // Someone answered first: their answer stands.
                    Err(Refusal::Answered { .. }) => {
                        Ok(Change::Keep(book.answers[key].response.clone()))
                    }
                    Err(why) => Err(StoreError::refused(id, why)),
                }
            })
            .await?;
        Ok(standing)
    }

    async fn save(&self, id: RecordId, fence: Fence, progress: Progress) -> StoreResult<()> {
        let conn = self.conn().await?;
        let now = SystemTime::now();
        if !progress.taken.is_empty() || !progress.offered.is_empty() {
            self.rewrite(&conn, id, Some(fence), now, false, |book| {
                let taken =
                    questions::take(&mut book.questions, &mut book.answers, &progress.taken, now);
                let offered = questions::offer(&mut book.questions, &progress.offered);
                Ok(Change::when(taken || offered, ()))
            })
            .await?;
        }
        let failed_reads = i32::try_from(progress.failed_reads).unwrap_or(i32::MAX);
        self.fenced(
            &conn,
            id,
            &conn.st.save,
            &[
                &id.0,
                &fence.0,
                &progress.status.as_str(),
                &progress.status_message,
                &row::interval_column(progress.poll_interval_ms),
                &failed_reads,
                &millis(progress.due),
                &millis(now),
            ],
        )
        .await
    }

    async fn finish(&self, id: RecordId, fence: Fence, ending: &Ending) -> StoreResult<()> {
        let conn = self.conn().await?;
        let json = row::ending_json(ending);
        let now = millis(SystemTime::now());
        self.fenced(&conn, id, &conn.st.finish, &[&id.0, &fence.0, &json, &now])
            .await
    }

    async fn acknowledge(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let conn = self.conn().await?;
        let now = millis(SystemTime::now());
        self.fenced(&conn, id, &conn.st.acknowledge, &[&id.0, &fence.0, &now])
            .await
    }

    async fn request_cancel(&self, id: RecordId, now: SystemTime) -> StoreResult<bool> {
        let conn = self.conn().await?;
        match conn
            .client
            .execute(&conn.st.request_cancel, &[&id.0, &millis(now)])
            .await
        {
            Ok(n) => Ok(n > 0),
            Err(e) => Err(self.fail(&conn, e).await),
        }
    }

    async fn remove(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let conn = self.conn().await?;
        self.fenced(&conn, id, &conn.st.remove, &[&id.0, &fence.0])
            .await
    }

    async fn list(&self, filter: &Filter) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        let conn = self.conn().await?;
        let state: Option<i32> = filter.state.map(|s| match s {
            RecordState::Open => 0,
            RecordState::Undelivered => 1,
            RecordState::Delivered => 2,
        });
        let limit = filter.limit.map(big);
        match conn
            .client
            .query(
                &conn.st.list,
                &[&filter.scope, &state, &limit, &filter.asking],
            )
            .await
        {
            Ok(rows) => Ok(Self::records(&rows)),
            Err(e) => Err(self.fail(&conn, e).await),
        }
    }

    async fn next_due(&self) -> StoreResult<Option<SystemTime>> {
        let conn = self.conn().await?;
        match conn.client.query_one(&conn.st.next_due, &[]).await {
            Ok(row) => row
                .try_get::<_, Option<i64>>(0)
                .map(|ms| ms.map(row::time))
                .map_err(|e| StoreError::other("an unreadable due time").with_source(e)),
            Err(e) => Err(self.fail(&conn, e).await),
        }
    }
}
