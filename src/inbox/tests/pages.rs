//! The pages: what the task list, a task, the questions and the metrics show, and that what a server sent stays text.

use super::*;

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

/// A read that found `status` with `message`, due again at `due`.
fn step(status: TaskStatus, message: impl Into<String>, due: SystemTime) -> StepReport {
    StepReport {
        status,
        status_message: Some(message.into()),
        poll_interval_ms: None,
        failed_reads: 0,
        due,
        taken: Vec::new(),
        offered: Vec::new(),
    }
}

#[tokio::test]
async fn a_task_page_shows_its_history_as_a_timeline_escaped() {
    let store = MemoryStore::new();
    let mut task = new_task(1);
    task.status_message = Some("<script>alert('created')</script>".into());
    let id = store.insert(task).await.unwrap();
    let now = SystemTime::now();
    let fence = held(&store, "<b>w1</b>", id, now, Duration::from_secs(60)).await;
    let asked: InputRequests = [
        ("q".to_owned(), form_question()),
        ("<i>k</i>".to_owned(), form_question()),
    ]
    .into();
    store.ask(id, fence, &asked, now).await.unwrap();
    let progress = step(
        TaskStatus::InputRequired,
        "<img src=x onerror=alert(1)>",
        now,
    );
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
        let fence = held(&store, "w", id, now, Duration::from_secs(60)).await;
        let progress = step(TaskStatus::Working, format!("step {round}"), now);
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

#[tokio::test]
async fn a_task_address_that_is_not_a_record_number_is_a_404_page() {
    let app = app(store(1).await);
    for (uri, sent) in [
        ("/tasks/abc", get(&app, "/tasks/abc").await),
        ("/tasks/abc/result", get(&app, "/tasks/abc/result").await),
        (
            "/tasks/abc/cancel",
            post(&app, "/tasks/abc/cancel", "").await,
        ),
        (
            "/tasks/abc/forget",
            post(&app, "/tasks/abc/forget", "").await,
        ),
    ] {
        assert_eq!(sent.status, StatusCode::NOT_FOUND, "{uri}");
        assert!(
            sent.body.contains("No such task") && sent.body.contains("not a task record"),
            "{uri}: {}",
            sent.body
        );
    }
}
