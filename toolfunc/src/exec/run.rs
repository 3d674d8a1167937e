//! The run methods of [`Registry`]: every one starts a call with no options of its
//! own, through the same [`Calls`] a [`Runner`] uses.

use std::future::Future;

use serde_json::Value;

use super::ctx::Scope;
use super::runner::{Calls, Runner};
use super::stream::ToolStream;
use super::task::CallHandle;
use crate::{CallOptions, Registry, ToolCall, ToolError, ToolResult};

/// The scope of a call made straight on a registry: no options.
static NO_SCOPE: Scope = Scope::none();

impl Registry {
    /// A runner whose calls all carry `options`: typed extensions, caller identity,
    /// timeout, cancellation tokens, progress listener, dependency binding. Runners
    /// chain with [`Runner::with`].
    ///
    /// ```rust,standalone_crate
    /// use std::time::Duration;
    /// use toolfunc::{tool, CallOptions, Ctx, Registry};
    ///
    /// /// Reports who called.
    /// #[tool]
    /// fn who(ctx: &Ctx) -> String {
    ///     ctx.caller().unwrap_or("anonymous").to_owned()
    /// }
    ///
    /// let billing = Registry::global().with(CallOptions::new().caller("billing"));
    /// assert_eq!(billing.run_sync("who", serde_json::json!({})).unwrap(), "billing");
    /// let strict = billing.with(CallOptions::new().timeout(Duration::from_secs(1)));
    /// assert_eq!(strict.run_sync("who", serde_json::json!({})).unwrap(), "billing");
    /// ```
    pub fn with(&self, options: CallOptions) -> Runner {
        Runner::new(self.clone(), Scope::default().with(options))
    }

    fn calls(&self) -> Calls<'_> {
        Calls {
            registry: self,
            scope: &NO_SCOPE,
        }
    }

    /// Runs a tool by name or alias with an arguments object.
    ///
    /// The arguments are checked before the handler runs (`ARGUMENTS`, with the JSON
    /// Pointer of the failing value); a handler error is `FAILED` (or the handler's
    /// own `ToolError`), and a panic is `PANICKED`. A streaming tool's items are
    /// collected into an array. A tool whose asynchronous setup is still running is
    /// waited for. Dropping the returned future cancels the call and runs its cleanups.
    pub fn run<'a>(
        &'a self,
        name: &'a str,
        args: Value,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send + 'a {
        self.calls().run(name, args)
    }

    /// Runs a sync tool on the calling thread. An async or streaming tool gives
    /// `ASYNC_ONLY`, one still setting up `NOT_READY`, one at its concurrency limit
    /// `BUSY`.
    pub fn run_sync(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        self.calls().run_sync(name, args)
    }

    /// Runs a tool with positional arguments, mapped onto its parameters in
    /// declaration order (see [`ToolBuilder::param_order`](crate::ToolBuilder::param_order)).
    pub fn run_with_pos<'a>(
        &'a self,
        name: &'a str,
        args: Vec<Value>,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send + 'a {
        self.calls().run_with_pos(name, args)
    }

    /// Runs a sync tool with positional arguments on the calling thread.
    pub fn run_with_pos_sync(&self, name: &str, args: Vec<Value>) -> Result<Value, ToolError> {
        self.calls().run_with_pos_sync(name, args)
    }

    /// Runs a tool as a stream of results: a streaming tool's items one by one, any
    /// other tool's single result. See [`ToolStream`].
    pub fn run_stream(&self, name: &str, args: Value) -> ToolStream {
        self.calls().run_stream(name, args)
    }

    /// Starts a call on the tokio runtime and returns its handle: await it for the
    /// result, or [`abort`](CallHandle::abort) it. Outside a tokio runtime the handle
    /// resolves to a `FAILED` error.
    pub fn spawn(&self, name: &str, args: Value) -> CallHandle {
        self.calls().spawn(name, args)
    }

    /// Executes one call; any failure is in the result, never returned as an error.
    pub fn execute(&self, call: ToolCall) -> impl Future<Output = ToolResult> + Send + '_ {
        self.calls().execute(call)
    }

    /// Executes calls concurrently and returns their results in input order. One
    /// failing call never fails the batch.
    pub async fn execute_batch(
        &self,
        calls: impl IntoIterator<Item = ToolCall>,
    ) -> Vec<ToolResult> {
        self.calls().execute_batch(calls).await
    }
}
