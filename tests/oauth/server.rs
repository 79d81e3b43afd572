//! A loopback resource server and authorization server in one (127.0.0.1
//! only), for the OAuth tests: protected resource metadata, authorization
//! server metadata, dynamic registration, a headless `/authorize` that
//! redirects at once, `/token` (code and refresh grants) and an MCP
//! endpoint that answers only a valid bearer token. Each test turns its
//! knobs to make one failure happen.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::task::JoinHandle;

/// What `/authorize` puts in its redirect's `iss`.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Iss {
    Correct,
    Wrong,
}

/// The knobs a test turns.
pub struct Knobs {
    /// Whether the metadata lists `S256`.
    pub s256: bool,
    /// The `resource` of the protected resource metadata (default: the endpoint).
    pub resource: Option<String>,
    pub iss: Iss,
    /// `expires_in` of the tokens issued.
    pub expires_in: u64,
    /// Whether a refresh token is accepted.
    pub refresh_ok: bool,
    /// The client secret registration hands out (sent as client_secret_post).
    pub client_secret: Option<&'static str>,
    /// A scope `tools/call` needs (answered `403 insufficient_scope` without it).
    pub call_scope: Option<&'static str>,
    /// Whether `tools/call` is refused with `insufficient_scope` whatever the token.
    pub never_enough: bool,
}

impl Default for Knobs {
    fn default() -> Self {
        Knobs {
            s256: true,
            resource: None,
            iss: Iss::Correct,
            expires_in: 3600,
            refresh_ok: true,
            client_secret: None,
            call_scope: None,
            never_enough: false,
        }
    }
}

/// What the server saw.
#[derive(Default)]
pub struct Seen {
    pub authorizations: usize,
    pub code_grants: usize,
    pub refresh_grants: usize,
    pub registrations: usize,
    /// The `Authorization` header of each MCP request (`None`: none).
    pub mcp: Vec<Option<String>>,
    /// Every secret value that crossed the wire (codes, verifiers, tokens,
    /// client secrets), for the redaction test.
    pub secrets: Vec<String>,
    /// The `resource` of each authorization and token request.
    pub resources: Vec<String>,
    /// The MCP requests answered `401`.
    pub unauthorized: usize,
    /// The `tasks/get` polls answered.
    pub polls: usize,
    /// The `scope` of each authorization request.
    pub scopes: Vec<String>,
}

#[derive(Default)]
struct State {
    base: String,
    knobs: Mutex<Knobs>,
    seen: Mutex<Seen>,
    valid: Mutex<HashSet<String>>,
    /// The scopes of each access token, and those asked with each code.
    scopes: Mutex<std::collections::HashMap<String, String>>,
    counter: Mutex<u64>,
}

pub struct AuthServer {
    pub base: String,
    state: Arc<State>,
    task: JoinHandle<()>,
}

impl Drop for AuthServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl AuthServer {
    pub async fn start(knobs: Knobs) -> AuthServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(State {
            base: base.clone(),
            knobs: Mutex::new(knobs),
            ..State::default()
        });
        let shared = state.clone();
        let task = tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = shared.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| {
                        let state = state.clone();
                        async move { Ok::<_, Infallible>(handle(&state, req).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        });
        AuthServer { base, state, task }
    }

    pub fn endpoint(&self) -> String {
        format!("{}/mcp", self.base)
    }

    pub fn knobs(&self) -> std::sync::MutexGuard<'_, Knobs> {
        self.state.knobs.lock().unwrap()
    }

    pub fn seen<T>(&self, f: impl FnOnce(&Seen) -> T) -> T {
        f(&self.state.seen.lock().unwrap())
    }

    /// Forgets every token issued: the next MCP request gets `401`.
    pub fn revoke_access_tokens(&self) {
        self.state.valid.lock().unwrap().clear();
    }
}

fn reply(status: u16, body: Value) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", "application/json")
        .body(Full::new(Bytes::from(body.to_string())))
        .unwrap()
}

fn next(state: &State, what: &str) -> String {
    let mut n = state.counter.lock().unwrap();
    *n += 1;
    format!("{what}-secret-{n}")
}

fn form(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

fn field<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    pairs
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

async fn handle(state: &State, req: Request<Incoming>) -> Response<Full<Bytes>> {
    let base = state.base.clone();
    let method = req.method().clone();
    let path = req.uri().path().to_owned();
    let query = req.uri().query().unwrap_or("").to_owned();
    let authorization = req
        .headers()
        .get("authorization")
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    match (method.as_str(), path.as_str()) {
        ("GET", "/.well-known/oauth-protected-resource/mcp") => {
            let resource = state.knobs.lock().unwrap().resource.clone();
            reply(
                200,
                json!({
                    "resource": resource.unwrap_or_else(|| format!("{base}/mcp")),
                    "authorization_servers": [base],
                    "scopes_supported": ["mcp"],
                }),
            )
        }
        ("GET", "/.well-known/oauth-authorization-server") => {
            let s256 = state.knobs.lock().unwrap().s256;
            let methods = if s256 {
                json!(["S256"])
            } else {
                json!(["plain"])
            };
            reply(
                200,
                json!({
                    "issuer": base,
                    "authorization_endpoint": format!("{base}/authorize"),
                    "token_endpoint": format!("{base}/token"),
                    "registration_endpoint": format!("{base}/register"),
                    "response_types_supported": ["code"],
                    "grant_types_supported": ["authorization_code", "refresh_token"],
                    "code_challenge_methods_supported": methods,
                    "token_endpoint_auth_methods_supported": ["none", "client_secret_post"],
                    "authorization_response_iss_parameter_supported": true,
                    "scopes_supported": ["mcp", "offline_access"],
                }),
            )
        }
        ("POST", "/register") => {
            state.seen.lock().unwrap().registrations += 1;
            let secret = state.knobs.lock().unwrap().client_secret;
            let mut client = json!({ "client_id": "client-1" });
            if let Some(secret) = secret {
                client["client_secret"] = json!(secret);
                client["token_endpoint_auth_method"] = json!("client_secret_post");
                state.seen.lock().unwrap().secrets.push(secret.to_owned());
            }
            reply(201, client)
        }
        ("GET", "/authorize") => {
            let pairs = form(query.as_bytes());
            let code = next(state, "code");
            let iss = state.knobs.lock().unwrap().iss;
            {
                let mut seen = state.seen.lock().unwrap();
                seen.authorizations += 1;
                seen.secrets.push(code.clone());
                seen.resources
                    .push(field(&pairs, "resource").unwrap_or("").to_owned());
                seen.scopes
                    .push(field(&pairs, "scope").unwrap_or("").to_owned());
            }
            state.scopes.lock().unwrap().insert(
                code.clone(),
                field(&pairs, "scope").unwrap_or("").to_owned(),
            );
            let mut to =
                url::Url::parse(field(&pairs, "redirect_uri").unwrap_or("http://x/")).unwrap();
            to.query_pairs_mut().append_pair("code", &code);
            if let Some(s) = field(&pairs, "state") {
                to.query_pairs_mut().append_pair("state", s);
            }
            let iss = match iss {
                Iss::Correct => base.clone(),
                Iss::Wrong => "https://evil.example.com".to_owned(),
            };
            to.query_pairs_mut().append_pair("iss", &iss);
            Response::builder()
                .status(302)
                .header("location", to.as_str())
                .body(Full::new(Bytes::new()))
                .unwrap()
        }
        ("POST", "/token") => {
            let pairs = form(&body);
            let (expires_in, refresh_ok) = {
                let k = state.knobs.lock().unwrap();
                (k.expires_in, k.refresh_ok)
            };
            {
                let mut seen = state.seen.lock().unwrap();
                seen.resources
                    .push(field(&pairs, "resource").unwrap_or("").to_owned());
                for name in ["code_verifier", "refresh_token", "client_secret", "code"] {
                    if let Some(v) = field(&pairs, name) {
                        seen.secrets.push(v.to_owned());
                    }
                }
            }
            match field(&pairs, "grant_type") {
                Some("authorization_code") => state.seen.lock().unwrap().code_grants += 1,
                Some("refresh_token") => {
                    state.seen.lock().unwrap().refresh_grants += 1;
                    if !refresh_ok {
                        return reply(400, json!({ "error": "invalid_grant" }));
                    }
                }
                _ => return reply(400, json!({ "error": "unsupported_grant_type" })),
            }
            let access = next(state, "access");
            let refresh = next(state, "refresh");
            let granted = {
                let mut scopes = state.scopes.lock().unwrap();
                let granted = field(&pairs, "code")
                    .and_then(|c| scopes.get(c).cloned())
                    .unwrap_or_else(|| "mcp".to_owned());
                scopes.insert(access.clone(), granted.clone());
                granted
            };
            state.valid.lock().unwrap().insert(access.clone());
            state
                .seen
                .lock()
                .unwrap()
                .secrets
                .extend([access.clone(), refresh.clone()]);
            reply(
                200,
                json!({
                    "access_token": access,
                    "token_type": "Bearer",
                    "expires_in": expires_in,
                    "refresh_token": refresh,
                    "scope": granted,
                }),
            )
        }
        ("POST", "/mcp") => {
            state.seen.lock().unwrap().mcp.push(authorization.clone());
            let token = authorization
                .as_deref()
                .and_then(|a| a.strip_prefix("Bearer "))
                .map(str::to_owned);
            let valid = token.is_some_and(|t| state.valid.lock().unwrap().contains(&t));
            if !valid {
                state.seen.lock().unwrap().unauthorized += 1;
                return Response::builder()
                    .status(401)
                    .header(
                        "www-authenticate",
                        format!(
                            "Bearer error=\"invalid_token\", resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""
                        ),
                    )
                    .header("content-type", "application/json")
                    .body(Full::new(Bytes::from(r#"{"error":"invalid_token"}"#)))
                    .unwrap();
            }
            let request: Value = serde_json::from_slice(&body).unwrap_or_default();
            if request["method"] == "tools/call" {
                let (call_scope, never_enough) = {
                    let k = state.knobs.lock().unwrap();
                    (k.call_scope, k.never_enough)
                };
                let granted = authorization
                    .as_deref()
                    .and_then(|a| a.strip_prefix("Bearer "))
                    .and_then(|t| state.scopes.lock().unwrap().get(t).cloned())
                    .unwrap_or_default();
                if let Some(needed) = call_scope
                    && (never_enough || !granted.split(' ').any(|s| s == needed))
                {
                    return Response::builder()
                        .status(403)
                        .header(
                            "www-authenticate",
                            format!("Bearer error=\"insufficient_scope\", scope=\"{needed}\", resource_metadata=\"{base}/.well-known/oauth-protected-resource/mcp\""),
                        )
                        .body(Full::new(Bytes::new()))
                        .unwrap();
                }
            }
            let task = |status: &str| {
                json!({
                    "taskId": "t-1", "status": status,
                    "createdAt": "2026-08-01T09:00:00Z", "lastUpdatedAt": "2026-08-01T09:00:00Z",
                    "ttlMs": 3_600_000, "pollIntervalMs": 300,
                })
            };
            let result = match request["method"].as_str() {
                // The one tool, for clients that check a name before calling it.
                Some("tools/list") => json!({
                    "resultType": "complete",
                    "tools": [{
                        "name": "export",
                        "description": "A task that completes on its eighth poll.",
                        "inputSchema": { "type": "object" },
                        "execution": { "taskSupport": "optional" },
                    }],
                }),
                // A task that completes on its eighth poll (about 2.4 s).
                Some("tools/call") => {
                    let mut t = task("working");
                    t["resultType"] = json!("task");
                    t
                }
                Some("tasks/get") => {
                    let polls = {
                        let mut seen = state.seen.lock().unwrap();
                        seen.polls += 1;
                        seen.polls
                    };
                    let mut t = task(if polls >= 8 { "completed" } else { "working" });
                    t["resultType"] = json!("complete");
                    if polls >= 8 {
                        t["result"] = json!({ "content": [{ "type": "text", "text": "done" }], "isError": false });
                    }
                    t
                }
                _ => json!({ "resultType": "complete" }),
            };
            reply(
                200,
                json!({ "jsonrpc": "2.0", "id": request["id"], "result": result }),
            )
        }
        _ => reply(404, json!({ "error": "not_found" })),
    }
}
