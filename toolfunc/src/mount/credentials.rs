//! A mount's own OAuth 2.0 client-credentials grant (RFC 6749 §4.4): a token
//! asked of the authorization server when first needed, kept until shortly
//! before it expires, and asked for again after the source refuses it.

use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::sync::Mutex;

use super::unavailable;
use crate::error::ToolError;
use crate::time::Instant;

/// How long before its expiry a token is replaced.
const EARLY: Duration = Duration::from_secs(30);
/// A token's lifetime when the authorization server names none.
const DEFAULT_LIFETIME: Duration = Duration::from_secs(3600);

/// An OAuth 2.0 client-credentials grant: the mount asks `token_url` for a
/// token as `client_id` (HTTP Basic authentication with the secret) and sends it
/// as a bearer token to its source.
///
/// ```
/// use toolfunc::mount::{ClientCredentials, Mount};
///
/// let grant = ClientCredentials::new("https://sso.example.com/token", "tools-hub", "s3cret")
///     .scopes(["mcp:tools"])
///     .resource("https://mcp.example.com/mcp");
/// let mount = Mount::new("remote", "mcp+https://mcp.example.com/mcp").client_credentials(grant);
/// # let _ = mount;
/// ```
#[derive(Clone)]
pub struct ClientCredentials {
    pub(crate) token_url: String,
    pub(crate) client_id: String,
    pub(crate) client_secret: String,
    pub(crate) scopes: Vec<String>,
    pub(crate) resource: Option<String>,
}

impl std::fmt::Debug for ClientCredentials {
    // The secret is not shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientCredentials")
            .field("token_url", &self.token_url)
            .field("client_id", &self.client_id)
            .field("scopes", &self.scopes)
            .field("resource", &self.resource)
            .finish_non_exhaustive()
    }
}

impl ClientCredentials {
    /// The grant of `client_id` with `client_secret` at the token endpoint
    /// `token_url`.
    pub fn new(
        token_url: impl Into<String>,
        client_id: impl Into<String>,
        client_secret: impl Into<String>,
    ) -> Self {
        Self {
            token_url: token_url.into(),
            client_id: client_id.into(),
            client_secret: client_secret.into(),
            scopes: Vec::new(),
            resource: None,
        }
    }

    /// The scopes to ask for (`scope`, space-separated).
    #[must_use]
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// The resource the token is for (RFC 8707 `resource`: the source's URL).
    #[must_use]
    pub fn resource(mut self, resource: impl Into<String>) -> Self {
        self.resource = Some(resource.into());
        self
    }
}

/// Tokens of one grant, asked for when needed.
#[derive(Debug)]
pub(crate) struct Tokens {
    grant: ClientCredentials,
    http: reqwest::Client,
    kept: Mutex<Option<(String, Instant)>>,
}

impl Tokens {
    pub(crate) fn new(grant: ClientCredentials, http: reqwest::Client) -> Arc<Self> {
        Arc::new(Self {
            grant,
            http,
            kept: Mutex::new(None),
        })
    }

    /// A token that is not about to expire: the kept one, or a new one.
    pub(crate) async fn token(&self) -> Result<String, ToolError> {
        let mut kept = self.kept.lock().await;
        if let Some((token, until)) = &*kept
            && Instant::now() < *until
        {
            return Ok(token.clone());
        }
        let (token, lifetime) = self.ask().await?;
        let until = Instant::now() + lifetime.saturating_sub(EARLY).max(Duration::from_secs(1));
        *kept = Some((token.clone(), until));
        Ok(token)
    }

    /// Forgets the kept token (the source refused it): the next request asks for
    /// a new one.
    pub(crate) async fn forget(&self) {
        *self.kept.lock().await = None;
    }

    async fn ask(&self) -> Result<(String, Duration), ToolError> {
        let grant = &self.grant;
        let mut form = vec![("grant_type", "client_credentials".to_owned())];
        if !grant.scopes.is_empty() {
            form.push(("scope", grant.scopes.join(" ")));
        }
        if let Some(resource) = &grant.resource {
            form.push(("resource", resource.clone()));
        }
        let failed = |why: String| {
            unavailable(format!(
                "the token endpoint {} did not give a token: {why}",
                grant.token_url
            ))
        };
        let response = self
            .http
            .post(&grant.token_url)
            .basic_auth(&grant.client_id, Some(&grant.client_secret))
            .form(&form)
            .send()
            .await
            .map_err(|e| failed(e.to_string()))?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(|e| failed(e.to_string()))?;
        let body: Value = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        if !status.is_success() {
            let error = body.get("error").and_then(Value::as_str).unwrap_or("");
            return Err(failed(format!("{status} {error}")));
        }
        let token = body
            .get("access_token")
            .and_then(Value::as_str)
            .ok_or_else(|| failed("the answer has no access_token".into()))?;
        let lifetime = body
            .get("expires_in")
            .and_then(Value::as_u64)
            .map_or(DEFAULT_LIFETIME, Duration::from_secs);
        Ok((token.to_owned(), lifetime))
    }
}
