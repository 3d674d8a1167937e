//! Nested calls: a tool running another as part of its own call ([`Ctx::run`],
//! [`Ctx::run_stream`]), or through a runner that inherits its context
//! ([`Ctx::with`]) or starts afresh ([`Ctx::fresh`]).

use serde_json::Value;

use super::ctx::Ctx;
use super::runner::Runner;
use super::scope::Scope;
use super::stream::ToolStream;
use crate::call::Args;
use crate::error::ToolError;
use crate::options::CallOptions;

impl Ctx {
    /// Runs another tool as part of this call: it inherits this call's extensions,
    /// caller, call id, progress listener, log listener, cancellation and deadline.
    ///
    /// `name` is first looked up among the running tool's dependency aliases, then
    /// resolved by the call's [`Binding`](crate::options::Binding): with `Auto` (the default), a shadow in the
    /// calling registry wins when that registry descends from the one holding the
    /// running tool; `Early` keeps to the holding registry; `Late` always resolves in
    /// the calling registry.
    pub async fn run<'v>(&self, name: &str, args: impl Into<Args<'v>>) -> Result<Value, ToolError> {
        let found = self
            .resolve_nested(name)
            .ok_or_else(|| ToolError::not_found(name))?;
        let args = found.tool.named_args(args.into())?.into_owned();
        self.with(CallOptions::new())
            .run_resolved(found, args, false)
            .await
    }

    /// Streams another tool as part of this call (see [`Ctx::run`]).
    pub fn run_stream<'v>(&self, name: &str, args: impl Into<Args<'v>>) -> ToolStream {
        self.with(CallOptions::new()).run_stream(name, args)
    }

    /// A runner for calls that start from a fresh context, inheriting nothing of
    /// this call's (the seed's `inheritContext: false`): only `options`, no
    /// extensions, caller or listeners of the caller, no deadline, and not
    /// cancelled with this call. Use it for work that must outlive or stand apart
    /// from the call, such as an audit record.
    ///
    /// ```rust,standalone_crate
    /// use serde_json::json;
    /// use toolfunc::{tool, CallOptions, Ctx, Registry, ToolError};
    ///
    /// /// Reports who called.
    /// #[tool]
    /// fn who(ctx: &Ctx) -> Option<String> {
    ///     ctx.caller().map(str::to_owned)
    /// }
    ///
    /// /// Asks `who` twice: inheriting this call's context, and from a fresh one.
    /// #[tool]
    /// async fn both(ctx: &Ctx) -> Result<serde_json::Value, ToolError> {
    ///     let inherited = ctx.run("who", json!({})).await?;
    ///     let fresh = ctx.fresh(CallOptions::new()).run("who", json!({})).await?;
    ///     Ok(json!([inherited, fresh]))
    /// }
    ///
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let ann = Registry::global().with(CallOptions::new().caller("ann"));
    /// assert_eq!(ann.run("both", json!({})).await.unwrap(), json!(["ann", null]));
    /// # });
    /// ```
    pub fn fresh(&self, options: CallOptions) -> Runner {
        Runner::new(self.registry().clone(), Scope::default().with(options))
    }

    /// A runner for nested calls that inherit this call's context, with `options`
    /// added on top (for those calls only).
    pub fn with(&self, options: CallOptions) -> Runner {
        Runner::new(self.registry().clone(), self.nested_scope(options))
    }
}
