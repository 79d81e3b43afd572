//! The initialize era's session: the server's `GET` stream and its
//! reconnection, a lost session renewed, `DELETE` on close, batch replies.

use session_server::{GetStream, Oversize, SessionServer, VERSION};

use mcp_tasks::protocol::RequestId;
use mcp_tasks::transport::{Inbound, MessageSink, MessageStream, Outbound, Transport};

use super::*;

async fn legacy(server: &SessionServer) -> Client {
    Client::builder()
        .client_info("http-tests", "1.0")
        .protocol_version(VERSION)
        .input_handlers(yes())
        .connect(Http::new(&server.url))
        .await
        .expect("connect")
}

/// Waits (polling the server's record) until `done` holds.
async fn until(server: &SessionServer, done: impl Fn(&SessionServer) -> bool) {
    while !done(server) {
        tokio::time::sleep(ms(10)).await;
    }
}

#[tokio::test]
async fn the_get_stream_delivers_a_server_request_and_its_answer_is_posted() {
    bounded(async {
        let server = SessionServer::start().await;
        server.gets([GetStream::Hold("")]);
        let client = legacy(&server).await;
        until(&server, |s| !s.hits_of("GET").is_empty()).await;
        let get = &server.hits_of("GET")[0];
        assert_eq!(get.header("accept"), Some("text/event-stream"));
        assert_eq!(get.header("mcp-session-id"), Some("s-1"));
        assert_eq!(get.header("mcp-protocol-version"), Some(VERSION));
        assert_eq!(get.header("last-event-id"), None);
        let ask = json!({"jsonrpc":"2.0","id":"srv-1","method":"elicitation/create","params":{
            "message":"Go ahead?",
            "requestedSchema":{"type":"object","properties":{"ok":{"type":"boolean"}}}}});
        assert!(server.push(ask));
        let answered = |s: &SessionServer| {
            s.hits()
                .iter()
                .any(|h| h.body["id"] == "srv-1" && h.verb == "POST")
        };
        until(&server, answered).await;
        let answer = server
            .hits()
            .into_iter()
            .find(|h| h.body["id"] == "srv-1")
            .unwrap();
        assert_eq!(answer.body["result"]["action"], "accept");
        assert_eq!(answer.body["result"]["content"], json!({"ok": true}));
        assert_eq!(answer.header("mcp-session-id"), Some("s-1"));
        assert_eq!(answer.header("mcp-protocol-version"), Some(VERSION));
        drop(client);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_405_on_get_is_final_and_never_retried() {
    bounded(async {
        let server = SessionServer::start().await;
        let client = legacy(&server).await;
        until(&server, |s| !s.hits_of("GET").is_empty()).await;
        // Far past any reconnection delay (1 s by default, with backoff).
        tokio::time::sleep(Duration::from_secs(15)).await;
        assert_eq!(server.hits_of("GET").len(), 1);
        let tools = client.list_tools().await.unwrap();
        assert_eq!(tools.len(), 1);
        assert_eq!(server.hits_of("GET").len(), 1);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_reconnect_waits_for_retry_and_sends_the_last_event_id() {
    bounded(async {
        let server = SessionServer::start().await;
        server.gets([
            GetStream::End("id: g-1\nretry: 3000\ndata: \n\n"),
            GetStream::End("data: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"x\"}}\n\n"),
            GetStream::Hold(""),
        ]);
        let _client = legacy(&server).await;
        until(&server, |s| s.hits_of("GET").len() >= 3).await;
        let gets = server.hits_of("GET");
        assert_eq!(gets[0].header("last-event-id"), None);
        assert_eq!(gets[1].header("last-event-id"), Some("g-1"));
        assert!(
            gets[1].at - gets[0].at >= Duration::from_millis(3000),
            "reconnected after {:?}, before the server's retry",
            gets[1].at - gets[0].at
        );
        // The second stream had no id of its own: the last one still holds,
        // and so does the server's retry.
        assert_eq!(gets[2].header("last-event-id"), Some("g-1"));
        assert!(gets[2].at - gets[1].at >= Duration::from_millis(3000));
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn a_response_stream_that_ends_early_is_resumed_with_get() {
    bounded(async {
        let server = SessionServer::start().await;
        server.resume_calls();
        let client = legacy(&server).await;
        let r = client.call_tool("echo", json!({})).await.unwrap();
        assert_eq!(r.joined_text(), "echoed");
        let call = &server.hits_of("tools/call")[0];
        let resumed: Vec<_> = server
            .hits_of("GET")
            .into_iter()
            .filter(|h| h.header("last-event-id").is_some())
            .collect();
        assert_eq!(resumed.len(), 1, "one resumption");
        assert_eq!(resumed[0].header("last-event-id"), Some("call-1"));
        assert_eq!(resumed[0].header("mcp-session-id"), Some("s-1"));
        assert!(
            resumed[0].at - call.at >= Duration::from_millis(2000),
            "resumed after {:?}, before the server's retry",
            resumed[0].at - call.at
        );
        assert_eq!(server.hits_of("tools/call").len(), 1, "never POSTed again");
    })
    .await;
}

#[tokio::test]
async fn a_lost_session_is_renewed_once_and_the_read_succeeds() {
    bounded(async {
        let server = SessionServer::start().await;
        let client = legacy(&server).await;
        client.list_tools().await.unwrap();
        server.forget_session();
        // Two reads lose the session together; one renewal serves both.
        let (a, b) = tokio::join!(client.list_tools(), client.list_tools());
        assert_eq!(a.unwrap().len(), 1);
        assert_eq!(b.unwrap().len(), 1);
        let inits = server.hits_of("initialize");
        assert_eq!(inits.len(), 2, "one renewal");
        assert_ne!(
            inits[1].body["id"], inits[0].body["id"],
            "the renewal has an id of its own"
        );
        assert_eq!(
            inits[1].body["params"], inits[0].body["params"],
            "the same initialize"
        );
        assert_eq!(inits[1].header("mcp-session-id"), None);
        assert_eq!(server.hits_of("notifications/initialized").len(), 2);
        let lists = server.hits_of("tools/list");
        let last = lists.last().unwrap();
        assert_eq!(last.header("mcp-session-id"), Some("s-2"));
        assert_eq!(last.header("mcp-protocol-version"), Some(VERSION));
        assert_eq!(
            lists
                .iter()
                .filter(|h| h.header("mcp-session-id") == Some("s-2"))
                .count(),
            2,
            "each read sent again once, in the new session"
        );
        // The session keeps working.
        client.list_tools().await.unwrap();
        assert_eq!(server.hits_of("initialize").len(), 2);
    })
    .await;
}

#[tokio::test]
async fn a_tools_call_that_lost_the_session_is_not_sent_again() {
    bounded(async {
        let server = SessionServer::start().await;
        let client = legacy(&server).await;
        server.forget_session();
        let e = client.call_tool("echo", json!({})).await.unwrap_err();
        assert_eq!(e.http_status(), Some(404), "{e}");
        assert!(!e.is_outcome_unknown(), "{e}");
        let text = e.to_string();
        assert!(text.contains("lost the session"), "{text}");
        assert!(text.contains("new session was started"), "{text}");
        assert_eq!(server.hits_of("tools/call").len(), 1, "not retried");
        assert_eq!(server.hits_of("initialize").len(), 2, "renewed");
        // The new session serves the next call.
        let r = client.call_tool("echo", json!({})).await.unwrap();
        assert_eq!(r.joined_text(), "echoed");
        assert_eq!(
            server.hits_of("tools/call")[1].header("mcp-session-id"),
            Some("s-2")
        );
    })
    .await;
}

#[tokio::test]
async fn a_read_that_fails_again_in_the_new_session_is_not_retried_again() {
    bounded(async {
        let server = SessionServer::start().await;
        let client = legacy(&server).await;
        // From now on the server forgets every session it hands out.
        server.amnesiac();
        let e = client.list_tools().await.unwrap_err();
        assert_eq!(e.http_status(), Some(404), "{e}");
        assert_eq!(
            server.hits_of("initialize").len(),
            2,
            "renewed once, no loop"
        );
        assert_eq!(server.hits_of("tools/list").len(), 2, "sent again once");
    })
    .await;
}

#[tokio::test]
async fn close_ends_the_session_with_delete() {
    bounded(async {
        let server = SessionServer::start().await;
        let client = legacy(&server).await;
        client.list_tools().await.unwrap();
        drop(client);
        until(&server, |s| !s.hits_of("DELETE").is_empty()).await;
        let delete = &server.hits_of("DELETE")[0];
        assert_eq!(delete.header("mcp-session-id"), Some("s-1"));
        assert_eq!(delete.header("mcp-protocol-version"), Some(VERSION));
        assert_eq!(server.hits_of("DELETE").len(), 1);
    })
    .await;
}

#[tokio::test]
async fn a_batch_reply_delivers_each_message_in_order() {
    bounded(async {
        let server = SessionServer::start().await;
        server.batches();
        let (mut sink, mut stream) = Http::new(&server.url).connect().await.unwrap();
        let init = json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{
            "protocolVersion": VERSION, "capabilities": {},
            "clientInfo": {"name": "http-tests", "version": "1.0"}}});
        sink.send(Outbound::request(
            init.to_string(),
            "initialize",
            RequestId::Number(1),
        ))
        .await
        .unwrap();
        let Some(Inbound::Message(reply)) = stream.recv().await.unwrap() else {
            panic!("no initialize reply");
        };
        assert!(reply.contains("protocolVersion"), "{reply}");
        // What a client does once the handshake settled the version.
        let list = json!({"jsonrpc":"2.0","id":2,"method":"tools/list"});
        sink.send(
            Outbound::request(list.to_string(), "tools/list", RequestId::Number(2))
                .in_version(VERSION),
        )
        .await
        .unwrap();
        let mut got = Vec::new();
        for _ in 0..2 {
            match stream.recv().await.unwrap() {
                Some(Inbound::Message(text)) => {
                    got.push(serde_json::from_str::<serde_json::Value>(&text).unwrap())
                }
                other => panic!("expected a message, got {other:?}"),
            }
        }
        assert_eq!(got[0]["method"], "notifications/message", "{got:?}");
        assert_eq!(got[1]["id"], 2, "{got:?}");
        assert_eq!(got[1]["result"]["tools"][0]["name"], "echo", "{got:?}");
        sink.close().await.unwrap();

        // And through a client: the batch answers its request.
        let client = legacy(&server).await;
        let r = client.call_tool("echo", json!({})).await.unwrap();
        assert_eq!(r.joined_text(), "echoed");
        assert_eq!(client.stats().pending_requests, 0);
    })
    .await;
}

/// A 2025-11-25 task outlives its session: the session is lost between two
/// reads of a wait, the next read renews it (re-initialize) and is sent
/// again, and the wait finishes with the task's result.
#[tokio::test]
async fn a_session_lost_mid_wait_is_renewed_and_the_wait_finishes() {
    bounded(async {
        let server = SessionServer::start().await;
        server.runs_tasks();
        server.forget_after_read(2);
        let client = legacy(&server).await;
        let state = client.task().call_tool("job", json!({})).await.unwrap();
        let finished = state.finish().await.unwrap();
        assert_eq!(
            finished.outcome().result().unwrap().joined_text(),
            "job done"
        );
        assert_eq!(server.hits_of("initialize").len(), 2, "renewed once");
        let reads = server.hits_of("tasks/get");
        assert!(reads.len() >= 4, "{} reads", reads.len());
        assert_eq!(reads.last().unwrap().header("mcp-session-id"), Some("s-2"));
        let call = &server.hits_of("tools/call")[0];
        assert!(call.body["params"]["task"].is_object(), "the opt-in");
    })
    .await;
}

/// The answer to a question the server asks on a call's own response
/// stream is posted even when the call holds the only slot of
/// `max_in_flight`: waiting for a slot there would wait on the call, which
/// waits on the answer.
#[tokio::test]
async fn an_answer_to_a_question_asked_inside_a_call_needs_no_slot() {
    bounded(async {
        let server = SessionServer::start().await;
        server.ask_in_calls();
        let client = Client::builder()
            .client_info("http-tests", "1.0")
            .protocol_version(VERSION)
            .input_handlers(yes())
            .connect(Http::new(&server.url).max_in_flight(1))
            .await
            .expect("connect");
        let r = client.call_tool("echo", json!({})).await.unwrap();
        assert_eq!(r.joined_text(), "echoed");
        let answer = server
            .hits()
            .into_iter()
            .find(|h| h.body["id"] == "srv-ask")
            .expect("the question was answered");
        assert_eq!(answer.body["result"]["action"], "accept");
    })
    .await;
}

/// Counts the `GET`s of a `window` of virtual time, stepping the clock
/// 10 ms at a time so that the loopback I/O keeps pace with it.
async fn gets_within(server: &SessionServer, window: Duration) -> usize {
    let end = tokio::time::Instant::now() + window;
    while tokio::time::Instant::now() < end {
        tokio::time::sleep(ms(10)).await;
    }
    server.hits_of("GET").len()
}

#[tokio::test(start_paused = true)]
async fn a_get_stream_of_a_priming_event_alone_backs_off_and_is_given_up() {
    tokio::time::timeout(Duration::from_secs(600), async {
        let server = SessionServer::start().await;
        // Every GET: an id, `retry: 0`, no message, then the end.
        server.gets([GetStream::Forever("id: g-1\nretry: 0\ndata: \n\n")]);
        let client = legacy(&server).await;
        let in_20s = gets_within(&server, Duration::from_secs(20)).await;
        // Backing off from 1 s (0, 1, 3, 7, 15 s), then given up after five
        // attempts in a row that delivered no message; no storm at `retry: 0`.
        assert_eq!(in_20s, 5, "GETs in the first 20 s");
        let in_5min = gets_within(&server, Duration::from_secs(300)).await;
        assert_eq!(in_5min, 5, "no GET after giving up");
        let gets = server.hits_of("GET");
        for pair in gets.windows(2) {
            assert!(
                pair[1].at - pair[0].at >= Duration::from_secs(1),
                "reconnected {:?} after the last GET",
                pair[1].at - pair[0].at
            );
        }
        // The session itself is unharmed.
        assert_eq!(client.list_tools().await.unwrap().len(), 1);
    })
    .await
    .expect("bounded");
}

/// Every way a `GET` stream can end without a message counts as a failure:
/// whatever it held, the reconnections back off and stop.
#[tokio::test(start_paused = true)]
async fn every_kind_of_event_less_get_stream_backs_off_and_is_given_up() {
    const SHAPES: [&str; 6] = [
        "",
        ": keep-alive\n\n",
        "id: g-1\ndata: \n\n",
        "retry: 0\n\n",
        "id: g-1\nretry: 0\nevent: ping\ndata: {}\n\n: x\n\n",
        "id: g-1\nretry: 1\n\nid: g-2\nretry: 0\ndata:\n\n",
    ];
    tokio::time::timeout(Duration::from_secs(1800), async {
        for shape in SHAPES {
            let server = SessionServer::start().await;
            server.gets([GetStream::Forever(shape)]);
            let _client = legacy(&server).await;
            let gets = gets_within(&server, Duration::from_secs(120)).await;
            assert!(gets <= 5, "{gets} GETs in 2 min for a stream of {shape:?}");
        }
    })
    .await
    .expect("bounded");
}

#[tokio::test(start_paused = true)]
async fn a_response_stream_resumed_without_messages_backs_off_and_fails() {
    tokio::time::timeout(Duration::from_secs(600), async {
        let server = SessionServer::start().await;
        server.prime_calls_forever();
        let client = Client::builder()
            .protocol_version(VERSION)
            .request_timeout(Duration::from_secs(120))
            .connect(Http::new(&server.url))
            .await
            .unwrap();
        let e = client.call_tool("echo", json!({})).await.unwrap_err();
        assert!(e.is_outcome_unknown(), "{e}");
        assert!(!e.is_timeout(), "gave up before the request timeout: {e}");
        let resumed = server
            .hits_of("GET")
            .into_iter()
            .filter(|h| h.header("last-event-id") == Some("call-1"))
            .count();
        assert_eq!(resumed, 5, "resumptions of a stream that never delivers");
        assert_eq!(server.hits_of("tools/call").len(), 1, "never POSTed again");
    })
    .await
    .expect("bounded");
}

#[tokio::test]
async fn close_sends_the_delete_and_waits_for_its_answer() {
    bounded(async {
        let server = SessionServer::start().await;
        let client = legacy(&server).await;
        let other = client.clone();
        client.list_tools().await.unwrap();
        client.close().await.expect("a graceful close");
        // Already sent and answered: nothing to wait for.
        let deletes = server.hits_of("DELETE");
        assert_eq!(deletes.len(), 1);
        assert_eq!(deletes[0].header("mcp-session-id"), Some("s-1"));
        // The other clone's requests fail, saying why.
        let e = other.list_tools().await.unwrap_err();
        assert!(e.is_transport(), "{e}");
        assert!(e.to_string().contains("the client was closed"), "{e}");
        assert_eq!(server.hits_of("tools/list").len(), 1, "nothing sent after");
        // Closing again (through the clone) is a no-op.
        other.close().await.unwrap();
        assert_eq!(server.hits_of("DELETE").len(), 1);
    })
    .await;
}

#[tokio::test(start_paused = true)]
async fn close_gives_up_on_an_unanswered_delete_within_its_bound() {
    bounded(async {
        let server = SessionServer::start().await;
        server.hang_deletes();
        let client = Client::builder()
            .protocol_version(VERSION)
            .connect(Http::new(&server.url).close_timeout(Duration::from_secs(3)))
            .await
            .unwrap();
        let started = tokio::time::Instant::now();
        let e = client.close().await.unwrap_err();
        assert!(e.is_transport(), "{e}");
        assert!(e.to_string().contains("not answered within 3s"), "{e}");
        assert!(started.elapsed() >= Duration::from_secs(3));
        assert_eq!(server.hits_of("DELETE").len(), 1);
    })
    .await;
}

/// The `POST`s that answer the server's request `id`.
fn answers_to(server: &SessionServer, id: &serde_json::Value) -> Vec<session_server::Hit> {
    server
        .hits()
        .into_iter()
        .filter(|h| h.verb == "POST" && h.method.is_empty() && h.body["id"] == *id)
        .collect()
}

#[tokio::test(start_paused = true)]
async fn a_get_stream_replayed_on_every_reconnect_is_answered_and_delivered_once() {
    // A server that ignores `Last-Event-ID` and replays the same events on
    // every `GET`: a ping, a log message and a question with SSE ids, and
    // a ping without one.
    const REPLAY: &str = concat!(
        "id: e-1\nretry: 100\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"p-1\",\"method\":\"ping\"}\n\n",
        "id: e-2\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/message\",\"params\":{\"level\":\"info\",\"data\":\"once\"}}\n\n",
        "id: e-3\ndata: {\"jsonrpc\":\"2.0\",\"id\":\"srv-1\",\"method\":\"elicitation/create\",\"params\":{\"message\":\"Go ahead?\",\"requestedSchema\":{\"type\":\"object\"}}}\n\n",
        "data: {\"jsonrpc\":\"2.0\",\"id\":\"p-2\",\"method\":\"ping\"}\n\n",
    );
    bounded(async {
        let server = SessionServer::start().await;
        server.gets([
            GetStream::End(REPLAY),
            GetStream::End(REPLAY),
            GetStream::End(REPLAY),
            GetStream::End(REPLAY),
            GetStream::Hold(REPLAY),
        ]);
        let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let logged = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let handlers = InputHandlers::new().elicitation_form({
            let asked = asked.clone();
            move |_| {
                asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                async { Ok(ElicitResult::decline()) }
            }
        });
        let client = Client::builder()
            .protocol_version(VERSION)
            .input_handlers(handlers)
            .on_log({
                let logged = logged.clone();
                move |_| {
                    logged.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                    async {}
                }
            })
            .connect(Http::new(&server.url))
            .await
            .expect("connect");
        until(&server, |s| s.hits_of("GET").len() >= 5).await;
        // Long enough for every answer of the last stream to be posted.
        tokio::time::sleep(Duration::from_secs(5)).await;
        for id in ["p-1", "p-2", "srv-1"] {
            assert_eq!(answers_to(&server, &json!(id)).len(), 1, "answers to {id}");
        }
        assert_eq!(
            asked.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "asked again"
        );
        assert_eq!(
            logged.load(std::sync::atomic::Ordering::SeqCst),
            1,
            "logged again"
        );
        // The ping without an SSE id is caught by its request id.
        assert_eq!(client.stats().repeated_requests, 4);
        // The reconnection still asks from the last event seen.
        assert_eq!(
            server.hits_of("GET")[4].header("last-event-id"),
            Some("e-3")
        );
    })
    .await;
}

#[tokio::test]
async fn a_flood_of_pings_on_the_get_stream_is_answered_exactly_once() {
    const FLOOD: usize = 1000;
    bounded(async {
        let server = SessionServer::start().await;
        let pings: String = (0..FLOOD)
            .map(|n| {
                format!("data: {{\"jsonrpc\":\"2.0\",\"id\":\"ping-{n}\",\"method\":\"ping\"}}\n\n")
            })
            .collect();
        server.gets([GetStream::Hold(Box::leak(pings.into_boxed_str()))]);
        let client = legacy(&server).await;
        let answered = |s: &SessionServer| {
            s.hits()
                .iter()
                .filter(|h| h.verb == "POST" && h.method.is_empty())
                .count()
        };
        // Until every ping is answered, or nothing more comes for a while.
        let mut last = 0;
        loop {
            tokio::time::sleep(ms(500)).await;
            let now = answered(&server);
            if now >= FLOOD || now == last {
                break;
            }
            last = now;
        }
        let mut ids: Vec<String> = server
            .hits()
            .iter()
            .filter(|h| h.verb == "POST" && h.method.is_empty())
            .map(|h| {
                assert_eq!(h.body["result"], json!({}), "{:?}", h.body);
                h.body["id"].as_str().unwrap().to_owned()
            })
            .collect();
        let total = ids.len();
        ids.sort();
        ids.dedup();
        assert_eq!(ids.len(), total, "a ping answered twice");
        assert_eq!(total, FLOOD, "pings unanswered");
        assert_eq!(client.stats().dropped_answers, 0);
    })
    .await;
}

async fn accepting(server: &SessionServer, max_message_size: usize) -> Client {
    Client::builder()
        .client_info("http-tests", "1.0")
        .protocol_version(VERSION)
        .connect(Http::new(&server.url).max_message_size(max_message_size))
        .await
        .expect("connect")
}

/// The reply to the `initialize` that renews a lost session is read
/// within `max_message_size`, as the first one is: a hostile server's
/// 256 KiB reply (streamed) fails the renewal, and the request that
/// lost the session says why.
#[tokio::test]
async fn an_oversized_renewal_reply_is_refused_like_a_first_one() {
    bounded(async {
        let server = SessionServer::start().await;
        let client = accepting(&server, 64 * 1024).await;
        client.list_tools().await.unwrap();
        server.oversize_next(Oversize::RenewalJson, 256 * 1024);
        server.forget_session();
        let e = match client.list_tools().await {
            Ok(_) => panic!("a renewal past max_message_size was read"),
            Err(e) => e,
        };
        assert_eq!(e.http_status(), Some(404), "{e}");
        let text = e.to_string();
        assert!(
            text.contains("could not be started") && text.contains("larger than 64 KiB"),
            "{text}"
        );
        assert_eq!(server.hits_of("initialize").len(), 2);
    })
    .await;
}

/// Every body the transport reads, wherever it comes (a JSON reply, an
/// SSE event, an error page, a renewal's reply as JSON or SSE), is
/// refused past `max_message_size`, fails only its own request with a
/// message that names the bound, and leaves the connection usable.
#[tokio::test]
async fn every_body_past_max_message_size_fails_only_its_request() {
    const MAX: usize = 32 * 1024;
    bounded(async {
        for which in [
            Oversize::ListJson,
            Oversize::ListSse,
            Oversize::ListErrorBody,
            Oversize::RenewalJson,
            Oversize::RenewalSse,
        ] {
            let server = SessionServer::start().await;
            let client = accepting(&server, MAX).await;
            server.oversize_next(which, 4 * MAX);
            if matches!(which, Oversize::RenewalJson | Oversize::RenewalSse) {
                server.forget_session();
            }
            let e = match client.list_tools().await {
                Ok(_) => panic!("{which:?}: a body past the bound was read"),
                Err(e) => e,
            };
            let text = e.to_string();
            assert!(text.contains("32 KiB"), "{which:?}: {text}");
            assert!(text.chars().count() < 600, "{which:?}: {text}");
            // Only that request: the next one is served.
            let tools = client.list_tools().await;
            assert!(tools.is_ok(), "{which:?}: {tools:?}");
        }
    })
    .await;
}
