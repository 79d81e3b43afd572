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
use crate::store::backend::*;
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

/// Claims record `id` for `worker` at `now`, for `lease`: the fence it holds.
async fn held<S: TaskStore>(
    store: &S,
    worker: &str,
    id: RecordId,
    now: SystemTime,
    lease: Duration,
) -> Fence {
    let claimed = store
        .claim(Claim {
            worker,
            limit: 1,
            now,
            lease,
            record: Some(id),
        })
        .await
        .unwrap();
    claimed[0].as_ref().unwrap().fence().unwrap()
}

/// The record `id`, which must exist.
async fn record<S: TaskStore>(store: &S, id: i64) -> TaskRecord {
    store.get(RecordId(id)).await.unwrap().unwrap()
}

async fn ask<S: TaskStore>(store: &S, id: RecordId, q: InputRequest) {
    let now = SystemTime::now();
    let fence = held(store, "w", id, now, Duration::from_secs(1)).await;
    let asked: InputRequests = [("q".to_owned(), q)].into();
    store.ask(id, fence, &asked, now).await.unwrap();
    store.renew(id, fence, now).await.unwrap();
}

async fn end<S: TaskStore>(store: &S, id: RecordId, ending: Ending) {
    let fence = held(store, "w", id, SystemTime::now(), Duration::from_secs(1)).await;
    store.finish(id, fence, &ending).await.unwrap();
}

fn app<S: TaskStore>(store: S) -> axum::Router {
    router(store, Options::new())
}

mod changes;
#[cfg(feature = "test-util")]
mod faults;
mod guard;
mod pages;
