//! What travels over HTTP: error bodies, discovery, and the parameter lists of
//! JavaScript servers. Shared by the server and the client.

#[cfg(feature = "http-client")]
use serde_json::json;
use serde_json::{Map, Value};

use crate::error::ToolError;
#[cfg(feature = "http-server")]
use crate::remote::{Catalog, Sight};
use crate::tool::ToolDefinition;

/// The header naming the tool (takes precedence over the path).
pub(crate) const RPC_FN: &str = "rpc-fn";
/// The header naming the act (takes precedence over `params.act`).
pub(crate) const RPC_ACT: &str = "rpc-act";
/// The header carrying the resource id (takes precedence over the path id).
pub(crate) const RPC_RES_ID: &str = "rpc-res-id";
/// The per-call id, echoed on the response.
pub(crate) const REQ_ID: &str = "req-id";
/// How long to wait before polling a background call, in milliseconds.
pub(crate) const RPC_RETRY_AFTER: &str = "rpc-retry-after";
#[cfg(feature = "http-server")]
/// The request id proxies and tracing set up front; echoed like `req-id`.
pub(crate) const X_REQUEST_ID: &str = "x-request-id";
#[cfg(feature = "http-server")]
/// The caller's timeout for the call, in milliseconds.
pub(crate) const RPC_TIMEOUT: &str = "rpc-timeout";
#[cfg(feature = "http-server")]
/// The largest `rpc-timeout` read ([`millis`]: the range of the `u64` it is read
/// into); the OpenAPI document gives it as the header's `maximum`.
pub(crate) const RPC_TIMEOUT_MAX: u64 = u64::MAX;
#[cfg(feature = "http-server")]
/// The caller's id (not verified), as the JavaScript clients send it.
pub(crate) const CLIENT_IDS: [&str; 2] = ["rpc-client-id", "x-client-id"];
/// The content type of a streamed response: one JSON value per line.
pub(crate) const NDJSON: &str = "application/x-ndjson";

#[cfg(feature = "http-server")]
/// The error body: the shape both generations of the JavaScript client read
/// (`error` is the message, `code` the HTTP status), plus `errorCode`, the stable
/// [`ToolError::code`], so a toolfunc client gets the same variant back.
///
/// ```json
/// {"name": "users", "code": 404, "errorCode": "USER_NOT_FOUND",
///  "data": {"what": "99"}, "error": "Could not find 99."}
/// ```
pub(crate) fn error_body(tool: Option<&str>, err: &ToolError) -> Value {
    let mut body = Map::new();
    if let Some(tool) = tool {
        body.insert("name".into(), Value::from(tool));
    }
    body.insert("code".into(), Value::from(err.status()));
    body.insert("errorCode".into(), Value::from(err.code()));
    if let Some(data) = err.data() {
        body.insert("data".into(), data);
    }
    let message = match serde_json::to_value(err) {
        Ok(Value::Object(mut wire)) => wire
            .remove("message")
            .and_then(|m| m.as_str().map(str::to_owned))
            .unwrap_or_else(|| err.to_string()),
        _ => err.to_string(),
    };
    body.insert("error".into(), Value::from(message));
    Value::Object(body)
}

#[cfg(feature = "http-client")]
/// The [`ToolError`] an error response stands for, from any of the shapes servers
/// send: toolfunc's (with `errorCode`), the 0.1.1 JavaScript one
/// (`{"error": "msg", "code": n, "data": ..}`) and the 1.x one
/// (`{"error": {"message", "code", "status", "data"}}`).
pub(crate) fn error_from_body(status: u16, body: &[u8], tool: &str) -> ToolError {
    let parsed: Option<Value> = serde_json::from_slice(body).ok();
    let object = parsed.as_ref().and_then(Value::as_object);
    let (message, data, code) = match object.and_then(|o| o.get("error")) {
        Some(Value::Object(inner)) => (
            inner
                .get("message")
                .and_then(Value::as_str)
                .map(str::to_owned),
            inner.get("data").cloned(),
            inner
                .get("errorCode")
                .and_then(Value::as_str)
                .map(str::to_owned),
        ),
        Some(Value::String(message)) => (
            Some(message.clone()),
            object.and_then(|o| o.get("data")).cloned(),
            object
                .and_then(|o| o.get("errorCode"))
                .and_then(Value::as_str)
                .map(str::to_owned),
        ),
        _ => (None, object.and_then(|o| o.get("data")).cloned(), None),
    };
    let message = message.unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body).trim().to_owned();
        if text.is_empty() || parsed.is_some() {
            format!("HTTP {status}")
        } else {
            text
        }
    });
    if let Some(code) = code {
        let mut wire = json!({"code": code, "message": message, "status": status});
        if let Some(data) = &data {
            wire["data"] = data.clone();
        }
        if let Ok(err) = serde_json::from_value::<ToolError>(wire) {
            return err;
        }
    }
    // A server that does not send a stable code: map the status.
    if status == 404 {
        let what = data
            .as_ref()
            .and_then(|d| d.get("what"))
            .and_then(Value::as_str)
            .unwrap_or(tool);
        return ToolError::not_found(what);
    }
    let err = ToolError::custom(format!("HTTP_{status}"), status, message);
    match data {
        Some(data) => err.with_data(data),
        None => err,
    }
}

#[cfg(feature = "http-server")]
/// Discovery: the registry's advertised definitions keyed by name, as the caller
/// of `sight` sees them: no tool with `api = false`, none a layer hides from it or
/// whose scopes it lacks, and no act of a service it lacks the scopes of. Every entry carries `isApi: true` as the JavaScript servers write it;
/// nothing carries function source.
///
/// Written straight to bytes, in the catalogue's name order (a JSON object's keys
/// as `serde_json` would sort them), each definition serialised once: no JSON
/// tree of the whole catalogue is built.
pub(crate) fn discovery(offered: &Catalog, sight: &Sight<'_>) -> Vec<u8> {
    let tools: Vec<&ToolDefinition> = offered.tools().collect();
    let threads = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    // A large catalogue's first listing makes every schema it has not made yet:
    // split over the cores, each part written on its own.
    let parts: Vec<Vec<u8>> = if tools.len() >= PARALLEL_FROM && threads > 1 {
        let size = tools.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let running: Vec<_> = tools
                .chunks(size)
                .map(|chunk| scope.spawn(move || entries(chunk, sight)))
                .collect();
            running
                .into_iter()
                .map(|part| part.join().unwrap_or_default())
                .collect()
        })
    } else {
        vec![entries(&tools, sight)]
    };
    let mut body = Vec::with_capacity(parts.iter().map(Vec::len).sum::<usize>() + parts.len() + 1);
    body.push(b'{');
    for part in parts.iter().filter(|part| !part.is_empty()) {
        if body.len() > 1 {
            body.push(b',');
        }
        body.extend_from_slice(part);
    }
    body.push(b'}');
    body
}

#[cfg(feature = "http-server")]
/// The size of catalogue past which discovery is written on several cores.
const PARALLEL_FROM: usize = 2048;

#[cfg(feature = "http-server")]
/// The entries of `tools` the caller of `sight` sees, comma-separated.
fn entries(tools: &[&ToolDefinition], sight: &Sight<'_>) -> Vec<u8> {
    let mut body = Vec::new();
    for def in tools {
        let Some(def) = sight.view(def) else {
            continue;
        };
        if body.is_empty() {
            entry_into(&mut body, &def);
            // Sized once from the first entry (with room to spare), not doubled
            // and copied over and over for a large catalogue.
            body.reserve(tools.len().saturating_mul(body.len() + body.len() / 2));
            continue;
        }
        body.push(b',');
        entry_into(&mut body, &def);
    }
    body
}

#[cfg(feature = "http-server")]
/// `"<name>":<definition with isApi: true>` into `body`.
fn entry_into(body: &mut Vec<u8>, def: &ToolDefinition) {
    // Strings and definitions always serialise.
    let _ = serde_json::to_writer(&mut *body, &def.name);
    body.push(b':');
    let start = body.len();
    let _ = serde_json::to_writer(&mut *body, def);
    // A definition is an object: `isApi` goes in before its closing brace.
    if body.len() > start + 1 && body.last() == Some(&b'}') {
        body.pop();
        if body.last() != Some(&b'{') {
            body.push(b',');
        }
        body.extend_from_slice(br#""isApi":true}"#);
    }
}

#[cfg(feature = "http-server")]
/// Discovery of `found` (a search's tools, best first): the same object, its keys
/// written in the order given (a `serde_json::Map` would sort them).
pub(crate) fn ranked_discovery(found: &[ToolDefinition]) -> Vec<u8> {
    let mut body = vec![b'{'];
    for (at, def) in found.iter().enumerate() {
        if at > 0 {
            body.push(b',');
        }
        entry_into(&mut body, def);
    }
    body.push(b'}');
    body
}

#[cfg(feature = "http-client")]
/// A definition from a discovery entry. JavaScript servers write `params` as
/// `{name: {type, ..} | "type"}` or as a positional list: both become a JSON
/// Schema (`"any"` is no constraint). Unknown fields (`func`, `fetchOptions`) are
/// ignored; function source is never run.
pub(crate) fn definition_from_wire(name: &str, entry: &Value) -> Option<ToolDefinition> {
    let mut entry = entry.as_object()?.clone();
    entry.remove("func");
    entry
        .entry("name")
        .or_insert_with(|| Value::from(name.to_owned()));
    if let Some(params) = entry.remove("params") {
        entry.insert("params".into(), params_schema(&params));
    }
    // 1.x writes `timeout` as an object; only a number is a timeout here.
    if entry.get("timeout").is_some_and(|t| !t.is_u64()) {
        entry.remove("timeout");
    }
    if entry.get("result").is_some_and(|r| !r.is_object()) {
        entry.remove("result");
    }
    serde_json::from_value(Value::Object(entry)).ok()
}

#[cfg(feature = "http-client")]
/// A JSON Schema for the `params` of a discovery entry.
fn params_schema(params: &Value) -> Value {
    if params.get("type").and_then(Value::as_str) == Some("object")
        && params.get("properties").is_none_or(Value::is_object)
    {
        return params.clone();
    }
    let mut properties = Map::new();
    let mut required = Vec::new();
    let mut add = |name: &str, spec: &Value| {
        let (ty, description, is_required) = match spec {
            Value::String(ty) => (Some(ty.as_str()), None, false),
            Value::Object(o) => (
                o.get("type").and_then(Value::as_str),
                o.get("description").cloned(),
                o.get("required").and_then(Value::as_bool).unwrap_or(false),
            ),
            _ => (None, None, false),
        };
        let mut schema = Map::new();
        if let Some(ty) = ty.filter(|t| {
            [
                "string", "number", "integer", "boolean", "object", "array", "null",
            ]
            .contains(t)
        }) {
            schema.insert("type".into(), Value::from(ty));
        }
        if let Some(description) = description {
            schema.insert("description".into(), description);
        }
        properties.insert(name.to_owned(), Value::Object(schema));
        if is_required {
            required.push(Value::from(name));
        }
    };
    match params {
        Value::Object(map) => {
            for (name, spec) in map {
                add(name, spec);
            }
        }
        Value::Array(list) => {
            for spec in list {
                if let Some(name) = spec.get("name").and_then(Value::as_str) {
                    add(name, spec);
                }
            }
        }
        _ => {}
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    schema
}

#[cfg(feature = "http-server")]
/// A text value from a URL (a path id, a query parameter) as the type the
/// parameter's schema asks for (`"42"` → `42` for an integer); left a string when
/// the schema says string, says nothing, or the text does not parse.
pub(crate) fn cast(text: &str, schema: Option<&Value>) -> Value {
    let types: Vec<&str> = match schema.and_then(|s| s.get("type")) {
        Some(Value::String(t)) => vec![t.as_str()],
        Some(Value::Array(list)) => list.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if types.contains(&"string") || types.is_empty() {
        return Value::from(text);
    }
    for ty in types {
        let cast = match ty {
            "integer" => text
                .parse::<i64>()
                .map(Value::from)
                .or_else(|_| text.parse::<u64>().map(Value::from))
                .ok(),
            "number" => text
                .parse::<i64>()
                .map(Value::from)
                .ok()
                .or_else(|| text.parse::<f64>().ok().map(Value::from)),
            "boolean" => match text {
                "true" | "1" => Some(Value::Bool(true)),
                "false" | "0" => Some(Value::Bool(false)),
                _ => None,
            },
            "null" if text == "null" || text.is_empty() => Some(Value::Null),
            "object" | "array" => serde_json::from_str::<Value>(text)
                .ok()
                .filter(|v| v.is_object() || v.is_array()),
            _ => None,
        };
        if let Some(value) = cast {
            return value;
        }
    }
    Value::from(text)
}

#[cfg(feature = "http-server")]
/// The schema of argument `name` in a parameters schema.
pub(crate) fn property<'a>(params: &'a Value, name: &str) -> Option<&'a Value> {
    params.get("properties").and_then(|p| p.get(name))
}

#[cfg(feature = "http-server")]
/// Whether a value counts as "yes" the way the JavaScript servers test it.
pub(crate) fn truthy(value: Option<&Value>) -> bool {
    match value {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(_) => true,
    }
}

#[cfg(feature = "http-server")]
/// A whole number of milliseconds as `rpc-timeout` carries it: ASCII digits
/// between optional blanks, no sign, no fraction, no exponent, at most
/// [`RPC_TIMEOUT_MAX`]. Anything else is `None`.
pub(crate) fn millis(text: &str) -> Option<u64> {
    let digits = text.trim_matches([' ', '\t']);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    // Only digits: the parse fails only past the maximum.
    digits.parse().ok()
}

/// A fresh request id: 128 random bits in hex, so nobody can guess it (a call that
/// moves to the background is tracked under its request id).
pub(crate) fn request_id() -> String {
    crate::id::random_hex()
}

#[cfg(all(test, feature = "http-server"))]
mod tests {
    use super::*;

    #[test]
    fn casts_by_schema() {
        let int = json!({"type": "integer"});
        assert_eq!(cast("42", Some(&int)), json!(42));
        assert_eq!(cast("x", Some(&int)), json!("x"));
        assert_eq!(cast("42", Some(&json!({"type": "string"}))), json!("42"));
        assert_eq!(cast("1.5", Some(&json!({"type": "number"}))), json!(1.5));
        assert_eq!(cast("true", Some(&json!({"type": "boolean"}))), json!(true));
        assert_eq!(
            cast("7", Some(&json!({"type": ["integer", "null"]}))),
            json!(7)
        );
        assert_eq!(cast("7", None), json!("7"));
    }

    #[test]
    fn timeouts_are_whole_milliseconds_within_64_bits() {
        assert_eq!(millis("0"), Some(0));
        assert_eq!(millis(" 250\t"), Some(250));
        assert_eq!(millis("007"), Some(7));
        assert_eq!(millis(&u64::MAX.to_string()), Some(RPC_TIMEOUT_MAX));
        for bad in [
            "",
            " ",
            "+5",
            "-1",
            "1.5",
            "1e3",
            "0x10",
            "\u{663}",
            "18446744073709551616",
        ] {
            assert_eq!(millis(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn javascript_params_become_a_schema() {
        let schema = params_schema(&json!({"a": {"type": "number", "required": true}, "v": "any"}));
        assert_eq!(
            schema,
            json!({"type": "object", "properties": {"a": {"type": "number"}, "v": {}}, "required": ["a"]})
        );
        let schema = params_schema(&json!([{"name": "x", "type": "string"}]));
        assert_eq!(schema["properties"]["x"]["type"], "string");
    }

    #[test]
    fn error_bodies_of_every_generation() {
        let ours = error_body(Some("t"), &ToolError::arguments("/a", "bad"));
        let back = error_from_body(400, ours.to_string().as_bytes(), "t");
        assert!(matches!(back, ToolError::Arguments { ref path, .. } if path == "/a"));
        let old =
            br#"{"name":"users","code":404,"data":{"what":"99"},"error":"Could not find 99."}"#;
        assert_eq!(error_from_body(404, old, "users").code(), "NOT_FOUND");
        let new = br#"{"error":{"code":500,"message":"boom"}}"#;
        let err = error_from_body(500, new, "fail");
        assert_eq!((err.status(), err.to_string()), (500, "boom".to_owned()));
        let text = error_from_body(502, b"bad gateway", "x");
        assert_eq!(text.to_string(), "bad gateway");
    }
}
