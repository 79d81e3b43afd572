//! Who may ask: changes from another site, loopback names without a token, every page behind a token.

use super::*;

#[tokio::test]
async fn changes_from_another_site_are_refused() {
    let store = store(2).await;
    let app = app(store.clone());
    for headers in [
        &[("sec-fetch-site", "cross-site")][..],
        &[("sec-fetch-site", "same-site")],
        &[("origin", "https://evil.test")],
        &[("origin", "null")],
    ] {
        let r = send(&app, "POST", "/tasks/2/cancel", headers, "").await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{headers:?}");
        let r = send(
            &app,
            "POST",
            "/tasks/1/answer",
            headers,
            "_key=q&_action=decline",
        )
        .await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{headers:?}");
    }
    let r = record(&store, 2).await;
    assert!(!r.cancel_requested);
    assert!(record(&store, 1).await.answers.is_empty());
    // A page is read by GET only.
    assert_eq!(
        send(&app, "GET", "/tasks/2/cancel", &[], "").await.status,
        StatusCode::METHOD_NOT_ALLOWED
    );
}

#[tokio::test]
async fn without_a_token_only_loopback_names_are_served() {
    let app = app(store(1).await);
    let request = Request::builder()
        .uri("/tasks")
        .header("host", "attacker.test:8080")
        .body(Body::empty())
        .unwrap();
    let response = app.clone().oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::FORBIDDEN);
    let request = Request::builder()
        .uri("/tasks")
        .header("host", "localhost:8080")
        .body(Body::empty())
        .unwrap();
    assert_eq!(
        app.clone().oneshot(request).await.unwrap().status(),
        StatusCode::OK
    );
}

#[tokio::test]
async fn with_a_token_every_page_needs_it() {
    let app = router(store(1).await, Options::new().access_token("s3cret-token"));
    for uri in [
        "/tasks",
        "/tasks/1",
        "/questions",
        "/metrics",
        "/assets/live.js",
    ] {
        assert_eq!(
            get(&app, uri).await.status,
            StatusCode::UNAUTHORIZED,
            "{uri}"
        );
    }
    let r = send(
        &app,
        "GET",
        "/tasks",
        &[("authorization", "Bearer s3cret-token")],
        "",
    )
    .await;
    assert_eq!(r.status, StatusCode::OK);
    let r = send(
        &app,
        "GET",
        "/tasks",
        &[("authorization", "Bearer s3cret-tokeN")],
        "",
    )
    .await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert_eq!(
        get(&app, "/tasks?token=wrong").await.status,
        StatusCode::UNAUTHORIZED
    );
    let r = get(&app, "/tasks?state=open&token=s3cret-token").await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(
        r.headers["location"], "/tasks?state=open",
        "the token leaves the address"
    );
    let cookie = r.headers["set-cookie"].to_str().unwrap().to_owned();
    assert!(
        cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"),
        "{cookie}"
    );
    let pair = cookie.split(';').next().unwrap();
    let r = send(&app, "GET", "/tasks/1", &[("cookie", pair)], "").await;
    assert_eq!(r.status, StatusCode::OK);
    // With a token, any host name is served.
    let request = Request::builder()
        .uri("/tasks")
        .header("host", "inbox.example.com")
        .header("cookie", pair)
        .body(Body::empty())
        .unwrap();
    assert_eq!(
        app.clone().oneshot(request).await.unwrap().status(),
        StatusCode::OK
    );
}
