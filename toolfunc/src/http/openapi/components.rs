//! The components every document holds (the error body, the error answers,
//! discovery's answer) and how components are named and referred to.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

/// Where tool schemas sit in the document, as a `$ref` base.
pub(super) const SCHEMAS: &str = "#/components/schemas";

pub(super) fn reference(name: &str) -> Value {
    json!({"$ref": format!("{SCHEMAS}/{name}")})
}

/// `name`, or `name_2`, `name_3`... whichever is not taken yet (then taken).
pub(super) fn unique(taken: &mut HashSet<String>, name: String) -> String {
    if taken.insert(name.clone()) {
        return name;
    }
    let mut n = 2;
    loop {
        let candidate = format!("{name}_{n}");
        if taken.insert(candidate.clone()) {
            return candidate;
        }
        n += 1;
    }
}

/// A component name from any text: `[A-Za-z0-9._-]` kept, the rest `_`.
pub(super) fn clean(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".to_owned()
    } else {
        cleaned
    }
}

/// The error answers operations refer to, by name.
pub(super) fn error_responses(limit: usize) -> Map<String, Value> {
    let mut responses = Map::new();
    for (name, text) in [
        (
            "BadRequest",
            "Malformed JSON, parameters that are not an object or do not match the \
             schema (`ARGUMENTS`, with the JSON Pointer in `data.path`), a service call \
             naming no act, a discovery search with an empty or over-long `q` or a \
             `limit` out of bounds (`ARGUMENTS`, `data.path` `/q` or `/limit`)."
                .to_owned(),
        ),
        (
            "Unauthorized",
            "Refused by the API's auth hook (it chooses the status and code).".to_owned(),
        ),
        (
            "Forbidden",
            "A `Host` or `Origin` this API does not serve (`HOST_NOT_ALLOWED`, \
             `ORIGIN_NOT_ALLOWED`), or refused by the auth hook."
                .to_owned(),
        ),
        (
            "NotFound",
            "No such tool here (`NOT_FOUND`), an act the service does not have \
             (`UNKNOWN_ACT`), or the tool's own not-found error."
                .to_owned(),
        ),
        (
            "MethodNotAllowed",
            "GET naming an act that is not read-only (`METHOD_NOT_ALLOWED`, \
             `Allow: POST`). A method a path does not list is refused the same \
             way, with the path's methods in `Allow`."
                .to_owned(),
        ),
        (
            "Timeout",
            "The call ran past its timeout, the tool's or the `rpc-timeout` header's \
             (`TIMEOUT`)."
                .to_owned(),
        ),
        (
            "TooLarge",
            format!(
                "A request body over {limit} bytes (`PAYLOAD_TOO_LARGE`), or a stream \
                 collected into one answer past the API's cap (`RESULT_TOO_LARGE`)."
            ),
        ),
        (
            "UnsupportedMediaType",
            "A body sent without `Content-Type: application/json` \
             (`UNSUPPORTED_MEDIA_TYPE`)."
                .to_owned(),
        ),
        (
            "InternalError",
            "The tool failed (`FAILED`) or panicked (`PANICKED`).".to_owned(),
        ),
        (
            "OtherError",
            "Any other status a tool's own error carries.".to_owned(),
        ),
    ] {
        responses.insert(
            name.into(),
            json!({
                "description": text,
                "content": {"application/json": {"schema": reference("Error")}},
            }),
        );
    }
    responses
}

pub(super) fn error_schema() -> Value {
    json!({
        "type": "object",
        "description": "An error: the shape both generations of the JavaScript client read, \
                        plus the stable code.",
        "required": ["code", "errorCode", "error"],
        "properties": {
            "name": {"type": "string", "description": "The tool that answered."},
            "code": {"type": "integer", "description": "The HTTP status."},
            "errorCode": {
                "type": "string",
                "description": "The stable error code (`NOT_FOUND`, `ARGUMENTS`, a tool's own).",
            },
            "data": {"description": "Structured details (`what`, `path`, ...)."},
            "error": {"type": "string", "description": "The message."},
        },
    })
}

pub(super) fn discovery_schema() -> Value {
    json!({
        "type": "object",
        "description": "Every tool offered here, keyed by name.",
        "additionalProperties": {
            "type": "object",
            "required": ["name", "isApi"],
            "properties": {
                "name": {"type": "string"},
                "description": {"type": "string"},
                "params": {"description": "The JSON Schema of the arguments."},
                "result": {"description": "The JSON Schema of the result."},
                "methods": {"type": "array", "items": {"type": "string"}},
                "action": {"type": "string"},
                "stream": {"type": "boolean"},
                "isApi": {"const": true},
            },
        },
    })
}
