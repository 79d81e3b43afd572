//! Per-request `_meta`: protocol version, client capabilities, client info.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The newest protocol revision this crate speaks, the one it offers first.
pub const PROTOCOL_VERSION: &str = super::versions::NEWEST;
/// The identifier of the Tasks extension.
pub const TASKS_EXTENSION: &str = "io.modelcontextprotocol/tasks";
/// `_meta` key: the protocol version of this request.
pub const META_PROTOCOL_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
/// `_meta` key: the client's capabilities for this request.
pub const META_CLIENT_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";
/// `_meta` key: the client's name and version.
pub const META_CLIENT_INFO: &str = "io.modelcontextprotocol/clientInfo";
/// `_meta` key on results: the server's name and version.
pub const META_SERVER_INFO: &str = "io.modelcontextprotocol/serverInfo";
/// `_meta` key on listen-stream messages: the id of the `subscriptions/listen` request.
pub const META_SUBSCRIPTION_ID: &str = "io.modelcontextprotocol/subscriptionId";

/// The name and version of a client or server implementation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Implementation {
    /// Programmatic name.
    pub name: String,
    /// Version string.
    pub version: String,
    /// Human-readable name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// One-line description.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Home page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub website_url: Option<String>,
}

impl Implementation {
    /// An implementation with a name and a version.
    pub fn new(name: impl Into<String>, version: impl Into<String>) -> Self {
        Implementation {
            name: name.into(),
            version: version.into(),
            title: None,
            description: None,
            website_url: None,
        }
    }
}

/// Which elicitation modes the client can answer.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ElicitationCapability {
    /// Form mode (structured input against a schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub form: Option<Map<String, Value>>,
    /// URL mode (the user is sent to a web page).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<Map<String, Value>>,
}

impl ElicitationCapability {
    /// Whether form mode is supported (`{}` alone means form only).
    pub fn supports_form(&self) -> bool {
        self.form.is_some() || self.url.is_none()
    }

    /// Whether URL mode is supported.
    pub fn supports_url(&self) -> bool {
        self.url.is_some()
    }
}

/// The client's sampling capability.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SamplingCapability {
    /// Legacy `includeContext` support.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Map<String, Value>>,
    /// Tool-enabled sampling.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tools: Option<Map<String, Value>>,
}

/// What the client can do, sent in `_meta` on every request.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ClientCapabilities {
    /// Non-standard capabilities.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub experimental: Option<Map<String, Value>>,
    /// The client answers `roots/list` input requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub roots: Option<Map<String, Value>>,
    /// The client answers `sampling/createMessage` input requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sampling: Option<SamplingCapability>,
    /// The client answers `elicitation/create` input requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation: Option<ElicitationCapability>,
    /// Extensions the client opts into for this request, by identifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<BTreeMap<String, Value>>,
}

impl ClientCapabilities {
    /// Returns these capabilities with the Tasks extension declared.
    pub fn with_tasks(mut self) -> Self {
        self.extensions
            .get_or_insert_with(BTreeMap::new)
            .entry(TASKS_EXTENSION.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        self
    }

    /// Whether the Tasks extension is declared.
    pub fn declares_tasks(&self) -> bool {
        self.extensions
            .as_ref()
            .is_some_and(|e| e.contains_key(TASKS_EXTENSION))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_tasks_keeps_other_extensions() {
        let caps = ClientCapabilities {
            extensions: Some(BTreeMap::from([(
                "x/y".to_owned(),
                serde_json::json!({"a":1}),
            )])),
            ..ClientCapabilities::default()
        };
        let caps = caps.with_tasks().with_tasks();
        let ext = caps.extensions.as_ref().unwrap();
        assert_eq!(ext.len(), 2);
        assert!(caps.declares_tasks());
    }

    #[test]
    fn empty_elicitation_means_form_only() {
        let e = ElicitationCapability::default();
        assert!(e.supports_form() && !e.supports_url());
        let e = ElicitationCapability {
            form: None,
            url: Some(Map::new()),
        };
        assert!(!e.supports_form() && e.supports_url());
    }
}
