//! Sending one request with the connection's current access token, and,
//! with OAuth configured (feature `oauth`), answering a `401` or a `403`
//! `insufficient_scope` with a new token and sending the request again.
//! Every request of the transport goes through here: POSTs, the `GET`
//! stream, the session's `DELETE`.

use reqwest::header::{AUTHORIZATION, HeaderMap, HeaderValue};

use super::Shared;

/// A reply, and why authorization failed when it did (the reply is then
/// the `401` or `403` that could not be answered).
pub(super) struct Sent {
    pub(super) response: reqwest::Response,
    pub(super) refusal: Option<String>,
}

/// Why a request got no reply.
pub(super) enum SendError {
    /// reqwest's error (no connection, a broken reply).
    Http(reqwest::Error),
    /// No token could be had to send it with: it was not sent.
    #[cfg_attr(
        not(feature = "oauth"),
        allow(dead_code, reason = "made by OAuth only")
    )]
    Auth(String),
}

/// `headers` with `Authorization` set to `token`, when there is one.
pub(super) fn with_token(mut headers: HeaderMap, token: Option<HeaderValue>) -> HeaderMap {
    if let Some(token) = token {
        headers.insert(AUTHORIZATION, token);
    }
    headers
}

impl Shared {
    /// POSTs `body` with `headers` (and the token) to the endpoint, as
    /// [`send`](Self::send) does.
    pub(super) async fn post(
        &self,
        headers: HeaderMap,
        body: bytes::Bytes,
    ) -> Result<Sent, SendError> {
        #[cfg(feature = "oauth")]
        if self.auth.is_some() {
            return self
                .send(|token| {
                    self.client
                        .post(self.url.clone())
                        .headers(with_token(headers.clone(), token))
                        .body(body.clone())
                })
                .await;
        }
        // Sent once: the request is made with the headers as they are,
        // neither copied nor merged into an empty map one by one, as the
        // builder's `headers` would.
        let mut request = reqwest::Request::new(reqwest::Method::POST, self.url.clone());
        *request.headers_mut() = headers;
        *request.body_mut() = Some(body.into());
        let response = self
            .client
            .execute(request)
            .await
            .map_err(SendError::Http)?;
        Ok(Sent {
            response,
            refusal: None,
        })
    }

    /// Sends the request `build` makes for a token (`None`: no OAuth, or
    /// no token yet), as often as authorization asks.
    pub(super) async fn send(
        &self,
        build: impl Fn(Option<HeaderValue>) -> reqwest::RequestBuilder,
    ) -> Result<Sent, SendError> {
        #[cfg(feature = "oauth")]
        if let Some(auth) = &self.auth {
            use super::auth::Verdict;
            let mut rounds = Default::default();
            loop {
                let ticket = auth.ticket().await.map_err(SendError::Auth)?;
                let response = build(ticket.header())
                    .send()
                    .await
                    .map_err(SendError::Http)?;
                let verdict = auth
                    .answer(
                        response.status(),
                        response.headers(),
                        &ticket,
                        &mut rounds,
                        &self.version(),
                    )
                    .await;
                match verdict {
                    Verdict::Done => {
                        return Ok(Sent {
                            response,
                            refusal: None,
                        });
                    }
                    Verdict::Retry => {}
                    Verdict::Refused(why) => {
                        return Ok(Sent {
                            response,
                            refusal: Some(why),
                        });
                    }
                }
            }
        }
        let response = build(None).send().await.map_err(SendError::Http)?;
        Ok(Sent {
            response,
            refusal: None,
        })
    }
}
