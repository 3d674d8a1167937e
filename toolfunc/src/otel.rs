//! OpenTelemetry (feature `otel`): every call's spans exported over OTLP in one call,
//! and the W3C trace context each surface reads and writes.
//!
//! ```no_run
//! # async fn run() -> Result<(), toolfunc::ToolError> {
//! // OTLP over HTTP/protobuf to `OTEL_EXPORTER_OTLP_ENDPOINT` (default
//! // `http://localhost:4318`); the spans still buffered are sent when `_otel` drops.
//! let _otel = toolfunc::otel::init("my-service")?;
//! # Ok(()) }
//! ```
//!
//! What the spans are, and how one trace follows a call from process to process:
//! [Tracing](crate::Registry#tracing).

use std::collections::HashMap;
use std::fmt;
use std::future::Future;
use std::pin::Pin;

use opentelemetry::propagation::{Extractor, TextMapPropagator};
use opentelemetry::trace::{TraceContextExt, TracerProvider as _};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::propagation::{BaggagePropagator, TraceContextPropagator};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanExporter, TracerProviderBuilder};
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::registry::LookupSpan;

use crate::error::ToolError;
use crate::trace::TraceContext;

/// The OpenTelemetry crates this module is built on (`opentelemetry`, its SDK, the
/// OTLP exporter and the `tracing` bridge), for settings of your own: a sampler,
/// resource attributes, another exporter.
pub mod crates {
    pub use opentelemetry;
    pub use opentelemetry_otlp;
    pub use opentelemetry_sdk;
    pub use tracing_opentelemetry;
    pub use tracing_subscriber;
}

/// Exports the spans of this process to OpenTelemetry: OTLP over HTTP/protobuf to
/// the endpoint of the standard `OTEL_EXPORTER_OTLP_ENDPOINT` (or
/// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) variable, `http://localhost:4318` when
/// neither is set, as `service_name`; spans at `INFO` and above. Installs the
/// global `tracing` subscriber and the W3C propagator.
///
/// Call it inside a tokio runtime with more than one worker thread (the exporter's
/// requests run on it); keep the [`Guard`] for as long as spans should go out. For
/// an exporter or a subscriber of your own, use [`Builder`].
pub fn init(service_name: impl Into<String>) -> Result<Guard, ToolError> {
    Builder::new(service_name).install()
}

/// How spans are exported: the service's name, the exporter (OTLP unless
/// [`exporter`](Self::exporter) gives another), the least level exported.
pub struct Builder {
    service_name: String,
    provider: TracerProviderBuilder,
    exporter: bool,
    level: LevelFilter,
}

impl fmt::Debug for Builder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Builder")
            .field("service_name", &self.service_name)
            .field("exporter", &self.exporter)
            .field("level", &self.level)
            .finish_non_exhaustive()
    }
}

impl Builder {
    /// Spans of `service_name` (the `service.name` resource attribute).
    pub fn new(service_name: impl Into<String>) -> Self {
        Self {
            service_name: service_name.into(),
            provider: SdkTracerProvider::builder(),
            exporter: false,
            level: LevelFilter::INFO,
        }
    }

    /// Sends the spans to `exporter` (in batches) instead of OTLP: another
    /// protocol, or the SDK's `InMemorySpanExporter` in tests. May be called more
    /// than once: every exporter gets every span.
    #[must_use]
    pub fn exporter(mut self, exporter: impl SpanExporter + 'static) -> Self {
        self.provider = self.provider.with_batch_exporter(exporter);
        self.exporter = true;
        self
    }

    /// Exports spans at `level` and above (default `INFO`: the spans of calls and
    /// surfaces are `INFO`).
    #[must_use]
    pub fn level(mut self, level: tracing::Level) -> Self {
        self.level = LevelFilter::from_level(level);
        self
    }

    /// The `tracing` layer that exports spans, for a subscriber of your own, and
    /// the guard that flushes them; sets the global W3C propagator.
    pub fn build<S>(self) -> Result<(impl Layer<S> + Send + Sync + 'static, Guard), ToolError>
    where
        S: tracing::Subscriber + for<'span> LookupSpan<'span> + Send + Sync,
    {
        let mut provider = self.provider;
        if !self.exporter {
            provider = provider.with_batch_exporter(otlp()?);
        }
        let provider = provider
            .with_resource(
                Resource::builder()
                    .with_service_name(self.service_name.clone())
                    .build(),
            )
            .build();
        let tracer = provider.tracer("toolfunc");
        opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
        opentelemetry::global::set_tracer_provider(provider.clone());
        let layer = tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_filter(self.level);
        Ok((layer, Guard { provider }))
    }

    /// Installs the global `tracing` subscriber with the exporting layer; fails
    /// when one is installed already.
    pub fn install(self) -> Result<Guard, ToolError> {
        let (layer, guard) = self.build()?;
        let subscriber = tracing_subscriber::registry().with(layer);
        tracing::subscriber::set_global_default(subscriber)
            .map_err(|err| ToolError::failed(format!("otel: {err}")))?;
        Ok(guard)
    }
}

/// Keeps spans going out; dropping it sends those still buffered and stops the
/// exporter.
#[must_use = "dropping the guard stops the export"]
pub struct Guard {
    provider: SdkTracerProvider,
}

impl fmt::Debug for Guard {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Guard").finish_non_exhaustive()
    }
}

impl Guard {
    /// Sends the spans that ended and wait in the batch now.
    pub fn flush(&self) -> Result<(), ToolError> {
        self.provider
            .force_flush()
            .map_err(|err| ToolError::failed(format!("otel: {err}")))
    }

    /// The tracer provider, for tracers of your own.
    pub fn provider(&self) -> &SdkTracerProvider {
        &self.provider
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        if let Err(err) = self.provider.shutdown() {
            tracing::debug!(error = %err, "otel: the exporter did not shut down cleanly");
        }
    }
}

/// The OTLP exporter: HTTP/protobuf on hyper, its requests run on this tokio
/// runtime (the SDK's batch exports from a thread of its own).
fn otlp() -> Result<opentelemetry_otlp::SpanExporter, ToolError> {
    use opentelemetry_otlp::{Protocol, WithExportConfig, WithHttpConfig};
    let runtime = tokio::runtime::Handle::try_current().map_err(|_| {
        ToolError::failed("otel: the OTLP exporter needs a tokio runtime; call `init` inside one")
    })?;
    let client = OnRuntime {
        runtime,
        inner: opentelemetry_http::hyper::HyperClient::with_default_connector(
            std::time::Duration::from_secs(10),
            None,
        ),
    };
    opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .with_protocol(Protocol::HttpBinary)
        .with_http_client(client)
        .build()
        .map_err(|err| ToolError::failed(format!("otel: {err}")))
}

/// An HTTP client whose requests run on a tokio runtime, whatever thread asks.
#[derive(Debug)]
struct OnRuntime {
    runtime: tokio::runtime::Handle,
    inner: opentelemetry_http::hyper::HyperClient,
}

impl HttpClient for OnRuntime {
    fn send_bytes<'a, 'f>(
        &'a self,
        request: Request<Bytes>,
    ) -> Pin<Box<dyn Future<Output = Result<Response<Bytes>, HttpError>> + Send + 'f>>
    where
        'a: 'f,
        Self: 'f,
    {
        let inner = self.inner.clone();
        let task = self
            .runtime
            .spawn(async move { inner.send_bytes(request).await });
        Box::pin(async move { task.await.map_err(|err| Box::new(err) as HttpError)? })
    }
}

/// A [`TraceContext`] as the propagators read it.
struct Incoming<'a>(&'a TraceContext);

impl Extractor for Incoming<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0
            .entries()
            .find(|(name, _)| *name == key)
            .map(|(_, value)| value)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.entries().map(|(name, _)| name).collect()
    }
}

#[cfg_attr(
    not(any(feature = "http-server", feature = "mcp", feature = "nats")),
    expect(dead_code, reason = "the servers adopt trace context")
)]
/// Makes the caller's span (`incoming`) the parent of `span`, which must not have
/// been entered yet. Without the OpenTelemetry layer (or with `span` disabled)
/// there is nothing to do.
pub(crate) fn adopt(span: &tracing::Span, incoming: &TraceContext) {
    let carrier = Incoming(incoming);
    let cx = TraceContextPropagator::new().extract(&carrier);
    let cx = BaggagePropagator::new().extract_with_context(&cx, &carrier);
    // Refused only when there is no OpenTelemetry layer or the span is off: then
    // the span has no OpenTelemetry parent to take.
    let _ = span.set_parent(cx);
}

#[cfg_attr(
    not(any(
        feature = "http-client",
        feature = "http-server",
        feature = "mcp",
        feature = "nats"
    )),
    expect(dead_code, reason = "the surfaces link their rounds")
)]
/// Links `span` to the span `earlier` names.
pub(crate) fn link(span: &tracing::Span, earlier: &TraceContext) {
    let cx = TraceContextPropagator::new().extract(&Incoming(earlier));
    let linked = cx.span().span_context().clone();
    if linked.is_valid() {
        span.add_link(linked);
    }
}

#[cfg_attr(
    not(any(feature = "http-client", feature = "mcp", feature = "nats")),
    expect(dead_code, reason = "the clients send trace context")
)]
/// The trace context to send with a call made inside `span`: its own, when the
/// OpenTelemetry layer records it.
pub(crate) fn outgoing(span: &tracing::Span) -> Option<TraceContext> {
    let cx = span.context();
    if !cx.span().span_context().is_valid() {
        return None;
    }
    let mut fields = HashMap::new();
    TraceContextPropagator::new().inject_context(&cx, &mut fields);
    BaggagePropagator::new().inject_context(&cx, &mut fields);
    TraceContext::read(|name| fields.get(name).map(String::as_str))
}

#[cfg(any(feature = "http-client", feature = "http-server"))]
/// Renames `span`'s OpenTelemetry span, started or not: the `tracing` bridge reads
/// `otel.name` only until the span starts.
pub(crate) fn rename(span: &tracing::Span, name: String) {
    let cx = span.context();
    if cx.has_active_span() {
        cx.span().update_name(name);
    }
}
