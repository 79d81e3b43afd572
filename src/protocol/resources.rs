//! `resources/list`, `resources/templates/list`, `resources/read`, the
//! initialize era's `resources/subscribe` and `resources/unsubscribe`, and
//! `notifications/resources/updated`.
//!
//! Contents are read tolerantly: an entry with both `text` and `blob`, with
//! neither, or with a `blob` that is not base64 never fails the result it
//! came in (a `resources/read`, or a tool result embedding it), so one odd
//! entry does not lose the others. [`ResourceContents::body`] is where such
//! an entry becomes a clear [`DecodeError`].

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::DecodeError;
use super::base64;

/// A resource the server offers (an entry of `resources/list`).
///
/// Build one with [`Resource::new`] and set the public fields; the struct
/// is `non_exhaustive` so that fields can be added.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Resource {
    /// Its URI, which [`Client::read_resource`](crate::Client::read_resource) takes.
    pub uri: String,
    /// Its name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its size in bytes, when the server knows it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<u64>,
    /// Icons, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Audience, priority and modification hints, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Resource metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl Resource {
    /// A resource with a URI and a name.
    pub fn new(uri: impl Into<String>, name: impl Into<String>) -> Self {
        Resource {
            uri: uri.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            size: None,
            icons: None,
            annotations: None,
            meta: None,
        }
    }
}

/// A family of resources named by an RFC 6570 URI template (an entry of
/// `resources/templates/list`).
///
/// Build one with [`ResourceTemplate::new`] and set the public fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ResourceTemplate {
    /// The URI template, as sent (never expanded by the client).
    pub uri_template: String,
    /// Its name.
    pub name: String,
    /// Display title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What its resources hold.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The MIME type of every resource it names, when they share one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Icons, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub icons: Option<Vec<Value>>,
    /// Audience, priority and modification hints, as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Value>,
    /// Template metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

impl ResourceTemplate {
    /// A template with a URI template and a name.
    pub fn new(uri_template: impl Into<String>, name: impl Into<String>) -> Self {
        ResourceTemplate {
            uri_template: uri_template.into(),
            name: name.into(),
            title: None,
            description: None,
            mime_type: None,
            icons: None,
            annotations: None,
            meta: None,
        }
    }
}

/// The contents of a resource: one entry of a `resources/read` result, or
/// the resource embedded in a [`ContentBlock::Resource`](super::ContentBlock::Resource).
///
/// On the wire it holds `text` or a base64 `blob`. Both are kept as sent,
/// so an entry that breaks that rule is still readable field by field;
/// [`ResourceContents::body`] reads it as one or the other, and says what
/// is wrong otherwise.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ResourceContents {
    /// The resource's URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Text contents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub text: Option<String>,
    /// Binary contents, base64 as sent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub blob: Option<String>,
    /// Contents metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// What a [`ResourceContents`] holds, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ResourceBody<'a> {
    /// Text.
    Text(&'a str),
    /// Bytes, decoded from the base64 `blob`.
    Blob(Vec<u8>),
}

impl ResourceContents {
    /// Text contents.
    pub fn text(uri: impl Into<String>, text: impl Into<String>) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: None,
            text: Some(text.into()),
            blob: None,
            meta: None,
        }
    }

    /// Binary contents, base64-encoded here.
    pub fn blob(uri: impl Into<String>, bytes: &[u8]) -> Self {
        ResourceContents {
            uri: uri.into(),
            mime_type: None,
            text: None,
            blob: Some(base64::encode(bytes)),
            meta: None,
        }
    }

    /// Sets the MIME type.
    pub fn with_mime_type(mut self, mime_type: impl Into<String>) -> Self {
        self.mime_type = Some(mime_type.into());
        self
    }

    /// The contents as text or bytes.
    ///
    /// # Errors
    ///
    /// A [`DecodeError`] naming the resource when the entry has both
    /// `text` and `blob`, neither, or a `blob` that is not standard base64
    /// (padding required, no whitespace).
    pub fn body(&self) -> Result<ResourceBody<'_>, DecodeError> {
        match (&self.text, &self.blob) {
            (Some(text), None) => Ok(ResourceBody::Text(text)),
            (None, Some(blob)) => base64::decode(blob).map(ResourceBody::Blob).ok_or_else(|| {
                DecodeError::invalid(format!("the blob of resource {:?} is not base64", self.uri))
            }),
            (Some(_), Some(_)) => Err(DecodeError::invalid(format!(
                "resource {:?} has both text and blob",
                self.uri
            ))),
            (None, None) => Err(DecodeError::invalid(format!(
                "resource {:?} has neither text nor blob",
                self.uri
            ))),
        }
    }
}

/// Params of `resources/list`, `resources/templates/list` and `prompts/list`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ListParams {
    /// Where the previous page ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cursor: Option<String>,
}

/// One page of `resources/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListResourcesResult {
    /// The resources on this page.
    #[serde(default)]
    pub(crate) resources: Vec<Resource>,
    /// Cursor of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

/// One page of `resources/templates/list`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ListResourceTemplatesResult {
    /// The templates on this page.
    #[serde(default)]
    pub(crate) resource_templates: Vec<ResourceTemplate>,
    /// Cursor of the next page; absent on the last page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) next_cursor: Option<String>,
}

/// Params of `resources/read`, `resources/subscribe` and
/// `resources/unsubscribe`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct ResourceParams {
    /// The resource's URI.
    pub(crate) uri: String,
}

/// The result of `resources/read`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReadResourceResult {
    /// The contents: one entry, or several for a resource that holds others.
    #[serde(default)]
    pub contents: Vec<ResourceContents>,
    /// Result metadata.
    #[serde(rename = "_meta", default, skip_serializing_if = "Option::is_none")]
    pub meta: Option<Map<String, Value>>,
}

/// Params of `notifications/resources/updated`: a resource the client
/// subscribed to changed (read it again to see how).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct ResourceUpdated {
    /// The resource's URI (possibly a sub-resource of the one subscribed to).
    pub uri: String,
}

impl ResourceUpdated {
    /// An update of `uri`.
    pub fn new(uri: impl Into<String>) -> Self {
        ResourceUpdated { uri: uri.into() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn contents(v: Value) -> ResourceContents {
        serde_json::from_value(v).expect("contents are read tolerantly")
    }

    #[test]
    fn text_and_blob_bodies() {
        let text = contents(json!({"uri": "file:///a", "mimeType": "text/plain", "text": "hi"}));
        assert_eq!(text.body().unwrap(), ResourceBody::Text("hi"));
        let blob = contents(json!({"uri": "file:///b", "blob": "AAEC/w==", "_meta": {"k": 1}}));
        assert_eq!(blob.body().unwrap(), ResourceBody::Blob(vec![0, 1, 2, 255]));
        assert_eq!(blob.meta.unwrap()["k"], json!(1));
        let made = ResourceContents::blob("file:///c", b"bytes").with_mime_type("x/y");
        assert_eq!(made.body().unwrap(), ResourceBody::Blob(b"bytes".to_vec()));
    }

    #[test]
    fn odd_entries_decode_and_say_what_is_wrong() {
        let both = contents(json!({"uri": "u", "text": "a", "blob": "AA=="}));
        assert!(
            both.body()
                .unwrap_err()
                .to_string()
                .contains("both text and blob")
        );
        let neither = contents(json!({"uri": "u"}));
        assert!(neither.body().unwrap_err().to_string().contains("neither"));
        let bad = contents(json!({"uri": "u", "blob": "not base64!"}));
        assert!(bad.body().unwrap_err().to_string().contains("not base64"));
    }
}
