//! The streamable HTTP wire's small pieces, read by every path that answers without
//! the SDK (the direct and at-rest paths, the gate): one header's value, whether a
//! `POST` is one the SDK would answer plainly, a host allowed by name, a JSON-RPC
//! message written as a response or framed as an SSE event.

use std::convert::Infallible;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::Response;
use futures::{Stream, StreamExt};
use rmcp::model::{ErrorCode, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;

/// `message` written as the SDK writes a single answer: JSON, with the status the
/// SDK gives its error code.
pub(super) fn written(message: &ServerJsonRpcMessage) -> Response {
    let status = match message {
        ServerJsonRpcMessage::Error(error) => match error.error.code {
            ErrorCode::UNSUPPORTED_PROTOCOL_VERSION
            | ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY
            | ErrorCode::HEADER_MISMATCH => StatusCode::BAD_REQUEST,
            ErrorCode::METHOD_NOT_FOUND => StatusCode::NOT_FOUND,
            _ => StatusCode::OK,
        },
        _ => StatusCode::OK,
    };
    let body = match serde_json::to_vec(message) {
        Ok(body) => body,
        Err(err) => {
            tracing::error!(%err, "an MCP answer could not be written");
            let mut response = Response::new(Body::from("Internal Server Error"));
            *response.status_mut() = StatusCode::INTERNAL_SERVER_ERROR;
            return response;
        }
    };
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// The one value of header `name`, as text; `None` when it is absent, repeated or
/// not text.
pub(super) fn one<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (Some(value), None) => value.to_str().ok(),
        _ => None,
    }
}

/// Whether a `POST` with these headers is one the SDK would answer with a single
/// JSON message, and whose checks hold as written: `json_response` on, no
/// `Origin`, a `Host` the allowed hosts name, `Content-Type` JSON, `Accept` both
/// JSON and SSE, and a `Content-Length` within the body limit.
pub(super) fn posts_plainly(headers: &HeaderMap, config: &StreamableHttpServerConfig) -> bool {
    let one = |name: &str| one(headers, name);
    // The SDK answers one message as JSON only when told to.
    config.json_response
        && !headers.contains_key(header::ORIGIN)
        && one(header::HOST.as_str()).is_some_and(|host| host_named(host, config))
        && one(header::CONTENT_TYPE.as_str()).is_some_and(|value| {
            value
                .split(';')
                .next()
                .is_some_and(|essence| essence.trim().eq_ignore_ascii_case("application/json"))
        })
        && one(header::ACCEPT.as_str()).is_some_and(accepts_both)
        && one(header::CONTENT_LENGTH.as_str())
            .and_then(|length| length.parse::<usize>().ok())
            .is_some_and(|length| length <= config.max_request_body_bytes)
}

/// Whether an `Accept` value names both JSON and SSE, plainly (no weights).
fn accepts_both(accept: &str) -> bool {
    if accept.contains('"') || accept.contains("q=") || accept.contains("Q=") {
        return false;
    }
    let essences = || {
        accept
            .split(',')
            .filter_map(|entry| entry.split(';').next())
            .map(str::trim)
    };
    essences().any(|e| e.eq_ignore_ascii_case("application/json"))
        && essences().any(|e| e.eq_ignore_ascii_case("text/event-stream"))
}

/// Whether `host` (a `Host` header) is allowed by name as written: every host when
/// the list is empty, else an entry equal to the host, with or without its port.
pub(super) fn host_named(host: &str, config: &StreamableHttpServerConfig) -> bool {
    if config.allowed_hosts.is_empty() {
        return true;
    }
    let Ok(authority) = host.parse::<axum::http::uri::Authority>() else {
        return false;
    };
    config
        .allowed_hosts
        .iter()
        .any(|allowed| allowed == authority.host() || allowed == authority.as_str())
}

/// One SSE event of `message`.
pub(super) fn frame(message: &ServerJsonRpcMessage) -> Bytes {
    let mut frame = b"event: message\ndata: ".to_vec();
    if serde_json::to_writer(&mut frame, message).is_err() {
        tracing::error!("an MCP message could not be written");
        frame.truncate(0);
        return Bytes::from(frame);
    }
    frame.extend_from_slice(b"\n\n");
    Bytes::from(frame)
}

pub(super) fn sse(frames: impl Stream<Item = Bytes> + Send + 'static) -> Response {
    let mut response = Response::new(Body::from_stream(frames.map(Ok::<_, Infallible>)));
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    response
}

#[cfg(test)]
mod tests {
    use super::accepts_both;

    #[test]
    fn accept_values_taken_plainly() {
        assert!(accepts_both("application/json, text/event-stream"));
        assert!(accepts_both(
            "text/event-stream,application/json;charset=utf-8"
        ));
        assert!(!accepts_both("application/json"));
        assert!(!accepts_both("application/json, text/event-stream;q=0"));
        assert!(!accepts_both("*/*"));
    }
}
