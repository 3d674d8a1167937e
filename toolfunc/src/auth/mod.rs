//! Who may call from outside: an [`Authenticator`] turns the credential a request
//! carries (a bearer token) into a verified [`Identity`], or refuses it.
//!
//! A remote surface given an authenticator asks it once per request, before it looks
//! the tool up; the identity it answers rides on the call
//! ([`Ctx::identity`](crate::Ctx::identity)), and the name a client states about itself
//! stays a label for logs. Three kinds come ready:
//!
//! - [`ApiKeys`]: static keys, each naming an identity, compared in constant time.
//! - [`jwt::Jwt`] (feature `jwt`): bearer JWTs checked against an OAuth 2.1
//!   authorization server's keys (RFC 8414 / OpenID discovery, or keys given
//!   directly), as the resource server the MCP specification asks for.
//! - [`from_fn`]: your own check, as an async closure.
//!
//! ```
//! use toolfunc::auth::{ApiKeys, Authenticator};
//! use toolfunc::Identity;
//!
//! let keys = ApiKeys::new().key("s3cret-key", Identity::new("ci-bot").with_scopes(["deploy"]));
//! # futures::executor::block_on(async {
//! let who = keys.authenticate(Some("s3cret-key")).await.unwrap();
//! assert_eq!(who.subject(), "ci-bot");
//! assert!(keys.authenticate(Some("guess")).await.is_err());
//! assert!(keys.authenticate(None).await.is_err());
//! # });
//! ```

#[cfg(feature = "jwt")]
pub mod jwt;
#[cfg(any(feature = "http-server", feature = "mcp"))]
pub(crate) mod web;

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use futures::future::BoxFuture;

use crate::error::ToolError;
use crate::identity::Identity;

/// The longest credential an authenticator looks at; a longer one is refused unread.
pub const MAX_CREDENTIAL_BYTES: usize = 8 * 1024;

/// Verifies the credential of a request from outside.
pub trait Authenticator: Send + Sync + 'static {
    /// The identity `credential` proves, or why it proves none. `credential` is the
    /// bearer token the request carried (`None` when it carried none).
    fn authenticate<'a>(
        &'a self,
        credential: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Identity, AuthError>>;

    /// The authorization servers whose tokens this authenticator takes, for the
    /// protected-resource metadata (RFC 9728) a surface publishes. Empty for keys
    /// that no authorization server issues.
    fn authorization_servers(&self) -> Vec<String> {
        Vec::new()
    }

    /// The resource URI the credentials are bound to (a JWT's audience, RFC 8707),
    /// when the authenticator knows it; a surface publishes it as the protected
    /// resource's identifier.
    fn resource(&self) -> Option<String> {
        None
    }

    /// Where a client gets a token (the authorization server's authorization and
    /// token endpoints), when the authenticator knows them; the OpenAPI document
    /// declares an OAuth 2.0 authorization-code flow with them.
    fn endpoints(&self) -> Option<Endpoints> {
        None
    }
}

/// An authorization server's endpoints, as its metadata (RFC 8414) names them.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Endpoints {
    /// `authorization_endpoint`: where a user grants a client access.
    pub authorization: String,
    /// `token_endpoint`: where a client trades a grant for a token.
    pub token: String,
}

impl Endpoints {
    /// The endpoints of an authorization server.
    pub fn new(authorization: impl Into<String>, token: impl Into<String>) -> Self {
        Self {
            authorization: authorization.into(),
            token: token.into(),
        }
    }
}

impl<T: Authenticator + ?Sized> Authenticator for Arc<T> {
    fn authenticate<'a>(
        &'a self,
        credential: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Identity, AuthError>> {
        (**self).authenticate(credential)
    }

    fn authorization_servers(&self) -> Vec<String> {
        (**self).authorization_servers()
    }

    fn resource(&self) -> Option<String> {
        (**self).resource()
    }

    fn endpoints(&self) -> Option<Endpoints> {
        (**self).endpoints()
    }
}

/// Why a request proves no identity. Each becomes a `401 Unauthorized` with a
/// `WWW-Authenticate` challenge on HTTP; [`AuthError::Unavailable`] a `503`.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum AuthError {
    /// The request carried no credential.
    Missing,
    /// The credential is malformed, forged, foreign (another issuer or audience) or
    /// names an unknown key; the text says which, for the caller.
    Invalid(String),
    /// The credential has expired, or is not valid yet.
    Expired,
    /// The credential could not be checked now (the issuer's keys are out of reach).
    Unavailable(String),
}

impl AuthError {
    /// The OAuth error code of a bearer challenge (RFC 6750 §3.1), when there is one:
    /// `invalid_token` for a credential that proves nothing, none for a missing one.
    pub fn oauth_code(&self) -> Option<&'static str> {
        match self {
            Self::Missing | Self::Unavailable(_) => None,
            Self::Invalid(_) | Self::Expired => Some("invalid_token"),
        }
    }

    /// The error a surface answers with: `UNAUTHENTICATED` (401), or `UNAVAILABLE`
    /// (503) when the credential could not be checked.
    pub fn to_tool_error(&self) -> ToolError {
        match self {
            Self::Unavailable(why) => ToolError::custom(
                "UNAVAILABLE",
                503,
                format!("the credential cannot be checked now: {why}"),
            ),
            other => ToolError::custom("UNAUTHENTICATED", 401, other.to_string()),
        }
    }
}

impl fmt::Display for AuthError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Missing => f.write_str("a bearer token is required"),
            Self::Invalid(why) => write!(f, "the bearer token is not valid: {why}"),
            Self::Expired => f.write_str("the bearer token has expired or is not valid yet"),
            Self::Unavailable(why) => write!(f, "the bearer token cannot be checked now: {why}"),
        }
    }
}

impl std::error::Error for AuthError {}

/// Static API keys, each naming the identity it proves. Keys are compared in
/// constant time (the time taken does not say how much of a guess was right).
#[derive(Default, Clone)]
pub struct ApiKeys {
    keys: Vec<(Box<[u8]>, Identity)>,
}

impl fmt::Debug for ApiKeys {
    // The keys are secrets: only their subjects are shown.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list()
            .entries(self.keys.iter().map(|(_, who)| who.subject()))
            .finish()
    }
}

impl ApiKeys {
    /// No keys: every request is refused until keys are added.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a key and the identity it proves.
    #[must_use]
    pub fn key(mut self, key: impl AsRef<str>, identity: Identity) -> Self {
        self.keys.push((
            key.as_ref().as_bytes().to_vec().into_boxed_slice(),
            identity,
        ));
        self
    }
}

/// Whether `a` and `b` are equal, in a time that depends on their lengths only.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    let mut diff = u8::from(a.len() != b.len());
    for (i, x) in a.iter().enumerate() {
        diff |= x ^ b.get(i).copied().unwrap_or(!x);
    }
    diff == 0
}

impl Authenticator for ApiKeys {
    fn authenticate<'a>(
        &'a self,
        credential: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Identity, AuthError>> {
        let found = match credential {
            None => Err(AuthError::Missing),
            Some(given) if given.len() > MAX_CREDENTIAL_BYTES => {
                Err(AuthError::Invalid("the key is too long".into()))
            }
            Some(given) => {
                // Every key is compared, so the time does not say which one matched.
                let mut found = None;
                for (key, identity) in &self.keys {
                    if same_bytes(key, given.as_bytes()) && found.is_none() {
                        found = Some(identity);
                    }
                }
                found
                    .cloned()
                    .ok_or_else(|| AuthError::Invalid("unknown key".into()))
            }
        };
        Box::pin(std::future::ready(found))
    }
}

/// An authenticator of your own: `check` gets the bearer token (or `None`) and
/// answers the identity it proves.
///
/// ```
/// use toolfunc::auth::{self, AuthError, Authenticator};
/// use toolfunc::Identity;
///
/// let auth = auth::from_fn(|token: Option<String>| async move {
///     match token.as_deref() {
///         Some("let-me-in") => Ok(Identity::new("guest")),
///         Some(_) => Err(AuthError::Invalid("unknown token".into())),
///         None => Err(AuthError::Missing),
///     }
/// });
/// # futures::executor::block_on(async {
/// assert_eq!(auth.authenticate(Some("let-me-in")).await.unwrap().subject(), "guest");
/// # });
/// ```
pub fn from_fn<F, Fut>(check: F) -> FromFn<F>
where
    F: Fn(Option<String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Identity, AuthError>> + Send + 'static,
{
    FromFn(check)
}

/// The authenticator [`from_fn`] makes.
#[derive(Clone)]
pub struct FromFn<F>(F);

impl<F> fmt::Debug for FromFn<F> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("FromFn")
    }
}

impl<F, Fut> Authenticator for FromFn<F>
where
    F: Fn(Option<String>) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<Identity, AuthError>> + Send + 'static,
{
    fn authenticate<'a>(
        &'a self,
        credential: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Identity, AuthError>> {
        if credential.is_some_and(|c| c.len() > MAX_CREDENTIAL_BYTES) {
            return Box::pin(std::future::ready(Err(AuthError::Invalid(
                "the token is too long".into(),
            ))));
        }
        Box::pin((self.0)(credential.map(str::to_owned)))
    }
}

/// The token of an `Authorization` header's text: `Bearer <token>` (the scheme in
/// any case), an error for another scheme or an empty token. Every surface that
/// takes bearer tokens reads them here.
#[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
pub(crate) fn bearer_token(text: &str) -> Result<&str, AuthError> {
    let text = text.trim();
    let (scheme, token) = text.split_once(' ').unwrap_or((text, ""));
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Invalid(
            "only `Authorization: Bearer` credentials are taken".into(),
        ));
    }
    let token = token.trim();
    if token.is_empty() {
        return Err(AuthError::Invalid("the bearer token is empty".into()));
    }
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::same_bytes;

    #[test]
    fn same_bytes_is_equality() {
        assert!(same_bytes(b"abc", b"abc"));
        assert!(!same_bytes(b"abc", b"abd"));
        assert!(!same_bytes(b"abc", b"ab"));
        assert!(!same_bytes(b"ab", b"abc"));
        assert!(same_bytes(b"", b""));
        assert!(!same_bytes(b"", b"\0"));
    }
}
