//! The inbox over HTTP, without a browser: what each page shows, what it
//! refuses, and how it fails (the browser tests live with the command-line
//! client, which serves the inbox).

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use axum::body::Body;
use axum::http::{HeaderMap, Request, StatusCode};
use serde_json::json;
use tower::ServiceExt;

use super::{Options, router};
use crate::protocol::{
    CallToolResult, InputRequest, InputRequests, InputResponse, RpcError, TaskId, TaskStatus,
};
use crate::store::*;
use crate::task::TaskRef;

const HOST: &str = "127.0.0.1:8080";

struct Reply {
    status: StatusCode,
    headers: HeaderMap,
    body: String,
}

async fn send(
    app: &axum::Router,
    method: &str,
    uri: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> Reply {
    let mut request = Request::builder()
        .method(method)
        .uri(uri)
        .header("host", HOST);
    for (k, v) in headers {
        request = request.header(*k, *v);
    }
    if method == "POST" {
        request = request.header("content-type", "application/x-www-form-urlencoded");
    }
    let response = app
        .clone()
        .oneshot(request.body(Body::from(body.to_owned())).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let headers = response.headers().clone();
    let bytes = axum::body::to_bytes(response.into_body(), 16 << 20)
        .await
        .unwrap();
    Reply {
        status,
        headers,
        body: String::from_utf8(bytes.to_vec()).unwrap(),
    }
}

async fn get(app: &axum::Router, uri: &str) -> Reply {
    send(app, "GET", uri, &[], "").await
}

/// A POST as the inbox's own page sends it.
async fn post(app: &axum::Router, uri: &str, body: &str) -> Reply {
    send(
        app,
        "POST",
        uri,
        &[
            ("origin", "http://127.0.0.1:8080"),
            ("sec-fetch-site", "same-origin"),
        ],
        body,
    )
    .await
}

fn new_task(n: u32) -> NewTask {
    NewTask {
        unique_key: false,
        reference: TaskRef::new(
            TaskId::new(format!("secret-task-id-{n}-0123456789")),
            Some("srv".into()),
        ),
        tool: if n.is_multiple_of(2) {
            "export"
        } else {
            "import"
        }
        .into(),
        key: Some(format!("order-{n}")),
        scope: "tenant".into(),
        status: TaskStatus::Working,
        status_message: Some(format!("step {n}")),
        poll_interval_ms: Some(1_000),
        due: SystemTime::now() + Duration::from_secs(3_600),
        ending: None,
        schedule: Schedule::default(),
    }
}

fn form_question() -> InputRequest {
    InputRequest::form(
        "Ship <b>now</b>?",
        json!({
            "type": "object",
            "properties": {
                "when": {"type": "string", "format": "date-time", "title": "When"},
                "count": {"type": "integer", "minimum": 1, "maximum": 9},
                "ok": {"type": "boolean"},
            },
            "required": ["when"],
        }),
    )
}

/// A store with `n` records; record 1 asks `form_question` under key `q`.
async fn store(n: u32) -> MemoryStore {
    let store = MemoryStore::new();
    for i in 1..=n {
        store.insert(new_task(i)).await.unwrap();
    }
    ask(&store, RecordId(1), form_question()).await;
    store
}

async fn ask<S: TaskStore>(store: &S, id: RecordId, q: InputRequest) {
    let now = SystemTime::now();
    let held = store
        .claim(Claim {
            worker: "w",
            limit: 1,
            now,
            lease: Duration::from_secs(1),
            record: Some(id),
        })
        .await
        .unwrap();
    let fence = held[0].as_ref().unwrap().fence().unwrap();
    let asked: InputRequests = [("q".to_owned(), q)].into();
    store.ask(id, fence, &asked, now).await.unwrap();
    store.renew(id, fence, now).await.unwrap();
}

async fn end<S: TaskStore>(store: &S, id: RecordId, ending: Ending) {
    let now = SystemTime::now();
    let held = store
        .claim(Claim {
            worker: "w",
            limit: 1,
            now,
            lease: Duration::from_secs(1),
            record: Some(id),
        })
        .await
        .unwrap();
    let fence = held[0].as_ref().unwrap().fence().unwrap();
    store.finish(id, fence, &ending).await.unwrap();
}

fn app<S: TaskStore>(store: S) -> axum::Router {
    router(store, Options::new())
}

#[tokio::test]
async fn the_tasks_page_lists_records_newest_first_and_never_a_task_id() {
    let store = store(3).await;
    let app = app(store.clone());
    let r = get(&app, "/tasks").await;
    assert_eq!(r.status, StatusCode::OK);
    let csp = r.headers["content-security-policy"].to_str().unwrap();
    assert!(
        csp.contains("default-src 'none'") && csp.contains("script-src 'self'"),
        "{csp}"
    );
    assert_eq!(r.headers["x-frame-options"], "DENY");
    let at = |s: &str| {
        r.body
            .find(s)
            .unwrap_or_else(|| panic!("{s} in {}", r.body))
    };
    assert!(at("/tasks/3\"") < at("/tasks/2\"") && at("/tasks/2\"") < at("/tasks/1\""));
    assert!(
        !r.body.contains("secret-task-id"),
        "a task id left the server"
    );
    let redacted = TaskId::new("secret-task-id-2-0123456789").redacted();
    assert!(r.body.contains(&redacted));
    assert!(
        r.body.contains("<span>3 open</span> <span>1 asking</span>"),
        "{}",
        r.body
    );
    // And the task page.
    let r = get(&app, "/tasks/2").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(!r.body.contains("secret-task-id") && r.body.contains(&redacted));
}

#[tokio::test]
async fn the_list_filters_and_pages() {
    let store = store(5).await;
    let app = router(store.clone(), Options::new().page_size(2));
    let ids = |body: &str| -> Vec<u32> {
        body.match_indices("<tr><td><a href=\"/tasks/")
            .map(|(i, m)| {
                body[i + m.len()..]
                    .split('"')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap()
            })
            .collect()
    };
    let first = get(&app, "/tasks").await;
    assert_eq!(ids(&first.body), [5, 4]);
    assert!(
        first.body.contains("href=\"/tasks?before=4\""),
        "{}",
        first.body
    );
    let second = get(&app, "/tasks?before=4").await;
    assert_eq!(ids(&second.body), [3, 2]);
    let last = get(&app, "/tasks?before=2").await;
    assert_eq!(ids(&last.body), [1]);
    assert!(!last.body.contains("Older"), "no page after the last");
    let imports = get(&app, "/tasks?tool=import").await;
    assert_eq!(ids(&imports.body), [5, 3]);
    assert!(
        imports
            .body
            .contains("href=\"/tasks?tool=import&amp;before=3\""),
        "{}",
        imports.body
    );
    assert_eq!(ids(&get(&app, "/tasks?key=order-4").await.body), [4]);
    assert_eq!(ids(&get(&app, "/tasks?state=asking").await.body), [1]);
    assert!(ids(&get(&app, "/tasks?scope=other").await.body).is_empty());
    assert_eq!(
        ids(&get(&app, "/tasks?server=srv&tool=import").await.body),
        [5, 3]
    );
    assert!(ids(&get(&app, "/tasks?server=elsewhere").await.body).is_empty());
    end(&store, RecordId(2), Ending::Cancelled).await;
    assert_eq!(ids(&get(&app, "/tasks?state=undelivered").await.body), [2]);
    assert!(ids(&get(&app, "/tasks?state=delivered").await.body).is_empty());
    let open = get(&app, "/tasks?state=open&before=5").await;
    assert_eq!(ids(&open.body), [4, 3]);
    // Ended, by how: the cancelled one alone.
    end(
        &store,
        RecordId(4),
        Ending::Failed {
            error: RpcError::new(-1, "x"),
        },
    )
    .await;
    assert_eq!(ids(&get(&app, "/tasks?state=cancelled").await.body), [2]);
    assert_eq!(ids(&get(&app, "/tasks?state=failed").await.body), [4]);
    assert!(ids(&get(&app, "/tasks?state=completed").await.body).is_empty());
    // Nonsense in the query is ignored, not an error.
    assert_eq!(
        get(&app, "/tasks?before=zz&state=%3Cx%3E").await.status,
        StatusCode::OK
    );
}

#[tokio::test]
async fn markup_from_a_server_renders_as_text() {
    let store = MemoryStore::new();
    let mut task = new_task(1);
    task.status_message = Some("<script>alert('message')</script>".into());
    task.tool = "<img src=x onerror=alert(1)>".into();
    let id = store.insert(task).await.unwrap();
    ask(&store, id, InputRequest::form("<script>alert('q')</script>", json!({
        "type": "object",
        "properties": {"\"><script>alert(1)</script>": {"type": "string", "title": "<i>t</i>",
            "default": "\"><script>alert(2)</script>"}},
    }))).await;
    let second = store.insert(new_task(2)).await.unwrap();
    end(
        &store,
        second,
        Ending::Completed {
            result: CallToolResult::text(format!(
                "<script>alert('r')</script>{}",
                "x".repeat(100_000)
            ))
            .with_structured(json!({"html": "</pre><script>alert(3)</script>"})),
        },
    )
    .await;
    let app = app(store);
    for page in ["/tasks", "/tasks/1", "/tasks/2", "/questions"] {
        let r = get(&app, page).await;
        assert_eq!(r.status, StatusCode::OK, "{page}");
        assert!(!r.body.contains("<script>alert"), "{page}: {}", r.body);
        assert!(!r.body.contains("<img src=x"), "{page}");
        assert!(!r.body.contains("<i>t</i>"), "{page}");
        assert!(r.body.len() < 100_000, "{page} weighs {}", r.body.len());
    }
    let r = get(&app, "/tasks/1").await;
    assert!(
        r.body
            .contains("&lt;script&gt;alert(&#39;message&#39;)&lt;/script&gt;")
    );
    let r = get(&app, "/tasks/2").await;
    assert!(
        r.body
            .contains("href=\"/tasks/2/result\">The whole outcome</a>"),
        "a cut result links to the whole"
    );
    let whole = get(&app, "/tasks/2/result").await;
    assert_eq!(whole.headers["content-type"], "application/json");
    assert_eq!(whole.headers["x-content-type-options"], "nosniff");
    assert!(whole.body.len() > 100_000);
}

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
    assert!(
        store
            .get(RecordId(1))
            .await
            .unwrap()
            .unwrap()
            .answers
            .is_empty()
    );
    // A fitting answer: stored, back to the page it came from.
    let r = post(
        &app,
        "/tasks/1/answer",
        "_key=q&_back=task&_action=accept&f:when=2025-01-01T00:00:00Z&f:count=3&f:ok=true",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert_eq!(r.headers["location"], "/tasks/1");
    let record = store.get(RecordId(1)).await.unwrap().unwrap();
    let expected: InputResponse = crate::protocol::ElicitResult::accept(
        json!({"when": "2025-01-01T00:00:00Z", "count": 3, "ok": true}),
    )
    .into();
    assert_eq!(record.answers["q"].response, expected);
    // A second answer: the first one wins.
    let r = post(
        &app,
        "/tasks/1/answer",
        "_key=q&_back=questions&_action=decline",
    )
    .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.body.contains("was already answered"), "{}", r.body);
    assert_eq!(
        store.get(RecordId(1)).await.unwrap().unwrap().answers["q"].response,
        expected
    );
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
    assert!(
        store
            .get(RecordId(1))
            .await
            .unwrap()
            .unwrap()
            .answers
            .is_empty()
    );
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
    assert!(
        store
            .get(RecordId(2))
            .await
            .unwrap()
            .unwrap()
            .cancel_requested
    );
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
    let held = store
        .claim(Claim {
            worker: "w",
            limit: 1,
            now: SystemTime::now() + Duration::from_secs(5),
            lease: Duration::from_secs(1),
            record: Some(RecordId(3)),
        })
        .await
        .unwrap();
    store
        .acknowledge(RecordId(3), held[0].as_ref().unwrap().fence().unwrap())
        .await
        .unwrap();
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
    let r = store.get(RecordId(2)).await.unwrap().unwrap();
    assert!(!r.cancel_requested);
    assert!(
        store
            .get(RecordId(1))
            .await
            .unwrap()
            .unwrap()
            .answers
            .is_empty()
    );
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

#[tokio::test]
async fn the_live_part_comes_without_the_frame() {
    let app = app(store(1).await);
    let whole = get(&app, "/tasks/1").await;
    assert!(whole.body.starts_with("<!DOCTYPE html>"));
    assert!(whole.body.contains("data-live=\"/tasks/1\""));
    let part = send(&app, "GET", "/tasks/1", &[("x-inbox-live", "1")], "").await;
    assert!(part.body.starts_with("<h1>"), "{}", part.body);
    assert!(whole.body.contains(&part.body[..40]));
    let js = get(&app, "/assets/live.js").await;
    assert_eq!(js.status, StatusCode::OK);
    assert!(
        js.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/javascript")
    );
}

#[tokio::test]
async fn metrics_say_how_the_store_stands() {
    let store = store(3).await;
    end(&store, RecordId(3), Ending::Cancelled).await;
    let r = get(&app(store), "/metrics").await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(
        r.headers["content-type"]
            .to_str()
            .unwrap()
            .starts_with("text/plain; version=0.0.4")
    );
    for line in [
        "mcp_tasks_records{state=\"open\"} 2",
        "mcp_tasks_records{state=\"undelivered\"} 1",
        "mcp_tasks_records_asking 1",
        "mcp_tasks_undelivered_endings 1",
    ] {
        assert!(r.body.lines().any(|l| l == line), "{line}: {}", r.body);
    }
}

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
        progress: Progress,
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
    async fn save(&self, id: RecordId, fence: Fence, progress: Progress) -> StoreResult<()> {
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

#[tokio::test]
async fn the_questions_page_is_bounded_and_says_when_more_ask() {
    let store = MemoryStore::new();
    for i in 1..=60 {
        let id = store.insert(new_task(i)).await.unwrap();
        ask(&store, id, form_question()).await;
    }
    let app = app(store.clone());
    let r = get(&app, "/questions").await;
    assert_eq!(r.body.matches("<form method=\"post\"").count(), 50);
    assert!(r.body.contains("more are asking"), "{}", r.body);
    assert!(r.body.len() < 100 * 1024, "{} bytes", r.body.len());
    // The oldest questions first: record 1's, not record 60's.
    assert!(r.body.contains("action=\"/tasks/1/answer\""));
    assert!(!r.body.contains("action=\"/tasks/60/answer\""));
    for i in 11..=60 {
        end(&store, RecordId(i), Ending::Cancelled).await;
    }
    let r = get(&app, "/questions").await;
    assert_eq!(r.body.matches("<form method=\"post\"").count(), 10);
    assert!(!r.body.contains("more are asking"));
}

#[tokio::test]
async fn a_task_page_shows_its_history_as_a_timeline_escaped() {
    let store = MemoryStore::new();
    let mut task = new_task(1);
    task.status_message = Some("<script>alert('created')</script>".into());
    let id = store.insert(task).await.unwrap();
    let now = SystemTime::now();
    let fence = store
        .claim(Claim {
            worker: "<b>w1</b>",
            limit: 1,
            now,
            lease: Duration::from_secs(60),
            record: Some(id),
        })
        .await
        .unwrap()[0]
        .as_ref()
        .unwrap()
        .fence()
        .unwrap();
    let asked: InputRequests = [
        ("q".to_owned(), form_question()),
        ("<i>k</i>".to_owned(), form_question()),
    ]
    .into();
    store.ask(id, fence, &asked, now).await.unwrap();
    let progress = Progress {
        status: TaskStatus::InputRequired,
        status_message: Some("<img src=x onerror=alert(1)>".into()),
        poll_interval_ms: None,
        failed_reads: 0,
        due: now,
        taken: Vec::new(),
        offered: Vec::new(),
    };
    store.save(id, fence, progress).await.unwrap();
    let app = app(store.clone());
    let r = post(
        &app,
        "/tasks/1/answer",
        "_key=q&_back=task&_action=accept&f:when=2025-01-01T00:00:00Z",
    )
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.body);
    assert!(store.request_cancel(id, SystemTime::now()).await.unwrap());

    let page = get(&app, "/tasks/1").await;
    assert_eq!(page.status, StatusCode::OK);
    let body = &page.body;
    let start = body.find("<ol class=\"history\"").expect("a timeline");
    let timeline = &body[start..start + body[start..].find("</ol>").unwrap()];
    let lines: Vec<&str> = timeline.split("<li").skip(1).collect();
    assert_eq!(lines.len(), 6, "{timeline}");
    let expect = [
        "Recorded, <b>working</b>: <span class=\"message\">&lt;script&gt;",
        "Asked question <code>&lt;i&gt;k&lt;/i&gt;</code>",
        "Asked question <code>q</code>",
        "<b>input_required</b>: <span class=\"message\">&lt;img src=x",
        "Question <code>q</code> answered by a person, on this page",
        "A cancel was asked for",
    ];
    for (line, words) in lines.iter().zip(expect) {
        assert!(line.contains(words), "{words:?} not in {line}");
    }
    assert!(!body.contains("<script>alert"), "{body}");
    assert!(!body.contains("<img src=x"));
    assert!(!body.contains("<b>w1</b>"));
    assert!(!body.contains("history-cut"), "nothing dropped yet");
}

#[tokio::test]
async fn a_cut_history_says_so() {
    let store = MemoryStore::new();
    let id = store.insert(new_task(1)).await.unwrap();
    for round in 0..(MAX_HISTORY + 3) {
        let now = SystemTime::now();
        let fence = store
            .claim(Claim {
                worker: "w",
                limit: 1,
                now,
                lease: Duration::from_secs(60),
                record: Some(id),
            })
            .await
            .unwrap()[0]
            .as_ref()
            .unwrap()
            .fence()
            .unwrap();
        let progress = Progress {
            status: TaskStatus::Working,
            status_message: Some(format!("step {round}")),
            poll_interval_ms: None,
            failed_reads: 0,
            due: now,
            taken: Vec::new(),
            offered: Vec::new(),
        };
        store.save(id, fence, progress).await.unwrap();
    }
    let page = get(&app(store), "/tasks/1").await;
    assert!(
        page.body
            .contains("4 older entries are not kept: a record keeps its newest 32."),
        "{}",
        page.body
    );
    assert_eq!(
        page.body.matches("<li class=\"status\">").count(),
        MAX_HISTORY
    );
}
