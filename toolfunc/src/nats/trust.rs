//! Who may ask a worker for what: the bearer token every request carries (checked
//! by the worker's authenticator), the reply subjects a worker answers to (the
//! requester's inbox only), and the per-call secret a control message must show.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use async_nats::{HeaderMap, Message};

use super::wire::{self, AUTHORIZATION};
use crate::auth::{AuthError, Authenticator, bearer_token};
use crate::error::ToolError;
use crate::identity::Identity;

/// The inbox prefix a worker answers under unless set: async-nats's, nats-py's and
/// the `nats` CLI's.
pub(crate) const DEFAULT_INBOX: &str = "_INBOX.";

/// The longest value, in bytes, of a header a worker keeps for a call's life
/// (`Tf-Caller`, `Tf-Call-Id`, `Tf-Control-Key`) unless set: 256, as for a
/// durable call's id.
pub const DEFAULT_MAX_HEADER: usize = 256;

/// The headers a worker keeps while a call runs (and a durable call stores).
const KEPT: [&str; 3] = [wire::CALLER, wire::CALL_ID, wire::CONTROL_KEY];

/// A worker's checks, shared by its calls, its control subjects and its durable
/// calls.
pub(crate) struct Trust {
    authenticator: Option<Arc<dyn Authenticator>>,
    inbox: String,
    max_header: usize,
    /// Whether a verified caller's answers go only under `<inbox><subject>.`.
    per_subject: bool,
    dropped: AtomicU64,
}

impl std::fmt::Debug for Trust {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Trust")
            .field("authenticator", &self.authenticator.is_some())
            .field("inbox", &self.inbox)
            .field("max_header", &self.max_header)
            .field("per_subject", &self.per_subject)
            .field("dropped", &self.dropped)
            .finish()
    }
}

impl Trust {
    pub(crate) fn new(
        authenticator: Option<Arc<dyn Authenticator>>,
        inbox: String,
        (max_header, per_subject): (usize, bool),
    ) -> Self {
        Self {
            authenticator,
            inbox,
            max_header,
            per_subject,
            dropped: AtomicU64::new(0),
        }
    }

    /// Whether the answers of a request from `identity` may go to `reply`: with
    /// inboxes per subject, a verified caller's only under `<inbox><subject>.`
    /// (its own inbox), so it cannot point them at another caller's; any reply
    /// under the inbox prefix otherwise. One that may not is counted as dropped.
    pub(crate) fn fits(&self, reply: &str, identity: Option<&Identity>) -> bool {
        let fits = match identity {
            Some(identity) if self.per_subject => reply
                .strip_prefix(self.inbox.as_str())
                .and_then(|rest| rest.strip_prefix(identity.subject()))
                .is_some_and(|rest| rest.len() > 1 && rest.starts_with('.')),
            _ => true,
        };
        if !fits {
            self.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::debug!(
                reply,
                "a NATS request whose reply subject is not its caller's inbox; dropped"
            );
        }
        fits
    }

    /// Refuses a request any of whose kept headers is longer than the bound:
    /// `INVALID_HEADER` (400) naming the header and the bound, before anything is
    /// kept for it.
    pub(crate) fn screen(&self, headers: Option<&HeaderMap>) -> Result<(), ToolError> {
        let Some(headers) = headers else {
            return Ok(());
        };
        for name in KEPT {
            if let Some(value) = headers.get(name)
                && value.as_str().len() > self.max_header
            {
                return Err(ToolError::custom(
                    "INVALID_HEADER",
                    400,
                    format!(
                        "`{name}` is {} bytes long; at most {} are taken",
                        value.as_str().len(),
                        self.max_header
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The reply subject of a request when it lies under the inbox prefix; any
    /// other is dropped (and counted): a worker never publishes where a requester
    /// points it, only to the requester's own inbox.
    pub(crate) fn reply<'a>(&self, message: &'a Message) -> Option<&'a str> {
        let reply = message.reply.as_deref()?;
        if reply.len() > self.inbox.len() && reply.starts_with(&self.inbox) {
            return Some(reply);
        }
        self.dropped.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(
            reply,
            "a NATS request whose reply subject is no inbox; dropped"
        );
        None
    }

    /// How many requests were dropped for their reply subject.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// The identity a request's bearer token proves: `None` when the worker has no
    /// authenticator, `UNAUTHENTICATED` (401) or `UNAVAILABLE` (503) when the
    /// token proves none.
    pub(crate) async fn identity(
        &self,
        headers: Option<&HeaderMap>,
    ) -> Result<Option<Identity>, ToolError> {
        let Some(authenticator) = &self.authenticator else {
            return Ok(None);
        };
        let token = bearer(headers).map_err(|err| err.to_tool_error())?;
        authenticator
            .authenticate(token)
            .await
            .map(Some)
            .map_err(|err| err.to_tool_error())
    }
}

/// The bearer token of a request (`Authorization: Bearer <token>`): `None` without
/// the header, an error for another scheme or an empty token.
pub(crate) fn bearer(headers: Option<&HeaderMap>) -> Result<Option<&str>, AuthError> {
    let Some(text) = wire::header(headers, AUTHORIZATION) else {
        return Ok(None);
    };
    bearer_token(text).map(Some)
}

/// Whether two secrets are equal, in a time that depends on their lengths only.
pub(crate) fn same_secret(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let mut diff = u8::from(a.len() != b.len());
    for (i, x) in a.iter().enumerate() {
        diff |= x ^ b.get(i).copied().unwrap_or(!x);
    }
    diff == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_tokens_are_read_from_the_header() {
        let mut headers = HeaderMap::new();
        assert_eq!(bearer(Some(&headers)), Ok(None));
        headers.insert(AUTHORIZATION, "Bearer abc");
        assert_eq!(bearer(Some(&headers)), Ok(Some("abc")));
        headers.insert(AUTHORIZATION, "bearer  abc ");
        assert_eq!(bearer(Some(&headers)), Ok(Some("abc")));
        headers.insert(AUTHORIZATION, "Basic abc");
        assert!(bearer(Some(&headers)).is_err());
        headers.insert(AUTHORIZATION, "Bearer");
        assert!(bearer(Some(&headers)).is_err());
    }

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret("abc", "abc"));
        assert!(!same_secret("abc", "abd"));
        assert!(!same_secret("abc", "ab"));
        assert!(!same_secret("", "a"));
    }
}
