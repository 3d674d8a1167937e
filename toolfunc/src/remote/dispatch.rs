//! Dispatch: a found call answers one value, a stream of items or a tracked task,
//! decided once, and is handed on to the execution core or the ledger.

use std::time::Duration;

#[cfg(feature = "mcp")]
use futures::StreamExt;
#[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
use serde_json::Value;

use super::find::Found;
#[cfg(any(feature = "http-server", feature = "mcp"))]
use super::ledger::{Ledger, Track};
use crate::call::{ToolCall, ToolResult};
#[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
use crate::error::ToolError;
use crate::exec::runner::Runner;
#[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
use crate::exec::stream::ToolStream;
#[cfg(feature = "mcp")]
use crate::options::CollectLimit;

/// How a found call answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan {
    /// One value.
    Value,
    /// Its items, one by one (a surface that cannot send them collects them).
    Stream,
    /// Tracked in a ledger: the answer if it comes within `soft`, else the task's
    /// id; `streamed` when the task gathers items.
    Tracked {
        /// The soft deadline.
        soft: Duration,
        /// Whether the call runs for its items.
        streamed: bool,
    },
}

impl Plan {
    /// The plan of `found` for a caller that wants its items one by one (`stream`:
    /// the call streams and the caller asked for a stream) and may or may not take
    /// a tracked task (`may_track`).
    pub(crate) fn of(found: &Found, stream: bool, may_track: bool) -> Self {
        let stream = stream && found.streams();
        match found.soft_deadline() {
            Some(soft) if may_track => Self::Tracked {
                soft,
                streamed: stream,
            },
            _ if stream => Self::Stream,
            _ => Self::Value,
        }
    }
}

impl Found {
    /// Runs the call for one value, with `runner`'s options.
    #[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
    pub(crate) async fn run(self, runner: &Runner, args: Value) -> Result<Value, ToolError> {
        let (found, shown) = self.into_parts();
        runner.run_resolved(found, args, shown).await
    }

    /// Runs the call for its items.
    #[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
    pub(crate) fn stream(self, runner: &Runner, args: Value) -> ToolStream {
        let (found, shown) = self.into_parts();
        runner.stream_resolved(found, args, shown)
    }

    /// Runs a correlated call (its id, and its name as the caller gave it, come back
    /// in the result).
    pub(crate) async fn execute(self, runner: &Runner, call: ToolCall) -> ToolResult {
        let (found, shown) = self.into_parts();
        runner.execute_resolved(found, call, shown).await
    }

    /// Runs the call to one value: a streaming call's items gathered into an array
    /// within `limit`, each handed to `each` (with its 1-based number) as it comes.
    #[cfg(feature = "mcp")]
    pub(crate) async fn collect(
        self,
        runner: &Runner,
        args: Value,
        stream: bool,
        limit: CollectLimit,
        mut each: impl FnMut(usize, &Value),
    ) -> Result<Value, ToolError> {
        if !stream {
            return self.run(runner, args).await;
        }
        let name = self.name().to_owned();
        let mut collected = Vec::new();
        let mut bytes = 0usize;
        let mut items = self.stream(runner, args);
        while let Some(item) = items.next().await {
            let item = item?;
            bytes = bytes.saturating_add(crate::options::json_size(&item));
            if collected.len() >= limit.items || bytes > limit.bytes {
                return Err(limit.exceeded(&name, collected.len() + 1, bytes));
            }
            each(collected.len() + 1, &item);
            collected.push(item);
        }
        Ok(Value::Array(collected))
    }

    /// Starts the call in `ledger`, tracked as `track` says; its id.
    #[cfg(any(feature = "http-server", feature = "mcp"))]
    pub(crate) fn track(
        self,
        ledger: &Ledger,
        args: Value,
        track: Track,
    ) -> Result<String, ToolError> {
        ledger.start_found(self.into_parts(), args, track)
    }
}
