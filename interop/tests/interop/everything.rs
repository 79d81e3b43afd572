//! The official reference server, `@modelcontextprotocol/server-everything`
//! 2026.8.31 (TypeScript SDK 1.x, initialize era), over stdio: the client
//! negotiates the era by itself, then lists and calls its tools and answers
//! its elicitation, sampling and roots requests with the same handlers it
//! uses on 2026-07-28.

use std::path::Path;

use mcp_tasks::Client;
use mcp_tasks::input::InputHandlers;
use mcp_tasks::protocol::{CreateMessageResult, ElicitResult, ListRootsResult, Root};
use mcp_tasks::transport::{Stderr, Stdio};
use serde_json::json;

use crate::support::bounded;

const EVERYTHING: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/everything/node_modules/@modelcontextprotocol/server-everything/dist/index.js"
);

fn server() -> Stdio {
    assert!(
        Path::new(EVERYTHING).exists(),
        "server-everything is not installed: run `npm ci --prefix interop/everything`"
    );
    Stdio::command("node")
        .args([EVERYTHING, "stdio"])
        .stderr(Stderr::Null)
}

fn handlers() -> InputHandlers {
    InputHandlers::new()
        .elicitation_form(|_req| async { Ok(ElicitResult::decline()) })
        .sampling(|_req| async {
            Ok(CreateMessageResult {
                role: "assistant".into(),
                content: json!({"type": "text", "text": "a sampled answer"}),
                model: "interop-model".into(),
                stop_reason: Some("endTurn".into()),
            })
        })
        .roots(|_req| async {
            Ok(ListRootsResult {
                roots: vec![Root {
                    uri: "file:///interop/root".into(),
                    name: Some("interop".into()),
                }],
            })
        })
}

async fn client() -> Client {
    Client::builder()
        .input_handlers(handlers())
        .connect(server())
        .await
        .expect("connect to server-everything")
}

mod stdio {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn negotiates_the_initialize_era_and_lists_its_tools() {
        bounded(async {
            let client = client().await;
            assert_eq!(&*client.protocol_version(), "2025-11-25");
            assert!(client.server_id().is_some_and(|n| n.contains("everything")));
            let tools = client.list_tools().await.unwrap();
            let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
            for expected in [
                "echo",
                "get-sum",
                "trigger-elicitation-request",
                "get-roots-list",
            ] {
                assert!(
                    names.contains(&expected),
                    "{expected} missing from {names:?}"
                );
            }
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn echo_and_get_sum() {
        bounded(async {
            let client = client().await;
            let echo = client
                .call_tool("echo", json!({"message": "hello"}))
                .await
                .unwrap();
            assert_eq!(echo.joined_text(), "Echo: hello");
            let sum = client
                .call_tool("get-sum", json!({"a": 2, "b": 40}))
                .await
                .unwrap();
            assert!(sum.joined_text().contains("is 42"), "{}", sum.joined_text());
        })
        .await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn its_elicitation_sampling_and_roots_requests_are_answered_by_the_handlers() {
        bounded(async {
            let client = client().await;
            let elicited = client
                .call_tool("trigger-elicitation-request", json!({}))
                .await
                .unwrap();
            assert!(
                elicited.joined_text().to_lowercase().contains("decline"),
                "{}",
                elicited.joined_text()
            );
            let sampled = client
                .call_tool(
                    "trigger-sampling-request",
                    json!({"prompt": "say something", "maxTokens": 20}),
                )
                .await
                .unwrap();
            assert!(
                sampled.joined_text().contains("a sampled answer"),
                "{}",
                sampled.joined_text()
            );
            let roots = client.call_tool("get-roots-list", json!({})).await.unwrap();
            assert!(
                roots.joined_text().contains("file:///interop/root"),
                "{}",
                roots.joined_text()
            );
        })
        .await;
    }
}
