//! Listings a hostile server makes endless, huge or slow: `list_tools`
//! keeps at most its byte bound and ends within its deadline, whatever the
//! pages say; the page-by-page reader follows the same pages one at a time.

mod support;

use std::time::Duration;

use mcp_tasks::Client;
use mcp_tasks::protocol::Tool;
use mcp_tasks::testing::{ScriptedTool, TestServer};
use mcp_tasks::transport::{MessageStream, memory};
use proptest::prelude::*;
use serde_json::{Value, json};
use support::*;
use tokio::time::Instant;

/// One page of `count` tools whose descriptions hold `each` bytes, with a
/// cursor to a next page when `next` is set.
fn page(request: &Value, first: usize, count: usize, each: usize, next: Option<String>) -> String {
    let tools: Vec<Value> = (first..first + count)
        .map(|i| {
            json!({"name": format!("t{i}"), "description": "d".repeat(each),
                   "inputSchema": {"type": "object"}})
        })
        .collect();
    let mut result = json!({"resultType": "complete", "tools": tools});
    if let Some(next) = next {
        result["nextCursor"] = json!(next);
    }
    json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string()
}

/// The next request the client sent, or `None` once it stopped sending
/// (nothing within a minute of paused time, or the connection closed).
async fn next_request(stream: &mut memory::MemoryStream) -> Option<Value> {
    let next = async {
        loop {
            match stream.recv().await {
                Ok(Some(mcp_tasks::transport::Inbound::Message(m))) => {
                    let v: Value = serde_json::from_str(&m).unwrap();
                    if v.get("id").is_some() {
                        return Some(v);
                    }
                }
                Ok(Some(_)) => {}
                _ => return None,
            }
        }
    };
    tokio::time::timeout(ms(60_000), next).await.ok().flatten()
}

/// 20 pages of 1 MiB each: past the default bound of 16 MiB. The listing
/// fails once the bound is passed, saying which bound, without asking for
/// the rest.
#[tokio::test(start_paused = true)]
async fn a_listing_past_the_default_byte_bound_fails_and_says_which_bound() {
    const PAGES: usize = 20;
    let (client, mut sink, mut stream) = pinned_peer(None).await;
    let listing = tokio::spawn(async move { client.list_tools().await });
    let mut served = 0;
    while let Some(request) = next_request(&mut stream).await {
        assert_eq!(request["method"], "tools/list");
        served += 1;
        let next = (served < PAGES).then(|| format!("c{served}"));
        reply(&mut sink, page(&request, served * 1000, 1000, 1024, next)).await;
        if served == PAGES {
            break;
        }
    }
    let e = match listing.await.unwrap() {
        Ok(tools) => panic!(
            "20 MiB of tools is past the bound, yet {} were kept",
            tools.len()
        ),
        Err(e) => e,
    };
    assert!(e.is_over_limit(), "{e}");
    assert!(!e.is_protocol() && !e.is_transport(), "{e}");
    assert_eq!(e.method(), Some("tools/list"));
    let text = e.to_string();
    assert!(
        text.contains("max_listed_bytes") && text.contains("16 MiB"),
        "{text}"
    );
    assert!(served <= 17, "asked for {served} pages, past the bound");
}

/// A server that never ends its listing, one slow page after another
/// (each within the request timeout): the listing ends at its deadline,
/// long before the 1,000-page cap would.
#[tokio::test(start_paused = true)]
async fn a_slow_endless_listing_ends_at_the_listing_deadline() {
    let (client, mut sink, mut stream) = pinned_peer(None).await;
    let started = Instant::now();
    let listing = tokio::spawn(async move { client.list_tools().await });
    let mut served = 0usize;
    let server = async {
        while let Some(request) = next_request(&mut stream).await {
            tokio::time::sleep(Duration::from_secs(20)).await;
            served += 1;
            let next = Some(format!("c{served}"));
            reply(&mut sink, page(&request, served, 1, 10, next)).await;
        }
    };
    let outcome = tokio::select! {
        biased;
        r = listing => r.unwrap(),
        () = server => panic!("the server stopped first"),
    };
    let e = match outcome {
        Ok(tools) => panic!("an endless listing ended with {} tools", tools.len()),
        Err(e) => e,
    };
    assert!(e.is_deadline(), "{e}");
    assert_eq!(e.method(), Some("tools/list"));
    assert!(e.to_string().contains("5 min"), "{e}");
    assert!(
        started.elapsed() <= Duration::from_secs(5 * 60),
        "ended after {:?}",
        started.elapsed()
    );
}

/// A server listing three tools (`a`, `b`, `c`) two to a page.
fn three_tools_two_a_page() -> TestServer {
    TestServer::new()
        .page_size(2)
        .tool(ScriptedTool::immediate("a", text("a")))
        .tool(ScriptedTool::immediate("b", text("b")))
        .tool(ScriptedTool::immediate("c", text("c")))
}

/// The bound and the deadline are the client's to set; a listing within
/// them succeeds.
#[tokio::test(start_paused = true)]
async fn the_listing_bounds_are_set_on_the_builder() {
    let server = three_tools_two_a_page();
    let client = Client::builder()
        .max_listed_bytes(64)
        .connect(server.connect())
        .await
        .unwrap();
    let e = client.list_tools().await.unwrap_err();
    assert!(
        e.is_over_limit() && e.to_string().contains("64 bytes"),
        "{e}"
    );
    let client = Client::builder()
        .max_listed_bytes(1 << 20)
        .list_timeout(Duration::from_secs(1))
        .connect(server.connect())
        .await
        .unwrap();
    let names = tool_names(&client).await;
    assert_eq!(names, ["a", "b", "c"]);
}

/// Reading page by page keeps one page at a time: it follows a listing
/// past the byte bound to its end, and a cursor repeated is an error.
#[tokio::test(start_paused = true)]
async fn pages_follow_a_listing_past_the_bound_one_page_at_a_time() {
    let (client, mut sink, mut stream) = pinned_peer(None).await;
    let reader = tokio::spawn(async move {
        let mut pages = client.tool_pages();
        let mut sizes = Vec::new();
        while let Some(page) = pages.next().await {
            match page {
                Ok(tools) => sizes.push(tools.len()),
                Err(e) => return (sizes, Some(e)),
            }
        }
        (sizes, None)
    });
    for served in 1..=20 {
        let request = next_request(&mut stream).await.unwrap();
        let next = (served < 20).then(|| format!("c{served}"));
        reply(&mut sink, page(&request, served * 1000, 1000, 1024, next)).await;
    }
    let (sizes, error) = reader.await.unwrap();
    assert!(error.is_none(), "{error:?}");
    assert_eq!(sizes, vec![1000; 20]);

    let (client, mut sink, mut stream) = pinned_peer(None).await;
    let reader = tokio::spawn(async move {
        let mut pages = client.tool_pages();
        let first = pages.next().await.unwrap().unwrap();
        let second = pages.next().await.unwrap();
        let after = pages.next().await;
        (first.len(), second.unwrap_err(), after.is_none())
    });
    for _ in 0..2 {
        let request = next_request(&mut stream).await.unwrap();
        reply(&mut sink, page(&request, 0, 1, 10, Some("same".into()))).await;
    }
    let (first, e, ended) = reader.await.unwrap();
    assert_eq!(first, 1);
    assert!(
        e.is_protocol() && e.to_string().contains("same cursor"),
        "{e}"
    );
    assert!(ended, "no page after an error");
}

/// Reads the client's tool pages in the background: how many read well,
/// and the error that ended them, if one did.
fn read_tool_pages(client: Client) -> tokio::task::JoinHandle<(usize, Option<mcp_tasks::Error>)> {
    tokio::spawn(async move {
        let mut pages = client.tool_pages();
        let mut read = 0;
        while let Some(page) = pages.next().await {
            match page {
                Ok(_) => read += 1,
                Err(e) => return (read, Some(e)),
            }
        }
        (read, None)
    })
}

/// Endless empty pages, each with a fresh cursor: the page reader stops
/// at the whole listing's page bound (1,000) with `is_protocol()`, as
/// `list_tools` does, instead of asking (and remembering cursors)
/// forever; a cursor repeated long after is still caught.
#[tokio::test(start_paused = true)]
async fn pages_of_fresh_cursors_end_at_the_page_bound() {
    let (client, mut sink, mut stream) = pinned_peer(None).await;
    let reader = read_tool_pages(client);
    let mut served = 0;
    while let Some(request) = next_request(&mut stream).await {
        served += 1;
        if served > 1_500 {
            break;
        }
        let cursor = format!("{served:0>64}");
        reply(&mut sink, page(&request, 0, 0, 0, Some(cursor))).await;
    }
    drop(sink);
    let (read, error) = reader.await.unwrap();
    let e = error.expect("the reader stops with an error");
    assert!(
        e.is_protocol() && e.to_string().contains("1000 pages"),
        "{e}"
    );
    assert_eq!((read, served), (999, 1_000));

    // A cursor repeated after 500 others is still caught.
    let (client, mut sink, mut stream) = pinned_peer(None).await;
    let reader = read_tool_pages(client);
    for served in 1..=502 {
        let request = next_request(&mut stream).await.unwrap();
        let cursor = if served == 502 { 1 } else { served };
        reply(
            &mut sink,
            page(&request, 0, 0, 0, Some(format!("c{cursor}"))),
        )
        .await;
    }
    let (read, e) = reader.await.unwrap();
    let e = e.expect("the repeated cursor was not caught");
    assert!(e.to_string().contains("same cursor"), "{e}");
    assert_eq!(read, 501);
}

fn tool_named(i: usize, description: usize) -> ScriptedTool {
    ScriptedTool::immediate(format!("tool-{i}"), text("x")).description("d".repeat(description))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Whatever the tools, the page size and the bound: a listing whose
    /// tools alone exceed the bound fails with `is_over_limit`; one with
    /// room to spare for every page's envelope succeeds with every tool,
    /// in order; and reading page by page gives the same tools.
    #[test]
    fn the_byte_bound_decides_between_every_tool_and_an_over_limit_error(
        descriptions in proptest::collection::vec(0usize..400, 1..30),
        page_size in 1usize..8,
        bound in 64usize..8_000,
    ) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let mut server = TestServer::new().page_size(page_size);
            for (i, d) in descriptions.iter().enumerate() {
                server = server.tool(tool_named(i, *d));
            }
            let client = Client::builder()
                .max_listed_bytes(bound)
                .connect(server.connect())
                .await
                .unwrap();
            let json_of_tools: usize = server_tools(&client).await.iter()
                .map(|t| serde_json::to_string(t).unwrap().len())
                .sum();
            let pages = descriptions.len().div_ceil(page_size);
            match client.list_tools().await {
                Ok(tools) => {
                    prop_assert!(json_of_tools <= bound, "{json_of_tools} > {bound}");
                    let names: Vec<String> = tools.into_iter().map(|t| t.name).collect();
                    let want: Vec<String> =
                        (0..descriptions.len()).map(|i| format!("tool-{i}")).collect();
                    prop_assert_eq!(names, want);
                }
                Err(e) => {
                    prop_assert!(e.is_over_limit(), "{}", e);
                    prop_assert!(json_of_tools + pages * 1024 > bound, "{json_of_tools}, {bound}");
                }
            }
            Ok(())
        })?;
    }
}

/// Every tool of the server, read page by page (no bound applies).
async fn server_tools(client: &Client) -> Vec<Tool> {
    let mut all = Vec::new();
    let mut pages = client.tool_pages();
    while let Some(page) = pages.next().await {
        all.extend(page.unwrap());
    }
    all
}

/// The four listings: the method, the member holding the items, and the
/// smallest item the server can send for it.
const KINDS: [(&str, &str, &str); 4] = [
    ("tools/list", "tools", r#"{"name":"t"}"#),
    ("resources/list", "resources", r#"{"uri":"u","name":"n"}"#),
    (
        "resources/templates/list",
        "resourceTemplates",
        r#"{"uriTemplate":"u","name":"n"}"#,
    ),
    ("prompts/list", "prompts", r#"{"name":"p"}"#),
];

/// Serves `pages` pages of `per_page` copies of `item` under `member`
/// (answering `server/discover` with every capability), until the client
/// stops asking; returns the pages served and the bytes of their results.
async fn serve_items(
    sink: &mut memory::MemorySink,
    stream: &mut memory::MemoryStream,
    member: &str,
    item: &str,
    per_page: usize,
    pages: usize,
) -> (usize, usize) {
    let (mut served, mut bytes) = (0, 0);
    while let Some(request) = next_request(stream).await {
        let id = &request["id"];
        if request["method"] == "server/discover" {
            let result = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"],
                "capabilities": {"tools": {}, "resources": {}, "prompts": {}}});
            reply(
                sink,
                json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(),
            )
            .await;
            continue;
        }
        served += 1;
        let items = vec![item; per_page].join(",");
        let next = if served < pages {
            format!(r#","nextCursor":"c{served}""#)
        } else {
            String::new()
        };
        let result = format!(r#"{{"resultType":"complete","{member}":[{items}]{next}}}"#);
        bytes += result.len();
        reply(
            sink,
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{result}}}"#),
        )
        .await;
        if served == pages {
            break;
        }
    }
    (served, bytes)
}

/// Lists every item of `method` with the default bounds, by the whole
/// listing or page by page: the items read, or the error that ended it.
async fn list_all(client: &Client, method: &str, paged: bool) -> Result<usize, mcp_tasks::Error> {
    macro_rules! pages {
        ($pages:expr) => {{
            let mut pages = $pages;
            let mut read = 0;
            while let Some(page) = pages.next().await {
                read += page?.len();
            }
            Ok(read)
        }};
    }
    match (method, paged) {
        ("tools/list", false) => client.list_tools().await.map(|v| v.len()),
        ("resources/list", false) => client.list_resources().await.map(|v| v.len()),
        ("resources/templates/list", false) => {
            client.list_resource_templates().await.map(|v| v.len())
        }
        ("prompts/list", false) => client.list_prompts().await.map(|v| v.len()),
        ("tools/list", true) => pages!(client.tool_pages()),
        ("resources/list", true) => pages!(client.resource_pages()),
        ("resources/templates/list", true) => pages!(client.resource_template_pages()),
        ("prompts/list", true) => pages!(client.prompt_pages()),
        _ => unreachable!(),
    }
}

/// [`list_all`] of `method` (page by page when `paged`) against a peer
/// serving `(per_page, pages)` of `item` ([`serve_items`]): the error the
/// listing ended with (a panic if it ended well), the pages served and
/// their bytes.
async fn refused_listing(
    method: &'static str,
    member: &str,
    item: &str,
    (per_page, pages): (usize, usize),
    paged: bool,
) -> (mcp_tasks::Error, usize, usize) {
    let (client, mut sink, mut stream) = pinned_peer(None).await;
    let listing = tokio::spawn(async move { list_all(&client, method, paged).await });
    let (served, bytes) = serve_items(&mut sink, &mut stream, member, item, per_page, pages).await;
    match listing.await.unwrap() {
        Ok(n) => panic!("{method}: {n} items kept past the memory bound"),
        Err(e) => (e, served, bytes),
    }
}

/// 30 pages of 20,000 of the smallest items each (3.7–20 MB of memory a
/// page, 600,000 items) are within the byte bound (16 MiB of JSON) but
/// not within the memory bound (64 MiB): each listing stops at the
/// memory bound, says so, and asks for no further page.
#[tokio::test(start_paused = true)]
async fn every_listing_stops_at_the_memory_bound_within_the_byte_bound() {
    for (method, member, item) in KINDS {
        let (e, served, bytes) = refused_listing(method, member, item, (20_000, 30), false).await;
        assert!(e.is_over_limit(), "{method}: {e}");
        assert_eq!(e.method(), Some(method));
        let text = e.to_string();
        assert!(
            text.contains("max_listed_memory") && text.contains("64 MiB"),
            "{text}"
        );
        assert!(bytes < 16 << 20, "{method}: the byte bound was reached");
        assert!(served < 30, "{method}: asked for all {served} pages");
    }
}

/// One page of 400,000 of the smallest items (at least 73 MB of memory
/// however small each is) is past the memory bound on its own: the page
/// reader refuses it, says which bound, and reads no further.
#[tokio::test(start_paused = true)]
async fn a_page_past_the_memory_bound_fails_the_page_reader() {
    for (method, member, item) in KINDS {
        let (e, served, _) = refused_listing(method, member, item, (400_000, 2), true).await;
        assert!(e.is_over_limit(), "{method}: {e}");
        assert!(
            e.to_string().contains("page 1") && e.to_string().contains("max_listed_memory"),
            "{e}"
        );
        assert_eq!(served, 1, "{method}: read on after the refused page");
    }
}

/// One tool whose schema is 150,000 small objects (1.2 MB of JSON, over
/// 100 MB once decoded) is refused before it is built: the listing and
/// the page reader fail alike.
#[tokio::test(start_paused = true)]
async fn one_item_past_the_memory_bound_is_never_decoded() {
    let objects = vec![r#"{"a":0}"#; 150_000].join(",");
    let tool = format!(r#"{{"name":"t","inputSchema":{{"type":"object","x":[{objects}]}}}}"#);
    for paged in [false, true] {
        let (e, _, _) = refused_listing("tools/list", "tools", &tool, (1, 1), paged).await;
        assert!(e.is_over_limit(), "{e}");
        assert!(e.to_string().contains("max_listed_memory"), "{e}");
    }
}

/// The memory bound is the client's to set: three tools that count 984
/// bytes each (a name, and the default schema they are given) fit in 3
/// KiB, not in 2 KiB, where the second page passes it; each page of two
/// fits alone, for the page reader, in 2 KiB but not in 1,000 bytes.
#[tokio::test(start_paused = true)]
async fn the_memory_bound_is_set_on_the_builder() {
    let server = three_tools_two_a_page();
    let tight = Client::builder()
        .max_listed_memory(2 << 10)
        .connect(server.connect())
        .await
        .unwrap();
    let e = tight.list_tools().await.unwrap_err();
    assert!(
        e.is_over_limit() && e.to_string().contains("2 KiB") && e.to_string().contains("page 2"),
        "{e}"
    );
    // Each page of two fits alone.
    let mut pages = tight.tool_pages();
    let mut read = Vec::new();
    while let Some(page) = pages.next().await {
        read.push(page.unwrap().len());
    }
    assert_eq!(read, [2, 1]);
    let roomy = Client::builder()
        .max_listed_memory(3 << 10)
        .connect(server.connect())
        .await
        .unwrap();
    assert_eq!(roomy.list_tools().await.unwrap().len(), 3);
    let one = Client::builder()
        .max_listed_memory(1_000)
        .connect(server.connect())
        .await
        .unwrap();
    let e = one.tool_pages().next().await.unwrap().unwrap_err();
    assert!(
        e.is_over_limit() && e.to_string().contains("1000 bytes"),
        "{e}"
    );
}
