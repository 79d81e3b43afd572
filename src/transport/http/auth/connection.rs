//! One connection's authorization: the current access token every request
//! carries, and what the transport does with a `401` or a `403`
//! `insufficient_scope` (discover, register, authorize, refresh, step up).
//!
//! The work that changes the tokens runs on a task of its own, one at a
//! time: a request that gives up waiting (its timeout, its caller gone)
//! does not abort an authorization half done, and requests that meet the
//! same refusal share one authorization. Requests read the token when they
//! are sent, so a refresh never touches one in flight.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use reqwest::StatusCode;
use reqwest::header::{HeaderMap, HeaderValue, WWW_AUTHENTICATE};
use url::Url;

use super::OAuth;
use super::challenge::{Challenge, merge_scopes};
use super::discovery::{self, Discovered};
use super::error::{AuthError, Step, authorization};
use super::flow::{self, Refresh};
use super::registration;
use super::store::{Credentials, Tokens};

/// Most `401`s one request answers with a new token before giving up.
const MAX_UNAUTHORIZED: u32 = 2;

/// The authorization of one connection.
#[derive(Clone)]
pub(in crate::transport::http) struct Authorization {
    inner: Arc<Inner>,
}

struct Inner {
    config: OAuth,
    endpoint: Url,
    http: reqwest::Client,
    /// Set once the store has been read.
    loaded: AtomicBool,
    current: Mutex<Current>,
    /// Held by the work that changes the credentials.
    flow: tokio::sync::Mutex<Option<Credentials>>,
}

/// What requests read when they are sent.
#[derive(Default)]
struct Current {
    header: Option<HeaderValue>,
    /// Counts the tokens published, so a refusal of an old one is told
    /// from a refusal of the current one.
    generation: u64,
    /// When the token is due for a refresh it can have.
    refresh_at: Option<u64>,
}

/// The token one request was sent with.
pub(in crate::transport::http) struct Ticket {
    header: Option<HeaderValue>,
    generation: u64,
}

impl Ticket {
    /// The `Authorization` header to send, if there is a token yet.
    pub(in crate::transport::http) fn header(&self) -> Option<HeaderValue> {
        self.header.clone()
    }
}

/// What to do with a reply.
pub(in crate::transport::http) enum Verdict {
    /// It is the reply: read it.
    Done,
    /// A new token was had: send the request again.
    Retry,
    /// Authorization failed: the request fails with this reason.
    Refused(String),
}

/// How often one request was refused, to bound its retries.
#[derive(Default)]
pub(in crate::transport::http) struct Rounds {
    unauthorized: u32,
    step_ups: u32,
}

impl Authorization {
    pub(in crate::transport::http) fn new(
        config: OAuth,
        endpoint: Url,
        http: reqwest::Client,
    ) -> Self {
        Authorization {
            inner: Arc::new(Inner {
                config,
                endpoint,
                http,
                loaded: AtomicBool::new(false),
                current: Mutex::new(Current::default()),
                flow: tokio::sync::Mutex::new(None),
            }),
        }
    }

    /// The token to send a request with: reads the store first, and
    /// refreshes a token about to expire.
    ///
    /// # Errors
    ///
    /// When the refresh token was refused: the request is not sent.
    pub(in crate::transport::http) async fn ticket(&self) -> Result<Ticket, String> {
        let due = {
            let current = self.inner.current.lock().unwrap();
            current
                .refresh_at
                .is_some_and(|at| super::store::now_secs() >= at)
        };
        if due || !self.inner.loaded.load(Ordering::Acquire) {
            let inner = self.inner.clone();
            run_alone(async move { inner.prepare().await }).await?;
        }
        let current = self.inner.current.lock().unwrap();
        Ok(Ticket {
            header: current.header.clone(),
            generation: current.generation,
        })
    }

    /// Reads a reply's status: a `401`, or a `403` asking for more scopes,
    /// is answered with a new token when one can be had.
    pub(in crate::transport::http) async fn answer(
        &self,
        status: StatusCode,
        headers: &HeaderMap,
        ticket: &Ticket,
        rounds: &mut Rounds,
        version: &str,
    ) -> Verdict {
        let challenge = headers
            .get_all(WWW_AUTHENTICATE)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect::<Vec<_>>()
            .join(", ");
        let challenge = Challenge::parse(&challenge);
        let generation = ticket.generation;
        let version = version.to_owned();
        let inner = self.inner.clone();
        let work = if status == StatusCode::UNAUTHORIZED {
            rounds.unauthorized += 1;
            if rounds.unauthorized > MAX_UNAUTHORIZED {
                return Verdict::Refused(format!(
                    "OAuth authorization failed: the server refused the new token too \
                     (HTTP 401, {} times)",
                    rounds.unauthorized
                ));
            }
            // A token just refreshed and refused again: authorize anew.
            let refreshed_before = rounds.unauthorized > 1;
            run_alone(async move {
                inner
                    .unauthorized(challenge, generation, refreshed_before, &version)
                    .await
            })
            .await
        } else if status == StatusCode::FORBIDDEN && challenge.insufficient_scope() {
            rounds.step_ups += 1;
            if rounds.step_ups > self.inner.config.max_step_ups {
                return Verdict::Refused(format!(
                    "OAuth authorization failed: the server still answers insufficient_scope \
                     after {} step-up authorizations",
                    rounds.step_ups - 1
                ));
            }
            run_alone(async move { inner.step_up(challenge, generation, &version).await }).await
        } else {
            return Verdict::Done;
        };
        match work {
            Ok(()) => Verdict::Retry,
            Err(reason) => Verdict::Refused(reason),
        }
    }
}

/// Runs the work on a task of its own and waits for it.
async fn run_alone(
    work: impl Future<Output = Result<(), AuthError>> + Send + 'static,
) -> Result<(), String> {
    match tokio::spawn(work).await {
        Ok(Ok(())) => Ok(()),
        Ok(Err(e)) => {
            tracing::debug!(step = %e.step, "{e}");
            Err(e.to_string())
        }
        Err(_) => Err("OAuth authorization failed: its task ended abruptly".to_owned()),
    }
}

impl Inner {
    /// The store's key for this server.
    fn key(&self) -> &str {
        self.endpoint.as_str()
    }

    /// Reads the store (once), and refreshes a token about to expire.
    async fn prepare(&self) -> Result<(), AuthError> {
        let mut held = self.flow.lock().await;
        self.load(&mut held);
        let due = held
            .as_ref()
            .and_then(|c| c.tokens.as_ref())
            .is_some_and(Tokens::refresh_due);
        if due {
            tracing::debug!("the access token is about to expire: refreshing it");
            match self.refresh(&mut held).await {
                Ok(()) | Err(Refreshed::Unavailable) => {}
                Err(Refreshed::Refused(e)) => return Err(e),
                Err(Refreshed::Failed(e)) => {
                    // Still valid for a little while, perhaps: sent as is;
                    // a `401` will try again.
                    tracing::warn!("{e}");
                    self.current.lock().unwrap().refresh_at = None;
                }
            }
        }
        Ok(())
    }

    fn load(&self, held: &mut Option<Credentials>) {
        if self.loaded.load(Ordering::Acquire) {
            return;
        }
        match self.config.store.load(self.key()) {
            Ok(Some(credentials)) => {
                tracing::debug!(issuer = %credentials.issuer, "using the stored credentials");
                *held = Some(credentials);
                self.publish(held.as_ref().and_then(|c| c.tokens.as_ref()));
            }
            Ok(None) => {}
            Err(e) => tracing::warn!("the token store could not be read, starting without: {e}"),
        }
        self.loaded.store(true, Ordering::Release);
    }

    /// Makes `tokens` the ones requests carry from now on.
    fn publish(&self, tokens: Option<&Tokens>) {
        let mut current = self.current.lock().unwrap();
        current.generation += 1;
        current.header = tokens.and_then(|t| {
            let mut v =
                HeaderValue::from_str(&format!("Bearer {}", t.access_token.expose())).ok()?;
            v.set_sensitive(true);
            Some(v)
        });
        current.refresh_at = tokens
            .filter(|t| t.refresh_token.is_some())
            .and_then(|t| t.refresh_at);
    }

    fn save(&self, held: &Option<Credentials>) -> Result<(), AuthError> {
        let saved = match held {
            Some(credentials) => self.config.store.save(self.key(), credentials),
            None => self.config.store.remove(self.key()),
        };
        saved.map_err(|e| {
            AuthError::new(
                Step::Store,
                format!(
                    "the credentials could not be saved ({e}); this connection keeps using \
                     them, but a restarted program will have to authorize again"
                ),
            )
        })
    }

    /// Refreshes the held tokens, publishing and saving the new ones. A
    /// refused refresh token is dropped (the next `401` authorizes anew).
    async fn refresh(&self, held: &mut Option<Credentials>) -> Result<(), Refreshed> {
        let Some(credentials) = held.as_mut() else {
            return Err(Refreshed::Unavailable);
        };
        let Some(tokens) = credentials
            .tokens
            .as_ref()
            .filter(|t| t.refresh_token.is_some())
        else {
            return Err(Refreshed::Unavailable);
        };
        match flow::refresh(
            &self.http,
            &credentials.token_endpoint,
            &credentials.resource,
            &credentials.client,
            tokens,
        )
        .await
        {
            Refresh::Done(tokens) => {
                credentials.tokens = Some(tokens);
                self.publish(credentials.tokens.as_ref());
                self.save(held).map_err(Refreshed::Failed)
            }
            Refresh::Refused(e) => {
                credentials.tokens = None;
                self.publish(None);
                if let Err(store) = self.save(held) {
                    tracing::warn!("{store}");
                }
                Err(Refreshed::Refused(e))
            }
            Refresh::Failed(e) => Err(Refreshed::Failed(e)),
        }
    }

    /// A `401`: discovers (the authorization server may have moved), then
    /// refreshes the token when it can (not twice for one request), else
    /// authorizes.
    async fn unauthorized(
        &self,
        challenge: Challenge,
        generation: u64,
        refreshed_before: bool,
        version: &str,
    ) -> Result<(), AuthError> {
        let mut held = self.flow.lock().await;
        self.load(&mut held);
        if self.current.lock().unwrap().generation != generation {
            return Ok(()); // another request already had a new token
        }
        let found = discovery::discover(&self.http, &self.endpoint, &challenge, version).await?;
        self.forget_other_server(&mut held, &found);
        if !refreshed_before {
            match self.refresh(&mut held).await {
                Ok(()) => return Ok(()),
                Err(Refreshed::Refused(e) | Refreshed::Failed(e)) => return Err(e),
                Err(Refreshed::Unavailable) => {}
            }
        }
        let mut scopes = challenge.scopes();
        if scopes.is_empty() {
            scopes = found.resource.scopes_supported.clone().unwrap_or_default();
        }
        let scopes = self.with_held_scopes(&held, scopes, &found);
        self.authorize(&mut held, &found, scopes).await
    }

    /// A `403` `insufficient_scope`: authorizes again for the union of the
    /// scopes asked before and those the challenge names, unless the token
    /// already has them all (asking again would loop).
    async fn step_up(
        &self,
        challenge: Challenge,
        generation: u64,
        version: &str,
    ) -> Result<(), AuthError> {
        let mut held = self.flow.lock().await;
        self.load(&mut held);
        if self.current.lock().unwrap().generation != generation {
            return Ok(());
        }
        let found = discovery::discover(&self.http, &self.endpoint, &challenge, version).await?;
        self.forget_other_server(&mut held, &found);
        let wanted = challenge.scopes();
        let granted: std::collections::HashSet<&str> = held
            .as_ref()
            .and_then(|c| c.tokens.as_ref())
            .map(|t| t.scopes.iter().map(String::as_str).collect())
            .unwrap_or_default();
        if !wanted.is_empty() && wanted.iter().all(|s| granted.contains(s.as_str())) {
            return Err(authorization(format!(
                "the server answers insufficient_scope for {:?}, which the token already \
                 has: asking again would not help",
                wanted.join(" ")
            )));
        }
        let scopes = self.with_held_scopes(&held, wanted, &found);
        tracing::debug!(scopes = %scopes.join(" "), "stepping up the authorization");
        self.authorize(&mut held, &found, scopes).await
    }

    /// Drops credentials from another authorization server than the one
    /// the protected resource names now: they are not valid there.
    fn forget_other_server(&self, held: &mut Option<Credentials>, found: &Discovered) {
        if held
            .as_ref()
            .is_some_and(|c| c.issuer != found.server.issuer)
        {
            tracing::info!(
                issuer = %found.server.issuer,
                "the server's authorization server changed: registering with the new one"
            );
            *held = None;
            self.publish(None);
            if let Err(e) = self.save(held) {
                tracing::warn!("{e}");
            }
        }
    }

    /// `scopes`, after the scopes asked for before (at the same server),
    /// and `offline_access` when the server lists it.
    fn with_held_scopes(
        &self,
        held: &Option<Credentials>,
        scopes: Vec<String>,
        found: &Discovered,
    ) -> Vec<String> {
        let asked_before: &[String] = held
            .as_ref()
            .and_then(|c| c.tokens.as_ref())
            .map_or(&[], |t| t.requested.as_slice());
        let offline = "offline_access";
        let offline: &[&str] = if self.config.offline_access && found.server.offers_scope(offline) {
            &[offline]
        } else {
            &[]
        };
        // Each one split on white space: a server's list may hold "a b".
        merge_scopes([words(asked_before), words(&scopes), offline.to_vec()])
    }

    /// The authorization code flow, from the client's identity to the
    /// tokens, published and saved.
    async fn authorize(
        &self,
        held: &mut Option<Credentials>,
        found: &Discovered,
        scopes: Vec<String>,
    ) -> Result<(), AuthError> {
        let client =
            registration::client_for(&self.config, &self.http, &found.server, held.as_ref())
                .await?;
        let mut credentials = Credentials {
            issuer: found.server.issuer.clone(),
            token_endpoint: found.server.token_endpoint.clone(),
            resource: found.resource.resource.clone(),
            client,
            tokens: None,
        };
        let tokens = flow::authorize(
            &self.config,
            &self.http,
            found,
            &credentials.client,
            &scopes,
        )
        .await;
        let tokens = match tokens {
            Ok(tokens) => tokens,
            Err(e) => {
                // A registration is kept for the next attempt; old tokens are not.
                if credentials.client.registered {
                    *held = Some(credentials);
                }
                return Err(e);
            }
        };
        credentials.tokens = Some(tokens);
        *held = Some(credentials);
        self.publish(held.as_ref().and_then(|c| c.tokens.as_ref()));
        self.save(held)
    }
}

/// Why a refresh gave no new token.
enum Refreshed {
    /// There is no refresh token.
    Unavailable,
    /// The authorization server refused it.
    Refused(AuthError),
    /// It could not be done (or its tokens not saved).
    Failed(AuthError),
}

/// The words of a list of scopes, each entry split on white space.
fn words(list: &[String]) -> Vec<&str> {
    list.iter()
        .flat_map(|s| s.split_ascii_whitespace())
        .collect()
}
