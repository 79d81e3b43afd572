//! `completion/complete`: suggestions for one argument of a prompt or of a
//! resource template.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// What is being completed: a prompt's argument, or a resource template's
/// variable.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
#[non_exhaustive]
pub enum CompletionRef {
    /// `{"type": "ref/prompt", "name": …}`.
    #[serde(rename = "ref/prompt")]
    Prompt {
        /// The prompt's name.
        name: String,
    },
    /// `{"type": "ref/resource", "uri": …}`.
    #[serde(rename = "ref/resource")]
    ResourceTemplate {
        /// The template's URI template, as listed.
        uri: String,
    },
}

impl CompletionRef {
    /// An argument of the prompt `name`.
    pub fn prompt(name: impl Into<String>) -> Self {
        CompletionRef::Prompt { name: name.into() }
    }

    /// A variable of the resource template `uri_template`.
    pub fn resource_template(uri_template: impl Into<String>) -> Self {
        CompletionRef::ResourceTemplate {
            uri: uri_template.into(),
        }
    }
}

/// The argument being completed and what the user typed so far.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionArgument {
    /// The argument's (or template variable's) name.
    pub name: String,
    /// Its value so far.
    pub value: String,
}

impl CompletionArgument {
    /// The argument `name`, typed as far as `value`.
    pub fn new(name: impl Into<String>, value: impl Into<String>) -> Self {
        CompletionArgument {
            name: name.into(),
            value: value.into(),
        }
    }
}

/// Params of `completion/complete`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CompleteParams {
    /// What is being completed.
    #[serde(rename = "ref")]
    pub(crate) reference: CompletionRef,
    /// The argument and its value so far.
    pub(crate) argument: CompletionArgument,
    /// The other arguments already given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) context: Option<CompletionContext>,
}

/// Params of `completion/complete`: the arguments already given.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompletionContext {
    /// Arguments already resolved, by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub arguments: BTreeMap<String, String>,
}

impl CompletionContext {
    /// A context of these arguments.
    pub fn new<I, K, V>(arguments: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        CompletionContext {
            arguments: arguments
                .into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        }
    }
}

/// The suggestions of a `completion/complete`.
///
/// Read from the server, it holds at most [`MAX_COMPLETION_VALUES`]
/// values: the protocol allows no more, and a server that sends more has
/// the rest skipped while the reply is read (never kept in memory), with
/// `has_more` set to `Some(true)`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", from = "WireCompletion")]
pub struct Completion {
    /// The suggestions, best first (at most 100, says the protocol).
    #[serde(default)]
    pub values: Vec<String>,
    /// How many suggestions there are in all, when the server knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more than `values` holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub has_more: Option<bool>,
}

/// The most completion values the protocol allows, and the most the
/// client keeps of a reply.
pub const MAX_COMPLETION_VALUES: usize = 100;

/// A completion as sent, its values cut to [`MAX_COMPLETION_VALUES`].
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireCompletion {
    #[serde(default)]
    values: FirstValues,
    #[serde(default)]
    total: Option<u64>,
    #[serde(default)]
    has_more: Option<bool>,
}

impl From<WireCompletion> for Completion {
    fn from(wire: WireCompletion) -> Self {
        let WireCompletion {
            values,
            total,
            has_more,
        } = wire;
        Completion {
            has_more: if values.cut { Some(true) } else { has_more },
            values: values.kept,
            total,
        }
    }
}

/// The first [`MAX_COMPLETION_VALUES`] strings of an array; the rest are
/// read past without being kept.
#[derive(Default)]
struct FirstValues {
    kept: Vec<String>,
    cut: bool,
}

impl<'de> Deserialize<'de> for FirstValues {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = FirstValues;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an array of strings")
            }
            fn visit_seq<A: serde::de::SeqAccess<'de>>(
                self,
                mut seq: A,
            ) -> Result<FirstValues, A::Error> {
                let mut first = FirstValues::default();
                while first.kept.len() < MAX_COMPLETION_VALUES {
                    match seq.next_element::<String>()? {
                        Some(v) => first.kept.push(v),
                        None => return Ok(first),
                    }
                }
                while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
                    first.cut = true;
                }
                Ok(first)
            }
        }
        d.deserialize_seq(Visit)
    }
}

impl Completion {
    /// These suggestions, all there are.
    pub fn new<I: IntoIterator<Item = S>, S: Into<String>>(values: I) -> Self {
        Completion {
            values: values.into_iter().map(Into::into).collect(),
            total: None,
            has_more: None,
        }
    }
}

/// The result of `completion/complete`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct CompleteResult {
    /// The suggestions.
    pub(crate) completion: Completion,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub(crate) meta: Option<Map<String, Value>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_request_and_result_shapes() {
        let params = CompleteParams {
            reference: CompletionRef::resource_template("file:///{path}"),
            argument: CompletionArgument::new("path", "src/"),
            context: Some(CompletionContext::new([("repo", "mcp")])),
        };
        assert_eq!(
            serde_json::to_value(&params).unwrap(),
            json!({
                "ref": {"type": "ref/resource", "uri": "file:///{path}"},
                "argument": {"name": "path", "value": "src/"},
                "context": {"arguments": {"repo": "mcp"}}
            })
        );
        let r: CompleteResult = serde_json::from_value(json!({
            "completion": {"values": ["src/lib.rs"], "total": 9, "hasMore": true}
        }))
        .unwrap();
        assert_eq!(r.completion.values, ["src/lib.rs"]);
        assert_eq!(
            (r.completion.total, r.completion.has_more),
            (Some(9), Some(true))
        );
        let prompt = serde_json::to_value(CompletionRef::prompt("review")).unwrap();
        assert_eq!(prompt, json!({"type": "ref/prompt", "name": "review"}));
    }
}
