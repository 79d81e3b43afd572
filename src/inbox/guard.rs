//! What every request passes before a page: the access token, or a
//! loopback host when there is none; the cross-site check on every POST;
//! and the headers that keep a page to itself (a strict
//! Content-Security-Policy, no framing, no referrer, no caching).

use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::header::{self, HeaderMap, HeaderValue};
use axum::http::{Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::Shared;
use super::html::{Nav, esc, page};

/// The name of the cookie that carries the access token.
pub(super) const COOKIE: &str = "mcp_tasks_inbox";

/// The policy of every answer: the page's own stylesheet and script, no
/// inline script or style, no other origin, forms posted only here.
pub(super) const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self'; \
     img-src 'self'; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; \
     base-uri 'none'";

/// The guard, as an axum middleware over the whole router.
pub(super) async fn guard(
    State(shared): State<Arc<Shared>>,
    request: Request,
    next: Next,
) -> Response {
    let mut response = match check(&shared, &request) {
        Some(refused_or_redirected) => refused_or_redirected,
        None => next.run(request).await,
    };
    let h = response.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// `None`: go on to the page; `Some(_)`: the answer instead, a refusal or
/// the redirect that sets the token's cookie.
fn check(shared: &Shared, request: &Request) -> Option<Response> {
    let headers = request.headers();
    match &shared.options.access_token {
        Some(token) => {
            if let Some(given) = query_token(request.uri().query())
                && request.method() == Method::GET
            {
                if !same(given.as_bytes(), token.as_bytes()) {
                    return Some(refuse(
                        shared,
                        StatusCode::UNAUTHORIZED,
                        "The access token is not right.",
                    ));
                }
                return Some(set_cookie(shared, request, token));
            }
            if !carries(headers, token) {
                return Some(refuse(
                    shared,
                    StatusCode::UNAUTHORIZED,
                    "This inbox needs its access token: open the address it printed \
                     (…?token=…) once, or send it as a bearer token.",
                ));
            }
        }
        None => {
            if !loopback_host(headers) {
                return Some(refuse(
                    shared,
                    StatusCode::FORBIDDEN,
                    "This inbox has no access token, so it answers only on a loopback address \
                     (localhost, 127.0.0.1, [::1]). Give it an access token to serve it \
                     elsewhere.",
                ));
            }
        }
    }
    if request.method() != Method::GET && request.method() != Method::HEAD && !same_origin(headers)
    {
        return Some(refuse(
            shared,
            StatusCode::FORBIDDEN,
            "A change was asked from another site: refused.",
        ));
    }
    None
}

fn refuse(shared: &Shared, status: StatusCode, why: &str) -> Response {
    let body = format!("<h1>Refused</h1><p class=\"error\">{}</p>", esc(why));
    (
        status,
        super::Page(page(&shared.options.base, "Refused", Nav::None, "", &body)),
    )
        .into_response()
}

/// The `token` parameter of a query string, if any.
fn query_token(query: Option<&str>) -> Option<String> {
    query?.split('&').find_map(|pair| {
        let (k, v) = pair.split_once('=')?;
        (k == "token").then(|| percent_decode(v))
    })
}

fn percent_decode(s: &str) -> String {
    let hex = |b: u8| (b as char).to_digit(16);
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(hi), Some(lo)) => {
                    out.push((hi * 16 + lo) as u8);
                    i += 3;
                    continue;
                }
                _ => out.push(b'%'),
            },
            b'+' => out.push(b' '),
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// After `?token=` was right: the cookie, and the same page without the
/// token in its address (so that it stays out of the history and logs).
fn set_cookie(shared: &Shared, request: &Request, token: &str) -> Response {
    let rest: Vec<&str> = request
        .uri()
        .query()
        .unwrap_or("")
        .split('&')
        .filter(|p| !p.is_empty() && !p.starts_with("token="))
        .collect();
    let path = request.uri().path();
    let mut to = format!("{}{}", shared.options.base, path);
    if !rest.is_empty() {
        to.push('?');
        to.push_str(&rest.join("&"));
    }
    let cookie_path = if shared.options.base.is_empty() {
        "/"
    } else {
        &shared.options.base
    };
    let cookie = format!("{COOKIE}={token}; Path={cookie_path}; HttpOnly; SameSite=Strict");
    let mut response = (StatusCode::SEE_OTHER, [(header::LOCATION, to)]).into_response();
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    response
}

/// Whether the request carries `token`: as a bearer token, or in the
/// inbox's cookie.
fn carries(headers: &HeaderMap, token: &str) -> bool {
    let bearer = headers
        .get_all(header::AUTHORIZATION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .filter_map(|v| v.strip_prefix("Bearer "))
        .any(|t| same(t.trim().as_bytes(), token.as_bytes()));
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().split_once('='))
        .any(|(k, v)| k == COOKIE && same(v.as_bytes(), token.as_bytes()));
    bearer || cookie
}

/// Equal, in a time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// The host the request was addressed to (`Host`), without its port.
fn host(headers: &HeaderMap) -> Option<&str> {
    let h = headers.get(header::HOST)?.to_str().ok()?;
    Some(match h.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or(""),
        None => h.rsplit_once(':').map_or(h, |(name, _)| name),
    })
}

/// Whether the request was addressed to a loopback name. A page of
/// another site that renamed itself to this address (DNS rebinding)
/// arrives with its own name, and is refused.
fn loopback_host(headers: &HeaderMap) -> bool {
    match host(headers) {
        Some(h) => {
            h.eq_ignore_ascii_case("localhost")
                || h.parse::<std::net::IpAddr>()
                    .is_ok_and(|ip| ip.is_loopback())
        }
        None => false,
    }
}

/// Whether a request that changes something comes from a page of this
/// inbox: `Sec-Fetch-Site: same-origin` where the browser sends it, else
/// an `Origin` whose host and port are the request's `Host`. A request
/// with neither comes from no browser, where a cross-site request cannot
/// arise.
fn same_origin(headers: &HeaderMap) -> bool {
    if let Some(site) = headers.get("sec-fetch-site") {
        return site.as_bytes() == b"same-origin";
    }
    match headers.get(header::ORIGIN) {
        None => true,
        Some(origin) => {
            let origin = origin.to_str().unwrap_or("");
            let authority = origin.split_once("://").map_or("", |(_, a)| a);
            let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
            !authority.is_empty() && Some(authority) == host
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_str(v).unwrap());
        }
        h
    }

    #[test]
    fn loopback_names_only() {
        for ok in [
            "localhost:8080",
            "127.0.0.1:1",
            "127.0.0.1",
            "[::1]:80",
            "LOCALHOST",
        ] {
            assert!(loopback_host(&headers(&[("host", ok)])), "{ok}");
        }
        for no in [
            "example.com",
            "10.0.0.1:80",
            "attacker.test:8080",
            "[::2]:80",
            "localhost.evil",
        ] {
            assert!(!loopback_host(&headers(&[("host", no)])), "{no}");
        }
        assert!(!loopback_host(&HeaderMap::new()));
    }

    #[test]
    fn cross_site_posts_are_told_apart() {
        assert!(same_origin(&headers(&[("sec-fetch-site", "same-origin")])));
        for site in ["cross-site", "same-site", "none"] {
            assert!(
                !same_origin(&headers(&[("sec-fetch-site", site)])),
                "{site}"
            );
        }
        let h = |o: &str| headers(&[("host", "127.0.0.1:8080"), ("origin", o)]);
        assert!(same_origin(&h("http://127.0.0.1:8080")));
        assert!(!same_origin(&h("http://127.0.0.1:8081")));
        assert!(!same_origin(&h("https://evil.test")));
        assert!(!same_origin(&h("null")));
        assert!(
            same_origin(&headers(&[("host", "127.0.0.1:8080")])),
            "no browser"
        );
    }

    #[test]
    fn the_token_is_found_in_a_bearer_header_or_the_cookie() {
        assert!(carries(
            &headers(&[("authorization", "Bearer s3cret")]),
            "s3cret"
        ));
        assert!(carries(
            &headers(&[("cookie", "a=b; mcp_tasks_inbox=s3cret")]),
            "s3cret"
        ));
        assert!(!carries(
            &headers(&[("cookie", "mcp_tasks_inbox=s3cre")]),
            "s3cret"
        ));
        assert!(!carries(
            &headers(&[("authorization", "Basic s3cret")]),
            "s3cret"
        ));
        assert_eq!(
            query_token(Some("a=1&token=x%2By+z")).as_deref(),
            Some("x+y z")
        );
        assert_eq!(query_token(Some("a=1")), None);
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%é"), "%é");
    }
}
