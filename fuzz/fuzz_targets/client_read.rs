//! The client's whole read path: bytes from a server, split into lines
//! under a size limit, decoded, and dispatched to two requests in flight
//! (a `tools/call` with id 1 and a `tasks/get` with id 2).
//!
//! Properties: nothing panics (a panic in the client's background reader
//! aborts the process too), both requests end once the input does, and the
//! pending-request table is empty afterwards.
#![no_main]

use std::io::Cursor;
use std::time::Duration;

use libfuzzer_sys::fuzz_target;
use mcp_tasks::Client;
use mcp_tasks::protocol::TaskId;
use mcp_tasks::transport::LineTransport;

fuzz_target!(|data: &[u8]| {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("a runtime");
    rt.block_on(async {
        let transport = LineTransport::new(Cursor::new(data.to_vec()), tokio::io::sink())
            .max_message_size(4096);
        // Pinned: no connect probe, so the requests in flight are ids 1 and 2.
        let client = Client::builder()
            .request_timeout(Duration::from_secs(3600))
            .protocol_version("2026-07-28")
            .connect(transport)
            .await
            .expect("a line transport always opens");
        let task = TaskId::new("fuzz-task");
        let call = client.task().call_tool("fuzz", serde_json::json!({}));
        let read = client.get_task(&task);
        let (call, read) = tokio::join!(call, read);
        drop((call, read));
        assert_eq!(client.stats().pending_requests, 0);
    });
});
