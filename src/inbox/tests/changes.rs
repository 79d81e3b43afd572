//! What a person changes from the pages: answers (taken once, refused with a reason), cancels, forgetting a delivered record.

use super::*;

#[tokio::test]
async fn an_answer_is_stored_once_and_a_refusal_says_why_next_to_its_field() {
    let store = store(1).await;
    let app = app(store.clone());
    let page = get(&app, "/questions").await;
    assert!(
        page.body.contains("Ship &lt;b&gt;now&lt;/b&gt;?"),
        "{}",
        page.body
    );
    assert!(page.body.contains("name=\"f:when\""));
    // A date-time the store refuses: the reason next to the field, the
    // entered values kept, nothing stored.
    let r = post(
        &app,
        "/tasks/1/answer",
        "_key=q&_back=questions&_action=accept&f:when=tomorrow&f:count=3",
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let field = r.body.find("name=\"f:when\"").unwrap();
    let reason = r
        .body
        .find("is not a date-time")
        .unwrap_or_else(|| panic!("{}", r.body));
    assert!(reason > field, "the reason follows its field");
    assert!(
        r.body.contains("value=\"tomorrow\""),
        "kept what was entered"
    );
    assert!(r.body.contains("value=\"3\""));
    let r = post(
        &app,
        "/tasks/1/answer",
        "_key=q&_back=task&_action=accept&f:when=2025-01-01T00:00:00Z&f:count=three",
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(
        r.body.contains("&quot;three&quot; is not a number"),
        "{}",
        r.body
    );
    let r = post(
        &app,
        "/tasks/1/answer",
        "_key=q&_back=task&_action=accept&f:when=2025-01-01T00:00:00Z&f:count=12",
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(record(&store, 1).await.answers.is_empty());
    // A fitting answer: stored, back to the page it came from.
    let r = post(
        &app,
        "/tasks/1/answer",
        "_key=q&_back=task&_action=accept&f:when=2025-01-01T00:00:00Z&f:count=3&f:ok=true",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.headers["location"], "/tasks/1");
    let stored = record(&store, 1).await;
    let expected: InputResponse = crate::protocol::ElicitResult::accept(
        json!({"when": "2025-01-01T00:00:00Z", "count": 3, "ok": true}),
    )
    .into();
    assert_eq!(stored.answers["q"].response, expected);
    // A second answer: the first one wins.
    let r = post(
        &app,
        "/tasks/1/answer",
        "_key=q&_back=questions&_action=decline",
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("was already answered"), "{}", r.body);
    assert_eq!(record(&store, 1).await.answers["q"].response, expected);
    let page = get(&app, "/tasks/1").await;
    assert!(
        page.body
            .contains("answered; waiting for a worker to send it")
    );
}

#[tokio::test]
async fn bad_answers_are_refused_with_a_clear_page() {
    let store = store(2).await;
    let app = app(store.clone());
    for (uri, body, status, says) in [
        (
            "/tasks/99/answer",
            "_key=q&_action=decline",
            StatusCode::NOT_FOUND,
            "no task record 99",
        ),
        (
            "/tasks/abc/answer",
            "_key=q&_action=decline",
            StatusCode::NOT_FOUND,
            "not a task record",
        ),
        (
            "/tasks/1/answer",
            "_action=decline",
            StatusCode::BAD_REQUEST,
            "no question key",
        ),
        (
            "/tasks/1/answer",
            "_key=q&_action=maybe",
            StatusCode::BAD_REQUEST,
            "not accept",
        ),
        (
            "/tasks/1/answer",
            "_key=nope&_action=decline",
            StatusCode::UNPROCESSABLE_ENTITY,
            "there is no question",
        ),
        (
            "/tasks/2/answer",
            "_key=q&_action=decline",
            StatusCode::UNPROCESSABLE_ENTITY,
            "there is no question",
        ),
    ] {
        let r = post(&app, uri, body).await;
        assert_eq!(r.status, status, "{uri} {body}: {}", r.body);
        assert!(
            r.body.to_lowercase().contains(says),
            "{uri} {body}: {}",
            r.body
        );
    }
    // Not a form at all.
    let r = send(
        &app,
        "POST",
        "/tasks/1/answer",
        &[("sec-fetch-site", "same-origin")],
        "%%%&&=\u{0}",
    )
    .await;
    assert!(r.status.is_client_error(), "{}", r.status);
    // A closed question.
    end(&store, RecordId(1), Ending::Cancelled).await;
    let r = post(&app, "/tasks/1/answer", "_key=q&_back=task&_action=decline").await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("is closed"), "{}", r.body);
    assert!(record(&store, 1).await.answers.is_empty());
    // Unknown pages and records.
    assert_eq!(get(&app, "/tasks/99").await.status, StatusCode::NOT_FOUND);
    assert_eq!(get(&app, "/tasks/-").await.status, StatusCode::NOT_FOUND);
    assert_eq!(get(&app, "/nothing").await.status, StatusCode::NOT_FOUND);
    assert_eq!(
        post(&app, "/tasks/99/cancel", "").await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_cancel_from_the_page_asks_the_store() {
    let store = store(2).await;
    let app = app(store.clone());
    assert!(
        get(&app, "/tasks/2")
            .await
            .body
            .contains("Cancel this task")
    );
    let r = post(&app, "/tasks/2/cancel", "").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert!(record(&store, 2).await.cancel_requested);
    assert!(
        !get(&app, "/tasks/2")
            .await
            .body
            .contains("Cancel this task")
    );
}

#[tokio::test]
async fn only_a_delivered_record_is_forgotten_from_the_page() {
    let store = store(3).await;
    let app = app(store.clone());
    // Open, and ended but undelivered: kept, with a page that says why.
    end(&store, RecordId(3), Ending::Cancelled).await;
    for id in [2, 3] {
        assert!(
            !get(&app, &format!("/tasks/{id}"))
                .await
                .body
                .contains("Forget this record")
        );
        let r = post(&app, &format!("/tasks/{id}/forget"), "").await;
        assert_eq!(r.status, StatusCode::CONFLICT, "{id}");
        assert!(store.get(RecordId(id)).await.unwrap().is_some());
    }
    // Delivered: forgotten.
    let later = SystemTime::now() + Duration::from_secs(5);
    let fence = held(&store, "w", RecordId(3), later, Duration::from_secs(1)).await;
    store.acknowledge(RecordId(3), fence).await.unwrap();
    assert!(
        get(&app, "/tasks/3")
            .await
            .body
            .contains("Forget this record")
    );
    let r = send(
        &app,
        "POST",
        "/tasks/3/forget",
        &[("sec-fetch-site", "cross-site")],
        "",
    )
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = post(&app, "/tasks/3/forget", "").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert!(store.get(RecordId(3)).await.unwrap().is_none());
    assert_eq!(
        post(&app, "/tasks/3/forget", "").await.status,
        StatusCode::CONFLICT
    );
}
