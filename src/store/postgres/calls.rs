//! The [`TaskStore`] calls.

use super::*;

impl TaskStore for PostgresStore {
    async fn insert(&self, task: NewTask) -> StoreResult<RecordId> {
        match self.add(&task, None).await? {
            Reservation::Reserved { id, .. } => Ok(id),
            Reservation::Taken(existing) => Err(StoreError::duplicate(existing)),
        }
    }

    async fn reserve(
        &self,
        task: NewTask,
        worker: &str,
        until: SystemTime,
    ) -> StoreResult<Reservation> {
        self.add(&task, Some((worker, until))).await
    }

    async fn start(
        &self,
        id: RecordId,
        fence: Fence,
        reference: &TaskRef,
        schedule: &Schedule,
        progress: StepReport,
    ) -> StoreResult<()> {
        let conn = self.conn().await?;
        self.fenced(
            &conn,
            id,
            &conn.st.start,
            &[
                &id.0,
                &fence.0,
                &reference.task_id().expose(),
                &reference.server(),
                &reference.protocol_version(),
                &row::schedule_json(schedule),
            ],
        )
        .await?;
        self.save(id, fence, progress).await
    }

    async fn get(&self, id: RecordId) -> StoreResult<Option<TaskRecord>> {
        let conn = self.conn().await?;
        let row = self
            .run(&conn, conn.client.query_opt(&conn.st.get, &[&id.0]))
            .await?;
        row.as_ref().map(|r| decode(r, self.skew())).transpose()
    }

    async fn claim(&self, claim: Claim<'_>) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        if claim.limit == 0 {
            return Ok(Vec::new());
        }
        let conn = self.conn().await?;
        // On the database's clock, the database decides what is due and
        // whose lease ran out; its clock comes back with the rows.
        let now = match self.inner.clock {
            Clock::Database => None,
            Clock::Worker => Some(millis(claim.now)),
        };
        let lease = i64::try_from(claim.lease.as_millis()).unwrap_or(i64::MAX);
        let rows = match claim.record {
            Some(id) => {
                self.run(
                    &conn,
                    conn.client
                        .query(&conn.st.claim_one, &[&now, &claim.worker, &lease, &id.0]),
                )
                .await?
            }
            None => match self.claim_due(&conn, claim.limit).await? {
                Some(statement) => {
                    self.run(
                        &conn,
                        conn.client
                            .query(&statement, &[&now, &claim.worker, &lease]),
                    )
                    .await?
                }
                None => {
                    self.run(
                        &conn,
                        conn.client.query(
                            &conn.st.claim_due,
                            &[&now, &claim.worker, &lease, &big(claim.limit)],
                        ),
                    )
                    .await?
                }
            },
        };
        if self.inner.clock == Clock::Database
            && let Some(row) = rows.first()
            && let Ok(clock) = row.try_get::<_, i64>("clock")
        {
            self.inner
                .skew
                .store(clock.saturating_sub(millis(claim.now)), Ordering::Relaxed);
        }
        // The row that only carries the clock has no id.
        let claimed: Vec<Row> = rows
            .into_iter()
            .filter(|r| !matches!(r.try_get::<_, Option<i64>>("id"), Ok(None)))
            .collect();
        Ok(self.records(&claimed))
    }

    async fn renew(&self, id: RecordId, fence: Fence, until: SystemTime) -> StoreResult<()> {
        let conn = self.conn().await?;
        self.fenced(
            &conn,
            id,
            &conn.st.renew,
            &[&id.0, &fence.0, &self.to_db(until)],
        )
        .await
    }

    async fn release(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let conn = self.conn().await?;
        self.fenced(&conn, id, &conn.st.release, &[&id.0, &fence.0])
            .await
    }

    async fn release_worker(&self, worker: &str) -> StoreResult<u64> {
        let conn = self.conn().await?;
        let now = match self.inner.clock {
            Clock::Database => None,
            Clock::Worker => Some(millis(SystemTime::now())),
        };
        self.run(
            &conn,
            conn.client
                .execute(&conn.st.release_worker, &[&worker, &now]),
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
                let (changed, entries) = questions::ask_noting(&mut book.questions, asked, now);
                book.noted = entries;
                Ok(Change::when(changed, ()))
            })
            .await?;
        Ok((book.questions, book.answers))
    }

    async fn answer_by(
        &self,
        id: RecordId,
        key: &str,
        response: &InputResponse,
        by: Answerer,
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
            book.noted = vec![HistoryEntry {
                at: now,
                event: questions::answered(key, by),
            }];
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
                    Ok(()) => {
                        book.noted = vec![HistoryEntry {
                            at: now,
                            event: questions::answered(key, Answerer::Handler),
                        }];
                        Ok(Change::Write(response.clone()))
                    }
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

    async fn save(&self, id: RecordId, fence: Fence, progress: StepReport) -> StoreResult<()> {
        let conn = self.conn().await?;
        let now = SystemTime::now();
        if !progress.taken.is_empty() || !progress.offered.is_empty() {
            self.rewrite(&conn, id, Some(fence), now, false, |book| {
                book.noted = questions::taken_now(&book.answers, &progress.taken, now);
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
                &self.to_db(progress.due),
                &self.to_db(now),
            ],
        )
        .await
    }

    async fn save_all(&self, saves: Vec<(RecordId, Fence, StepReport)>) -> Vec<StoreResult<()>> {
        // In one statement; the rest one at a time after it.
        let together = row::together(&saves);
        let batch: Vec<usize> = (0..saves.len()).filter(|&i| together[i]).collect();
        let mut answers: Vec<Option<StoreResult<()>>> = saves.iter().map(|_| None).collect();
        if batch.len() > 1 {
            match self.save_together(batch.iter().map(|&i| &saves[i])).await {
                Ok(written) => {
                    for &i in &batch {
                        let id = saves[i].0;
                        answers[i] = Some(if written.contains(&id.0) {
                            Ok(())
                        } else {
                            // Not written: claimed by another worker, or gone.
                            match self.conn().await {
                                Ok(conn) => Err(self.refused(&conn, id).await),
                                Err(e) => Err(e),
                            }
                        });
                    }
                }
                Err(e) => {
                    for &i in &batch {
                        answers[i] = Some(Err(e.again()));
                    }
                }
            }
        }
        row::save_the_rest(self, saves, answers).await
    }

    async fn finish(&self, id: RecordId, fence: Fence, ending: &Ending) -> StoreResult<()> {
        let conn = self.conn().await?;
        let json = row::ending_json(ending);
        let now = self.to_db(SystemTime::now());
        let status = ending.status().as_str();
        self.fenced(
            &conn,
            id,
            &conn.st.finish,
            &[&id.0, &fence.0, &json, &now, &status, &ending.name()],
        )
        .await
    }

    async fn acknowledge(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let conn = self.conn().await?;
        let now = self.to_db(SystemTime::now());
        self.fenced(&conn, id, &conn.st.acknowledge, &[&id.0, &fence.0, &now])
            .await
    }

    async fn request_cancel(&self, id: RecordId, now: SystemTime) -> StoreResult<bool> {
        let conn = self.conn().await?;
        let now = self.to_db(now);
        let changed = self
            .run(
                &conn,
                conn.client.execute(&conn.st.request_cancel, &[&id.0, &now]),
            )
            .await?;
        Ok(changed > 0)
    }

    async fn remove(&self, id: RecordId, fence: Fence) -> StoreResult<()> {
        let conn = self.conn().await?;
        self.fenced(&conn, id, &conn.st.remove, &[&id.0, &fence.0])
            .await
    }

    async fn forget(&self, id: RecordId, now: SystemTime) -> StoreResult<Forgotten> {
        let conn = self.conn().await?;
        // As for a claim: the database's clock judges whose lease ran out.
        let now = match self.inner.clock {
            Clock::Database => None,
            Clock::Worker => Some(millis(now)),
        };
        // A lease that runs out between the two statements: try again.
        for _ in 0..REWRITE_TRIES {
            let removed = self
                .run(&conn, conn.client.execute(&conn.st.forget, &[&id.0, &now]))
                .await?;
            if removed > 0 {
                return Ok(Forgotten::Removed);
            }
            let holder = self
                .run(
                    &conn,
                    conn.client.query_opt(&conn.st.holder, &[&id.0, &now]),
                )
                .await?;
            let Some(row) = holder else {
                return Ok(Forgotten::Missing);
            };
            let held: Option<bool> = column(&row, id, "held")?;
            if held == Some(true) {
                let owner: Option<String> = column(&row, id, "lease_owner")?;
                let until: Option<i64> = column(&row, id, "lease_until")?;
                return Ok(Forgotten::Held {
                    owner: owner.unwrap_or_default(),
                    until: row::time(until.unwrap_or(0).saturating_sub(self.skew())),
                });
            }
        }
        Err(StoreError::other(format!(
            "record {id}: its lease came and went {REWRITE_TRIES} times while it was forgotten"
        )))
    }

    async fn prune(&self, older_than: SystemTime, limit: usize) -> StoreResult<usize> {
        if limit == 0 {
            return Ok(0);
        }
        let conn = self.conn().await?;
        let removed = self
            .run(
                &conn,
                conn.client
                    .execute(&conn.st.prune, &[&self.to_db(older_than), &big(limit)]),
            )
            .await?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }

    async fn list(&self, filter: &Filter) -> StoreResult<Vec<StoreResult<TaskRecord>>> {
        let conn = self.conn().await?;
        let state: Option<i32> = filter.state.map(|s| match s {
            RecordState::Open => 0,
            RecordState::Undelivered => 1,
            RecordState::Delivered => 2,
        });
        let limit = filter.limit.map(big);
        let status = filter.status.map(|s| s.as_str());
        let rows = self
            .run(
                &conn,
                conn.client.query(
                    if filter.asking {
                        &conn.st.list_asking
                    } else if filter.newest_first {
                        &conn.st.list_newest
                    } else {
                        &conn.st.list
                    },
                    &[
                        &filter.scope,
                        &state,
                        &limit,
                        &filter.key,
                        &filter.tool,
                        &filter.before.map(|id| id.0),
                        &filter.server,
                        &status,
                    ],
                ),
            )
            .await?;
        Ok(self.records(&rows))
    }

    async fn counts(&self, overdue_before: SystemTime) -> StoreResult<Counts> {
        let conn = self.conn().await?;
        let skew = self.skew();
        let before = row::millis(overdue_before).saturating_add(skew);
        let row = self
            .run(&conn, conn.client.query_one(&conn.st.counts, &[&before]))
            .await?;
        let unreadable = |e| StoreError::other("unreadable counts").with_source(e);
        let n = |i| {
            row.try_get::<_, i64>(i)
                .map(|n| u64::try_from(n).unwrap_or(0))
                .map_err(unreadable)
        };
        let (open, undelivered) = (n(0)?, n(2)?);
        Ok(Counts {
            open,
            asking: n(1)?,
            undelivered,
            delivered: n(3)?,
            overdue: n(4)?,
            asking_since: row
                .try_get::<_, Option<i64>>(5)
                .map_err(unreadable)?
                .map(|ms| row::time(ms.saturating_sub(skew))),
        })
    }

    async fn next_due(&self) -> StoreResult<Option<SystemTime>> {
        let conn = self.conn().await?;
        let row = self
            .run(&conn, conn.client.query_one(&conn.st.next_due, &[]))
            .await?;
        let skew = self.skew();
        row.try_get::<_, Option<i64>>(0)
            .map(|ms| ms.map(|ms| row::time(ms.saturating_sub(skew))))
            .map_err(|e| StoreError::other("an unreadable due time").with_source(e))
    }
}
