//! Why authorization failed: the step, and what happened there. Never a
//! secret: tokens, codes, verifiers and client secrets are left out of
//! every message, and URLs are named without their query.

use std::fmt;

/// The step of authorization that failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Step {
    /// Reading the protected resource and authorization server metadata.
    Discovery,
    /// Choosing or registering the client.
    Registration,
    /// Sending the user to the authorization server and reading its redirect.
    Authorization,
    /// The token endpoint: exchanging the code, refreshing.
    Token,
    /// Keeping the credentials in the token store.
    Store,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Step::Discovery => "discovery",
            Step::Registration => "registration",
            Step::Authorization => "authorization",
            Step::Token => "token",
            Step::Store => "token store",
        })
    }
}

/// An authorization failure, as the transport reports it.
#[derive(Debug, Clone)]
pub(super) struct AuthError {
    pub(super) step: Step,
    pub(super) message: String,
}

impl AuthError {
    pub(super) fn new(step: Step, message: impl Into<String>) -> Self {
        AuthError {
            step,
            message: message.into(),
        }
    }
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "OAuth {} failed: {}", self.step, self.message)
    }
}

/// Shorthands for each step's errors.
pub(super) fn discovery(m: impl Into<String>) -> AuthError {
    AuthError::new(Step::Discovery, m)
}
pub(super) fn registration(m: impl Into<String>) -> AuthError {
    AuthError::new(Step::Registration, m)
}
pub(super) fn authorization(m: impl Into<String>) -> AuthError {
    AuthError::new(Step::Authorization, m)
}
pub(super) fn token(m: impl Into<String>) -> AuthError {
    AuthError::new(Step::Token, m)
}
