//! The client against a Tasks server on the TypeScript SDK v2 (npm
//! `@modelcontextprotocol/server`), to catch envelope quirks: its creation
//! result carries an extra `content: []`, a stored result carries its own
//! `resultType`, and `_meta.serverInfo` rides on every result.

use crate::support::*;

pub async fn discover(peer: &Peer) {
    let client = peer.client().await;
    assert!(client.supports_tasks().await.expect("server/discover"));
    assert_eq!(client.server_id(), Some("ts-peer"));
    assert_eq!(
        tool_names(&client).await,
        ["confirm", "fail", "forever", "progress", "tool_error"]
    );
}

/// `-32021` without the extension, on `tools/call` and `tasks/get`.
pub async fn extension_not_declared(peer: &Peer) {
    let client = peer.client().await;
    refused_without_extension(&client, "progress").await;
}

/// Every scenario that applies to the TypeScript peer, over one transport.
macro_rules! ts_scenarios {
    ($transport:expr) => {
        scenarios!(crate::support::Sdk::Ts, $transport;
            ts::discover,
            lifecycle::progress,
            lifecycle::progress_updates,
            lifecycle::task_failed,
            lifecycle::tool_error,
            lifecycle::input_by_handler,
            lifecycle::input_declined,
            lifecycle::input_by_respond,
            lifecycle::cancel,
            lifecycle::cancel_then_read,
            lifecycle::client_ttl,
            lifecycle::unknown_id,
            ts::extension_not_declared,
            lifecycle::listen_falls_back,
            lifecycle::resume,
            lifecycle::concurrent,
        );
    };
}

mod stdio {
    ts_scenarios!(crate::support::Transport::Stdio);
}

/// The SDK's own HTTP handler (`createMcpHandler`) behind `node:http`; it
/// picks JSON or SSE per reply.
mod http {
    ts_scenarios!(crate::support::Transport::Http { json: false });
}
