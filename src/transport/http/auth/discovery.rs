//! Discovery: from the MCP endpoint (and its `401`'s challenge) to the
//! protected resource metadata (RFC 9728), and from there to the
//! authorization server's metadata (RFC 8414, then OpenID Connect
//! discovery), each checked against what it claims to describe.

use serde::Deserialize;
use url::Url;

use super::challenge::Challenge;
use super::error::{AuthError, discovery};
use super::fetch::{self, Missing};

/// The protected resource metadata (RFC 9728 §2), the fields used.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct ResourceMetadata {
    pub(super) resource: String,
    #[serde(default)]
    pub(super) authorization_servers: Vec<String>,
    #[serde(default)]
    pub(super) scopes_supported: Option<Vec<String>>,
}

/// The authorization server metadata (RFC 8414 §2), the fields used.
#[derive(Debug, Clone, Deserialize)]
pub(super) struct ServerMetadata {
    pub(super) issuer: String,
    pub(super) authorization_endpoint: String,
    pub(super) token_endpoint: String,
    #[serde(default)]
    pub(super) registration_endpoint: Option<String>,
    #[serde(default)]
    pub(super) scopes_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(super) code_challenge_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(super) token_endpoint_auth_methods_supported: Option<Vec<String>>,
    #[serde(default)]
    pub(super) authorization_response_iss_parameter_supported: Option<bool>,
    #[serde(default)]
    pub(super) client_id_metadata_document_supported: Option<bool>,
}

impl ServerMetadata {
    /// Whether the server lists `method` for its token endpoint; a server
    /// that lists none offers `client_secret_basic` (RFC 8414 §2).
    pub(super) fn offers_auth_method(&self, method: &str) -> bool {
        match &self.token_endpoint_auth_methods_supported {
            Some(methods) => methods.iter().any(|m| m == method),
            None => method == "client_secret_basic",
        }
    }

    /// Whether the server lists `scope` among its scopes.
    pub(super) fn offers_scope(&self, scope: &str) -> bool {
        self.scopes_supported
            .as_ref()
            .is_some_and(|s| s.iter().any(|have| have == scope))
    }
}

/// What discovery found, checked.
#[derive(Debug, Clone)]
pub(super) struct Discovered {
    pub(super) resource: ResourceMetadata,
    pub(super) server: ServerMetadata,
}

/// Runs discovery for the MCP endpoint `endpoint`.
pub(super) async fn discover(
    http: &reqwest::Client,
    endpoint: &Url,
    challenge: &Challenge,
    version: &str,
) -> Result<Discovered, AuthError> {
    let resource = resource_metadata(http, endpoint, challenge, version).await?;
    check_resource(&resource.resource, endpoint)?;
    let Some(issuer) = resource.authorization_servers.first().cloned() else {
        return Err(discovery(
            "the protected resource metadata names no authorization server",
        ));
    };
    let server = server_metadata(http, &issuer, version).await?;
    tracing::debug!(issuer = %server.issuer, "found the authorization server");
    Ok(Discovered { resource, server })
}

/// The protected resource metadata: at the challenge's `resource_metadata`
/// when it gives one, else at the well-known URIs, path-inserted first,
/// then at the root.
async fn resource_metadata(
    http: &reqwest::Client,
    endpoint: &Url,
    challenge: &Challenge,
    version: &str,
) -> Result<ResourceMetadata, AuthError> {
    let mut candidates = Vec::new();
    if let Some(url) = challenge
        .resource_metadata
        .as_deref()
        .and_then(|u| Url::parse(u).ok())
        .filter(|u| matches!(u.scheme(), "http" | "https"))
    {
        candidates.push(url.to_string());
    }
    let origin = endpoint.origin().ascii_serialization();
    let path = endpoint.path().trim_end_matches('/');
    if !path.is_empty() {
        candidates.push(format!(
            "{origin}/.well-known/oauth-protected-resource{path}"
        ));
    }
    candidates.push(format!("{origin}/.well-known/oauth-protected-resource"));
    first_document(http, &candidates, version, "protected resource metadata").await
}

/// The authorization server's metadata, from the well-known URIs for its
/// issuer identifier (RFC 8414 §3.1, OpenID Connect Discovery §4), whose
/// `issuer` must be that identifier exactly.
async fn server_metadata(
    http: &reqwest::Client,
    issuer: &str,
    version: &str,
) -> Result<ServerMetadata, AuthError> {
    let url = Url::parse(issuer)
        .ok()
        .filter(|u| matches!(u.scheme(), "http" | "https"))
        .ok_or_else(|| discovery("the authorization server's identifier is not an http(s) URL"))?;
    let origin = url.origin().ascii_serialization();
    let path = url.path().trim_end_matches('/');
    let candidates = if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    };
    let metadata: ServerMetadata =
        first_document(http, &candidates, version, "authorization server metadata").await?;
    if metadata.issuer != issuer {
        return Err(discovery(format!(
            "the authorization server metadata names the issuer {:?}, not {issuer:?}, \
             the server it was fetched for",
            metadata.issuer
        )));
    }
    for (name, value) in [
        ("authorization_endpoint", &metadata.authorization_endpoint),
        ("token_endpoint", &metadata.token_endpoint),
    ] {
        if !Url::parse(value).is_ok_and(|u| matches!(u.scheme(), "http" | "https")) {
            return Err(discovery(format!(
                "the authorization server's {name} is not an http(s) URL"
            )));
        }
    }
    Ok(metadata)
}

/// The first candidate that holds a valid document.
async fn first_document<T: serde::de::DeserializeOwned>(
    http: &reqwest::Client,
    candidates: &[String],
    version: &str,
    what: &str,
) -> Result<T, AuthError> {
    let mut tried = Vec::new();
    for url in candidates {
        match fetch::get_json::<T>(http, url, version).await {
            Ok(document) => return Ok(document),
            Err(Missing::Absent(why)) => {
                tracing::debug!("no {what} there: {why}");
                tried.push(why);
            }
            Err(Missing::Failed(why)) => {
                return Err(discovery(format!(
                    "fetching the {what} at {} failed: {why}",
                    fetch::path_of(url)
                )));
            }
        }
    }
    Err(discovery(format!("no {what} found ({})", tried.join("; "))))
}

/// Checks that the protected resource the metadata describes is this MCP
/// server: the same origin, and a path that is the endpoint's or one of its
/// parents (RFC 9728 §3.3; RFC 8707 §2).
pub(super) fn check_resource(resource: &str, endpoint: &Url) -> Result<(), AuthError> {
    let mismatch = || {
        discovery(format!(
            "the protected resource metadata is for {resource:?}, not for this server ({})",
            fetch::path_of(endpoint.as_str())
        ))
    };
    let parsed = Url::parse(resource).map_err(|_| mismatch())?;
    if parsed.origin() != endpoint.origin() || parsed.fragment().is_some() {
        return Err(mismatch());
    }
    let base = parsed.path().trim_end_matches('/');
    let path = endpoint.path();
    let within = path == base
        || path.trim_end_matches('/') == base
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with('/'));
    if within { Ok(()) } else { Err(mismatch()) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_resource_must_be_this_server_or_a_parent() {
        let endpoint = Url::parse("http://localhost:3000/mcp").unwrap();
        for ok in [
            "http://localhost:3000/mcp",
            "http://localhost:3000",
            "http://localhost:3000/",
            "http://localhost:3000/mcp/",
        ] {
            assert!(check_resource(ok, &endpoint).is_ok(), "{ok}");
        }
        for bad in [
            "https://evil.example.com/mcp",
            "http://localhost:3001/mcp",
            "https://localhost:3000/mcp",
            "http://localhost:3000/mcp2",
            "http://localhost:3000/other",
            "http://localhost:3000/mcp#x",
            "not a url",
        ] {
            let err = check_resource(bad, &endpoint).unwrap_err();
            assert!(err.to_string().contains("discovery"), "{err}");
        }
    }

    #[test]
    fn odd_metadata_is_rejected_by_the_parser_not_by_a_panic() {
        for text in [
            r#"{"issuer": 3}"#,
            r#"{"issuer": "x", "authorization_endpoint": null}"#,
            r#"[]"#,
            r#"{"issuer":"x","authorization_endpoint":"a","token_endpoint":"b","scopes_supported":"a b"}"#,
        ] {
            assert!(
                serde_json::from_str::<ServerMetadata>(text).is_err(),
                "{text}"
            );
        }
        assert!(serde_json::from_str::<ResourceMetadata>(r#"{"resource": []}"#).is_err());
    }
}
