//! Trace context across processes, for every surface: the caller's span a served
//! call's span is the child of, and the context a client sends with a call. With
//! the `otel` feature, OpenTelemetry's W3C propagator reads and writes it; without,
//! the context a call came with is sent on unchanged.

#[cfg(any(
    feature = "http-client",
    feature = "mcp",
    feature = "mcp-client",
    feature = "nats"
))]
use crate::exec::ctx::Ctx;
use crate::trace::TraceContext;

#[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
/// Makes the caller's span (`incoming`) the parent of a surface's `span` (not yet
/// entered). Without the `otel` feature spans have no remote parent: nothing to do.
#[cfg_attr(not(feature = "otel"), allow(unused_variables))]
pub(crate) fn adopt(span: &tracing::Span, incoming: Option<&TraceContext>) {
    #[cfg(feature = "otel")]
    if let Some(incoming) = incoming {
        crate::otel::adopt(span, incoming);
    }
}

/// Links `span` to the span of `earlier` (another request of the same call, such as
/// the round a retry resumes). Without the `otel` feature there is nothing to do.
#[cfg_attr(not(feature = "otel"), allow(unused_variables))]
#[cfg_attr(not(feature = "mcp"), expect(dead_code, reason = "MCP rounds link"))]
pub(crate) fn link(span: &tracing::Span, earlier: Option<&TraceContext>) {
    #[cfg(feature = "otel")]
    if let Some(earlier) = earlier {
        crate::otel::link(span, earlier);
    }
}

/// The trace context to send with a call made inside `span` for `ctx`'s call: the
/// span's own when OpenTelemetry records it, else the one `ctx`'s call came with.
#[cfg_attr(not(feature = "otel"), allow(unused_variables))]
#[cfg(any(
    feature = "http-client",
    feature = "mcp",
    feature = "mcp-client",
    feature = "nats"
))]
pub(crate) fn outgoing(span: &tracing::Span, ctx: Option<&Ctx>) -> Option<TraceContext> {
    #[cfg(feature = "otel")]
    if let Some(own) = crate::otel::outgoing(span) {
        return Some(own);
    }
    ctx.and_then(Ctx::get::<TraceContext>).cloned()
}

#[cfg(any(feature = "http-client", feature = "http-server"))]
/// Names `span` `name` once it is known (its `otel.name` field; with the `otel`
/// feature, the OpenTelemetry span too, which may have started already).
pub(crate) fn name(span: &tracing::Span, name: String) {
    #[cfg(feature = "otel")]
    crate::otel::rename(span, name.clone());
    span.record("otel.name", name);
}
