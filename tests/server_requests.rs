//! Every request the server sends is answered exactly once: during
//! `connect` as after it, in a flood as one at a time, and never twice
//! when the server sends the same id again. Servers here are driven by
//! hand over the memory transport, on paused tokio time.

mod support;

use std::collections::BTreeMap;

use mcp_tasks::Client;
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{ElicitResult, ListRootsResult, Root};
use serde_json::{Value, json};
use support::hand_peer::{Peer, peer};
use support::ms;

fn roots() -> InputHandlers {
    InputHandlers::new().roots(|_| async {
        Ok(ListRootsResult {
            roots: vec![Root {
                uri: "file:///w".into(),
                name: None,
            }],
        })
    })
}

/// Sends a `ping` and checks that the client's very next message is its
/// answer (the server waits for it before going on).
async fn ping_and_wait(server: &mut Peer, id: &str) {
    server
        .send(json!({"jsonrpc": "2.0", "id": id, "method": "ping"}))
        .await;
    let pong = server.next().await;
    assert_eq!(
        pong,
        json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        "the ping was not answered first"
    );
}

/// Answers `init` as a 2025-11-25 server with no capabilities, then
/// checks the `initialized` notification.
async fn answer_initialize(server: &mut Peer, init: &Value) {
    server
        .answer(
            init,
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "pinger", "version": "1"}}),
        )
        .await;
    assert_eq!(server.next().await["method"], "notifications/initialized");
}

#[tokio::test(start_paused = true)]
async fn a_ping_before_the_initialize_answer_is_answered_and_connect_succeeds() {
    for handlers in [None, Some(roots())] {
        let (transport, mut server) = peer();
        let builder = Client::builder()
            .protocol_version("2025-11-25")
            .maybe_input_handlers(handlers.clone());
        let start = tokio::time::Instant::now();
        let connecting = tokio::spawn(builder.connect(transport));
        let init = server.next().await;
        assert_eq!(init["method"], "initialize");
        // As the 2025-11-25 lifecycle allows: a ping before the result,
        // which this server sends only once the ping is answered.
        ping_and_wait(&mut server, "p-1").await;
        answer_initialize(&mut server, &init).await;
        let client = connecting.await.unwrap().expect("connect");
        assert_eq!(&*client.protocol_version(), "2025-11-25");
        // Nothing waited for a timeout.
        assert!(start.elapsed() < ms(1000), "took {:?}", start.elapsed());
        assert_eq!(client.stats().dropped_answers, 0);
    }
}

#[tokio::test(start_paused = true)]
async fn a_ping_before_the_probe_answer_is_answered_on_both_eras() {
    // A 2026-07-28 server that pings before answering `server/discover`.
    let (transport, mut server) = peer();
    let start = tokio::time::Instant::now();
    let connecting = tokio::spawn(Client::builder().connect(transport));
    let probe = server.next().await;
    assert_eq!(probe["method"], "server/discover");
    ping_and_wait(&mut server, "p-1").await;
    server
        .answer(
            &probe,
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {}}),
        )
        .await;
    let client = connecting.await.unwrap().expect("connect");
    assert_eq!(&*client.protocol_version(), "2026-07-28");
    assert!(start.elapsed() < ms(1000), "took {:?}", start.elapsed());
    // A 2025 server that pings before refusing it, then again before
    // answering `initialize`.
    let (transport, mut server) = peer();
    let start = tokio::time::Instant::now();
    let connecting = tokio::spawn(Client::builder().connect(transport));
    let probe = server.next().await;
    ping_and_wait(&mut server, "p-1").await;
    server.refuse(&probe, -32601, "Method not found").await;
    let init = server.next().await;
    assert_eq!(init["method"], "initialize");
    ping_and_wait(&mut server, "p-2").await;
    answer_initialize(&mut server, &init).await;
    let client = connecting.await.unwrap().expect("connect");
    assert_eq!(&*client.protocol_version(), "2025-11-25");
    assert!(start.elapsed() < ms(1000), "took {:?}", start.elapsed());
}

#[tokio::test(start_paused = true)]
async fn a_request_sent_during_the_handshake_is_answered_once_the_session_is_up() {
    // A roots/list sent before the `initialize` result (the lifecycle says
    // it should not be) waits, and the handlers answer it after connect.
    let (transport, mut server) = peer();
    let connecting = tokio::spawn(
        Client::builder()
            .protocol_version("2025-11-25")
            .input_handlers(roots())
            .connect(transport),
    );
    let init = server.next().await;
    server
        .send(json!({"jsonrpc": "2.0", "id": "early", "method": "roots/list"}))
        .await;
    server
        .answer(
            &init,
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                "serverInfo": {"name": "early", "version": "1"}}),
        )
        .await;
    let mut seen = vec![server.next().await, server.next().await];
    seen.sort_by_key(|m| m["method"].is_string());
    assert_eq!(seen[0]["id"], "early", "{seen:?}");
    assert_eq!(seen[0]["result"]["roots"][0]["uri"], "file:///w");
    assert_eq!(seen[1]["method"], "notifications/initialized");
    connecting.await.unwrap().expect("connect");
}

#[tokio::test(start_paused = true)]
async fn a_2026_session_answers_ping_and_refuses_other_requests() {
    let (transport, mut server) = peer();
    let connecting = tokio::spawn(
        Client::builder()
            .protocol_version("2026-07-28")
            .input_handlers(roots())
            .connect(transport),
    );
    let client = connecting.await.unwrap().expect("connect");
    ping_and_wait(&mut server, "p-1").await;
    server
        .send(json!({"jsonrpc": "2.0", "id": 9, "method": "roots/list"}))
        .await;
    let refused = server.next().await;
    assert_eq!(refused["id"], 9);
    assert_eq!(refused["error"]["code"], -32601, "{refused}");
    drop(client);
}

/// What the client sent back, by the id of the server's request.
fn by_id(answers: &[Value]) -> BTreeMap<String, Vec<Value>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for a in answers {
        if a.get("method").is_none() {
            out.entry(a["id"].to_string()).or_default().push(a.clone());
        }
    }
    out
}

fn decline() -> InputHandlers {
    InputHandlers::new().elicitation_form(|_req| async { Ok(ElicitResult::decline()) })
}

fn ask(id: impl Into<Value>) -> Value {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": "elicitation/create",
        "params": {"message": "?", "requestedSchema": {"type": "object"}}})
}

/// A 2025-11-25 session over the memory transport, its handshake done.
async fn legacy(handlers: InputHandlers) -> (Client, Peer) {
    let (transport, mut server) = peer();
    let connecting = tokio::spawn(
        Client::builder()
            .protocol_version("2025-11-25")
            .input_handlers(handlers)
            .connect(transport),
    );
    server.initialize("2025-11-25").await;
    (connecting.await.unwrap().expect("connect"), server)
}

/// Everything the client sends, collected by a task of its own until
/// nothing comes for a (paused) second.
fn collect(
    mut stream: mcp_tasks::transport::memory::MemoryStream,
) -> tokio::task::JoinHandle<Vec<Value>> {
    tokio::spawn(async move {
        let mut all = Vec::new();
        while let Ok(v) = tokio::time::timeout(ms(1000), support::next_json(&mut stream)).await {
            all.push(v);
        }
        all
    })
}

#[tokio::test(start_paused = true)]
async fn a_flood_during_a_tool_call_gets_every_request_answered_exactly_once() {
    const FLOOD: u64 = 10_000;
    let (client, server) = legacy(decline()).await;
    let Peer {
        mut sink,
        mut stream,
    } = server;
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call_tool("slow", json!({})).await }
    });
    let request = support::next_json(&mut stream).await;
    assert_eq!(request["method"], "tools/call");
    let answers = collect(stream);
    for id in 0..FLOOD {
        let message = if id.is_multiple_of(2) {
            json!({"jsonrpc": "2.0", "id": id, "method": "ping"})
        } else {
            ask(id)
        };
        support::reply(&mut sink, message.to_string()).await;
    }
    let done = json!({"jsonrpc": "2.0", "id": request["id"],
        "result": {"content": [{"type": "text", "text": "done"}]}});
    support::reply(&mut sink, done.to_string()).await;
    assert_eq!(call.await.unwrap().unwrap().joined_text(), "done");
    let answers = by_id(&answers.await.unwrap());
    assert_eq!(answers.len() as u64, FLOOD, "requests unanswered");
    for (id, got) in &answers {
        assert_eq!(got.len(), 1, "answered {} times: {id}", got.len());
        let answer = &got[0];
        let n: u64 = id.parse().unwrap();
        if n.is_multiple_of(2) {
            assert_eq!(answer["result"], json!({}), "{answer}");
        } else if answer.get("error").is_some() {
            // Refused as busy: never silence.
            assert_eq!(answer["error"]["code"], -32603, "{answer}");
        } else {
            assert_eq!(answer["result"]["action"], "decline", "{answer}");
        }
    }
    assert_eq!(client.stats().dropped_answers, 0);
}

#[tokio::test(start_paused = true)]
async fn an_answer_the_closed_connection_cannot_carry_is_counted() {
    let (entered_tx, entered) = tokio::sync::oneshot::channel::<()>();
    let entered_tx = std::sync::Mutex::new(Some(entered_tx));
    let release = std::sync::Arc::new(tokio::sync::Notify::new());
    let handlers = InputHandlers::new().elicitation_form({
        let release = release.clone();
        move |_req| {
            if let Some(tx) = entered_tx.lock().unwrap().take() {
                let _ = tx.send(());
            }
            let release = release.clone();
            async move {
                release.notified().await;
                Ok(ElicitResult::decline())
            }
        }
    });
    let (client, mut server) = legacy(handlers).await;
    server.send(ask("asked")).await;
    entered.await.unwrap();
    // Another waits in the queue behind it.
    server.send(ask("queued")).await;
    server.sync("synced").await;
    drop(server);
    while client.closed_reason().is_none() {
        tokio::time::sleep(ms(10)).await;
    }
    assert_eq!(client.stats().dropped_answers, 0, "nothing was due yet");
    release.notify_waiters();
    release.notify_one();
    let deadline = tokio::time::Instant::now() + ms(60_000);
    while client.stats().dropped_answers < 2 && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(ms(10)).await;
    }
    assert_eq!(client.stats().dropped_answers, 2);
}

#[tokio::test(start_paused = true)]
async fn a_handler_that_panics_leaves_no_request_unanswered() {
    let handlers = InputHandlers::new().elicitation_form(|req| async move {
        if req.message == "boom" {
            panic!("the handler broke");
        }
        Ok(ElicitResult::decline())
    });
    let (client, server) = legacy(handlers).await;
    let Peer { mut sink, stream } = server;
    let answers = collect(stream);
    let boom = json!({"jsonrpc": "2.0", "id": "boom", "method": "elicitation/create",
        "params": {"message": "boom", "requestedSchema": {"type": "object"}}});
    support::reply(&mut sink, boom.to_string()).await;
    for id in 0..5 {
        support::reply(&mut sink, ask(id).to_string()).await;
    }
    let answers = by_id(&answers.await.unwrap());
    assert_eq!(answers.len(), 6, "{answers:?}");
    for (id, got) in &answers {
        assert_eq!(got.len(), 1, "answered {} times: {id}", got.len());
        assert!(got[0].get("error").is_some() || got[0].get("result").is_some());
    }
    assert_eq!(answers["\"boom\""][0]["error"]["code"], -32603);
    assert_eq!(client.stats().dropped_answers, 0);
}

#[tokio::test(start_paused = true)]
async fn a_repeated_request_id_is_answered_once_and_its_question_asked_once() {
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let release = std::sync::Arc::new(tokio::sync::Semaphore::new(0));
    let handlers = InputHandlers::new().elicitation_form({
        let asked = asked.clone();
        let release = release.clone();
        move |_req| {
            asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            let release = release.clone();
            async move {
                release.acquire().await.unwrap().forget();
                Ok(ElicitResult::decline())
            }
        }
    });
    let (client, server) = legacy(handlers).await;
    let Peer { mut sink, stream } = server;
    let answers = collect(stream);
    // The same ping thrice; the same question while it is being answered,
    // and again after.
    for _ in 0..3 {
        let ping = json!({"jsonrpc": "2.0", "id": "p-1", "method": "ping"});
        support::reply(&mut sink, ping.to_string()).await;
    }
    support::reply(&mut sink, ask("q-1").to_string()).await;
    support::reply(&mut sink, ask("q-1").to_string()).await;
    tokio::time::sleep(ms(10)).await;
    release.add_permits(10);
    tokio::time::sleep(ms(10)).await;
    support::reply(&mut sink, ask("q-1").to_string()).await;
    // A number and a string are different ids.
    support::reply(
        &mut sink,
        json!({"jsonrpc": "2.0", "id": 1, "method": "ping"}).to_string(),
    )
    .await;
    support::reply(
        &mut sink,
        json!({"jsonrpc": "2.0", "id": "1", "method": "ping"}).to_string(),
    )
    .await;
    let answers = by_id(&answers.await.unwrap());
    assert_eq!(answers["\"p-1\""].len(), 1, "{answers:?}");
    assert_eq!(answers["\"q-1\""].len(), 1, "{answers:?}");
    assert_eq!(answers["\"q-1\""][0]["result"]["action"], "decline");
    assert_eq!(answers["1"].len(), 1);
    assert_eq!(answers["\"1\""].len(), 1);
    assert_eq!(
        asked.load(std::sync::atomic::Ordering::SeqCst),
        1,
        "asked again"
    );
    assert_eq!(client.stats().repeated_requests, 4);
}

/// One request a property-test server sends: its id (from a small pool,
/// so that ids repeat, as numbers or strings) and method.
fn arbitrary_request() -> impl proptest::strategy::Strategy<Value = (Value, &'static str)> {
    use proptest::prelude::*;
    let id = prop_oneof![
        (0u8..12).prop_map(|n| json!(n)),
        (0u8..12).prop_map(|n| json!(format!("s-{n}"))),
    ];
    let method = prop_oneof![
        Just("ping"),
        Just("elicitation/create"),
        Just("roots/list"),
        Just("sampling/createMessage"),
        Just("vendor/unknown"),
    ];
    (id, method)
}

proptest::proptest! {
    #![proptest_config(proptest::test_runner::Config::with_cases(24))]

    /// Whatever the server sends, and however its ids repeat, each id it
    /// used gets exactly one answer: a result or a JSON-RPC error.
    #[test]
    fn every_request_id_is_answered_exactly_once(
        requests in proptest::collection::vec(arbitrary_request(), 1..80)
    ) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .start_paused(true)
            .build()
            .unwrap();
        let (answers, repeated) = runtime.block_on(async {
            let (client, server) = legacy(decline()).await;
            let Peer { mut sink, stream } = server;
            let answers = collect(stream);
            for (id, method) in &requests {
                let message = json!({"jsonrpc": "2.0", "id": id, "method": method,
                    "params": {"message": "?", "requestedSchema": {"type": "object"}}});
                support::reply(&mut sink, message.to_string()).await;
            }
            let answers = by_id(&answers.await.unwrap());
            (answers, client.stats().repeated_requests)
        });
        let distinct: std::collections::BTreeSet<String> =
            requests.iter().map(|(id, _)| id.to_string()).collect();
        let answered: std::collections::BTreeSet<String> = answers.keys().cloned().collect();
        proptest::prop_assert_eq!(&answered, &distinct);
        for (id, got) in &answers {
            proptest::prop_assert_eq!(got.len(), 1, "{} answered {:?}", id, got);
            let one = &got[0];
            proptest::prop_assert!(one.get("result").is_some() || one["error"]["code"].is_i64());
        }
        proptest::prop_assert_eq!(repeated as usize, requests.len() - distinct.len());
    }
}
