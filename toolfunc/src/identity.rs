//! `Identity`: who a call comes from, as an authenticator verified it.
//!
//! A remote surface with an [`Authenticator`](crate::auth::Authenticator) sets it on
//! every call it admits; a tool reads it with [`Ctx::identity`](crate::Ctx::identity)
//! and a layer with [`Call::identity`](crate::layer::Call::identity). The name a client
//! states about itself ([`CallOptions::caller`](crate::CallOptions::caller)) stays a
//! label for logs: once a call carries an identity, tracked calls, parked rounds and the
//! per-caller limits key on it instead (its issuer and subject: [`Identity::key`]).

use std::fmt;
use std::sync::Arc;

use serde_json::{Map, Value};

/// A verified caller: the subject, the issuer that vouched for it, the scopes it was
/// granted and the claims of its credential.
///
/// ```
/// use toolfunc::Identity;
///
/// let who = Identity::new("user-7")
///     .with_issuer("https://auth.example.com")
///     .with_scopes(["files:read", "files:write"]);
/// assert!(who.has_scopes(&["files:read"]));
/// assert!(!who.has_scopes(&["admin"]));
/// ```
#[derive(Clone, PartialEq, Eq)]
pub struct Identity(Arc<Parts>);

/// What an identity holds, shared by its clones (a call and its nested calls, the
/// cache of verified tokens): cloning an identity copies a pointer.
#[derive(Clone, PartialEq, Eq)]
struct Parts {
    subject: String,
    issuer: Option<String>,
    /// `<issuer>#<subject>`, when there is an issuer.
    key: Option<Box<str>>,
    scopes: Vec<String>,
    claims: Map<String, Value>,
}

impl Identity {
    /// An identity for `subject`, with no issuer, scopes or claims.
    pub fn new(subject: impl Into<String>) -> Self {
        Self(Arc::new(Parts {
            subject: subject.into(),
            issuer: None,
            key: None,
            scopes: Vec::new(),
            claims: Map::new(),
        }))
    }

    /// Sets the issuer that vouched for the subject.
    #[must_use]
    pub fn with_issuer(mut self, issuer: impl Into<String>) -> Self {
        let parts = Arc::make_mut(&mut self.0);
        let issuer = issuer.into();
        parts.key = Some(format!("{issuer}#{}", parts.subject).into());
        parts.issuer = Some(issuer);
        self
    }

    /// Sets the scopes granted (duplicates are kept once).
    #[must_use]
    pub fn with_scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        let mut scopes: Vec<String> = scopes.into_iter().map(Into::into).collect();
        scopes.sort_unstable();
        scopes.dedup();
        Arc::make_mut(&mut self.0).scopes = scopes;
        self
    }

    /// Sets the claims of the credential (a JWT's payload, say).
    #[must_use]
    pub fn with_claims(mut self, claims: Map<String, Value>) -> Self {
        Arc::make_mut(&mut self.0).claims = claims;
        self
    }

    /// The subject: who the caller is, as the issuer names it.
    pub fn subject(&self) -> &str {
        &self.0.subject
    }

    /// Who the caller is across issuers: `<issuer>#<subject>` (the same subject
    /// from two issuers is two callers), or the subject alone when no issuer is
    /// known. What tracked calls, parked rounds, sessions, shares and per-caller
    /// limits are keyed on.
    ///
    /// ```
    /// use toolfunc::Identity;
    ///
    /// let ann = Identity::new("ann").with_issuer("https://a.example.com");
    /// let other = Identity::new("ann").with_issuer("https://b.example.com");
    /// assert_eq!(ann.key(), "https://a.example.com#ann");
    /// assert_ne!(ann.key(), other.key());
    /// assert_eq!(Identity::new("ci").key(), "ci");
    /// ```
    pub fn key(&self) -> &str {
        self.0.key.as_deref().unwrap_or(&self.0.subject)
    }

    /// The issuer that vouched for the subject, when known.
    pub fn issuer(&self) -> Option<&str> {
        self.0.issuer.as_deref()
    }

    /// The scopes granted, sorted.
    pub fn scopes(&self) -> &[String] {
        &self.0.scopes
    }

    /// Whether every scope of `needed` was granted.
    pub fn has_scopes<S: AsRef<str>>(&self, needed: &[S]) -> bool {
        needed.iter().all(|s| {
            self.0
                .scopes
                .binary_search_by(|g| g.as_str().cmp(s.as_ref()))
                .is_ok()
        })
    }

    /// All claims of the credential.
    pub fn claims(&self) -> &Map<String, Value> {
        &self.0.claims
    }

    /// One claim of the credential.
    pub fn claim(&self, name: &str) -> Option<&Value> {
        self.0.claims.get(name)
    }
}

impl fmt::Debug for Identity {
    // The claims stay out of logs: they may hold personal data.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Identity")
            .field("subject", &self.0.subject)
            .field("issuer", &self.0.issuer)
            .field("scopes", &self.0.scopes)
            .field("claims", &self.0.claims.len())
            .finish()
    }
}

/// Whether `text` is an OAuth scope token (RFC 6749 §3.3): a non-empty run of
/// visible ASCII characters other than `"` and `\`.
pub(crate) fn is_scope(text: &str) -> bool {
    !text.is_empty()
        && text
            .bytes()
            .all(|b| matches!(b, 0x21 | 0x23..=0x5B | 0x5D..=0x7E))
}
