//! What travels over NATS: subjects, headers, error encoding and discovery.
//! Shared by the worker and the client; the README's "Scale out over NATS" table
//! is this file in prose.

use async_nats::HeaderMap;
use async_nats::header::HeaderValue;
use serde_json::{Map, Value, json};

use crate::error::ToolError;
use crate::identity::Identity;
use crate::options::{CallOptions, Surface};
use crate::registry::Registry;
use crate::remote::{Catalog, Sight};
use crate::tool::ToolDefinition;

/// The subject prefix and service name when none is set.
pub(crate) const DEFAULT_PREFIX: &str = "toolfunc";

/// The caller's name: a label for logs; with an authenticator it grants nothing.
pub(crate) const CALLER: &str = "Tf-Caller";
/// The bearer token a worker with an authenticator checks on every request.
pub(crate) const AUTHORIZATION: &str = "Authorization";
/// The requester's secret for one call: a control message acts on the call only
/// when it shows the same one (or comes from the call's verified subject).
pub(crate) const CONTROL_KEY: &str = "Tf-Control-Key";
/// The call's id: the key a cancel or a credit names.
pub(crate) const CALL_ID: &str = "Tf-Call-Id";
/// The time the caller still gives the call, in milliseconds.
pub(crate) const TIMEOUT: &str = "Tf-Timeout";
/// Asks the worker for a heartbeat every this many milliseconds while the call runs.
pub(crate) const HEARTBEAT: &str = "Tf-Heartbeat";
/// Asks for the items one message each, this many ahead of the consumer at most.
pub(crate) const STREAM: &str = "Tf-Stream";
/// What a message to the reply subject is: `heartbeat`, `item` or `end` (a final
/// result carries no kind).
pub(crate) const KIND: &str = "Tf-Kind";
/// On a worker's first message of a call: the subject its credits and cancel go to.
pub(crate) const CONTROL: &str = "Tf-Control";
/// On a control message: more items the consumer can take.
pub(crate) const CREDIT: &str = "Tf-Credit";
/// On a control message: cancel the call, with this reason.
pub(crate) const CANCEL: &str = "Tf-Cancel";
/// On an error answer: the stable [`ToolError::code`].
pub(crate) const ERROR_CODE: &str = "Tf-Error-Code";
/// On an error answer: the whole error as JSON (`{code, message, status, data}`).
pub(crate) const ERROR: &str = "Tf-Error";
/// The W3C trace context, passed through.
pub(crate) const TRACEPARENT: &str = "traceparent";
/// The micro-services standard's error headers (the message, the status).
pub(crate) const SERVICE_ERROR: &str = "Nats-Service-Error";
pub(crate) const SERVICE_ERROR_CODE: &str = "Nats-Service-Error-Code";

pub(crate) const KIND_HEARTBEAT: &str = "heartbeat";
pub(crate) const KIND_ITEM: &str = "item";
pub(crate) const KIND_END: &str = "end";

/// `<prefix>.call.<tool>`: runs a tool (one endpoint per tool, queue-grouped).
pub(crate) fn call_subject(prefix: &str, tool: &str) -> String {
    format!("{prefix}.call.{tool}")
}

/// `<prefix>.tools`: the definitions, from any worker.
pub(crate) fn tools_subject(prefix: &str) -> String {
    format!("{prefix}.tools")
}

/// `<prefix>.tools.<worker>`: the definitions of that worker.
pub(crate) fn worker_tools_subject(prefix: &str, worker: &str) -> String {
    format!("{prefix}.tools.{worker}")
}

/// `<prefix>.submit.<tool>`: stores a durable call (any durable worker).
pub(crate) fn submit_subject(prefix: &str, tool: &str) -> String {
    format!("{prefix}.submit.{tool}")
}

/// `<prefix>.outcome`: reads a durable call's state (any durable worker).
pub(crate) fn outcome_subject(prefix: &str) -> String {
    format!("{prefix}.outcome")
}

/// `<prefix>.cancel`: where a durable call's owner asks for it to be cancelled.
pub(crate) fn cancel_subject(prefix: &str) -> String {
    format!("{prefix}.cancel")
}

/// `<prefix>.cancelled`: where workers hear that a durable call may have been
/// cancelled (they check the cancels bucket before they act on it).
pub(crate) fn cancelled_subject(prefix: &str) -> String {
    format!("{prefix}.cancelled")
}

/// `<prefix>.events`: a worker's catalog changed (published, not requested).
pub(crate) fn events_subject(prefix: &str) -> String {
    format!("{prefix}.events")
}

/// `<prefix>.ctl`: cancels, heard by every worker; `<prefix>.ctl.<worker>`: one
/// worker's credits and cancels.
pub(crate) fn control_subject(prefix: &str, worker: Option<&str>) -> String {
    match worker {
        Some(worker) => format!("{prefix}.ctl.{worker}"),
        None => format!("{prefix}.ctl"),
    }
}

/// Whether a tool name can be the tail of a subject: dot-separated tokens, none
/// empty, no whitespace or wildcard.
pub(crate) fn subject_safe(name: &str) -> bool {
    !name.is_empty()
        && name.split('.').all(|token| {
            !token.is_empty()
                && !token
                    .chars()
                    .any(|c| c.is_whitespace() || c.is_control() || c == '*' || c == '>')
        })
}

/// A subject prefix, checked: the same rules as a tool name, and not `$SRV`'s.
pub(crate) fn check_prefix(prefix: &str) -> Result<(), ToolError> {
    if subject_safe(prefix) && !prefix.starts_with("$SRV") {
        return Ok(());
    }
    Err(ToolError::custom(
        "BAD_CONFIG",
        400,
        format!("`{prefix}` is not a subject prefix (dot-separated tokens, no wildcards)"),
    ))
}

/// `value` as a message payload; `TOO_LARGE` past what the server takes in one
/// message (less room for the headers), naming `what` it is.
pub(crate) fn payload(
    client: &async_nats::Client,
    value: &Value,
    what: &str,
) -> Result<bytes::Bytes, ToolError> {
    let body = serde_json::to_vec(value).map_err(|e| ToolError::Output {
        path: None,
        message: e.to_string(),
    })?;
    let max = client.server_info().max_payload.saturating_sub(1024);
    if body.len() > max {
        return Err(ToolError::custom(
            "TOO_LARGE",
            413,
            format!(
                "{what} is {} bytes; the NATS server takes {max} in one message",
                body.len()
            ),
        ));
    }
    Ok(body.into())
}

/// A mutex's guard, poisoned or not (what it guards stays consistent between
/// statements).
pub(crate) fn lock<T>(mutex: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Aborts a background task when dropped.
#[derive(Debug)]
pub(crate) struct Abort(pub(crate) tokio::task::JoinHandle<()>);

impl Drop for Abort {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// The options of a NATS request's caller as its headers and verified identity
/// name it (the surface, the caller it says it is, the identity): what the layers
/// and scopes judge it by, on a worker and at a durable submit alike.
pub(crate) fn caller_options(
    headers: Option<&HeaderMap>,
    identity: Option<Identity>,
) -> CallOptions {
    let mut options = CallOptions::new().surface(Surface::Nats);
    if let Some(caller) = header(headers, CALLER) {
        options = options.caller(caller);
    }
    if let Some(identity) = identity {
        options = options.identity(identity);
    }
    options
}

/// A header's text, trimmed; `None` when absent or empty.
pub(crate) fn header<'a>(headers: Option<&'a HeaderMap>, name: &str) -> Option<&'a str> {
    headers?
        .get(name)
        .map(HeaderValue::as_str)
        .map(str::trim)
        .filter(|v| !v.is_empty())
}

/// A header value from text that may hold anything: CR and LF (which a header
/// cannot carry) become spaces.
pub(crate) fn header_value(text: &str) -> HeaderValue {
    text.parse::<HeaderValue>().unwrap_or_else(|_| {
        text.replace(['\r', '\n'], " ")
            .parse()
            .unwrap_or_else(|_| HeaderValue::from(""))
    })
}

/// The headers of an error answer. `Nats-Service-Error(-Code)` carry the message
/// and status for any NATS client; `Tf-Error` carries the whole error, so a
/// toolfunc client gets the same variant back.
pub(crate) fn error_headers(err: &ToolError) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(ERROR_CODE, header_value(err.code()));
    let mut wire = serde_json::to_value(err).unwrap_or_else(
        |_| json!({"code": err.code(), "message": err.to_string(), "status": err.status()}),
    );
    let mut text = wire.to_string();
    if text.len() > MAX_ERROR_JSON {
        // Too much for a header: the data goes, the message is cut.
        if let Value::Object(map) = &mut wire {
            map.remove("data");
            if let Some(Value::String(message)) = map.get_mut("message") {
                *message = short(message, MAX_ERROR_TEXT);
            }
        }
        text = wire.to_string();
    }
    if text.len() <= MAX_ERROR_JSON {
        headers.insert(ERROR, header_value(&text));
    }
    headers
}

/// The headers of an error answer sent without the service API: the error's own
/// and the micro-services standard's.
pub(crate) fn service_error_headers(err: &ToolError) -> HeaderMap {
    let mut headers = error_headers(err);
    headers.insert(
        SERVICE_ERROR,
        header_value(&short(&err.to_string(), MAX_ERROR_TEXT)),
    );
    headers.insert(SERVICE_ERROR_CODE, err.status().to_string().as_str());
    headers
}

/// The most bytes of error JSON an answer carries in `Tf-Error`.
pub(crate) const MAX_ERROR_JSON: usize = 16 * 1024;
/// The most bytes of an error message in `Nats-Service-Error`.
pub(crate) const MAX_ERROR_TEXT: usize = 2 * 1024;

/// `text` on one line, cut to at most `max` bytes (on a character boundary).
pub(crate) fn short(text: &str, max: usize) -> String {
    let line = text.replace(['\r', '\n'], " ");
    if line.len() <= max {
        return line;
    }
    let mut end = max.saturating_sub(3);
    while !line.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &line[..end])
}

/// The [`ToolError`] an error answer stands for: `Tf-Error` when there, else the
/// service error headers (404 is `NOT_FOUND`, any other status `HTTP_<status>`).
pub(crate) fn error_from_headers(headers: &HeaderMap, tool: &str) -> ToolError {
    if let Some(err) =
        header(Some(headers), ERROR).and_then(|text| serde_json::from_str::<ToolError>(text).ok())
    {
        return err;
    }
    let status = header(Some(headers), SERVICE_ERROR_CODE)
        .and_then(|code| code.parse::<u16>().ok())
        .unwrap_or(500);
    let message = header(Some(headers), SERVICE_ERROR).unwrap_or("the worker reported an error");
    if status == 404 {
        return ToolError::not_found(tool);
    }
    ToolError::custom(format!("HTTP_{status}"), status, message)
}

/// Whether a message is an error answer.
pub(crate) fn is_error(headers: Option<&HeaderMap>) -> bool {
    header(headers, SERVICE_ERROR_CODE).is_some() || header(headers, ERROR).is_some()
}

/// The definitions a worker serves to one caller: every tool a NATS client may
/// call (`api` tools whose names fit a subject) that `shown` lets it see, keyed
/// by name.
pub(crate) fn discovery(registry: &Registry, sight: &Sight<'_>) -> Value {
    let mut tools = Map::new();
    for def in served(&Catalog::of(registry)).filter_map(|def| sight.view(def)) {
        if let Ok(value) = serde_json::to_value(&*def) {
            tools.insert(def.name.clone(), value);
        }
    }
    Value::Object(tools)
}

/// The tools a worker serves, from the remote catalogue: the `api` tools whose
/// names fit a subject.
pub(crate) fn served(offered: &Catalog) -> impl Iterator<Item = &ToolDefinition> {
    offered.tools().filter(|def| subject_safe(&def.name))
}

/// The arguments of a request payload: empty means `{}`; anything but a JSON
/// object is an `ARGUMENTS` error.
pub(crate) fn arguments(payload: &[u8]) -> Result<Value, ToolError> {
    if payload.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    match serde_json::from_slice::<Value>(payload) {
        Ok(value @ Value::Object(_)) => Ok(value),
        Ok(_) => Err(ToolError::arguments(
            "",
            "expected an object of named arguments",
        )),
        Err(err) => Err(ToolError::arguments(
            "",
            format!("the payload is not JSON: {err}"),
        )),
    }
}

/// A success payload as JSON (empty means `null`).
pub(crate) fn result(payload: &[u8]) -> Result<Value, ToolError> {
    if payload.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Null);
    }
    serde_json::from_slice(payload).map_err(|err| ToolError::Output {
        path: None,
        message: format!("the worker's answer is not JSON: {err}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subjects_refuse_wildcards_and_empty_tokens() {
        assert!(subject_safe("add"));
        assert!(subject_safe("math.add"));
        assert!(!subject_safe(""));
        assert!(!subject_safe("a..b"));
        assert!(!subject_safe("a b"));
        assert!(!subject_safe("a.*"));
        assert!(!subject_safe(">"));
    }

    #[test]
    fn errors_survive_the_headers() {
        let err = ToolError::arguments("/a", "line one\nline two");
        let headers = error_headers(&err);
        let back = error_from_headers(&headers, "t");
        assert_eq!(back.code(), "ARGUMENTS");
        assert_eq!(back.data().unwrap()["path"], "/a");
        let mut plain = HeaderMap::new();
        plain.insert(SERVICE_ERROR_CODE, "404");
        assert_eq!(error_from_headers(&plain, "t").code(), "NOT_FOUND");
    }

    #[test]
    fn large_errors_are_trimmed_to_fit_a_header() {
        let err =
            ToolError::custom("BIG", 500, "é".repeat(20_000)).with_data(json!("x".repeat(50_000)));
        let headers = error_headers(&err);
        let text = header(Some(&headers), ERROR).unwrap();
        assert!(text.len() <= MAX_ERROR_JSON);
        let back = error_from_headers(&headers, "t");
        assert_eq!(back.code(), "BIG");
        assert!(back.data().is_none());
        assert!(short(&"é".repeat(10), 5).ends_with("..."));
    }

    #[test]
    fn a_header_value_never_panics() {
        assert_eq!(header_value("a\r\nb").as_str(), "a  b");
    }

    #[test]
    fn payloads_are_objects() {
        assert_eq!(arguments(b"").unwrap(), json!({}));
        assert_eq!(arguments(b"[1]").unwrap_err().code(), "ARGUMENTS");
        assert_eq!(arguments(b"{").unwrap_err().code(), "ARGUMENTS");
    }
}
