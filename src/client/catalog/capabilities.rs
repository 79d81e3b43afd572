//! What the server advertised, checked before a request that needs it, so
//! that asking for what is not there fails at once, without a round trip.
//!
//! The capabilities come from the era's own source: the `initialize`
//! result on an initialize-era session, `server/discover` on 2026-07-28
//! (the probe `connect` made, or one sent on first need and cached).

use crate::client::Client;
use crate::error::{Error, Kind, Result};
use crate::protocol::ServerCapabilities;

/// A server capability a request needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Needs {
    /// `resources`.
    Resources,
    /// `resources.subscribe: true`.
    ResourceSubscriptions,
    /// `prompts`.
    Prompts,
    /// `completions`.
    Completions,
}

impl Needs {
    /// Whether `caps` advertise it.
    fn met_by(self, caps: &ServerCapabilities) -> bool {
        match self {
            Needs::Resources => caps.resources.is_some(),
            Needs::ResourceSubscriptions => caps
                .resources
                .as_ref()
                .and_then(|r| r.get("subscribe"))
                .and_then(serde_json::Value::as_bool)
                .unwrap_or(false),
            Needs::Prompts => caps.prompts.is_some(),
            Needs::Completions => caps.completions.is_some(),
        }
    }

    /// What the error says is missing.
    fn describe(self) -> &'static str {
        match self {
            Needs::Resources => "resources (no `resources` capability)",
            Needs::ResourceSubscriptions => {
                "resource subscriptions (no `resources.subscribe` capability)"
            }
            Needs::Prompts => "prompts (no `prompts` capability)",
            Needs::Completions => "completions (no `completions` capability)",
        }
    }
}

impl Client {
    /// Fails with [`Error::is_missing_capability`] unless the server
    /// advertised `needs`; `method` is the request that was not sent.
    pub(crate) async fn require(&self, needs: Needs, method: &'static str) -> Result<()> {
        let caps = &self.discover().await?.capabilities;
        if needs.met_by(caps) {
            return Ok(());
        }
        Err(Error::new(Kind::NotAdvertised(needs.describe().to_owned())).with_method(method))
    }
}
