//! Running tools: [`Runner`] (a registry with a context) and the run methods, written
//! once for a registry with or without a context.

use std::borrow::Cow;
use std::fmt;
use std::future::Future;
use std::sync::Arc;

use serde_json::Value;

use super::chain::{self, call_inline, call_inline_awaiting, check_ready};
use super::scope::Scope;
use super::stream::ToolStream;
use super::task::CallHandle;
use super::task::Running;
use crate::call::{Args, ToolCall, ToolResult};
use crate::error::ToolError;
use crate::exec::ctx::Ctx;
use crate::layer::{Layer, Layers, Mode, Reply, ReplyFuture, Viewer};
use crate::options::CallOptions;
use crate::registry::Registry;
use crate::registry::{Observer, Resolved};
use crate::tool::{ToolDefinition, ToolFunc};

/// Runs tools of a registry with a context: made by [`Registry::with`] or
/// [`Ctx::with`], it offers the registry's run methods, and every call it makes
/// carries its [`CallOptions`].
#[derive(Clone)]
pub struct Runner {
    registry: Registry,
    scope: Scope,
}

impl fmt::Debug for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner").finish_non_exhaustive()
    }
}

impl Runner {
    pub(crate) fn new(registry: Registry, scope: Scope) -> Self {
        Self { registry, scope }
    }

    pub(super) fn calls(&self) -> Calls<'_> {
        Calls {
            registry: &self.registry,
            scope: &self.scope,
        }
    }

    /// A runner with `options` added on top of this one's (they win where both set
    /// something; timeouts take the shorter; cancellation tokens add up).
    #[must_use]
    pub fn with(&self, options: CallOptions) -> Runner {
        Runner::new(self.registry.clone(), self.scope.with(options))
    }

    /// A runner whose calls also pass `layer`, after this runner's layers (and after
    /// the registry's). Calls nested in them inherit it. See [`layer`](crate::layer).
    #[must_use]
    pub fn layer(&self, layer: impl Layer) -> Runner {
        Runner::new(
            self.registry.clone(),
            self.scope.with_layer(Arc::new(layer)),
        )
    }

    /// The definitions of the tools this runner's caller may see: the registry's
    /// [`definitions`](Registry::definitions) less those a layer hides from the
    /// caller, surface and extensions of this runner's options.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let definitions = self.registry.definitions();
        if !self.has_layers() {
            return definitions;
        }
        let shown = self.layers_show();
        definitions.into_iter().filter(|d| shown(d)).collect()
    }

    /// Whether the layers of this runner (and its registry) let its caller see a
    /// tool: the rule [`definitions`](Self::definitions) filters with.
    pub(crate) fn layers_show(&self) -> impl Fn(&ToolDefinition) -> bool + '_ {
        let layers = self.layers();
        let viewer = self.viewer();
        move |def| {
            layers
                .as_ref()
                .is_none_or(|layers| crate::layer::visible(layers, def, &viewer))
        }
    }

    /// The call middleware of this runner and its registry, outermost first.
    pub(crate) fn layers(&self) -> Option<Layers> {
        chain::layers(&self.registry, &self.scope)
    }

    /// Its caller, as the layers see it.
    pub(crate) fn viewer(&self) -> Viewer<'_> {
        self.scope.viewer()
    }

    /// Whether calls of this runner pass any call middleware.
    pub(crate) fn has_layers(&self) -> bool {
        chain::layers(&self.registry, &self.scope).is_some()
    }

    /// The verified identity its calls carry, if any.
    pub(crate) fn identity(&self) -> Option<&crate::identity::Identity> {
        self.scope.data().and_then(|data| data.identity.as_ref())
    }

    /// The registry this runner calls into.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Runs an already resolved tool (a nested call after binding, a remote call
    /// found once on the remote floor): no second lookup by name. `shown` when
    /// the registry's layers already let the caller see it (the remote floor
    /// asked them): they are not asked again.
    pub(crate) async fn run_resolved(
        &self,
        found: Resolved,
        args: Value,
        shown: bool,
    ) -> Result<Value, ToolError> {
        self.calls().run_found(found, None, args, shown).await
    }

    /// [`run_resolved`](Self::run_resolved) for a correlated call: its id is the
    /// call's id, and the result carries it.
    pub(crate) async fn execute_resolved(
        &self,
        found: Resolved,
        call: ToolCall,
        shown: bool,
    ) -> ToolResult {
        let ToolCall {
            id,
            name,
            arguments,
        } = call;
        let output = self
            .calls()
            .run_found(found, Some(Arc::from(id.as_str())), arguments, shown)
            .await;
        ToolResult::new(id, name, output)
    }

    /// Streams an already resolved tool's items (see [`Registry::run_stream`]).
    pub(crate) fn stream_resolved(&self, found: Resolved, args: Value, shown: bool) -> ToolStream {
        self.calls().stream_found(found, args, shown)
    }

    /// Spawns an already resolved tool (see [`Registry::spawn`]).
    pub(crate) fn spawn_resolved(&self, found: Resolved, args: Value, shown: bool) -> CallHandle {
        self.calls().spawn_found(found, args, shown)
    }
}

/// A registry's calls with no options of their own, for functions that take either
/// (`impl Into<Runner>`).
impl From<&Registry> for Runner {
    fn from(registry: &Registry) -> Self {
        Runner::new(registry.clone(), Scope::default())
    }
}

impl From<Registry> for Runner {
    fn from(registry: Registry) -> Self {
        Runner::new(registry, Scope::default())
    }
}

impl From<&Runner> for Runner {
    fn from(runner: &Runner) -> Self {
        runner.clone()
    }
}

/// The run methods, written once for a registry with or without a context.
#[derive(Clone, Copy)]
pub(crate) struct Calls<'a> {
    pub(super) registry: &'a Registry,
    pub(super) scope: &'a Scope,
}

/// The future of `run`: small until it is first polled, when a sync tool runs at once
/// and anything else continues in a boxed future (so the common path moves little).
pub(crate) enum Run<'a> {
    Start {
        calls: Calls<'a>,
        name: &'a str,
        args: Args<'a>,
    },
    Running(futures::future::BoxFuture<'a, Result<Value, ToolError>>),
    Done,
}

impl Future for Run<'_> {
    type Output = Result<Value, ToolError>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Self::Output> {
        // Every variant is `Unpin` (the running future is boxed).
        let this = self.get_mut();
        if let Run::Start { .. } = this {
            let Run::Start { calls, name, args } = std::mem::replace(this, Run::Done) else {
                unreachable!("matched just above")
            };
            // `resolve` returns an `Option`: the error is made only when needed, which
            // keeps the hot path's values small.
            let Some(found) = calls.registry.resolve(name) else {
                return std::task::Poll::Ready(Err(crate::tool::service::not_found(name)));
            };
            let args = match found.tool.named_args(args) {
                Ok(args) => args,
                Err(err) => return std::task::Poll::Ready(Err(err)),
            };
            if let Some(layers) = calls.layers() {
                let tool = found.tool.clone();
                let ready = found.ready.clone();
                let ctx = calls.ctx(found, None);
                if let Err(err) = chain::check_visible(&layers, &ctx, name) {
                    return std::task::Poll::Ready(Err(err));
                }
                let mut running = chain::start(layers, ctx, ready, Mode::Value, args.into_owned());
                match running.take_ready() {
                    // Decided at once (a refusal, a sync tool): nothing to poll.
                    Some(Ok(Reply::Value(value))) => return std::task::Poll::Ready(Ok(value)),
                    Some(Err(err)) => return std::task::Poll::Ready(Err(err)),
                    Some(stream) => running = ReplyFuture::ready(stream),
                    None => {}
                }
                // Still to answer (or a stream a layer gave back, to collect within
                // the bound): the rest goes in the box, so the common run stays small.
                let bound = calls.scope.collect_limit();
                *this = Run::Running(Box::pin(async move {
                    let reply = chain::finish(running).await?;
                    chain::value_of(reply, bound, &tool).await
                }));
            } else if found.ready.is_none() && found.tool.runs_inline() {
                let ctx = calls.ctx(found, None);
                let observer = calls.observe(&ctx);
                // `call_inline_awaiting`, open: the result is returned from where it
                // was made, not moved through a `Running` first (a move of 88 bytes
                // that costs more time than its instructions).
                let (result, cleanups) = ctx.tool().call_sync_awaiting(&ctx, args);
                match cleanups {
                    None => {
                        chain::report(observer, &result);
                        return std::task::Poll::Ready(result);
                    }
                    // Its async cleanups still to wait for.
                    Some(cleanups) => {
                        *this = Run::Running(Box::pin(Running::Cleaning(
                            Some(result),
                            cleanups,
                            observer,
                        )));
                    }
                }
            } else if found.ready.is_none() {
                // The call future itself goes in the box: nothing wraps it.
                let ctx = calls.ctx(found, None);
                let observer = calls.observe(&ctx);
                *this = Run::Running(Box::pin(ToolFunc::call(ctx, args).observed(observer)));
            } else {
                *this = Run::Running(Box::pin(calls.run_found(
                    found,
                    None,
                    args.into_owned(),
                    false,
                )));
            }
        }
        match this {
            Run::Running(running) => running.as_mut().poll(cx),
            _ => std::task::Poll::Ready(Err(ToolError::failed("call polled after completion"))),
        }
    }
}

impl<'a> Calls<'a> {
    fn find(self, name: &str) -> Result<Resolved, ToolError> {
        self.registry
            .resolve(name)
            .ok_or_else(|| crate::tool::service::not_found(name))
    }

    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    fn ctx(self, found: Resolved, call_id: Option<Arc<str>>) -> Ctx {
        Ctx::new(
            self.registry.clone(),
            found.owner,
            found.tool,
            call_id,
            self.scope.clone(),
        )
    }

    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    fn observe(self, ctx: &Ctx) -> Option<Observer> {
        Observer::start(self.registry, ctx.tool_name(), ctx.call_id())
    }

    /// The call middleware these calls pass, if any.
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    fn layers(self) -> Option<Layers> {
        chain::layers(self.registry, self.scope)
    }

    /// `NOT_FOUND` for `name` unless every layer lets the caller see the tool:
    /// asked here unless the remote floor already asked the registry's layers
    /// (`shown`) and these calls add none of their own.
    fn check_visible(
        self,
        layers: &Layers,
        shown: bool,
        ctx: &Ctx,
        name: &str,
    ) -> Result<(), ToolError> {
        if shown && self.scope.layers().is_none() {
            return Ok(());
        }
        chain::check_visible(layers, ctx, name)
    }

    /// A value call through `layers`.
    async fn layered(
        self,
        layers: Layers,
        found: Resolved,
        name: &str,
        call_id: Option<Arc<str>>,
        args: Value,
        shown: bool,
    ) -> Result<Value, ToolError> {
        let (ready, tool) = (found.ready.clone(), found.tool.clone());
        let ctx = self.ctx(found, call_id);
        self.check_visible(&layers, shown, &ctx, name)?;
        let reply = chain::finish(chain::start(layers, ctx, ready, Mode::Value, args)).await?;
        chain::value_of(reply, self.scope.collect_limit(), &tool).await
    }

    /// A sync call through `layers`: every layer must be done without waiting.
    fn layered_sync(
        self,
        layers: Layers,
        found: Resolved,
        name: &str,
        args: Value,
    ) -> Result<Value, ToolError> {
        let (ready, tool) = (found.ready.clone(), found.tool.clone());
        let ctx = self.ctx(found, None);
        chain::check_visible(&layers, &ctx, name)?;
        let running = chain::start(layers, ctx, ready, Mode::Sync, args);
        let bound = self.scope.collect_limit();
        let call = async {
            let reply = chain::finish(running).await?;
            chain::value_of(reply, bound, &tool).await
        };
        futures::FutureExt::now_or_never(call).unwrap_or_else(|| {
            Err(ToolError::AsyncOnly {
                name: tool.name().to_owned(),
            })
        })
    }

    pub(super) fn run(self, name: &'a str, args: Args<'a>) -> Run<'a> {
        Run::Start {
            calls: self,
            name,
            args,
        }
    }

    pub(super) async fn run_found(
        self,
        found: Resolved,
        call_id: Option<Arc<str>>,
        args: Value,
        shown: bool,
    ) -> Result<Value, ToolError> {
        if let Some(layers) = self.layers() {
            let tool = found.tool.clone();
            return self
                .layered(layers, found, tool.name(), call_id, args, shown)
                .await;
        }
        if let Some(ready) = &found.ready {
            ready.clone().await?;
        }
        let ctx = self.ctx(found, call_id);
        let observer = self.observe(&ctx);
        if ctx.tool().runs_inline() {
            return call_inline_awaiting(&ctx, observer, Cow::Owned(args)).await;
        }
        ToolFunc::call(ctx, Cow::Owned(args))
            .observed(observer)
            .await
    }

    pub(super) fn run_sync(self, name: &str, args: Args<'_>) -> Result<Value, ToolError> {
        let Some(found) = self.registry.resolve(name) else {
            return Err(crate::tool::service::not_found(name));
        };
        let args = found.tool.named_args(args)?;
        if let Some(layers) = self.layers() {
            return self.layered_sync(layers, found, name, args.into_owned());
        }
        check_ready(found.ready.as_ref(), name)?;
        let ctx = self.ctx(found, None);
        let observer = self.observe(&ctx);
        call_inline(&ctx, observer, args)
    }

    pub(super) fn run_stream(self, name: &str, args: Args<'_>) -> ToolStream {
        let found = match self.find(name) {
            Ok(found) => found,
            Err(err) => return ToolStream::failed(err),
        };
        let args = match found.tool.named_args(args) {
            Ok(args) => args.into_owned(),
            Err(err) => return ToolStream::failed(err),
        };
        self.stream_found(found, args, false)
    }

    fn stream_found(self, found: Resolved, args: Value, shown: bool) -> ToolStream {
        let tool = found.tool.clone();
        let name = tool.name();
        if let Some(layers) = self.layers() {
            let ready = found.ready.clone();
            let ctx = self.ctx(found, None).streaming();
            if let Err(err) = self.check_visible(&layers, shown, &ctx, name) {
                return ToolStream::failed(err);
            }
            let mut running = chain::start(layers, ctx, ready, Mode::Stream, args);
            if let Some(reply) = running.take_ready() {
                return chain::stream_of(reply);
            }
            return ToolStream::deferred(Box::pin(async move {
                Ok(chain::stream_of(chain::finish(running).await))
            }));
        }
        if let Err(err) = check_ready(found.ready.as_ref(), name) {
            // Still setting up: stream once it is ready.
            if matches!(err, ToolError::NotReady { .. }) {
                let runner = Runner::new(self.registry.clone(), self.scope.clone());
                let name = name.to_owned();
                return ToolStream::deferred(Box::pin(async move {
                    runner.registry.ready(&name).await?;
                    Ok(runner.run_stream(&name, args))
                }));
            }
            return ToolStream::failed(err);
        }
        chain::start_stream(self.ctx(found, None).streaming(), args)
    }

    pub(super) fn spawn(self, name: &str, args: Args<'_>) -> CallHandle {
        let found = match self.find(name) {
            Ok(found) => found,
            Err(err) => return CallHandle::failed(err),
        };
        let args = match found.tool.named_args(args) {
            Ok(args) => args.into_owned(),
            Err(err) => return CallHandle::failed(err),
        };
        self.spawn_found(found, args, false)
    }

    fn spawn_found(self, found: Resolved, args: Value, shown: bool) -> CallHandle {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return CallHandle::failed(ToolError::failed("spawn needs a running tokio runtime"));
        };
        let tool = found.tool.clone();
        let name = tool.name();
        let ready = found.ready.clone();
        let ctx = self.ctx(found, None);
        let state = Arc::clone(ctx.state());
        if let Some(layers) = self.layers() {
            if let Err(err) = self.check_visible(&layers, shown, &ctx, name) {
                return CallHandle::failed(err);
            }
            let (bound, tool) = (self.scope.collect_limit(), ctx.tool().clone());
            // The call's span is made inside the task: the caller's is its parent.
            let call = async move {
                let reply =
                    chain::finish(chain::start(layers, ctx, ready, Mode::Spawn, args)).await?;
                chain::value_of(reply, bound, &tool).await
            };
            let join = runtime.spawn(tracing::Instrument::in_current_span(call));
            return CallHandle::spawned(state, join);
        }
        let observer = self.observe(&ctx);
        let join = if ctx.tool().runs_inline() && ready.is_none() {
            // A sync tool may block: keep it off the async workers; its async
            // cleanups are awaited back on them.
            let blocking = runtime
                .spawn_blocking(move || call_inline_awaiting(&ctx, observer, Cow::Owned(args)));
            runtime.spawn(async move {
                match blocking.await {
                    Ok(call) => call.await,
                    Err(err) => Err(ToolError::failed(err)),
                }
            })
        } else {
            runtime.spawn(async move {
                if let Some(ready) = ready {
                    ready.await?;
                }
                ToolFunc::call_with(ctx, Cow::Owned(args), true)
                    .observed(observer)
                    .await
            })
        };
        CallHandle::spawned(state, join)
    }

    pub(super) async fn execute(self, call: ToolCall) -> ToolResult {
        let ToolCall {
            id,
            name,
            arguments,
        } = call;
        let output = match self.find(&name) {
            Ok(found) => {
                self.run_found(found, Some(Arc::from(id.as_str())), arguments, false)
                    .await
            }
            Err(err) => Err(err),
        };
        ToolResult::new(id, name, output)
    }

    pub(super) async fn execute_batch(
        self,
        calls: impl IntoIterator<Item = ToolCall>,
    ) -> Vec<ToolResult> {
        futures::future::join_all(calls.into_iter().map(|call| self.execute(call))).await
    }
}
