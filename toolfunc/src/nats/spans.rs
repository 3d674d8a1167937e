//! The spans of NATS calls, named and filled as OpenTelemetry's conventions for
//! messaging say: a client's send, a worker's process, and a failure's code.

use tracing::field::Empty;

use super::wire;
use crate::error::ToolError;

/// The span of a call sent to `tool`'s workers, named and filled as
/// OpenTelemetry's conventions for messaging say.
pub(super) fn send_span(prefix: &str, tool: &str) -> tracing::Span {
    sending(|| wire::call_subject(prefix, tool))
}

/// The span of a durable call submitted for `tool`'s workers.
pub(super) fn submit_span(prefix: &str, tool: &str) -> tracing::Span {
    sending(|| wire::submit_subject(prefix, tool))
}

/// A send span to the subject `subject` makes (only when the span records).
fn sending(subject: impl FnOnce() -> String) -> tracing::Span {
    let span = tracing::info_span!(
        "nats_send",
        otel.name = Empty,
        otel.kind = "client",
        otel.status_code = Empty,
        messaging.system = "nats",
        messaging.operation.name = "send",
        messaging.operation.type = "send",
        messaging.destination.name = Empty,
        error.type = Empty,
    );
    if !span.is_disabled() {
        let subject = subject();
        span.record("otel.name", format!("send {subject}"));
        span.record("messaging.destination.name", subject);
    }
    span
}

/// Marks `span` failed with `err`'s code, if the call failed.
pub(super) fn failed(span: &tracing::Span, err: Option<&ToolError>) {
    if let Some(err) = err {
        span.record("error.type", err.code());
        span.record("otel.status_code", "ERROR");
    }
}

/// The span of a call a worker serves, named and filled as OpenTelemetry's
/// conventions for messaging say; the child of the caller's span when the call
/// carries a W3C `traceparent` (and OpenTelemetry records spans).
pub(super) fn process_span(subject: &str, call_id: &str) -> tracing::Span {
    let span = tracing::info_span!(
        "nats_process",
        otel.name = Empty,
        otel.kind = "server",
        otel.status_code = Empty,
        messaging.system = "nats",
        messaging.operation.name = "process",
        messaging.operation.type = "process",
        messaging.destination.name = subject,
        messaging.message.id = call_id,
        error.type = Empty,
    );
    if !span.is_disabled() {
        span.record("otel.name", format!("process {subject}"));
    }
    span
}
