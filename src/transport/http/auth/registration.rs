//! The client's identity at an authorization server, in the order the
//! specification prefers: credentials registered beforehand, a client ID
//! metadata document URL, then dynamic client registration (RFC 7591).

use serde::Deserialize;
use serde_json::json;

use super::OAuth;
use super::discovery::ServerMetadata;
use super::error::{AuthError, registration};
use super::fetch;
use super::secret::Secret;
use super::store::{Credentials, Registration};

/// The three ways a client authenticates at the token endpoint.
pub(super) const BASIC: &str = "client_secret_basic";
pub(super) const POST: &str = "client_secret_post";
pub(super) const NONE: &str = "none";

/// The client to use at `server`: the one configured, the one already
/// registered there (kept in `previous`), the metadata document URL, or a
/// new registration.
pub(super) async fn client_for(
    config: &OAuth,
    http: &reqwest::Client,
    server: &ServerMetadata,
    previous: Option<&Credentials>,
) -> Result<Registration, AuthError> {
    if let Some(id) = &config.client_id
        && config
            .client_issuer
            .as_ref()
            .is_none_or(|issuer| *issuer == server.issuer)
    {
        return Ok(Registration {
            client_id: id.clone(),
            client_secret: config.client_secret.clone(),
            auth_method: preregistered_method(config, server)?,
            registered: false,
        });
    }
    if let Some(kept) = previous.filter(|p| p.issuer == server.issuer) {
        return Ok(kept.client.clone());
    }
    if let Some(url) = &config.client_metadata_url
        && server.client_id_metadata_document_supported == Some(true)
    {
        return Ok(Registration {
            client_id: url.clone(),
            client_secret: None,
            auth_method: NONE.to_owned(),
            registered: false,
        });
    }
    match &server.registration_endpoint {
        Some(endpoint) => register(config, http, server, endpoint).await,
        None => Err(registration(
            "the authorization server offers neither dynamic registration nor client ID \
             metadata documents, and no client id is configured for it (OAuth::builder().client_id)",
        )),
    }
}

/// How a configured client authenticates: `none` without a secret, else
/// as the server's metadata offers (Basic when both are offered, as RFC 6749 prefers).
fn preregistered_method(config: &OAuth, server: &ServerMetadata) -> Result<String, AuthError> {
    if config.client_secret.is_none() {
        return Ok(NONE.to_owned());
    }
    [BASIC, POST]
        .into_iter()
        .find(|m| server.offers_auth_method(m))
        .map(str::to_owned)
        .ok_or_else(|| {
            registration(
                "the client has a secret, but the authorization server offers neither \
                 client_secret_basic nor client_secret_post",
            )
        })
}

/// What a registration reply holds (RFC 7591 §3.2.1), the fields used.
#[derive(Deserialize)]
struct Registered {
    client_id: String,
    #[serde(default)]
    client_secret: Option<Secret>,
    #[serde(default)]
    token_endpoint_auth_method: Option<String>,
}

/// An error reply (RFC 7591 §3.2.2).
#[derive(Deserialize)]
struct Refused {
    error: String,
    #[serde(default)]
    error_description: Option<String>,
}

/// Registers a new client (RFC 7591): a native application, with the
/// authorization code and refresh grants, authenticating as the server's
/// metadata suggests (`none` when offered: the client keeps no secret it
/// did not get).
async fn register(
    config: &OAuth,
    http: &reqwest::Client,
    server: &ServerMetadata,
    endpoint: &str,
) -> Result<Registration, AuthError> {
    let method = [NONE, BASIC, POST]
        .into_iter()
        .find(|m| server.offers_auth_method(m))
        .unwrap_or(NONE);
    let body = json!({
        "client_name": config.client_name,
        "redirect_uris": [config.authorizer.redirect_uri()],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": method,
        "application_type": "native",
    });
    let (status, reply) = fetch::post_json(http, endpoint, &body)
        .await
        .map_err(|why| registration(format!("the registration request failed: {why}")))?;
    if !status.is_success() {
        let detail = serde_json::from_slice::<Refused>(&reply)
            .map(|r| match r.error_description {
                Some(d) => format!(": {} ({d})", r.error),
                None => format!(": {}", r.error),
            })
            .unwrap_or_default();
        return Err(registration(format!(
            "the authorization server refused the registration with HTTP {status}{detail}"
        )));
    }
    let registered: Registered = serde_json::from_slice(&reply)
        .map_err(|e| registration(format!("the registration reply is not a client: {e}")))?;
    let auth_method =
        registered
            .token_endpoint_auth_method
            .unwrap_or_else(|| match &registered.client_secret {
                Some(_) if method == NONE => BASIC.to_owned(),
                _ => method.to_owned(),
            });
    tracing::debug!(%auth_method, "registered a client with the authorization server");
    Ok(Registration {
        client_id: registered.client_id,
        client_secret: registered.client_secret,
        auth_method,
        registered: true,
    })
}
