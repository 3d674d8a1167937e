//! What a registry tells its subscribers: tools added, removed, cleared; calls started
//! and finished. Calls also run inside a `tracing` span with the same fields: an
//! `execute_tool` span named and filled as OpenTelemetry's semantic conventions for
//! a tool's execution say.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::time::Instant;

use tokio::sync::broadcast;

use serde_json::Value;
use tracing::field::Empty;

use super::Registry;
use crate::error::ToolError;

/// An event of a [`Registry`], as [`Registry::subscribe`] delivers it.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RegistryEvent {
    /// A tool was placed in the registry (a new one, or a replacement).
    Added {
        /// The tool's name.
        name: String,
    },
    /// A tool was physically removed (its last registration taken back, forced, or
    /// replaced).
    Removed {
        /// The tool's name.
        name: String,
        /// Whether a replacement takes its place (an `Added` follows).
        replaced: bool,
    },
    /// Every tool of the registry was removed by `clear`.
    Cleared,
    /// A prompt was registered or taken out.
    PromptsChanged,
    /// A resource or a resource template was registered or taken out.
    ResourcesChanged,
    /// The program said the resource at `uri` changed
    /// ([`Registry::notify_resource_updated`]).
    ResourceUpdated {
        /// The resource's URI.
        uri: String,
    },
    /// A call started.
    CallStarted {
        /// The tool's name.
        tool: String,
        /// The call's id, when it has one.
        call_id: Option<String>,
    },
    /// A call ended.
    CallFinished {
        /// The tool's name.
        tool: String,
        /// The call's id, when it has one.
        call_id: Option<String>,
        /// How long it ran.
        duration: Duration,
        /// How it ended.
        status: CallStatus,
    },
}

/// A subscription to a registry's events ([`Registry::subscribe`]).
///
/// Its buffer is bounded: a subscriber that falls behind never slows calls down; its
/// next [`recv`](Self::recv) says how many events it missed, then the newest follow.
#[derive(Debug)]
pub struct Subscription {
    receiver: broadcast::Receiver<RegistryEvent>,
    /// Counts the subscription while it lives, so a registry knows at the cost of one
    /// atomic load whether anyone listens.
    _counted: Counted,
}

/// Why [`Subscription::recv`] returned no event.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SubscriptionError {
    /// The subscriber fell behind and missed this many events; receiving again
    /// yields the oldest event still buffered.
    Lagged(u64),
    /// The registry is gone: no event will come.
    Closed,
}

impl std::fmt::Display for SubscriptionError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Lagged(n) => write!(f, "the subscriber fell behind and missed {n} events"),
            Self::Closed => f.write_str("the registry is gone"),
        }
    }
}

impl std::error::Error for SubscriptionError {}

impl Subscription {
    pub(crate) fn new(
        receiver: broadcast::Receiver<RegistryEvent>,
        count: &Arc<AtomicUsize>,
    ) -> Self {
        count.fetch_add(1, Ordering::SeqCst);
        Self {
            receiver,
            _counted: Counted(Arc::clone(count)),
        }
    }

    /// The next event.
    pub async fn recv(&mut self) -> Result<RegistryEvent, SubscriptionError> {
        self.receiver.recv().await.map_err(|err| match err {
            broadcast::error::RecvError::Lagged(n) => SubscriptionError::Lagged(n),
            broadcast::error::RecvError::Closed => SubscriptionError::Closed,
        })
    }

    /// The next event if one is waiting, without waiting.
    pub fn try_recv(&mut self) -> Option<Result<RegistryEvent, SubscriptionError>> {
        match self.receiver.try_recv() {
            Ok(event) => Some(Ok(event)),
            Err(broadcast::error::TryRecvError::Empty) => None,
            Err(broadcast::error::TryRecvError::Lagged(n)) => {
                Some(Err(SubscriptionError::Lagged(n)))
            }
            Err(broadcast::error::TryRecvError::Closed) => Some(Err(SubscriptionError::Closed)),
        }
    }
}

#[derive(Debug)]
struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How a call ended.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallStatus {
    /// It returned a result.
    Ok,
    /// It failed with the error of this code.
    Error(String),
    /// It was cancelled (aborted, a caller's token, or its future dropped).
    Cancelled,
}

impl CallStatus {
    pub(crate) fn of(result: &Result<Value, ToolError>) -> Self {
        match result {
            Ok(_) => Self::Ok,
            Err(ToolError::Cancelled { .. }) => Self::Cancelled,
            Err(err) => Self::Error(err.code().to_owned()),
        }
    }

    fn as_str(&self) -> &str {
        match self {
            Self::Ok => "ok",
            Self::Error(_) => "error",
            Self::Cancelled => "cancelled",
        }
    }
}

/// The `error.type` of a cancelled call: its [`ToolError`] code.
const CANCELLED: &str = "CANCELLED";

/// Watches one call for the registry's subscribers and for `tracing`. Made only when
/// someone listens: a call nobody watches pays one check, and holds one word for it
/// (the watch itself is boxed, so a call that no one observes stays small).
pub(crate) struct Observer(Box<Watching>);

struct Watching {
    registry: Registry,
    tool: String,
    call_id: Option<String>,
    started: Instant,
    span: tracing::Span,
    finished: bool,
}

impl Observer {
    /// A watch of the call when anyone listens: the check is inlined into every run
    /// path, the watch itself is made out of line.
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    pub(crate) fn start(registry: &Registry, tool: &str, call_id: Option<&str>) -> Option<Self> {
        let subscribed = registry.has_subscribers();
        if !subscribed && !tracing::enabled!(tracing::Level::INFO) {
            return None;
        }
        Self::watch(registry, tool, call_id, subscribed)
    }

    #[inline(never)]
    fn watch(
        registry: &Registry,
        tool: &str,
        call_id: Option<&str>,
        subscribed: bool,
    ) -> Option<Self> {
        // OpenTelemetry's semantic conventions for a tool's execution: the span's
        // name, its kind and status are the `otel.*` fields the OpenTelemetry bridge
        // reads (plain fields to any other subscriber).
        let span = tracing::info_span!(
            "execute_tool",
            otel.name = format!("execute_tool {tool}"),
            otel.kind = "internal",
            otel.status_code = Empty,
            gen_ai.operation.name = "execute_tool",
            gen_ai.tool.name = tool,
            gen_ai.tool.call.id = call_id,
            error.type = Empty,
            status = Empty,
            duration_us = Empty
        );
        if span.is_disabled() && !subscribed {
            return None;
        }
        let call_id = call_id.map(str::to_owned);
        if subscribed {
            registry.emit(RegistryEvent::CallStarted {
                tool: tool.to_owned(),
                call_id: call_id.clone(),
            });
        }
        Some(Self(Box::new(Watching {
            registry: registry.clone(),
            tool: tool.to_owned(),
            call_id,
            started: Instant::now(),
            span,
            finished: false,
        })))
    }

    pub(crate) fn span(&self) -> &tracing::Span {
        &self.0.span
    }

    pub(crate) fn finish(mut self, status: CallStatus) {
        self.0.report(status);
    }
}

impl Watching {
    fn report(&mut self, status: CallStatus) {
        if self.finished {
            return;
        }
        self.finished = true;
        let duration = self.started.elapsed();
        self.span.record("status", status.as_str());
        match &status {
            CallStatus::Ok => {}
            CallStatus::Error(code) => {
                self.span.record("error.type", code.as_str());
                self.span.record("otel.status_code", "ERROR");
            }
            CallStatus::Cancelled => {
                self.span.record("error.type", CANCELLED);
                self.span.record("otel.status_code", "ERROR");
            }
        }
        self.span.record(
            "duration_us",
            u64::try_from(duration.as_micros()).unwrap_or(u64::MAX),
        );
        self.registry.emit(RegistryEvent::CallFinished {
            tool: std::mem::take(&mut self.tool),
            call_id: self.call_id.take(),
            duration,
            status,
        });
    }
}

impl Drop for Observer {
    /// A call whose future was dropped before it finished was cancelled.
    fn drop(&mut self) {
        self.0.report(CallStatus::Cancelled);
    }
}
