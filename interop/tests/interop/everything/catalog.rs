//! server-everything's resources, templates, subscriptions, prompts and
//! completion: the scenarios of the complete client, instantiated per
//! transport with the rest in `mod.rs`.

use std::path::Path;
use std::time::Duration;

use mcp_tasks::Client;
use mcp_tasks::protocol::{
    CompletionArgument, CompletionContext, CompletionRef, ContentBlock, ResourceBody,
    ResourceUpdated, Role,
};
use mcp_tasks::transport::Transport;
use serde_json::json;

use super::EVERYTHING;

/// The static resources server-everything lists: one per file of its
/// `docs` folder.
fn its_documents() -> Vec<String> {
    let docs = Path::new(EVERYTHING).with_file_name("docs");
    let mut names: Vec<String> = std::fs::read_dir(&docs)
        .expect("its docs folder")
        .filter_map(|e| e.ok())
        .filter(|e| e.path().is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

pub(super) async fn lists_its_static_resources(client: Client) {
    let expected = its_documents();
    assert!(!expected.is_empty());
    let listed = client.list_resources().await.unwrap();
    let mut names: Vec<String> = listed.iter().map(|r| r.name.clone()).collect();
    names.sort();
    assert_eq!(names, expected);
    for resource in &listed {
        assert!(
            resource.uri.starts_with("demo://resource/static/document/"),
            "{}",
            resource.uri
        );
        assert!(resource.mime_type.is_some(), "{resource:?}");
    }
    // The same, one page at a time (it sends them in one page).
    let mut pages = client.resource_pages();
    let mut paged = Vec::new();
    while let Some(page) = pages.next().await {
        paged.extend(page.unwrap());
    }
    assert_eq!(paged, listed);
}

pub(super) async fn reads_text_and_blob(client: Client) {
    let uri = "demo://resource/static/document/features.md";
    let read = client.read_resource(uri).await.unwrap();
    assert_eq!(read.contents[0].uri, uri);
    assert_eq!(read.contents[0].mime_type.as_deref(), Some("text/markdown"));
    match read.contents[0].body().unwrap() {
        ResourceBody::Text(text) => assert!(text.starts_with('#'), "{text}"),
        other => panic!("text, got {other:?}"),
    }

    let read = client
        .read_resource("demo://resource/dynamic/text/3")
        .await
        .unwrap();
    match read.contents[0].body().unwrap() {
        ResourceBody::Text(text) => assert!(text.starts_with("Resource 3: "), "{text}"),
        other => panic!("text, got {other:?}"),
    }
    let read = client
        .read_resource("demo://resource/dynamic/blob/7")
        .await
        .unwrap();
    match read.contents[0].body().unwrap() {
        ResourceBody::Blob(bytes) => {
            let text = String::from_utf8(bytes).unwrap();
            assert!(
                text.starts_with("Resource 7: This is a base64 blob"),
                "{text}"
            );
        }
        other => panic!("a blob, got {other:?}"),
    }
    let e = client
        .read_resource("demo://resource/dynamic/text/0")
        .await
        .unwrap_err();
    assert!(e.is_rpc(), "{e}");
}

pub(super) async fn lists_its_templates(client: Client) {
    let templates = client.list_resource_templates().await.unwrap();
    let mut uris: Vec<&str> = templates.iter().map(|t| t.uri_template.as_str()).collect();
    uris.sort();
    assert_eq!(
        uris,
        [
            "demo://resource/dynamic/blob/{resourceId}",
            "demo://resource/dynamic/text/{resourceId}"
        ]
    );
}

/// Subscribes to a resource, has the server send its updates
/// (`toggle-subscriber-updates` sends one at once, then every five
/// seconds), hears one, unsubscribes and turns them off.
pub(super) async fn a_subscribed_resource_s_update_is_heard<T: Transport>(transport: T) {
    let uri = "demo://resource/static/document/features.md";
    let (tx, mut updates) = tokio::sync::mpsc::unbounded_channel();
    let client = Client::builder()
        .on_resource_updated(move |update: ResourceUpdated| {
            let _ = tx.send(update.uri);
            std::future::ready(())
        })
        .connect(transport)
        .await
        .expect("connect to server-everything");
    client.subscribe_resource(uri).await.unwrap();
    let toggled = client
        .call_tool("toggle-subscriber-updates", json!({}))
        .await
        .unwrap();
    assert!(toggled.joined_text().contains("Started"), "{toggled:?}");
    let heard = tokio::time::timeout(Duration::from_secs(20), updates.recv())
        .await
        .expect("an update within 20 s");
    assert_eq!(heard.as_deref(), Some(uri));
    client.unsubscribe_resource(uri).await.unwrap();
    let toggled = client
        .call_tool("toggle-subscriber-updates", json!({}))
        .await
        .unwrap();
    assert!(toggled.joined_text().contains("Stopped"), "{toggled:?}");
}

pub(super) async fn lists_and_gets_prompts(client: Client) {
    let prompts = client.list_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    for expected in ["simple-prompt", "args-prompt", "completable-prompt"] {
        assert!(
            names.contains(&expected),
            "{expected} missing from {names:?}"
        );
    }
    let args = prompts.iter().find(|p| p.name == "args-prompt").unwrap();
    let required: Vec<(&str, bool)> = args
        .arguments
        .iter()
        .flatten()
        .map(|a| (a.name.as_str(), a.required == Some(true)))
        .collect();
    assert_eq!(required, [("city", true), ("state", false)]);

    let rendered = client
        .get_prompt("args-prompt", [("city", "Lyon"), ("state", "Rhône")])
        .await
        .unwrap();
    assert_eq!(rendered.messages[0].role, Role::User);
    match &rendered.messages[0].content {
        ContentBlock::Text { text, .. } => assert_eq!(text, "What's weather in Lyon, Rhône?"),
        other => panic!("text, got {other:?}"),
    }
    let e = client
        .get_prompt("args-prompt", [] as [(&str, &str); 0])
        .await
        .unwrap_err();
    assert!(e.is_rpc(), "a missing argument is refused: {e}");
}

pub(super) async fn completes_arguments_and_variables(client: Client) {
    let prompt = CompletionRef::prompt("completable-prompt");
    let found = client
        .complete(
            prompt.clone(),
            CompletionArgument::new("department", "S"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(found.values, ["Sales", "Support"]);
    // The second argument's values depend on the first, given as context.
    let found = client
        .complete(
            prompt,
            CompletionArgument::new("name", ""),
            Some(CompletionContext::new([("department", "Sales")])),
        )
        .await
        .unwrap();
    assert_eq!(found.values, ["David", "Eve", "Frank"]);
    let found = client
        .complete(
            CompletionRef::resource_template("demo://resource/dynamic/text/{resourceId}"),
            CompletionArgument::new("resourceId", "42"),
            None,
        )
        .await
        .unwrap();
    assert_eq!(found.values, ["42"]);
}
