//! `server/discover`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::{Implementation, META_SERVER_INFO, TASKS_EXTENSION};

/// What a server can do, from its `server/discover` result.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ServerCapabilities {
    /// Non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// Logging (deprecated).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logging: Option<Value>,
    /// Argument completion.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completions: Option<Value>,
    /// Prompts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompts: Option<Value>,
    /// Resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<Value>,
    /// Tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Value>,
    /// Extensions, by identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<BTreeMap<String, Value>>,
    /// The 2025-11-25 experimental tasks (`{list?, cancel?, requests:
    /// {tools: {call}}}`), from an initialize-era server's handshake.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tasks: Option<Value>,
}

impl ServerCapabilities {
    /// Whether the server advertises the extension `id`.
    ///
    /// Presence of the key counts as support; unknown settings are ignored.
    pub fn supports_extension(&self, id: &str) -> bool {
        self.extensions.as_ref().is_some_and(|e| e.contains_key(id))
    }

    /// Whether the server runs tool calls as tasks: it advertises the
    /// 2026-07-28 Tasks extension, or (an initialize-era server) declares
    /// the 2025-11-25 `tasks.requests.tools.call`.
    pub fn supports_tasks(&self) -> bool {
        self.supports_extension(TASKS_EXTENSION) || self.declares_task_calls()
    }

    /// Whether an initialize-era server declares task-augmented
    /// `tools/call` (`tasks.requests.tools.call`, 2025-11-25).
    pub fn declares_task_calls(&self) -> bool {
        super::declares_task_calls(self.tasks.as_ref())
    }
}

/// The result of `server/discover`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DiscoverResult {
    /// Protocol versions the server speaks.
    #[serde(default)]
    pub supported_versions: Vec<String>,
    /// What the server can do.
    #[serde(default)]
    pub capabilities: ServerCapabilities,
    /// Hints for the model.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// How long the result may be cached, in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_ms: Option<u64>,
    /// `public` or `private` caching scope.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
    /// Result metadata (carries `serverInfo`).
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl DiscoverResult {
    /// The server's name and version, when it sent them.
    pub fn server_info(&self) -> Option<Implementation> {
        let info = self.meta.as_ref()?.get(META_SERVER_INFO)?;
        serde_json::from_value(info.clone()).ok()
    }
}
