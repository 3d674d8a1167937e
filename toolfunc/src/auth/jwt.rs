//! Bearer JWTs from an OAuth 2.1 authorization server (feature `jwt`): the check a
//! resource server makes, as the MCP specification's authorization asks.
//!
//! [`Jwt`] takes a token when its signature verifies with one of the issuer's keys
//! (its JWKS, found through RFC 8414 or OpenID discovery, or given directly), its `iss`
//! is the issuer, its `aud` names this server's resource URI (RFC 8707), `exp` has not
//! passed and `nbf` has (with a leeway for clock skew), and it has a `sub`. The
//! algorithm is pinned per key (the key's `alg`, else the one its type and curve imply):
//! `none`, symmetric (HS*) algorithms and a token whose algorithm is not its key's are
//! refused. A token naming an unknown key id makes the keys be fetched again, at most
//! once a minute. Tokens already verified are kept (up to a bound) until they expire,
//! so a client's repeated calls cost a map lookup.
//!
//! Scopes come from the `scope` claim (space-separated, RFC 8693) or `scp` (a list or
//! a string).
//!
//! ```no_run
//! # async fn run() -> Result<(), toolfunc::ToolError> {
//! use toolfunc::auth::jwt::Jwt;
//!
//! // Finds the keys through https://auth.example.com/.well-known/… (HTTPS needs the
//! // `rustls` feature).
//! let auth = Jwt::discover("https://auth.example.com/realms/tools", "https://tools.example.com/mcp").await?;
//! # let _ = auth; Ok(()) }
//! ```

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::sync::{Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures::future::BoxFuture;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, EllipticCurve, Jwk, JwkSet, PublicKeyUse};
use jsonwebtoken::{Algorithm, AlgorithmFamily, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::{AuthError, Authenticator, MAX_CREDENTIAL_BYTES};
use crate::error::ToolError;
use crate::identity::Identity;

/// How long the issuer has to answer a discovery or key request.
const FETCH_TIMEOUT: Duration = Duration::from_secs(10);
/// How long fetched keys are trusted before they are fetched again, unless set:
/// a key the issuer withdrew stops verifying tokens within this time.
pub const DEFAULT_KEYS_MAX_AGE: Duration = Duration::from_secs(15 * 60);
/// The largest discovery document or key set read.
const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;

/// Checks bearer JWTs of one issuer for one audience. See the [module](self) docs.
pub struct Jwt {
    issuer: String,
    audience: String,
    leeway: Duration,
    jwks_uri: Option<String>,
    /// The issuer's authorization and token endpoints, from its metadata.
    endpoints: Option<super::Endpoints>,
    client: Option<reqwest::Client>,
    keys: RwLock<Keys>,
    /// Serialises fetches; holds when the last one started.
    last_fetch: tokio::sync::Mutex<Option<Instant>>,
    refetch_every: Duration,
    keys_max_age: Duration,
    verified: Mutex<HashMap<Box<str>, (Identity, u64)>>,
    cache_size: usize,
}

impl fmt::Debug for Jwt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Jwt")
            .field("issuer", &self.issuer)
            .field("audience", &self.audience)
            .field("leeway", &self.leeway)
            .field("jwks_uri", &self.jwks_uri)
            .finish_non_exhaustive()
    }
}

/// The issuer's keys, each with the one algorithm it verifies.
#[derive(Default)]
struct Keys {
    by_id: HashMap<String, (DecodingKey, Algorithm)>,
    /// Keys without a `kid`, tried for tokens without one.
    unnamed: Vec<(DecodingKey, Algorithm)>,
}

impl Jwt {
    /// Finds the issuer's keys through its metadata: RFC 8414
    /// (`/.well-known/oauth-authorization-server`), then OpenID discovery
    /// (`/.well-known/openid-configuration`), each as the specifications place it
    /// for an issuer with a path; the document must name the same `issuer` and a
    /// `jwks_uri`. `audience` is this server's resource URI: tokens must name it in
    /// `aud`.
    pub async fn discover(
        issuer: impl Into<String>,
        audience: impl Into<String>,
    ) -> Result<Self, ToolError> {
        let issuer = issuer.into();
        let client = client()?;
        let mut tried = Vec::new();
        let mut jwks_uri = None;
        let mut endpoints = None;
        for url in metadata_urls(&issuer) {
            match fetch_json(&client, &url).await {
                Ok(doc) => {
                    if doc.get("issuer").and_then(Value::as_str) != Some(issuer.as_str()) {
                        return Err(setup_error(format!(
                            "{url} names issuer {} instead of {issuer}",
                            doc.get("issuer").unwrap_or(&Value::Null)
                        )));
                    }
                    let Some(uri) = doc.get("jwks_uri").and_then(Value::as_str) else {
                        return Err(setup_error(format!("{url} names no jwks_uri")));
                    };
                    jwks_uri = Some(uri.to_owned());
                    let endpoint = |key: &str| doc.get(key).and_then(Value::as_str);
                    if let (Some(authorization), Some(token)) = (
                        endpoint("authorization_endpoint"),
                        endpoint("token_endpoint"),
                    ) {
                        endpoints = Some(super::Endpoints::new(authorization, token));
                    }
                    break;
                }
                Err(err) => tried.push(format!("{url}: {err}")),
            }
        }
        let Some(jwks_uri) = jwks_uri else {
            return Err(setup_error(format!(
                "no authorization server metadata found for {issuer} ({})",
                tried.join("; ")
            )));
        };
        let mut jwt = Self::fetched(issuer, audience, client, jwks_uri).await?;
        jwt.endpoints = endpoints;
        Ok(jwt)
    }

    /// Checks tokens against the keys fetched from `jwks_uri` with `client`, which
    /// fetches them again for unknown key ids.
    async fn fetched(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        client: reqwest::Client,
        jwks_uri: String,
    ) -> Result<Self, ToolError> {
        let set = fetch_json(&client, &jwks_uri)
            .await
            .map_err(|e| setup_error(format!("the keys at {jwks_uri}: {e}")))?;
        let mut jwt = Self::with_keys(issuer, audience, &set)?;
        jwt.jwks_uri = Some(jwks_uri);
        jwt.client = Some(client);
        *jwt.last_fetch.get_mut() = Some(Instant::now());
        Ok(jwt)
    }

    /// Checks tokens against the keys of a JWKS document (`{"keys": [...]}`), given
    /// directly; they are never fetched again.
    pub fn with_keys(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        jwks: &Value,
    ) -> Result<Self, ToolError> {
        let keys = parse_keys(jwks).map_err(setup_error)?;
        Ok(Self {
            issuer: issuer.into(),
            audience: audience.into(),
            leeway: Duration::from_secs(60),
            jwks_uri: None,
            endpoints: None,
            client: None,
            keys: RwLock::new(keys),
            last_fetch: tokio::sync::Mutex::new(None),
            refetch_every: Duration::from_secs(60),
            keys_max_age: DEFAULT_KEYS_MAX_AGE,
            verified: Mutex::new(HashMap::new()),
            cache_size: 1024,
        })
    }

    /// Fetches the keys from `jwks_uri` (and again when a token names an unknown key)
    /// instead of discovering where they are.
    pub async fn with_jwks_uri(
        issuer: impl Into<String>,
        audience: impl Into<String>,
        jwks_uri: impl Into<String>,
    ) -> Result<Self, ToolError> {
        let jwks_uri = jwks_uri.into();
        let client = client()?;
        Self::fetched(issuer, audience, client, jwks_uri).await
    }

    /// How far `exp` and `nbf` may be off for clock skew (default 60 s).
    #[must_use]
    pub fn leeway(mut self, leeway: Duration) -> Self {
        self.leeway = leeway;
        self
    }

    /// How many verified tokens are kept until they expire (default 1,024; 0 keeps
    /// none and verifies every request's signature).
    #[must_use]
    pub fn cache_size(mut self, size: usize) -> Self {
        self.cache_size = size;
        self
    }

    /// The least time between two fetches of the keys for unknown key ids (default
    /// 60 s): a flood of tokens naming made-up keys cannot make the server hammer the
    /// issuer.
    #[must_use]
    pub fn refetch_every(mut self, every: Duration) -> Self {
        self.refetch_every = every;
        self
    }

    /// How long fetched keys are trusted before they are fetched again, on the
    /// first request after that (default [`DEFAULT_KEYS_MAX_AGE`], 15 minutes): a
    /// key the issuer withdrew from its key set stops verifying tokens then, and
    /// tokens verified under it are forgotten. While the issuer cannot be reached,
    /// the keys held are kept (and it is asked again at most every
    /// [`refetch_every`](Self::refetch_every)). Keys given with
    /// [`with_keys`](Self::with_keys) are never fetched.
    #[must_use]
    pub fn keys_max_age(mut self, age: Duration) -> Self {
        self.keys_max_age = age;
        self
    }

    /// The issuer whose tokens are taken.
    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    /// The audience tokens must name: this server's resource URI.
    pub fn audience(&self) -> &str {
        &self.audience
    }

    async fn verify(&self, token: &str) -> Result<Identity, AuthError> {
        if token.len() > MAX_CREDENTIAL_BYTES {
            return Err(AuthError::Invalid("the token is too long".into()));
        }
        self.refresh_if_stale().await;
        let now = unix_now();
        if let Some(identity) = self.cached(token, now) {
            return Ok(identity);
        }
        let header = jsonwebtoken::decode_header(token)
            .map_err(|_| AuthError::Invalid("the token is not a well-formed JWT".into()))?;
        if header.alg.family() == AlgorithmFamily::Hmac {
            return Err(AuthError::Invalid(
                "symmetric algorithms are not taken".into(),
            ));
        }
        let found = self.key_for(header.kid.as_deref(), header.alg);
        let (key, alg) = if let Some(found) = found {
            found
        } else {
            self.refetch().await?;
            self.key_for(header.kid.as_deref(), header.alg)
                .ok_or_else(|| AuthError::Invalid("the token names an unknown key".into()))?
        };
        if alg != header.alg {
            return Err(AuthError::Invalid(
                "the token's algorithm is not its key's".into(),
            ));
        }
        let mut validation = Validation::new(alg);
        validation.set_issuer(&[&self.issuer]);
        validation.set_audience(&[&self.audience]);
        validation.required_spec_claims = ["exp", "iss", "aud", "sub"]
            .into_iter()
            .map(str::to_owned)
            .collect::<HashSet<_>>();
        validation.leeway = self.leeway.as_secs();
        validation.validate_nbf = true;
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &validation)
            .map_err(|e| refusal(e.kind()))?;
        let claims = data.claims;
        let identity = identity_of(&self.issuer, claims)?;
        let exp = identity.claim("exp").and_then(Value::as_u64).unwrap_or(now);
        self.remember(token, &identity, exp, now);
        Ok(identity)
    }

    fn cached(&self, token: &str, now: u64) -> Option<Identity> {
        if self.cache_size == 0 {
            return None;
        }
        let verified = self.verified.lock().unwrap_or_else(PoisonError::into_inner);
        let (identity, exp) = verified.get(token)?;
        (now <= exp.saturating_add(self.leeway.as_secs())).then(|| identity.clone())
    }

    fn remember(&self, token: &str, identity: &Identity, exp: u64, now: u64) {
        if self.cache_size == 0 {
            return;
        }
        let mut verified = self.verified.lock().unwrap_or_else(PoisonError::into_inner);
        if verified.len() >= self.cache_size {
            let leeway = self.leeway.as_secs();
            verified.retain(|_, (_, exp)| now <= exp.saturating_add(leeway));
            if verified.len() >= self.cache_size {
                verified.clear();
            }
        }
        verified.insert(token.into(), (identity.clone(), exp));
    }

    fn key_for(&self, kid: Option<&str>, alg: Algorithm) -> Option<(DecodingKey, Algorithm)> {
        let keys = self.keys.read().unwrap_or_else(PoisonError::into_inner);
        match kid {
            Some(kid) => keys.by_id.get(kid).cloned(),
            None => keys
                .unnamed
                .iter()
                .chain(keys.by_id.values())
                .find(|(_, a)| *a == alg)
                .cloned(),
        }
    }

    /// Fetches the keys again, unless they were fetched less than `refetch_every`
    /// ago (or are given, not fetched).
    async fn refetch(&self) -> Result<(), AuthError> {
        self.fetch_keys(self.refetch_every).await
    }

    /// Fetches the keys again when they are older than `keys_max_age`; a failed
    /// fetch keeps the keys held (a request is not refused for it).
    async fn refresh_if_stale(&self) {
        if self.jwks_uri.is_none() {
            return;
        }
        // Another request fetching now does the work for this one.
        let stale = self
            .last_fetch
            .try_lock()
            .is_ok_and(|last| last.is_none_or(|at| at.elapsed() >= self.keys_max_age));
        if stale
            && let Err(err) = self
                .fetch_keys(self.keys_max_age.min(self.refetch_every))
                .await
        {
            tracing::warn!(error = %err, issuer = %self.issuer, "keeping the keys held");
        }
    }

    /// Fetches the keys unless they were fetched less than `gap` ago; when a key
    /// held before is gone, the tokens verified so far are forgotten, so none
    /// verified under a withdrawn key is taken again.
    async fn fetch_keys(&self, gap: Duration) -> Result<(), AuthError> {
        let (Some(uri), Some(client)) = (&self.jwks_uri, &self.client) else {
            return Ok(());
        };
        let mut last = self.last_fetch.lock().await;
        if last.is_some_and(|at| at.elapsed() < gap) {
            return Ok(());
        }
        *last = Some(Instant::now());
        let set = fetch_json(client, uri)
            .await
            .map_err(|e| AuthError::Unavailable(format!("the issuer's keys: {e}")))?;
        let keys = parse_keys(&set).map_err(AuthError::Unavailable)?;
        let withdrawn = {
            let mut held = self.keys.write().unwrap_or_else(PoisonError::into_inner);
            let withdrawn = held.by_id.keys().any(|kid| !keys.by_id.contains_key(kid))
                || held.unnamed.len() > keys.unnamed.len();
            *held = keys;
            withdrawn
        };
        if withdrawn {
            self.verified
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clear();
        }
        Ok(())
    }
}

impl Authenticator for Jwt {
    fn authenticate<'a>(
        &'a self,
        credential: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Identity, AuthError>> {
        Box::pin(async move {
            match credential {
                None => Err(AuthError::Missing),
                Some(token) => self.verify(token).await,
            }
        })
    }

    fn authorization_servers(&self) -> Vec<String> {
        vec![self.issuer.clone()]
    }

    fn resource(&self) -> Option<String> {
        Some(self.audience.clone())
    }

    fn endpoints(&self) -> Option<super::Endpoints> {
        self.endpoints.clone()
    }
}

/// What a failed check tells the caller (no more than which rule it broke).
fn refusal(kind: &ErrorKind) -> AuthError {
    match kind {
        ErrorKind::ExpiredSignature | ErrorKind::ImmatureSignature => AuthError::Expired,
        ErrorKind::InvalidAudience => {
            AuthError::Invalid("the token is for another audience".into())
        }
        ErrorKind::InvalidIssuer => AuthError::Invalid("the token is from another issuer".into()),
        ErrorKind::InvalidSignature => AuthError::Invalid("the signature does not verify".into()),
        ErrorKind::InvalidAlgorithm | ErrorKind::MissingAlgorithm => {
            AuthError::Invalid("the token's algorithm is not its key's".into())
        }
        ErrorKind::MissingRequiredClaim(claim) => {
            AuthError::Invalid(format!("the token has no `{claim}` claim"))
        }
        _ => AuthError::Invalid("the token is not a well-formed JWT".into()),
    }
}

/// The identity a verified token's claims name.
fn identity_of(issuer: &str, claims: Map<String, Value>) -> Result<Identity, AuthError> {
    let Some(subject) = claims.get("sub").and_then(Value::as_str) else {
        return Err(AuthError::Invalid(
            "the token's `sub` is not a string".into(),
        ));
    };
    let mut scopes: Vec<String> = Vec::new();
    for name in ["scope", "scp"] {
        match claims.get(name) {
            Some(Value::String(text)) => {
                scopes.extend(text.split_ascii_whitespace().map(str::to_owned));
            }
            Some(Value::Array(items)) => {
                scopes.extend(items.iter().filter_map(Value::as_str).map(str::to_owned));
            }
            _ => {}
        }
    }
    Ok(Identity::new(subject)
        .with_issuer(issuer)
        .with_scopes(scopes)
        .with_claims(claims))
}

/// The signing keys of a JWKS document, each with its pinned algorithm. Symmetric
/// keys, encryption keys and keys of unknown types are left out.
fn parse_keys(jwks: &Value) -> Result<Keys, String> {
    let set: JwkSet =
        serde_json::from_value(jwks.clone()).map_err(|e| format!("not a JWKS document: {e}"))?;
    let mut keys = Keys::default();
    for jwk in &set.keys {
        if matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)) {
            continue;
        }
        let Some(alg) = pinned_algorithm(jwk) else {
            continue;
        };
        let Ok(key) = DecodingKey::from_jwk(jwk) else {
            continue;
        };
        match &jwk.common.key_id {
            Some(kid) => {
                keys.by_id.insert(kid.clone(), (key, alg));
            }
            None => keys.unnamed.push((key, alg)),
        }
    }
    if keys.by_id.is_empty() && keys.unnamed.is_empty() {
        return Err("the JWKS document has no signing key this server can use".into());
    }
    Ok(keys)
}

/// The one algorithm a key verifies: its `alg`, else the one its type implies.
fn pinned_algorithm(jwk: &Jwk) -> Option<Algorithm> {
    let implied = match &jwk.algorithm {
        AlgorithmParameters::RSA(_) => Algorithm::RS256,
        AlgorithmParameters::EllipticCurve(ec) => match ec.curve {
            EllipticCurve::P256 => Algorithm::ES256,
            EllipticCurve::P384 => Algorithm::ES384,
            _ => return None,
        },
        AlgorithmParameters::OctetKeyPair(okp) if okp.curve == EllipticCurve::Ed25519 => {
            Algorithm::EdDSA
        }
        _ => return None,
    };
    let alg = match jwk.common.key_algorithm {
        Some(named) => named.to_string().parse::<Algorithm>().ok()?,
        None => implied,
    };
    // A key's `alg` must fit its type: an RSA key marked HS256 verifies nothing.
    (alg.family() == implied.family()).then_some(alg)
}

/// Where the metadata of `issuer` may be, in the order the MCP specification tries
/// them: RFC 8414 with the path after the well-known segment, OpenID discovery the
/// same way, then OpenID discovery appended to the issuer.
fn metadata_urls(issuer: &str) -> Vec<String> {
    let trimmed = issuer.trim_end_matches('/');
    let (origin, path) = match trimmed.find("://") {
        Some(scheme) => match trimmed[scheme + 3..].find('/') {
            Some(slash) => trimmed.split_at(scheme + 3 + slash),
            None => (trimmed, ""),
        },
        None => (trimmed, ""),
    };
    if path.is_empty() {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server"),
            format!("{origin}/.well-known/openid-configuration"),
        ]
    } else {
        vec![
            format!("{origin}/.well-known/oauth-authorization-server{path}"),
            format!("{origin}/.well-known/openid-configuration{path}"),
            format!("{origin}{path}/.well-known/openid-configuration"),
        ]
    }
}

fn client() -> Result<reqwest::Client, ToolError> {
    reqwest::Client::builder()
        .timeout(FETCH_TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| setup_error(format!("no HTTP client: {e}")))
}

async fn fetch_json(client: &reqwest::Client, url: &str) -> Result<Value, String> {
    let response = client
        .get(url)
        .header("accept", "application/json")
        .send()
        .await
        .map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("answered {}", response.status()));
    }
    if response
        .content_length()
        .is_some_and(|n| n > MAX_DOCUMENT_BYTES as u64)
    {
        return Err("the document is too large".into());
    }
    let body = response.bytes().await.map_err(|e| e.to_string())?;
    if body.len() > MAX_DOCUMENT_BYTES {
        return Err("the document is too large".into());
    }
    serde_json::from_slice(&body).map_err(|e| format!("not JSON: {e}"))
}

fn setup_error(message: impl Into<String>) -> ToolError {
    ToolError::custom("AUTH_SETUP", 500, message.into())
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

#[cfg(test)]
mod tests {
    use super::metadata_urls;

    #[test]
    fn metadata_is_looked_for_where_the_specifications_put_it() {
        assert_eq!(
            metadata_urls("https://as.example.com"),
            [
                "https://as.example.com/.well-known/oauth-authorization-server",
                "https://as.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            metadata_urls("https://as.example.com/realms/tools/"),
            [
                "https://as.example.com/.well-known/oauth-authorization-server/realms/tools",
                "https://as.example.com/.well-known/openid-configuration/realms/tools",
                "https://as.example.com/realms/tools/.well-known/openid-configuration"
            ]
        );
    }
}
