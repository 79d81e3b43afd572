//! The authorization code flow with PKCE S256 and the refresh grant, on
//! `oauth2`: the authorization URL (with `state`, the `resource` indicator
//! and the scopes), the redirect's checks (`state`, RFC 9207's `iss`), and
//! the token requests, authenticated as the client's registration says.

use oauth2::basic::{BasicErrorResponse, BasicTokenResponse};
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, PkceCodeChallenge,
    RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse as _, TokenUrl,
};
use url::Url;

use super::OAuth;
use super::discovery::{Discovered, ServerMetadata};
use super::error::{AuthError, authorization, token};
use super::fetch::{self, HookError};
use super::registration::{NONE, POST};
use super::secret::Secret;
use super::store::{Registration, Tokens, now_secs};

/// Runs the authorization code flow: sends the user (through the
/// configured [`Authorizer`](super::Authorizer)) to the authorization
/// endpoint, checks the redirect, exchanges the code.
pub(super) async fn authorize(
    config: &OAuth,
    http: &reqwest::Client,
    found: &Discovered,
    client: &Registration,
    scopes: &[String],
) -> Result<Tokens, AuthError> {
    let server = &found.server;
    let s256 = server
        .code_challenge_methods_supported
        .as_ref()
        .is_some_and(|methods| methods.iter().any(|m| m == "S256"));
    if !s256 {
        return Err(authorization(
            "the authorization server does not advertise PKCE with S256 \
             (code_challenge_methods_supported), so the flow cannot be protected: refusing it",
        ));
    }
    let redirect = config.authorizer.redirect_uri();
    let auth_url = AuthUrl::new(server.authorization_endpoint.clone())
        .map_err(|_| authorization("the authorization endpoint is not a URL"))?;
    let token_url = TokenUrl::new(server.token_endpoint.clone())
        .map_err(|_| token("the token endpoint is not a URL"))?;
    let redirect_url = RedirectUrl::new(redirect)
        .map_err(|_| authorization("the authorizer's redirect URI is not a URL"))?;
    let oauth = authenticated(
        oauth2::basic::BasicClient::new(ClientId::new(client.client_id.clone())),
        client,
    )
    .set_auth_uri(auth_url)
    .set_token_uri(token_url)
    .set_redirect_uri(redirect_url);

    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let resource = found.resource.resource.as_str();
    let mut request = oauth
        .authorize_url(CsrfToken::new_random)
        .set_pkce_challenge(challenge)
        .add_extra_param("resource", resource);
    for scope in scopes {
        request = request.add_scope(Scope::new(scope.clone()));
    }
    let (url, state) = request.url();
    tracing::debug!(issuer = %server.issuer, scopes = %scopes.join(" "), "asking the user to authorize");
    let redirected = config
        .authorizer
        .authorize(url)
        .await
        .map_err(|e| authorization(format!("the authorizer gave no redirect: {e}")))?;
    let code = read_redirect(&redirected, &state, server)?;

    let reply = oauth
        .exchange_code(code)
        .set_pkce_verifier(verifier)
        .add_extra_param("resource", resource)
        .request_async(&|request| fetch::oauth2_send(http.clone(), request))
        .await
        .map_err(|e| {
            token(format!(
                "exchanging the authorization code: {}",
                describe(&e)
            ))
        })?;
    tracing::debug!("the authorization server issued a token");
    Ok(tokens_of(&reply, scopes, None))
}

/// What became of a refresh.
pub(super) enum Refresh {
    Done(Tokens),
    /// The authorization server refused the refresh token: it is spent.
    Refused(AuthError),
    /// The refresh could not be done now (no answer, say).
    Failed(AuthError),
}

/// Exchanges the refresh token for new tokens (with the same `resource`).
pub(super) async fn refresh(
    http: &reqwest::Client,
    token_endpoint: &str,
    resource: &str,
    client: &Registration,
    tokens: &Tokens,
) -> Refresh {
    let Some(refresh_token) = &tokens.refresh_token else {
        return Refresh::Refused(token("there is no refresh token"));
    };
    let Ok(token_url) = TokenUrl::new(token_endpoint.to_owned()) else {
        return Refresh::Failed(token("the token endpoint is not a URL"));
    };
    let oauth = authenticated(
        oauth2::basic::BasicClient::new(ClientId::new(client.client_id.clone())),
        client,
    )
    .set_token_uri(token_url);
    let secret = RefreshToken::new(refresh_token.expose().to_owned());
    let reply = oauth
        .exchange_refresh_token(&secret)
        .add_extra_param("resource", resource)
        .request_async(&|request| fetch::oauth2_send(http.clone(), request))
        .await;
    match reply {
        Ok(reply) => {
            tracing::debug!("refreshed the access token");
            Refresh::Done(tokens_of(
                &reply,
                &tokens.requested,
                Some(refresh_token.clone()),
            ))
        }
        Err(e @ RequestTokenError::ServerResponse(_)) => Refresh::Refused(token(format!(
            "the refresh token was refused ({}); the next request starts a new authorization",
            describe(&e)
        ))),
        Err(e) => Refresh::Failed(token(format!("refreshing the token: {}", describe(&e)))),
    }
}

/// Sets the client's secret and how it is sent, as its registration says.
fn authenticated<A, B, C, D, E>(
    oauth: oauth2::basic::BasicClient<A, B, C, D, E>,
    client: &Registration,
) -> oauth2::basic::BasicClient<A, B, C, D, E>
where
    A: oauth2::EndpointState,
    B: oauth2::EndpointState,
    C: oauth2::EndpointState,
    D: oauth2::EndpointState,
    E: oauth2::EndpointState,
{
    match (&client.client_secret, client.auth_method.as_str()) {
        (_, NONE) | (None, _) => oauth,
        (Some(secret), method) => {
            let auth = if method == POST {
                AuthType::RequestBody
            } else {
                AuthType::BasicAuth
            };
            oauth
                .set_client_secret(ClientSecret::new(secret.expose().to_owned()))
                .set_auth_type(auth)
        }
    }
}

/// Reads the authorization server's redirect: an error it reports, the
/// `state` (which must be the one sent), the `iss` (RFC 9207: when present
/// it must be the issuer, compared as strings; when the server advertises
/// it, it must be present), and the code.
fn read_redirect(
    redirected: &Url,
    state: &CsrfToken,
    server: &ServerMetadata,
) -> Result<AuthorizationCode, AuthError> {
    let mut code = None;
    let mut got_state = None;
    let mut iss = None;
    let mut error = None;
    let mut description = None;
    for (name, value) in redirected.query_pairs() {
        let slot = match name.as_ref() {
            "code" => &mut code,
            "state" => &mut got_state,
            "iss" => &mut iss,
            "error" => &mut error,
            "error_description" => &mut description,
            _ => continue,
        };
        slot.get_or_insert_with(|| value.into_owned());
    }
    if got_state.as_deref() != Some(state.secret().as_str()) {
        return Err(authorization(
            "the redirect's state is not the one sent: a stale or forged redirect",
        ));
    }
    match (&iss, server.authorization_response_iss_parameter_supported) {
        (Some(iss), _) if *iss != server.issuer => {
            return Err(authorization(format!(
                "the redirect's iss {iss:?} is not the authorization server's issuer {:?} \
                 (RFC 9207): it may come from another server",
                server.issuer
            )));
        }
        (None, Some(true)) => {
            return Err(authorization(
                "the authorization server advertises the iss parameter, but its redirect \
                 has none (RFC 9207)",
            ));
        }
        _ => {}
    }
    if let Some(error) = error {
        return Err(authorization(match description {
            Some(d) => format!("the authorization server answered {error}: {d}"),
            None => format!("the authorization server answered {error}"),
        }));
    }
    code.map(AuthorizationCode::new)
        .ok_or_else(|| authorization("the redirect holds no authorization code"))
}

/// The tokens of a token reply. A reply without `scope` granted what was
/// asked; one without a refresh token keeps the one that was used.
fn tokens_of(reply: &BasicTokenResponse, requested: &[String], kept: Option<Secret>) -> Tokens {
    let scopes = reply.scopes().map_or_else(
        || requested.to_vec(),
        |granted| granted.iter().map(|s| s.to_string()).collect(),
    );
    Tokens {
        access_token: Secret::new(reply.access_token().secret().clone()),
        refresh_token: reply
            .refresh_token()
            .map(|r| Secret::new(r.secret().clone()))
            .or(kept),
        expires_at: reply
            .expires_in()
            .map(|d| now_secs().saturating_add(d.as_secs())),
        refresh_at: reply.expires_in().map(Tokens::refresh_time),
        scopes,
        requested: requested.to_vec(),
    }
}

/// A token request's failure, without the reply's body (which may hold a
/// token) or any secret.
fn describe(e: &RequestTokenError<HookError, BasicErrorResponse>) -> String {
    match e {
        RequestTokenError::ServerResponse(reply) => {
            let mut text = format!("the authorization server answered {}", reply.error());
            if let Some(d) = reply.error_description() {
                text.push_str(": ");
                text.push_str(d);
            }
            text
        }
        RequestTokenError::Request(e) => format!("the request failed: {e}"),
        RequestTokenError::Parse(e, _) => {
            format!("the reply is not a token response (at {})", e.path())
        }
        RequestTokenError::Other(e) => e.clone(),
    }
}
