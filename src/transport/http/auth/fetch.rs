//! The HTTP requests of authorization, on the transport's own reqwest: the
//! JSON documents of discovery and registration, and the hook through
//! which `oauth2` sends its token requests. Every request is bounded in
//! time and size, follows no redirect, and never logs a URL's query.

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderValue};
use serde::de::DeserializeOwned;

use super::super::body::read_limited;
use crate::error::describe_reqwest as describe;
use crate::human;

/// Bound on each request of authorization (discovery, registration, token).
pub(super) const TIMEOUT: Duration = Duration::from_secs(30);
/// The largest document read (metadata, a registration, a token reply).
const MAX_BODY: usize = 1024 * 1024;

/// Why a document was not had.
pub(super) enum Missing {
    /// The server answered, without the document (`404`, not JSON, …):
    /// the next candidate may have it.
    Absent(String),
    /// The request failed (no connection, no answer in time).
    Failed(String),
}

/// GETs a JSON document. `version` goes in `MCP-Protocol-Version`, as the
/// specification asks of discovery requests.
pub(super) async fn get_json<T: DeserializeOwned>(
    http: &reqwest::Client,
    url: &str,
    version: &str,
) -> Result<T, Missing> {
    let mut request = http
        .get(url)
        .header(ACCEPT, HeaderValue::from_static("application/json"));
    if let Ok(v) = HeaderValue::from_str(version) {
        request = request.header("mcp-protocol-version", v);
    }
    let (status, _, body) = send(request).await.map_err(Missing::Failed)?;
    if !status.is_success() {
        return Err(Missing::Absent(format!(
            "{} answered HTTP {status}",
            path_of(url)
        )));
    }
    serde_json::from_slice(&body)
        .map_err(|e| Missing::Absent(format!("{} is not a valid document: {e}", path_of(url))))
}

/// POSTs a JSON body and reads a JSON reply: status and body.
pub(super) async fn post_json(
    http: &reqwest::Client,
    url: &str,
    body: &serde_json::Value,
) -> Result<(reqwest::StatusCode, Vec<u8>), String> {
    let request = http
        .post(url)
        .header(ACCEPT, HeaderValue::from_static("application/json"))
        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .body(body.to_string());
    send(request).await.map(|(status, _, body)| (status, body))
}

async fn send(
    request: reqwest::RequestBuilder,
) -> Result<(reqwest::StatusCode, reqwest::header::HeaderMap, Vec<u8>), String> {
    let exchange = async {
        let response = request.send().await.map_err(describe)?;
        let status = response.status();
        let headers = response.headers().clone();
        let body = read_limited(response, MAX_BODY)
            .await
            .map_err(|e| e.to_string())?;
        Ok((status, headers, body))
    };
    tokio::time::timeout(TIMEOUT, exchange)
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {}", human::duration(TIMEOUT))))
}

/// A URL without its query and fragment, to name it in an error.
pub(super) fn path_of(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            u.set_query(None);
            u.set_fragment(None);
            u.to_string()
        }
        Err(_) => "the URL".to_owned(),
    }
}

/// A request of `oauth2`'s that failed: the cause, without the URL.
#[derive(Debug)]
pub(super) struct HookError(String);

impl std::fmt::Display for HookError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for HookError {}

/// Sends one of `oauth2`'s requests (a token request) with reqwest.
pub(super) async fn oauth2_send(
    http: reqwest::Client,
    request: oauth2::HttpRequest,
) -> Result<oauth2::HttpResponse, HookError> {
    let (parts, body) = request.into_parts();
    let url = parts.uri.to_string();
    let mut builder = http.request(parts.method, url).body(body);
    for (name, value) in &parts.headers {
        builder = builder.header(name, value);
    }
    let (status, headers, body) = send(builder).await.map_err(HookError)?;
    let mut response = oauth2::HttpResponse::new(body);
    *response.status_mut() = status;
    *response.headers_mut() = headers;
    Ok(response)
}
