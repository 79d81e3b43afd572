//! The notifications a server sends outside any request: log messages
//! (to `tracing` and the `on_log` callback, never blocking the reader),
//! `list_changed` (which forgets the stale tool listing), the server's
//! `notifications/cancelled` (which ends the request it names at once, or
//! stops the handler answering the server's own request), and the
//! completion of a URL elicitation.

mod support;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use mcp_tasks::input::{InputHandlers, UrlRequest};
use mcp_tasks::protocol::{ElicitResult, LogLevel, LogMessage};
use mcp_tasks::{Client, ListChanged};
use serde_json::{Value, json};
use support::*;
use tokio::sync::{Semaphore, mpsc};
use tokio::time::Instant;

use support::hand_peer::{Peer, peer};

/// An `on_log` callback that sends each message to the returned receiver.
fn log_channel() -> (
    impl Fn(LogMessage) -> std::future::Ready<()> + Send + Sync + 'static,
    mpsc::UnboundedReceiver<LogMessage>,
) {
    let (tx, rx) = mpsc::unbounded_channel();
    let handler = move |msg| {
        let _ = tx.send(msg);
        std::future::ready(())
    };
    (handler, rx)
}

#[tokio::test(start_paused = true)]
async fn a_log_message_reaches_the_callback_and_set_log_level_sends_set_level() {
    let (transport, mut server) = peer();
    let (on_log, mut logs) = log_channel();
    let connecting = tokio::spawn(Client::builder().on_log(on_log).connect(transport));
    server.handshake("2025-11-25").await;
    let client = connecting.await.unwrap().unwrap();

    let set = tokio::spawn({
        let client = client.clone();
        async move { client.set_log_level(LogLevel::Warning).await }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "logging/setLevel");
    assert_eq!(request["params"], json!({"level": "warning"}));
    server.answer(&request, json!({})).await;
    set.await.unwrap().unwrap();

    server
        .notify(
            "notifications/message",
            json!({"level": "error", "logger": "db", "data": {"error": "connection lost", "retries": 3}}),
        )
        .await;
    let msg = logs.recv().await.unwrap();
    assert_eq!(msg.level, LogLevel::Error);
    assert_eq!(msg.logger.as_deref(), Some("db"));
    assert_eq!(msg.data, json!({"error": "connection lost", "retries": 3}));

    // Malformed params are skipped and counted; the next message still comes.
    let discarded = client.stats().discarded_messages;
    server
        .notify(
            "notifications/message",
            json!({"level": "loud", "data": "?"}),
        )
        .await;
    server
        .notify(
            "notifications/message",
            json!({"level": "debug", "data": "next"}),
        )
        .await;
    let msg = logs.recv().await.unwrap();
    assert_eq!(
        (msg.level, msg.logger, msg.data),
        (LogLevel::Debug, None, json!("next"))
    );
    assert_eq!(client.stats().discarded_messages, discarded + 1);
    assert_eq!(client.stats().dropped_notifications, 0);
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_log_messages_with_a_stuck_callback_is_dropped_and_counted() {
    let (transport, mut server) = peer();
    // The callback waits for a permit that does not come until the end.
    let gate = Arc::new(Semaphore::new(0));
    let handled = Arc::new(AtomicU64::new(0));
    let on_log = {
        let gate = gate.clone();
        let handled = handled.clone();
        move |_msg: LogMessage| {
            let gate = gate.clone();
            let handled = handled.clone();
            async move {
                gate.acquire().await.unwrap().forget();
                handled.fetch_add(1, Ordering::Relaxed);
            }
        }
    };
    let connecting = tokio::spawn(Client::builder().on_log(on_log).connect(transport));
    server.handshake("2025-11-25").await;
    let client = connecting.await.unwrap().unwrap();
    const FLOOD: u64 = 1_000;
    for n in 0..FLOOD {
        server
            .notify("notifications/message", json!({"level": "info", "data": n}))
            .await;
    }
    // The reader was never held up: it answers a ping behind the flood.
    server.sync("after-flood").await;
    // Let every task run until all are idle (the paused clock moves only then).
    tokio::time::sleep(ms(10)).await;
    let dropped = client.stats().dropped_notifications;
    // At most the connection's queue (64), the callback's (64) and the
    // message in the stuck callback are kept.
    assert!(dropped >= FLOOD - 129, "only {dropped} dropped");
    assert_eq!(handled.load(Ordering::Relaxed), 0);
    // Released, the callback gets everything that was kept, and no more.
    gate.add_permits(FLOOD as usize);
    tokio::time::sleep(ms(10)).await;
    let handled = handled.load(Ordering::Relaxed);
    assert_eq!(handled + client.stats().dropped_notifications, FLOOD);
    assert!(handled <= 129, "{handled} handled");
    // The flood is over: messages reach the callback again.
    server
        .notify(
            "notifications/message",
            json!({"level": "info", "data": "late"}),
        )
        .await;
    server.sync("after-late").await;
    tokio::time::sleep(ms(10)).await;
    assert_eq!(client.stats().dropped_notifications, FLOOD - handled);
}

#[tokio::test(start_paused = true)]
async fn tools_list_changed_drops_the_stale_task_opt_in() {
    let (transport, mut server) = peer();
    let (changed_tx, mut changed) = mpsc::unbounded_channel();
    let client = Client::builder()
        .protocol_version("2026-07-28")
        .on_list_changed(move |which| {
            let _ = changed_tx.send(which);
            std::future::ready(())
        })
        .connect(transport)
        .await
        .unwrap();
    let list = tokio::spawn({
        let client = client.clone();
        async move { client.list_tools().await }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "tools/list");
    let schema = json!({"type": "object"});
    server
        .answer(
            &request,
            json!({"tools": [
                {"name": "export", "inputSchema": schema, "execution": {"taskSupport": "required"}},
                {"name": "index", "inputSchema": schema, "execution": {"taskSupport": "optional"}}
            ]}),
        )
        .await;
    list.await.unwrap().unwrap();

    // Calls `name` and answers it at once; returns the call's params.
    async fn call(client: &Client, server: &mut Peer, name: &str) -> Value {
        let call = tokio::spawn({
            let client = client.clone();
            let name = name.to_owned();
            async move { client.call_tool(&name, json!({})).await }
        });
        let request = server.next().await;
        assert_eq!(request["method"], "tools/call");
        server
            .answer(
                &request,
                json!({"content": [{"type": "text", "text": "ok"}]}),
            )
            .await;
        assert_eq!(call.await.unwrap().unwrap().joined_text(), "ok");
        request["params"].clone()
    }
    assert_eq!(
        call(&client, &mut server, "export").await["task"],
        json!({})
    );
    assert_eq!(call(&client, &mut server, "index").await["task"], json!({}));

    server
        .notify("notifications/tools/list_changed", json!({}))
        .await;
    assert_eq!(changed.recv().await, Some(ListChanged::Tools));
    for name in ["export", "index"] {
        let params = call(&client, &mut server, name).await;
        assert!(params.get("task").is_none(), "{name}: {params}");
    }
    // The other lists are only reported.
    server
        .send(json!({"jsonrpc": "2.0", "method": "notifications/prompts/list_changed"}))
        .await;
    server
        .notify("notifications/resources/list_changed", json!({}))
        .await;
    assert_eq!(changed.recv().await, Some(ListChanged::Prompts));
    assert_eq!(changed.recv().await, Some(ListChanged::Resources));
}

#[tokio::test(start_paused = true)]
async fn a_server_cancellation_ends_the_pending_request_at_once() {
    let (transport, mut server) = peer();
    let connecting = tokio::spawn(Client::builder().connect(transport));
    server.handshake("2025-11-25").await;
    let client = connecting.await.unwrap().unwrap();

    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("export", json!({})).await }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "tools/call");
    let asked = Instant::now();
    server
        .notify(
            "notifications/cancelled",
            json!({"requestId": request["id"], "reason": "the server is shutting down"}),
        )
        .await;
    let e = call.await.unwrap().unwrap_err();
    assert_eq!(Instant::now(), asked, "it did not wait for its timeout");
    assert!(e.is_server_cancelled(), "{e}");
    assert!(e.is_outcome_unknown(), "the tool may have partly run: {e}");
    assert!(!e.is_timeout() && !e.is_transport(), "{e}");
    assert_eq!(e.method(), Some("tools/call"));
    assert_eq!(
        e.to_string(),
        "tools/call: the server cancelled the request: the server is shutting down; \
         the tool may have partly run"
    );
    assert_eq!(client.stats().pending_requests, 0);

    // Another request, cancelled without a reason: nothing ran.
    let list = tokio::spawn({
        let client = client.clone();
        async move { client.list_tools().await }
    });
    // The client did not withdraw the cancelled call in turn.
    let request = server.next().await;
    assert_eq!(request["method"], "tools/list");
    server
        .notify(
            "notifications/cancelled",
            json!({"requestId": request["id"]}),
        )
        .await;
    let e = list.await.unwrap().unwrap_err();
    assert!(e.is_server_cancelled() && !e.is_outcome_unknown(), "{e}");
    assert!(e.to_string().contains("it gave no reason"), "{e}");
}

#[tokio::test(start_paused = true)]
async fn a_server_cancelling_its_own_request_stops_the_handler_answering_it() {
    let stopped = Arc::new(AtomicBool::new(false));
    /// Flags when the handler's future is dropped.
    struct OnDrop(Arc<AtomicBool>);
    impl Drop for OnDrop {
        fn drop(&mut self) {
            self.0.store(true, Ordering::Relaxed);
        }
    }
    let handlers = InputHandlers::new().elicitation_form({
        let stopped = stopped.clone();
        move |req| {
            let guard = OnDrop(stopped.clone());
            async move {
                if req.message == "stuck" {
                    // Waits on a person who never answers.
                    std::future::pending::<()>().await;
                }
                drop(guard);
                Ok(ElicitResult::decline())
            }
        }
    });
    let (_client, mut server, _) = handshaken(handlers).await;
    let ask = |id: u64, message: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "elicitation/create",
            "params": {"message": message, "requestedSchema": {"type": "object"}}})
    };
    server.send(ask(5, "stuck")).await;
    server
        .notify(
            "notifications/cancelled",
            json!({"requestId": 5, "reason": "timed out"}),
        )
        .await;
    // The next request is served: the stuck handler was stopped, and the
    // cancelled request got no answer.
    server.send(ask(6, "quick")).await;
    let answer = server.next().await;
    assert_eq!(answer["id"], 6, "{answer}");
    assert_eq!(answer["result"]["action"], "decline");
    assert!(stopped.load(Ordering::Relaxed));
    server.sync("after").await;
}

#[tokio::test(start_paused = true)]
async fn a_url_elicitation_id_reaches_the_handler_and_its_completion_the_user() {
    let (seen_tx, mut seen) = mpsc::unbounded_channel::<UrlRequest>();
    let (done_tx, mut done) = mpsc::unbounded_channel::<String>();
    let handlers = InputHandlers::new()
        .elicitation_url(move |req| {
            let _ = seen_tx.send(req);
            async { Ok(ElicitResult::accept_empty()) }
        })
        .on_elicitation_complete(move |id| {
            let _ = done_tx.send(id);
            std::future::ready(())
        });
    let (_client, mut server, init) = handshaken(handlers).await;
    assert_eq!(
        init["params"]["capabilities"]["elicitation"],
        json!({"url": {}}),
        "URL mode is declared with its handler"
    );
    server
        .send(
            json!({"jsonrpc": "2.0", "id": 3, "method": "elicitation/create", "params": {
                "mode": "url", "message": "Sign in to continue",
                "url": "https://example.com/login?state=x", "elicitationId": "el-7"
            }}),
        )
        .await;
    let answer = server.next().await;
    assert_eq!(answer["id"], 3);
    assert_eq!(answer["result"], json!({"action": "accept"}));
    let req = seen.recv().await.unwrap();
    assert_eq!(req.elicitation_id.as_deref(), Some("el-7"));
    assert_eq!(req.url, "https://example.com/login?state=x");

    server
        .notify(
            "notifications/elicitation/complete",
            json!({"elicitationId": "el-7"}),
        )
        .await;
    assert_eq!(done.recv().await.as_deref(), Some("el-7"));
}

#[tokio::test(start_paused = true)]
async fn url_mode_is_not_declared_without_a_url_handler() {
    let handlers = InputHandlers::new()
        .elicitation_form(|_| async { Ok(ElicitResult::decline()) })
        .on_elicitation_complete(|_| std::future::ready(()));
    let (_client, _server, init) = handshaken(handlers).await;
    assert_eq!(
        init["params"]["capabilities"]["elicitation"],
        json!({"form": {}})
    );
}
