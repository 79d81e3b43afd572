//! Interop tests: the `mcp-tasks` client against servers built on other SDKs.
//!
//! Test names read `<peer>::<transport>::<scenario>`; `interop/table.sh`
//! turns a run into the table in `interop/README.md`. Each scenario is an
//! `async fn(&Peer)` that runs over any transport; the `scenarios!` lists in
//! each peer's module instantiate them per transport.

/// One test per scenario, against `$sdk` over `$transport`, bounded in time.
macro_rules! scenarios {
    ($sdk:expr, $transport:expr; $($module:ident :: $name:ident),* $(,)?) => {
        $(
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $name() {
                let peer = $crate::support::Peer::start($sdk, $transport).await;
                $crate::support::bounded($crate::$module::$name(&peer)).await;
            }
        )*
    };
}

mod cli;
mod everything;
mod legacy;
mod lifecycle;
mod neva;
mod rmcp;
mod rmcp_http_peer;
mod support;
mod ts;
