//! The HTTP side of an [`Authenticator`]: the bearer
//! token a request carries (RFC 6750 §2.1, the `Authorization` header only), the
//! `401` challenge that points a client at the protected-resource metadata, and that
//! metadata (RFC 9728), as the MCP specification's authorization asks of a server.

use std::fmt::Write as _;

use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use super::{AuthError, Authenticator};
use crate::error::ToolError;

/// Where RFC 9728 puts a protected resource's metadata, before the resource's path.
pub(crate) const WELL_KNOWN: &str = "/.well-known/oauth-protected-resource";

/// The bearer token of a request: `None` without an `Authorization` header, an
/// error for another scheme, several headers or a token in the query string (which
/// logs and referrers would leak).
pub(crate) fn bearer(parts: &Parts) -> Result<Option<&str>, AuthError> {
    if parts.uri.query().is_some_and(|q| {
        q.split('&')
            .any(|pair| pair.split('=').next() == Some("access_token"))
    }) {
        return Err(AuthError::Invalid(
            "tokens in the query string are refused; send `Authorization: Bearer …`".into(),
        ));
    }
    let mut values = parts.headers.get_all(header::AUTHORIZATION).iter();
    let Some(value) = values.next() else {
        return Ok(None);
    };
    if values.next().is_some() {
        return Err(AuthError::Invalid("several `Authorization` headers".into()));
    }
    let text = value
        .to_str()
        .map_err(|_| AuthError::Invalid("the `Authorization` header is not text".into()))?;
    super::bearer_token(text).map(Some)
}

/// The resource a surface is: the one set on it, else the authenticator's
/// audience, else this request's own origin and `path`.
pub(crate) fn resource(
    set: Option<&str>,
    authenticator: &dyn Authenticator,
    headers: &HeaderMap,
    path: &str,
) -> String {
    if let Some(set) = set {
        return set.to_owned();
    }
    if let Some(audience) = authenticator.resource() {
        return audience;
    }
    let host = headers
        .get(header::HOST)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("localhost");
    format!("http://{host}{path}")
}

/// The URL of `resource`'s metadata: the well-known segment between its origin
/// and its path (RFC 9728 §3.1).
pub(crate) fn metadata_url(resource: &str) -> String {
    let (origin, path) = match resource.find("://") {
        Some(scheme) => match resource[scheme + 3..].find('/') {
            Some(slash) => resource.split_at(scheme + 3 + slash),
            None => (resource, ""),
        },
        None => ("", resource),
    };
    format!("{origin}{WELL_KNOWN}{}", path.trim_end_matches('/'))
}

/// The path of `resource`'s metadata on its own origin (what [`metadata_url`]
/// names, less the origin): `/.well-known/oauth-protected-resource` for an
/// audience that is an origin alone, `…/api` for `https://host/api`.
pub(crate) fn metadata_path(resource: &str) -> String {
    let url = metadata_url(resource);
    match url.find(WELL_KNOWN) {
        Some(at) => url[at..].to_owned(),
        None => url,
    }
}

/// The metadata path a surface serves besides its own
/// (`/.well-known/oauth-protected-resource<own>`): the one its resource's
/// challenges name, when the resource is known before any request (set on the
/// surface, or the authenticator's audience) and names another path.
pub(crate) fn resource_metadata_path(
    set: Option<&str>,
    authenticator: &dyn Authenticator,
    own: &str,
) -> Option<String> {
    let resource = set
        .map(str::to_owned)
        .or_else(|| authenticator.resource())?;
    let path = metadata_path(&resource);
    (path != format!("{WELL_KNOWN}{own}")).then_some(path)
}

/// The metadata document of `resource`, whose tools declare `scopes` (listed as
/// `scopes_supported` when there are some).
pub(crate) fn metadata(
    resource: &str,
    authenticator: &dyn Authenticator,
    scopes: &[String],
) -> Value {
    let mut document = json!({
        "resource": resource,
        "authorization_servers": authenticator.authorization_servers(),
        "bearer_methods_supported": ["header"],
    });
    if !scopes.is_empty() {
        document["scopes_supported"] = json!(scopes);
    }
    document
}

/// A quoted-string value of a challenge parameter: quotes and backslashes escaped,
/// anything but visible ASCII and spaces dropped.
fn quoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            ' '..='~' => out.push(c),
            _ => {}
        }
    }
    out.push('"');
    out
}

/// The `WWW-Authenticate` value of a refusal: a bearer challenge naming the
/// metadata, with the OAuth error code and the scopes needed when there are some.
pub(crate) fn challenge(
    metadata_url: &str,
    err: Option<&AuthError>,
    scope: Option<&str>,
) -> HeaderValue {
    let mut value = format!("Bearer resource_metadata={}", quoted(metadata_url));
    if let Some(scope) = scope {
        let _ = write!(value, ", scope={}", quoted(scope));
    }
    if let Some(code) = err.and_then(AuthError::oauth_code) {
        let _ = write!(value, ", error={}", quoted(code));
        if let Some(err) = err {
            let _ = write!(value, ", error_description={}", quoted(&err.to_string()));
        }
    }
    HeaderValue::from_str(&value).unwrap_or_else(|_| HeaderValue::from_static("Bearer"))
}

/// Adds the step-up challenge to the answer of a call refused for lacking scopes
/// (`err` is [`INSUFFICIENT_SCOPE`](crate::remote::INSUFFICIENT_SCOPE), answered with
/// 403): `error="insufficient_scope"` and the scopes the call needs (RFC 6750 §3.1),
/// so that the client asks its authorization server for them.
pub(crate) fn with_scope_challenge(
    mut response: Response,
    err: &ToolError,
    metadata_url: impl FnOnce() -> String,
) -> Response {
    if err.code() != crate::remote::INSUFFICIENT_SCOPE {
        return response;
    }
    let scope = err
        .data()
        .and_then(|data| data.get("scope").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_default();
    let value = format!(
        "Bearer resource_metadata={}, scope={}, error=\"insufficient_scope\", \
         error_description={}",
        quoted(&metadata_url()),
        quoted(&scope),
        quoted(&err.to_string()),
    );
    if let Ok(value) = HeaderValue::from_str(&value) {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, value);
    }
    response
}

/// Adds the challenge to a refusal answered with 401.
pub(crate) fn with_challenge(mut response: Response, challenge: HeaderValue) -> Response {
    if response.status() == StatusCode::UNAUTHORIZED {
        response
            .headers_mut()
            .insert(header::WWW_AUTHENTICATE, challenge);
    }
    response
}

/// The metadata document as an answer (cacheable for an hour, readable from any
/// origin: it is public by design).
pub(crate) fn metadata_response(document: &Value) -> Response {
    (
        StatusCode::OK,
        [
            (header::CONTENT_TYPE, "application/json"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
            (header::ACCESS_CONTROL_ALLOW_ORIGIN, "*"),
        ],
        document.to_string(),
    )
        .into_response()
}

/// The identity a request's bearer token proves, or the refusal to answer: a `401`
/// with the challenge naming the metadata of `resource`, or a `503`, each with
/// `error` making the body.
pub(crate) async fn check(
    authenticator: &dyn Authenticator,
    parts: &Parts,
    resource: impl FnOnce() -> String,
    error: impl FnOnce(&ToolError) -> Response,
) -> Result<crate::identity::Identity, Response> {
    let checked = match bearer(parts) {
        Ok(token) => authenticator.authenticate(token).await,
        Err(err) => Err(err),
    };
    checked.map_err(|err| {
        let challenge = challenge(&metadata_url(&resource()), Some(&err), None);
        with_challenge(error(&err.to_tool_error()), challenge)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_metadata_sits_between_origin_and_path() {
        assert_eq!(
            metadata_url("https://tools.example.com/api"),
            "https://tools.example.com/.well-known/oauth-protected-resource/api"
        );
        assert_eq!(
            metadata_url("https://tools.example.com"),
            "https://tools.example.com/.well-known/oauth-protected-resource"
        );
    }

    #[test]
    fn the_metadata_path_is_the_urls_less_its_origin() {
        assert_eq!(
            metadata_path("http://127.0.0.1:3000"),
            "/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            metadata_path("http://127.0.0.1:3000/"),
            "/.well-known/oauth-protected-resource"
        );
        assert_eq!(
            metadata_path("https://tools.example.com/v1/mcp"),
            "/.well-known/oauth-protected-resource/v1/mcp"
        );
    }

    #[test]
    fn challenge_values_are_quoted_safely() {
        let err = AuthError::Invalid("a \"quote\"\n and \\ more".into());
        let value = challenge("https://x/.well-known/y", Some(&err), Some("a b"));
        assert_eq!(
            value.to_str().unwrap(),
            "Bearer resource_metadata=\"https://x/.well-known/y\", scope=\"a b\", \
             error=\"invalid_token\", error_description=\"the bearer token is not valid: \
             a \\\"quote\\\" and \\\\ more\""
        );
        assert_eq!(
            challenge("u", Some(&AuthError::Missing), None)
                .to_str()
                .unwrap(),
            "Bearer resource_metadata=\"u\""
        );
    }
}
