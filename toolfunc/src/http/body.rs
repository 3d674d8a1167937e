//! A request's JSON body read as a call's named arguments: bounded by the API's
//! body limit and its read timeout, an object or a clear error.

use axum::body::Body;
use axum::http::{HeaderMap, header};
use serde_json::{Map, Value};

use super::api::Api;
use crate::error::ToolError;
use crate::listen;

/// The JSON body (any content type), at most `body_limit` bytes; empty means `{}`.
pub(super) async fn body_params(
    api: &Api,
    headers: &HeaderMap,
    body: Body,
) -> Result<Value, ToolError> {
    let too_large = || {
        ToolError::custom(
            "PAYLOAD_TOO_LARGE",
            413,
            format!(
                "the request body is larger than the limit of {} bytes",
                api.body_limit
            ),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > api.body_limit as u64) {
        return Err(too_large());
    }
    let limited = http_body_util::Limited::new(body, api.body_limit);
    let bytes = match http_body_util::BodyExt::collect(limited).await {
        Ok(collected) => collected.to_bytes(),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Err(err) if listen::timed_out(&*err) => {
            return Err(ToolError::custom("TIMEOUT", 408, err.to_string()));
        }
        Err(err) => {
            return Err(ToolError::arguments(
                "",
                format!("the request body could not be read: {err}"),
            ));
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    parse_object(&bytes, "")
}

pub(super) fn parse_object(bytes: &[u8], path: &str) -> Result<Value, ToolError> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| ToolError::arguments(path, format!("malformed JSON: {e}")))?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(ToolError::arguments(
            path,
            "the parameters must be a JSON object of named arguments",
        ))
    }
}
