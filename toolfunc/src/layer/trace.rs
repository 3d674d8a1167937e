//! [`Trace`]: a `tracing` span around every call and one event when it ends.

use crate::time::Instant;

use futures::StreamExt;
use tracing::Instrument;

use super::{Call, Layer, Next, Reply, ReplyFuture};
use crate::error::ToolError;

/// Logs and times every call on `tracing`: a `tool_call` span (fields `tool`, `act`,
/// `caller`, `surface`, `call_id`) around the call, and when it ends an event with
/// `elapsed_ms` and its outcome: `INFO` for a success, `WARN` with the error's `code`
/// for a failure. A stream's event comes when it ends, with the number of `items`.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolfunc::layer::Trace;
/// use toolfunc::{tool, Registry};
///
/// /// Adds two numbers.
/// #[tool]
/// fn add(a: f64, b: f64) -> f64 {
///     a + b
/// }
///
/// // With a subscriber installed (tracing_subscriber::fmt::init()), each call logs
/// // `tool call finished tool="add" elapsed_ms=0.01 ...`.
/// let registry = Registry::global().isolate().layer(Trace::new());
/// assert_eq!(registry.run_sync("add", json!({"a": 1, "b": 2})).unwrap(), json!(3.0));
/// ```
#[derive(Debug, Default, Clone, Copy)]
pub struct Trace {
    _private: (),
}

impl Trace {
    /// The layer.
    pub fn new() -> Self {
        Self::default()
    }
}

fn finished(tool: &str, started: Instant, outcome: Result<Option<u64>, &ToolError>) {
    let elapsed_ms = started.elapsed().as_secs_f64() * 1000.0;
    match outcome {
        Ok(None) => tracing::info!(tool, elapsed_ms, "tool call finished"),
        Ok(Some(items)) => tracing::info!(tool, elapsed_ms, items, "tool stream finished"),
        Err(err) => tracing::warn!(
            tool,
            elapsed_ms,
            code = err.code(),
            error = %err,
            "tool call failed"
        ),
    }
}

impl Layer for Trace {
    fn call(&self, call: Call, next: Next) -> ReplyFuture {
        let span = tracing::info_span!(
            "tool_call",
            tool = call.tool(),
            act = call.act(),
            caller = call.caller(),
            surface = ?call.surface(),
            call_id = call.ctx().call_id(),
        );
        let tool: Box<str> = call.tool().into();
        let started = Instant::now();
        let mut running = {
            let _in = span.enter();
            next.run(call)
        };
        if let Some(reply) = running.take_ready() {
            let _in = span.enter();
            return ReplyFuture::ready(report(reply, tool, started, &span));
        }
        let inner = span.clone();
        ReplyFuture::new(
            async move { report(running.await, tool, started, &inner) }.instrument(span),
        )
    }
}

/// Logs how a call ended; a stream is logged when it ends.
fn report(
    reply: Result<Reply, ToolError>,
    tool: Box<str>,
    started: Instant,
    span: &tracing::Span,
) -> Result<Reply, ToolError> {
    match reply {
        Ok(Reply::Stream(items)) => Ok(Reply::Stream(Box::pin(Ended {
            items,
            tool: Some(tool),
            started,
            span: span.clone(),
            count: 0,
        }))),
        Ok(value) => {
            finished(&tool, started, Ok(None));
            Ok(value)
        }
        Err(err) => {
            finished(&tool, started, Err(&err));
            Err(err)
        }
    }
}

/// A stream that reports how it ended once: at its end, at an error, or when dropped.
struct Ended {
    items: futures::stream::BoxStream<'static, Result<serde_json::Value, ToolError>>,
    /// Taken when the end is reported.
    tool: Option<Box<str>>,
    started: Instant,
    span: tracing::Span,
    count: u64,
}

impl Ended {
    fn report(&mut self, outcome: Result<(), &ToolError>) {
        if let Some(tool) = self.tool.take() {
            let _in = self.span.enter();
            finished(&tool, self.started, outcome.map(|()| Some(self.count)));
        }
    }
}

impl futures::Stream for Ended {
    type Item = Result<serde_json::Value, ToolError>;

    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Self::Item>> {
        let polled = self.items.poll_next_unpin(cx);
        match &polled {
            std::task::Poll::Ready(Some(Ok(_))) => self.count += 1,
            std::task::Poll::Ready(Some(Err(err))) => self.report(Err(err)),
            std::task::Poll::Ready(None) => self.report(Ok(())),
            std::task::Poll::Pending => {}
        }
        polled
    }
}

impl Drop for Ended {
    fn drop(&mut self) {
        self.report(Ok(()));
    }
}
