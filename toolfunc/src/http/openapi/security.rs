//! The security schemes: the one of the API's authenticator (OAuth 2.0, or a
//! bearer token), the auth hook's, and what an operation requires of a caller.

use serde_json::{Map, Value, json};

use super::doc::Doc;
use crate::auth::Authenticator;

/// The name of the security scheme written for an auth hook nobody described.
pub(super) const AUTH: &str = "auth";

/// The name of the security scheme of the API's authenticator.
pub(super) const OAUTH: &str = "oauth2";

/// The security scheme of an API whose `authenticator` verifies bearer tokens with
/// `scopes`: OAuth 2.0's authorization-code flow when the authenticator knows its
/// authorization server's endpoints, else a bearer token from the servers it names.
pub(in crate::http) fn oauth_scheme(authenticator: &dyn Authenticator, scopes: &[String]) -> Value {
    let servers = authenticator.authorization_servers();
    let from = if servers.is_empty() {
        String::new()
    } else {
        format!(" issued by {}", servers.join(", "))
    };
    let description = format!(
        "An `Authorization: Bearer` token{from}. Each operation lists the scopes it \
         needs; a token without them is refused with 403 `insufficient_scope`."
    );
    match authenticator.endpoints() {
        Some(endpoints) => {
            let scopes: Map<String, Value> = scopes
                .iter()
                .map(|scope| (scope.clone(), Value::from("")))
                .collect();
            json!({
                "type": "oauth2",
                "description": description,
                "flows": {"authorizationCode": {
                    "authorizationUrl": endpoints.authorization,
                    "tokenUrl": endpoints.token,
                    "scopes": scopes,
                }},
            })
        }
        None => json!({"type": "http", "scheme": "bearer", "description": description}),
    }
}

impl Doc<'_> {
    /// An operation's security: a token with `scopes`, and the auth hook's word
    /// when there is a hook.
    pub(super) fn security(&self, scopes: &[String]) -> Value {
        let mut requirement = Map::new();
        requirement.insert(OAUTH.to_owned(), json!(scopes));
        if self.view.auth {
            let name = self
                .view
                .settings
                .security
                .as_ref()
                .map_or(AUTH, |(name, _)| name.as_str());
            requirement.insert(name.to_owned(), json!([]));
        }
        json!([requirement])
    }
}
