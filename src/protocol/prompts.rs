//! `prompts/list` and `prompts/get`.
//!
//! A prompt's messages carry the same [`ContentBlock`]s tool results do. A
//! message's `role` is kept whatever it says: `user` and `assistant` are
//! [`Role::User`] and [`Role::Assistant`], anything else is
//! [`Role::Other`], as sent, so that a server a revision ahead never fails
//! the whole prompt.

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::{Map, Value};

use super::ContentBlock;

/// A prompt the server offers (an entry of `prompts/list`).
///
/// Build one with [`Prompt::new`] and set the public fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Prompt {
    /// The name to get it by.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Vec<PromptArgument>>,
    /// Icons, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Prompt metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl Prompt {
    /// A prompt with a name and no arguments.
    pub fn new(name: impl Into<String>) -> Self {
        Prompt {
            name: name.into(),
            title: None,
            description: None,
            arguments: None,
            icons: None,
            meta: None,
        }
    }

    /// Adds an argument.
    pub fn argument(mut self, argument: PromptArgument) -> Self {
        self.arguments.get_or_insert_with(Vec::new).push(argument);
        self
    }
}

/// One argument of a [`Prompt`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct PromptArgument {
    /// Its name, a key of [`Client::get_prompt`](crate::Client::get_prompt)'s arguments.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Whether the prompt needs it (absent: no).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
}

impl PromptArgument {
    /// An argument called `name`, required or not.
    pub fn new(name: impl Into<String>, required: bool) -> Self {
        PromptArgument {
            name: name.into(),
            title: None,
            description: None,
            required: Some(required),
        }
    }
}

/// One page of `prompts/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListPromptsResult {
    /// The prompts on this page.
    #[serde(default)]
    pub(crate) prompts: Vec<Prompt>,
    /// Cursor of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

/// Params of `prompts/get`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct GetPromptParams {
    /// The prompt's name.
    pub(crate) name: String,
    /// Its arguments, by name (strings only, as the protocol has it).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) arguments: BTreeMap<String, String>,
}

/// The result of `prompts/get`: the prompt, rendered.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct GetPromptResult {
    /// What the prompt is for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The messages, in order.
    #[serde(default)]
    pub messages: Vec<PromptMessage>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl GetPromptResult {
    /// A result with these messages.
    pub fn new(messages: impl IntoIterator<Item = PromptMessage>) -> Self {
        GetPromptResult {
            description: None,
            messages: messages.into_iter().collect(),
            meta: None,
        }
    }
}

/// One message of a rendered prompt.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PromptMessage {
    /// Who speaks it.
    pub role: Role,
    /// What it says: the content blocks tool results use.
    pub content: ContentBlock,
}

impl PromptMessage {
    /// A message of `role` with one text block.
    pub fn text(role: Role, text: impl Into<String>) -> Self {
        PromptMessage {
            role,
            content: ContentBlock::text(text),
        }
    }
}

/// Who speaks a [`PromptMessage`].
///
/// On the wire it is a string; any value but the two known ones reads as
/// [`Role::Other`], kept as sent.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Role {
    /// `"user"`.
    User,
    /// `"assistant"`.
    Assistant,
    /// A role this crate does not know.
    Other(String),
}

impl Role {
    /// The wire string.
    pub fn as_str(&self) -> &str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Other(s) => s,
        }
    }
}

impl From<&str> for Role {
    fn from(s: &str) -> Self {
        match s {
            "user" => Role::User,
            "assistant" => Role::Assistant,
            other => Role::Other(other.to_owned()),
        }
    }
}

impl Serialize for Role {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for Role {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(Role::from(String::deserialize(d)?.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn messages_share_the_tool_content_blocks_and_keep_odd_roles() {
        let result: GetPromptResult = serde_json::from_value(json!({
            "description": "review",
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "Review this",
                    "annotations": {"audience": ["user"], "priority": 0.5}}},
                {"role": "assistant", "content": {"type": "image", "data": "AA==", "mimeType": "image/png"}},
                {"role": "user", "content": {"type": "resource_link", "uri": "file:///a", "name": "a"}},
                {"role": "user", "content": {"type": "resource",
                    "resource": {"uri": "file:///b", "text": "b"}}},
                {"role": "user", "content": {"type": "audio", "data": "AA==", "mimeType": "audio/wav"}},
                {"role": "system", "content": {"type": "hologram", "depth": 3}}
            ]
        }))
        .unwrap();
        let m = &result.messages;
        assert!(
            matches!(&m[0].content, ContentBlock::Text { annotations: Some(a), .. } if a["priority"] == 0.5)
        );
        assert!(matches!(&m[1].content, ContentBlock::Image { .. }));
        assert!(matches!(&m[2].content, ContentBlock::ResourceLink { .. }));
        assert!(matches!(&m[3].content, ContentBlock::Resource { .. }));
        assert!(matches!(&m[4].content, ContentBlock::Audio { .. }));
        assert_eq!(m[5].role, Role::Other("system".into()));
        assert!(matches!(&m[5].content, ContentBlock::Unknown(v) if v["depth"] == 3));
        // Kept as sent, so it goes back out the same.
        let again = serde_json::to_value(&m[5]).unwrap();
        assert_eq!(
            again,
            json!({"role": "system", "content": {"type": "hologram", "depth": 3}})
        );
    }

    #[test]
    fn arguments_are_strings_and_left_out_when_empty() {
        let params = GetPromptParams {
            name: "p".into(),
            arguments: BTreeMap::new(),
        };
        assert_eq!(serde_json::to_value(&params).unwrap(), json!({"name": "p"}));
    }
}
