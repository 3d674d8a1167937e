//! The answers the HTTP surface writes: JSON, NDJSON, an error in the wire's
//! shape (with its code kept for the request's span), and a refusal carrying the
//! step-up challenge of the scopes a token lacks.

use axum::body::Body;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::Response;
use serde_json::Value;

use super::api::Api;
use super::wire::{self, NDJSON};
use crate::auth::web;
use crate::error::ToolError;

pub(super) fn json_response(status: StatusCode, value: &Value) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The items of a call that ran for them, gathered, as the NDJSON stream its
/// caller asked for.
pub(super) fn ndjson_response(items: &Value) -> Response {
    let mut body = Vec::new();
    for item in items
        .as_array()
        .map_or(std::slice::from_ref(items), Vec::as_slice)
    {
        if serde_json::to_writer(&mut body, item).is_ok() {
            body.push(b'\n');
        }
    }
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, NDJSON)
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from(body))
        .unwrap_or_default()
}

pub(super) fn error_response(tool: Option<&str>, err: &ToolError) -> Response {
    let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let mut response = json_response(status, &wire::error_body(tool, err));
    response
        .extensions_mut()
        .insert(ErrorType(err.code().to_owned()));
    response
}

/// The code of the error a response answers, for its span's `error.type`.
#[derive(Debug, Clone)]
pub(super) struct ErrorType(pub(super) String);

/// The answer refusing a call with `err`; a call refused for its token's scopes
/// carries the step-up challenge naming the scopes to ask for.
pub(super) fn refusal(
    api: &Api,
    parts: &axum::http::request::Parts,
    tool: Option<&str>,
    err: &ToolError,
) -> Response {
    let response = error_response(tool, err);
    match &api.authenticator {
        Some(authenticator) => web::with_scope_challenge(response, err, || {
            web::metadata_url(&web::resource(
                api.resource.as_deref(),
                authenticator.as_ref(),
                &parts.headers,
                &api.prefix,
            ))
        }),
        None => response,
    }
}
