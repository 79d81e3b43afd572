//! Resources, resource templates, prompts and completion against the
//! scripted 2026-07-28 server, and against an initialize-era peer driven
//! by hand: each operation, odd contents, a looping cursor, and requests
//! the server did not advertise refused without a round trip.

mod support;

use std::time::Duration;

use mcp_tasks::ListChanged;
use mcp_tasks::client_builder::IsComplete;
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{
    Completion, CompletionArgument, CompletionContext, CompletionRef, ContentBlock, ElicitResult,
    GetPromptResult, InputRequest, InputRequests, Prompt, PromptArgument, PromptMessage, Resource,
    ResourceBody, ResourceContents, ResourceTemplate, ResourceUpdated, Role,
};
use mcp_tasks::testing::TestServer;
use mcp_tasks::{Client, ClientBuilder};
use serde_json::json;
use support::hand_peer::peer;
use tokio::sync::mpsc;

fn server() -> TestServer {
    TestServer::new()
        .page_size(1)
        .resource(
            Resource::new("file:///a.txt", "a"),
            ResourceContents::text("file:///a.txt", "alpha").with_mime_type("text/plain"),
        )
        .resource(
            Resource::new("file:///b.bin", "b"),
            ResourceContents::blob("file:///b.bin", &[0, 1, 2, 255]),
        )
        .resource_template(ResourceTemplate::new("file:///{path}", "files"))
        .resource_template(ResourceTemplate::new("db://{table}", "tables"))
        .prompt(
            Prompt::new("review").argument(PromptArgument::new("file", true)),
            GetPromptResult::new([
                PromptMessage::text(Role::User, "Review it"),
                PromptMessage::text(Role::Assistant, "Looking"),
            ]),
        )
        .prompt(Prompt::new("plain"), GetPromptResult::new([]))
        .completion(
            CompletionRef::prompt("review"),
            "file",
            Completion::new(["lib.rs", "list.rs", "main.rs"]),
        )
}

#[tokio::test(start_paused = true)]
async fn every_operation_on_the_scripted_server() {
    let server = server();
    let client = Client::connect(server.connect()).await.unwrap();

    let resources = client.list_resources().await.unwrap();
    let names: Vec<_> = resources.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["a", "b"]);
    assert_eq!(server.count("resources/list"), 2, "one request per page");

    let templates = client.list_resource_templates().await.unwrap();
    let uris: Vec<_> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    assert_eq!(uris, ["file:///{path}", "db://{table}"]);

    let a = client.read_resource("file:///a.txt").await.unwrap();
    assert_eq!(a.contents[0].body().unwrap(), ResourceBody::Text("alpha"));
    assert_eq!(a.contents[0].mime_type.as_deref(), Some("text/plain"));
    let b = client.read_resource("file:///b.bin").await.unwrap();
    assert_eq!(
        b.contents[0].body().unwrap(),
        ResourceBody::Blob(vec![0, 1, 2, 255])
    );
    let missing = client.read_resource("file:///nope").await.unwrap_err();
    assert_eq!(
        missing.rpc_error().map(|e| e.code),
        Some(-32602),
        "{missing}"
    );

    let prompts = client.list_prompts().await.unwrap();
    assert_eq!(prompts.len(), 2);
    assert_eq!(prompts[0].arguments.as_ref().unwrap()[0].name, "file");
    let got = client
        .get_prompt("review", [("file", "lib.rs")])
        .await
        .unwrap();
    assert_eq!(got.messages[1].role, Role::Assistant);
    assert!(
        matches!(&got.messages[0].content, ContentBlock::Text { text, .. } if text == "Review it")
    );
    assert_eq!(got.meta.unwrap()["arguments"], json!({"file": "lib.rs"}));
    let sent = server.requests();
    let get = sent.iter().find(|r| r.method == "prompts/get").unwrap();
    assert_eq!(get.params["arguments"], json!({"file": "lib.rs"}));
    let no_arg = client
        .get_prompt("review", [] as [(&str, &str); 0])
        .await
        .unwrap_err();
    assert_eq!(no_arg.rpc_error().map(|e| e.code), Some(-32602));

    let found = client
        .complete(
            CompletionRef::prompt("review"),
            CompletionArgument::new("file", "li"),
            Some(CompletionContext::new([("repo", "mcp")])),
        )
        .await
        .unwrap();
    assert_eq!(found.values, ["lib.rs", "list.rs"]);
    let sent = server.requests();
    let complete = sent
        .iter()
        .find(|r| r.method == "completion/complete")
        .unwrap();
    assert_eq!(
        complete.params["ref"],
        json!({"type": "ref/prompt", "name": "review"})
    );
    assert_eq!(
        complete.params["argument"],
        json!({"name": "file", "value": "li"})
    );
    assert_eq!(
        complete.params["context"],
        json!({"arguments": {"repo": "mcp"}})
    );
}

#[tokio::test(start_paused = true)]
async fn what_the_server_did_not_advertise_is_refused_without_a_request() {
    let bare = TestServer::new();
    let client = Client::connect(bare.connect()).await.unwrap();
    let before = bare.requests().len();
    let errors = [
        client.list_resources().await.map(drop).unwrap_err(),
        client
            .list_resource_templates()
            .await
            .map(drop)
            .unwrap_err(),
        client
            .read_resource("file:///a")
            .await
            .map(drop)
            .unwrap_err(),
        client.subscribe_resource("file:///a").await.unwrap_err(),
        client.list_prompts().await.map(drop).unwrap_err(),
        client
            .get_prompt("p", [] as [(&str, &str); 0])
            .await
            .map(drop)
            .unwrap_err(),
        client
            .complete(
                CompletionRef::prompt("p"),
                CompletionArgument::new("a", ""),
                None,
            )
            .await
            .map(drop)
            .unwrap_err(),
    ];
    for e in &errors {
        assert!(e.is_missing_capability(), "{e}");
        assert!(e.rpc_error().is_none());
    }
    assert!(errors[0].to_string().contains("resources"), "{}", errors[0]);
    assert_eq!(bare.requests().len(), before, "nothing was sent");

    // Resources without subscriptions: reading works, subscribing does not.
    let no_sub = server().resource_subscribe(false);
    let client = Client::connect(no_sub.connect()).await.unwrap();
    client.read_resource("file:///a.txt").await.unwrap();
    let e = client
        .subscribe_resource("file:///a.txt")
        .await
        .unwrap_err();
    assert!(
        e.is_missing_capability() && e.to_string().contains("subscribe"),
        "{e}"
    );
    assert_eq!(no_sub.count("subscriptions/listen"), 0);
}

#[tokio::test(start_paused = true)]
async fn updates_of_subscribed_resources_reach_the_callback() {
    let server = server();
    let (tx, mut updates) = mpsc::channel(16);
    let (lists_tx, mut lists) = mpsc::channel(16);
    let client = Client::builder()
        .on_resource_updated(move |u: ResourceUpdated| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(u.uri).await;
            }
        })
        .on_list_changed(move |which: ListChanged| {
            let tx = lists_tx.clone();
            async move {
                let _ = tx.send(which).await;
            }
        })
        .connect(server.connect())
        .await
        .unwrap();
    // The list changes' own stream, opened after connecting.
    opened(&server, 1).await;

    client.subscribe_resource("file:///a.txt").await.unwrap();
    client.subscribe_resource("file:///b.bin").await.unwrap();
    client.subscribe_resource("file:///b.bin").await.unwrap();
    assert_eq!(
        server.count("subscriptions/listen"),
        3,
        "the repeat sent nothing"
    );
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(server.open_subscriptions(), 1, "the old stream was closed");

    assert_eq!(server.update_resource("file:///a.txt"), 1);
    assert_eq!(server.update_resource("file:///b.bin"), 1);
    assert_eq!(updates.recv().await.as_deref(), Some("file:///a.txt"));
    assert_eq!(updates.recv().await.as_deref(), Some("file:///b.bin"));
    assert_eq!(server.resources_list_changed(), 1);
    assert_eq!(server.prompts_list_changed(), 1);
    assert_eq!(lists.recv().await, Some(ListChanged::Resources));
    assert_eq!(lists.recv().await, Some(ListChanged::Prompts));

    client.unsubscribe_resource("file:///a.txt").await.unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(server.update_resource("file:///a.txt"), 0);
    assert_eq!(server.update_resource("file:///b.bin"), 1);
    assert_eq!(updates.recv().await.as_deref(), Some("file:///b.bin"));
    client.unsubscribe_resource("file:///b.bin").await.unwrap();
    tokio::time::sleep(Duration::from_millis(10)).await;
    assert_eq!(
        server.open_subscriptions(),
        1,
        "the list changes are still heard"
    );
    assert_eq!(server.update_resource("file:///b.bin"), 0);
    assert_eq!(server.prompts_list_changed(), 1);
    assert_eq!(lists.recv().await, Some(ListChanged::Prompts));
}

/// Waits (on the paused clock) until the server has `n` listen streams open.
async fn opened(server: &TestServer, n: usize) {
    while server.open_subscriptions() != n {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

/// A client of `server` whose `on_list_changed` sends each change to the
/// returned channel.
async fn hearing_list_changes(server: &TestServer) -> (Client, mpsc::Receiver<ListChanged>) {
    let (tx, lists) = mpsc::channel(16);
    let client = Client::builder()
        .on_list_changed(move |which: ListChanged| {
            let tx = tx.clone();
            async move {
                let _ = tx.send(which).await;
            }
        })
        .connect(server.connect())
        .await
        .unwrap();
    (client, lists)
}

#[tokio::test(start_paused = true)]
async fn list_changes_are_heard_on_2026_without_subscribing() {
    let server = server();
    let (client, mut lists) = hearing_list_changes(&server).await;
    opened(&server, 1).await;
    assert_eq!(server.tools_list_changed(), 1);
    assert_eq!(server.prompts_list_changed(), 1);
    assert_eq!(server.resources_list_changed(), 1);
    assert_eq!(lists.recv().await, Some(ListChanged::Tools));
    assert_eq!(lists.recv().await, Some(ListChanged::Prompts));
    assert_eq!(lists.recv().await, Some(ListChanged::Resources));
    assert_eq!(server.count("subscriptions/listen"), 1);
    client.close().await.unwrap();

    // Nobody listening: no stream.
    let quiet = Client::connect(server.connect()).await.unwrap();
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert_eq!(server.count("subscriptions/listen"), 1);
    assert_eq!(server.tools_list_changed(), 0);
    drop(quiet);
}

#[tokio::test(start_paused = true)]
async fn the_stream_asks_for_the_lists_the_server_says_change() {
    // Tools only, whose capability says `listChanged`: the stream asks
    // for them alone.
    let server = TestServer::new();
    let (_client, mut lists) = hearing_list_changes(&server).await;
    opened(&server, 1).await;
    let listen = server
        .requests()
        .into_iter()
        .find(|r| r.method == "subscriptions/listen")
        .unwrap();
    assert_eq!(
        listen.params["notifications"],
        json!({"toolsListChanged": true})
    );
    assert_eq!(server.tools_list_changed(), 1);
    assert_eq!(lists.recv().await, Some(ListChanged::Tools));
}

fn confirm() -> InputRequests {
    [(
        "confirm".to_owned(),
        InputRequest::form(
            "Show it?",
            json!({"type": "object", "properties": {"ok": {"type": "boolean"}}}),
        ),
    )]
    .into()
}

#[tokio::test(start_paused = true)]
async fn prompts_and_reads_answer_input_rounds_on_2026() {
    let server = server()
        .prompt_input("review", confirm())
        .resource_input("file:///a.txt", confirm());
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let handlers = InputHandlers::new().elicitation_form({
        let asked = asked.clone();
        move |request| {
            asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            assert_eq!(request.message, "Show it?");
            async { Ok(ElicitResult::accept(json!({"ok": true}))) }
        }
    });
    let client = Client::builder()
        .input_handlers(handlers)
        .connect(server.connect())
        .await
        .unwrap();

    let prompt = client
        .get_prompt("review", [("file", "lib.rs")])
        .await
        .unwrap();
    assert_eq!(prompt.messages.len(), 2);
    let meta = prompt.meta.unwrap();
    assert_eq!(
        meta["inputResponses"]["confirm"],
        json!({"action": "accept", "content": {"ok": true}})
    );
    assert_eq!(
        meta["arguments"],
        json!({"file": "lib.rs"}),
        "sent again as they were"
    );
    assert_eq!(server.count("prompts/get"), 2, "asked, then answered");

    let read = client.read_resource("file:///a.txt").await.unwrap();
    assert_eq!(
        read.contents[0].body().ok(),
        Some(ResourceBody::Text("alpha"))
    );
    assert_eq!(
        read.meta.unwrap()["inputResponses"]["confirm"]["action"],
        "accept"
    );
    assert_eq!(server.count("resources/read"), 2);
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 2);
    let retry = server
        .requests()
        .into_iter()
        .rfind(|r| r.method == "resources/read")
        .unwrap();
    assert_eq!(retry.params["requestState"], "resources/read file:///a.txt");
    assert_eq!(retry.params["uri"], "file:///a.txt");

    // What needs no input is read at once.
    client.read_resource("file:///b.bin").await.unwrap();
    assert_eq!(server.count("resources/read"), 3);
}

#[tokio::test(start_paused = true)]
async fn input_no_handler_answers_is_an_error_not_a_retry() {
    let server = server().prompt_input("review", confirm());
    let client = Client::connect(server.connect()).await.unwrap();
    let e = client
        .get_prompt("review", [("file", "lib.rs")])
        .await
        .unwrap_err();
    assert!(e.is_input_required(), "{e}");
    assert!(e.to_string().contains("confirm"), "{e}");
    assert_eq!(server.count("prompts/get"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_cursor_sent_again_ends_the_listing() {
    use mcp_tasks::transport::Transport as _;
    let (ours, theirs) = mcp_tasks::transport::memory::pair();
    let connecting = tokio::spawn(Client::builder().connect(ours));
    let (sink, stream) = theirs.connect().await.unwrap();
    let mut server = support::hand_peer::Peer { sink, stream };
    let probe = server.next().await;
    server
        .answer(
            &probe,
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                   "capabilities": {"prompts": {}}, "ttlMs": 0, "cacheScope": "public"}),
        )
        .await;
    let client = connecting.await.unwrap().unwrap();
    let listing = tokio::spawn(async move { client.list_prompts().await });
    // Not twice in a row: a, b, then a again.
    for (n, cursor) in ["a", "b", "a"].into_iter().enumerate() {
        let request = server.next().await;
        assert_eq!(request["method"], "prompts/list");
        server
            .answer(
                &request,
                json!({"resultType": "complete", "nextCursor": cursor,
                       "prompts": [{"name": format!("p{n}")}]}),
            )
            .await;
    }
    let e = listing.await.unwrap().unwrap_err();
    assert!(
        e.is_protocol() && e.to_string().contains("same cursor"),
        "{e}"
    );
}

#[tokio::test(start_paused = true)]
async fn an_initialize_era_server_without_them_is_refused_locally() {
    let (transport, mut server) = peer();
    let connecting = tokio::spawn(Client::connect(transport));
    server.handshake("2025-06-18").await;
    let client = connecting.await.unwrap().unwrap();
    // The hand peer's handshake advertises tools and logging only.
    let e = client.read_resource("file:///x").await.unwrap_err();
    assert!(e.is_missing_capability(), "{e}");
    let e = client.list_prompts().await.unwrap_err();
    assert!(e.is_missing_capability(), "{e}");
    server.sync("s1").await;
}

#[tokio::test(start_paused = true)]
async fn the_initialize_era_reads_subscribes_and_hears_updates() {
    let (transport, mut server) = peer();
    let (builder, mut updates) = forwarding_updates(4);
    let connecting = tokio::spawn(builder.connect(transport));
    old_era_handshake(
        &mut server,
        json!({"resources": {"subscribe": true}, "prompts": {}, "completions": {}}),
    )
    .await;
    let client = connecting.await.unwrap().unwrap();

    let reading = tokio::spawn({
        let client = client.clone();
        async move { client.read_resource("file:///odd").await }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "resources/read");
    assert_eq!(
        request["params"],
        json!({"uri": "file:///odd"}),
        "no _meta on this era"
    );
    server
        .answer(
            &request,
            json!({"contents": [
                {"uri": "file:///odd", "text": "t", "blob": "AA=="},
                {"uri": "file:///odd#2", "blob": "not base64"},
                {"uri": "file:///odd#3", "text": "fine"}
            ]}),
        )
        .await;
    let read = reading.await.unwrap().unwrap();
    let errors: Vec<String> = read.contents[..2]
        .iter()
        .map(|c| c.body().unwrap_err().to_string())
        .collect();
    assert!(errors[0].contains("both text and blob"), "{errors:?}");
    assert!(errors[1].contains("not base64"), "{errors:?}");
    assert_eq!(read.contents[2].body().unwrap(), ResourceBody::Text("fine"));

    let subscribing = tokio::spawn({
        let client = client.clone();
        async move { client.subscribe_resource("file:///odd").await }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "resources/subscribe");
    assert_eq!(request["params"], json!({"uri": "file:///odd"}));
    server.answer(&request, json!({})).await;
    subscribing.await.unwrap().unwrap();
    server
        .notify(
            "notifications/resources/updated",
            json!({"uri": "file:///odd"}),
        )
        .await;
    assert_eq!(updates.recv().await.as_deref(), Some("file:///odd"));

    let getting = tokio::spawn({
        let client = client.clone();
        async move { client.get_prompt("greet", [("name", "Ada")]).await }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "prompts/get");
    assert_eq!(
        request["params"],
        json!({"name": "greet", "arguments": {"name": "Ada"}})
    );
    server
        .answer(
            &request,
            json!({"messages": [
                {"role": "user", "content": {"type": "resource_link", "uri": "file:///a", "name": "a"}},
                {"role": "narrator", "content": {"type": "smell", "scent": "rain"}}
            ]}),
        )
        .await;
    let prompt = getting.await.unwrap().unwrap();
    assert!(
        matches!(&prompt.messages[0].content, ContentBlock::ResourceLink { uri, .. } if uri == "file:///a")
    );
    assert_eq!(prompt.messages[1].role, Role::Other("narrator".into()));
    assert!(
        matches!(&prompt.messages[1].content, ContentBlock::Unknown(v) if v["scent"] == "rain")
    );

    let completing = tokio::spawn({
        let client = client.clone();
        async move {
            client
                .complete(
                    CompletionRef::resource_template("file:///{path}"),
                    CompletionArgument::new("path", "s"),
                    None,
                )
                .await
        }
    });
    let request = server.next().await;
    assert_eq!(request["method"], "completion/complete");
    server
        .answer(
            &request,
            json!({"completion": {"values": ["src"], "total": 40, "hasMore": true}}),
        )
        .await;
    let found = completing.await.unwrap().unwrap();
    assert_eq!(
        (found.values.len(), found.total, found.has_more),
        (1, Some(40), Some(true))
    );
}

// ---- A hostile listen stream (2026-07-28) -------------------------------

/// Answers the connect probe as a 2026-07-28 server whose resources can be
/// subscribed to and whose lists change.
async fn modern_handshake(server: &mut support::hand_peer::Peer) {
    let probe = server.next().await;
    assert_eq!(probe["method"], "server/discover");
    server
        .answer(
            &probe,
            json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                   "capabilities": {"tools": {"listChanged": true}, "prompts": {},
                                    "resources": {"subscribe": true, "listChanged": true}}}),
        )
        .await;
}

/// Connects a client built by `builder` to a hand peer that answers the
/// probe as [`modern_handshake`] does.
async fn modern_client<S: IsComplete + Send + 'static>(
    builder: ClientBuilder<S>,
) -> (Client, support::hand_peer::Peer) {
    let (transport, mut server) = peer();
    let connecting = tokio::spawn(builder.connect(transport));
    modern_handshake(&mut server).await;
    (connecting.await.unwrap().unwrap(), server)
}

/// Refuses the probe, then answers `initialize` as a 2025-11-25 server
/// with `capabilities`, and checks the `initialized` notification.
async fn old_era_handshake(server: &mut support::hand_peer::Peer, capabilities: serde_json::Value) {
    let probe = server.next().await;
    server.refuse(&probe, -32601, "Method not found").await;
    let init = server.next().await;
    server
        .answer(
            &init,
            json!({"protocolVersion": "2025-11-25",
                   "capabilities": capabilities,
                   "serverInfo": {"name": "old", "version": "1"}}),
        )
        .await;
    assert_eq!(server.next().await["method"], "notifications/initialized");
}

/// A client builder whose `on_resource_updated` sends each URI to the
/// returned channel (of `capacity`).
fn forwarding_updates(
    capacity: usize,
) -> (
    ClientBuilder<impl IsComplete + Send + 'static>,
    mpsc::Receiver<String>,
) {
    let (tx, updates) = mpsc::channel(capacity);
    let builder = Client::builder().on_resource_updated(move |u: ResourceUpdated| {
        let tx = tx.clone();
        async move {
            let _ = tx.send(u.uri).await;
        }
    });
    (builder, updates)
}

/// `params` tagged with the listen stream `listen`.
fn on_stream(listen: &serde_json::Value, mut params: serde_json::Value) -> serde_json::Value {
    params["_meta"] = json!({"io.modelcontextprotocol/subscriptionId": listen["id"]});
    params
}

/// Acknowledges `listen`, accepting what it asked for.
async fn acknowledge(server: &mut support::hand_peer::Peer, listen: &serde_json::Value) {
    let params = on_stream(
        listen,
        json!({"notifications": listen["params"]["notifications"]}),
    );
    server
        .notify("notifications/subscriptions/acknowledged", params)
        .await;
}

/// The next message the client sends, unless it sends none within `within`.
async fn next_within(
    server: &mut support::hand_peer::Peer,
    within: Duration,
) -> Option<serde_json::Value> {
    tokio::time::timeout(within, support::next_json(&mut server.stream))
        .await
        .ok()
}

/// A counting callback: how many times it ran, and a channel of what it got.
fn counting<T: Send + 'static>() -> (
    std::sync::Arc<std::sync::atomic::AtomicU64>,
    impl Fn(T) -> std::future::Ready<()> + Send + Sync + 'static,
) {
    let count = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = count.clone();
    (count, move |_| {
        counted.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        std::future::ready(())
    })
}

/// A flood on the list changes' stream right behind its acknowledgement:
/// the client keeps its stream (no cancellation, later changes heard),
/// and every notification is either delivered or counted as dropped.
#[tokio::test(start_paused = true)]
async fn a_flood_behind_the_acknowledgement_is_counted_and_the_stream_kept() {
    const FLOOD: u64 = 20_000;
    let (heard, on_list_changed) = counting::<ListChanged>();
    let (client, mut server) =
        modern_client(Client::builder().on_list_changed(on_list_changed)).await;
    let listen = server.next().await;
    assert_eq!(listen["method"], "subscriptions/listen");
    acknowledge(&mut server, &listen).await;
    let changed = on_stream(&listen, json!({}));
    for _ in 0..FLOOD {
        server
            .notify("notifications/tools/list_changed", changed.clone())
            .await;
    }
    server.sync("after-flood").await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    let delivered = heard.load(std::sync::atomic::Ordering::Relaxed);
    let dropped = client.stats().dropped_notifications;
    assert_eq!(
        delivered + dropped,
        FLOOD,
        "every notification delivered or counted ({delivered} delivered, {dropped} dropped)"
    );
    // The stream is the client's still: nothing cancelled it, and a later
    // change is heard.
    assert_eq!(next_within(&mut server, Duration::from_secs(5)).await, None);
    server
        .notify("notifications/tools/list_changed", changed.clone())
        .await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert_eq!(
        heard.load(std::sync::atomic::Ordering::Relaxed),
        delivered + 1
    );
}

/// Updates of resources never subscribed to (nor under one subscribed
/// to) do not reach `on_resource_updated`, on either era.
#[tokio::test(start_paused = true)]
async fn updates_of_resources_not_subscribed_to_are_not_delivered() {
    let (builder, mut updates) = forwarding_updates(64);
    let (client, mut server) = modern_client(builder).await;
    let subscribing = tokio::spawn({
        let client = client.clone();
        async move { client.subscribe_resource("file:///dir").await }
    });
    let listen = server.next().await;
    assert_eq!(listen["method"], "subscriptions/listen");
    acknowledge(&mut server, &listen).await;
    subscribing.await.unwrap().unwrap();
    for uri in [
        "file:///never",
        "file:///dir",
        "file:///directory",
        "file:///dir/a.txt",
        "file:///never",
    ] {
        server
            .notify(
                "notifications/resources/updated",
                on_stream(&listen, json!({ "uri": uri })),
            )
            .await;
    }
    server.sync("s1").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mut got = Vec::new();
    while let Ok(uri) = updates.try_recv() {
        got.push(uri);
    }
    assert_eq!(got, ["file:///dir", "file:///dir/a.txt"]);

    // The initialize era: the same rule.
    let (transport, mut server) = peer();
    let (builder, mut updates) = forwarding_updates(64);
    let connecting = tokio::spawn(builder.connect(transport));
    old_era_handshake(&mut server, json!({"resources": {"subscribe": true}})).await;
    let client = connecting.await.unwrap().unwrap();
    let subscribing = tokio::spawn({
        let client = client.clone();
        async move { client.subscribe_resource("file:///odd").await }
    });
    let request = server.next().await;
    server.answer(&request, json!({})).await;
    subscribing.await.unwrap().unwrap();
    for uri in ["file:///never", "file:///odd"] {
        server
            .notify("notifications/resources/updated", json!({ "uri": uri }))
            .await;
    }
    server.sync("s1").await;
    assert_eq!(updates.recv().await.as_deref(), Some("file:///odd"));
    let unsubscribing = tokio::spawn({
        let client = client.clone();
        async move { client.unsubscribe_resource("file:///odd").await }
    });
    let request = server.next().await;
    server.answer(&request, json!({})).await;
    unsubscribing.await.unwrap().unwrap();
    server
        .notify(
            "notifications/resources/updated",
            json!({"uri": "file:///odd"}),
        )
        .await;
    server.sync("s2").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(updates.try_recv().is_err(), "unsubscribed: not delivered");
}

/// A listen stream the server ends is opened again, after a backoff; one
/// that keeps ending without delivering anything is given up after a
/// bounded number of attempts.
#[tokio::test(start_paused = true)]
async fn an_ended_listen_stream_is_reopened_with_backoff_and_bounded() {
    let (heard, on_list_changed) = counting::<ListChanged>();
    let (_client, mut server) =
        modern_client(Client::builder().on_list_changed(on_list_changed)).await;
    let listen = server.next().await;
    acknowledge(&mut server, &listen).await;
    // The server ends it with a final response.
    server.answer(&listen, json!({})).await;
    let again = server.next().await;
    assert_eq!(again["method"], "subscriptions/listen", "{again}");
    assert_eq!(
        again["params"]["notifications"],
        listen["params"]["notifications"]
    );
    acknowledge(&mut server, &again).await;
    server
        .notify(
            "notifications/tools/list_changed",
            on_stream(&again, json!({})),
        )
        .await;
    server.sync("s1").await;
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(heard.load(std::sync::atomic::Ordering::Relaxed), 1);

    // Now every stream ends at once (a cancellation from the server): the
    // client tries a bounded number of times, then stops.
    let mut current = again;
    let mut reopened = 0;
    loop {
        server
            .notify(
                "notifications/cancelled",
                json!({"requestId": current["id"], "reason": "bye"}),
            )
            .await;
        match next_within(&mut server, Duration::from_secs(600)).await {
            Some(listen) => {
                assert_eq!(listen["method"], "subscriptions/listen", "{listen}");
                reopened += 1;
                assert!(reopened <= 10, "the reopening is bounded");
                acknowledge(&mut server, &listen).await;
                current = listen;
            }
            None => break,
        }
    }
    assert!(reopened >= 1, "{reopened}");
}

/// `subscribe_resource` on a stream the server has ended is no silent
/// `Ok`: the stream is opened again first, and when that fails, so does
/// the subscription.
#[tokio::test(start_paused = true)]
async fn subscribing_on_an_ended_stream_reopens_it_or_fails() {
    let (client, mut server) =
        modern_client(Client::builder().on_resource_updated(|_u: ResourceUpdated| async {})).await;
    let subscribing = tokio::spawn({
        let client = client.clone();
        async move { client.subscribe_resource("file:///a").await }
    });
    let listen = server.next().await;
    acknowledge(&mut server, &listen).await;
    subscribing.await.unwrap().unwrap();
    // The server sends a burst, ends the stream, and refuses every new one.
    for _ in 0..500 {
        server
            .notify(
                "notifications/resources/updated",
                on_stream(&listen, json!({"uri": "file:///a"})),
            )
            .await;
    }
    server.answer(&listen, json!({})).await;
    server.sync("s1").await;
    for _ in 0..3 {
        let subscribing = tokio::spawn({
            let client = client.clone();
            async move { client.subscribe_resource("file:///a").await }
        });
        let Some(listen) = next_within(&mut server, Duration::from_secs(5)).await else {
            panic!(
                "nothing sent: subscribe_resource said {:?}",
                subscribing.await.unwrap()
            );
        };
        assert_eq!(listen["method"], "subscriptions/listen", "{listen}");
        server.refuse(&listen, -32603, "no more streams").await;
        let e = subscribing.await.unwrap().unwrap_err();
        assert!(
            e.is_rpc() && e.to_string().contains("no more streams"),
            "{e}"
        );
    }
}

// ---- Input rounds that never end -----------------------------------------

/// `n` form questions, keyed `q0`, `q1`, …, as a round asks them on the wire.
fn questions(n: usize) -> serde_json::Value {
    let keys: Vec<String> = (0..n).map(|i| format!("q{i}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    serde_json::to_value(support::requests(&keys)).unwrap()
}

fn counting_handlers() -> (
    std::sync::Arc<std::sync::atomic::AtomicUsize>,
    InputHandlers,
) {
    let asked = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let handlers = InputHandlers::new().elicitation_form({
        let asked = asked.clone();
        move |_request| {
            asked.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            async { Ok(ElicitResult::accept(json!({"ok": true}))) }
        }
    });
    (asked, handlers)
}

/// Sends `prompts/get` or `resources/read` from `client`, with the time it
/// took.
fn ask_once(
    client: &Client,
    method: &'static str,
) -> tokio::task::JoinHandle<(mcp_tasks::Result<()>, Duration)> {
    let client = client.clone();
    tokio::spawn(async move {
        let started = tokio::time::Instant::now();
        let r = match method {
            "prompts/get" => client
                .get_prompt("review", [("file", "lib.rs")])
                .await
                .map(drop),
            _ => client.read_resource("file:///a.txt").await.map(drop),
        };
        (r, started.elapsed())
    })
}

/// A server that keeps asking, each answer 20 s after the request (the
/// request timeout is 30 s): the rounds of one `prompts/get` or
/// `resources/read` share one request timeout for the server's answers,
/// so the call ends with `is_timeout()` within it, not after 11 rounds
/// of 20 s each.
#[tokio::test(start_paused = true)]
async fn input_rounds_of_prompts_and_reads_share_one_request_timeout() {
    for method in ["prompts/get", "resources/read"] {
        let (_asked, handlers) = counting_handlers();
        let (client, mut server) = modern_client(
            Client::builder()
                .input_handlers(handlers)
                .request_timeout(Duration::from_secs(30)),
        )
        .await;
        let call = ask_once(&client, method);
        let mut sent = 0;
        while let Some(request) = next_within(&mut server, Duration::from_secs(120)).await {
            if request["method"] != method {
                continue;
            }
            sent += 1;
            tokio::time::sleep(Duration::from_secs(20)).await;
            server
                .answer(
                    &request,
                    json!({"resultType": "input_required", "inputRequests": questions(1),
                           "requestState": "again"}),
                )
                .await;
        }
        let (r, took) = call.await.unwrap();
        let e = r.unwrap_err();
        assert!(e.is_timeout(), "{method}: {e}");
        assert!(took <= Duration::from_secs(30), "{method}: {took:?}");
        assert_eq!(sent, 2, "{method}");
    }
}

/// A round that asks for more inputs than the bound runs no handler, on
/// every path that answers rounds: `prompts/get`, `resources/read`,
/// `tools/call`, and a task's questions (the handle stops at
/// `InputRequired`, to be answered by hand).
#[tokio::test(start_paused = true)]
async fn a_round_asking_too_much_runs_no_handler() {
    for method in ["prompts/get", "resources/read"] {
        let (asked, handlers) = counting_handlers();
        let (client, mut server) = modern_client(Client::builder().input_handlers(handlers)).await;
        let call = ask_once(&client, method);
        let request = server.next().await;
        assert_eq!(request["method"], method);
        server
            .answer(
                &request,
                json!({"resultType": "input_required", "inputRequests": questions(2_000)}),
            )
            .await;
        let e = call.await.unwrap().0.unwrap_err();
        assert!(
            e.is_protocol() && e.to_string().contains("2000"),
            "{method}: {e}"
        );
        assert_eq!(
            asked.load(std::sync::atomic::Ordering::SeqCst),
            0,
            "{method}"
        );
        assert_eq!(next_within(&mut server, Duration::from_secs(5)).await, None);
    }

    let keys: Vec<String> = (0..100).map(|i| format!("q{i}")).collect();
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let server = TestServer::new()
        .tool(mcp_tasks::testing::ScriptedTool::input_forever(
            "many",
            support::requests(&keys),
        ))
        .tool(mcp_tasks::testing::ScriptedTool::task(
            "asks",
            mcp_tasks::testing::TaskScript::new()
                .input(Duration::from_millis(10), support::requests(&keys))
                .complete(
                    Duration::from_millis(10),
                    mcp_tasks::protocol::CallToolResult::text("done"),
                ),
        ));
    let (asked, handlers) = counting_handlers();
    let client = Client::builder()
        .input_handlers(handlers)
        .connect(server.connect())
        .await
        .unwrap();
    let e = client.call_tool("many", json!({})).await.unwrap_err();
    assert!(e.is_protocol() && e.to_string().contains("100"), "{e}");
    assert_eq!(server.count("tools/call"), 1);
    let state = client.task().call_tool("asks", json!({})).await.unwrap();
    let mcp_tasks::TaskState::Pending(task) = state else {
        panic!("a task");
    };
    let e = task.finish().await.unwrap_err();
    assert!(e.error().is_input_required(), "{}", e.error());
    assert_eq!(asked.load(std::sync::atomic::Ordering::SeqCst), 0);
}

/// A completion of 3,000 values (the protocol allows at most 100) is cut
/// to its first 100 while it is read, and says there are more; what fits
/// is kept as sent.
#[tokio::test(start_paused = true)]
async fn a_completion_past_100_values_is_cut_to_100() {
    let many: Vec<String> = (0..3_000).map(|i| format!("v{i}")).collect();
    let server = server()
        .completion(
            CompletionRef::prompt("many"),
            "file",
            Completion::new(many.clone()),
        )
        .completion(
            CompletionRef::prompt("few"),
            "file",
            Completion::new(["a", "b"]),
        );
    let client = Client::connect(server.connect()).await.unwrap();
    let found = client
        .complete(
            CompletionRef::prompt("many"),
            CompletionArgument::new("file", "v"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(found.values.len(), 100, "cut to the protocol's bound");
    assert!(found.values == many[..100], "the first 100, as sent");
    assert_eq!(found.has_more, Some(true));
    let found = client
        .complete(
            CompletionRef::prompt("few"),
            CompletionArgument::new("file", ""),
            None,
        )
        .await
        .unwrap();
    assert_eq!(found.values, ["a", "b"]);
    assert_eq!(found.has_more, None);
}
