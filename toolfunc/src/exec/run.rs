//! The run methods, written once for [`Registry`] (calls with no options of their own)
//! and [`Runner`] (calls carrying the runner's options): both expand the same
//! definitions, each over its [`Calls`].

use std::future::Future;

use serde_json::Value;

use super::runner::{Calls, Runner};
use super::scope::Scope;
use super::stream::ToolStream;
use super::task::CallHandle;
use crate::call::{Args, ToolCall, ToolResult};
use crate::error::ToolError;
use crate::options::CallOptions;
use crate::registry::Registry;

/// The scope of a call made straight on a registry: no options.
static NO_SCOPE: Scope = Scope::none();

/// The run methods of a type with a `calls()` giving its [`Calls`].
macro_rules! run_methods {
    () => {
        /// Runs a tool by name or alias with its arguments: an object of named
        /// arguments (a `serde_json::Value`; `null` is none) or positional ones (a
        /// `Vec<Value>`, see [`Args`]).
        ///
        /// The arguments are checked before the handler runs (`ARGUMENTS`, with the
        /// JSON Pointer of the failing value); a handler error is `FAILED` (or the
        /// handler's own `ToolError`), and a panic is `PANICKED`. A streaming tool's
        /// items are collected into an array. A tool whose asynchronous setup is
        /// still running is waited for. Dropping the returned future cancels the call
        /// and runs its cleanups.
        pub fn run<'a>(
            &'a self,
            name: &'a str,
            args: impl Into<Args<'a>>,
        ) -> impl Future<Output = Result<Value, ToolError>> + Send + 'a {
            self.calls().run(name, args.into())
        }

        /// Runs a tool like [`run`](Self::run), polling it on the calling thread: a
        /// `local` tool (`#[tool(local)]`, whose future is not `Send`) that the call
        /// reaches, directly or through nested calls, runs in place inside the
        /// returned future instead of on toolfunc's local executor thread, so no
        /// thread wake-up is paid. Any other tool runs as under `run`.
        ///
        /// The returned future is not `Send`: await it where futures stay on one
        /// thread (a current-thread runtime, a `LocalSet`, `block_on`). Dropping it
        /// cancels the call and drops its local futures on this thread.
        ///
        /// ```
        /// use std::rc::Rc;
        /// use serde_json::{json, Value};
        /// use toolfunc::{Registry, ToolFunc};
        ///
        /// let shout = ToolFunc::builder("shout")
        ///     .local_handler(|_, args: Value| async move {
        ///         let text = Rc::new(args["text"].as_str().unwrap_or("").to_uppercase());
        ///         tokio::task::yield_now().await; // `text` lives across the await
        ///         Ok(json!(*text))
        ///     })
        ///     .build()
        ///     .unwrap();
        /// let registry = Registry::new();
        /// registry.register(shout).unwrap();
        /// let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        /// let out = runtime.block_on(registry.run_local("shout", json!({"text": "hi"})));
        /// assert_eq!(out.unwrap(), json!("HI"));
        /// ```
        pub fn run_local<'a>(
            &'a self,
            name: &'a str,
            args: impl Into<Args<'a>>,
        ) -> impl Future<Output = Result<Value, ToolError>> + 'a {
            crate::local::inline(self.calls().run(name, args.into()))
        }

        /// Runs a sync tool on the calling thread. An async or streaming tool gives
        /// `ASYNC_ONLY`, one still setting up `NOT_READY`, one at its concurrency
        /// limit `BUSY`.
        pub fn run_sync<'v>(
            &self,
            name: &str,
            args: impl Into<Args<'v>>,
        ) -> Result<Value, ToolError> {
            self.calls().run_sync(name, args.into())
        }

        /// Runs a tool as a stream of results: a streaming tool's items one by one,
        /// any other tool's single result. See [`ToolStream`].
        pub fn run_stream<'v>(&self, name: &str, args: impl Into<Args<'v>>) -> ToolStream {
            self.calls().run_stream(name, args.into())
        }

        /// Starts a call on the tokio runtime and returns its handle: await it for
        /// the result, or [`abort`](CallHandle::abort) it (a call aborted before its
        /// handler was entered never enters it). Outside a tokio runtime the handle
        /// resolves to a `FAILED` error.
        pub fn spawn<'v>(&self, name: &str, args: impl Into<Args<'v>>) -> CallHandle {
            self.calls().spawn(name, args.into())
        }

        /// Executes one correlated call; any failure is in the result, never
        /// returned as an error.
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
    };
}

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

    pub(super) fn calls(&self) -> Calls<'_> {
        Calls {
            registry: self,
            scope: &NO_SCOPE,
        }
    }

    run_methods!();
}

impl Runner {
    run_methods!();
}
