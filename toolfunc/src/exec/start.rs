//! Starting a tool's handler: the checks before it may run (cancelled, out of
//! time), the argument check, the concurrency slot, a sync body on the calling
//! thread or an async one in a [`Drive`] watched for its deadline and cancellation,
//! and a stream collected within its bound.

use std::borrow::Cow;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;

use futures::StreamExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::task::{Drive, Running, Watch};
use crate::error::ToolError;
use crate::exec::ctx::Ctx;
use crate::options::{CollectLimit, json_size};
use crate::panic::{Catching, panicked};
use crate::tool::ToolFunc;
use crate::tool::{Answer, Handler, ItemStream, SyncHandler};
use tokio_util::sync::CancellationToken;

impl ToolFunc {
    /// Why a call must not start: a caller's token already fired, or an enclosing
    /// call's deadline has passed.
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    fn stopped_before_start(ctx: &Ctx) -> Option<ToolError> {
        // A deadline of the call's own starts now and cannot have passed; only one
        // inherited from an enclosing call can (so only then is the clock read).
        if ctx.scope().inherited_deadline().is_some()
            && let Some(deadline) = ctx.deadline()
            && deadline <= crate::time::Instant::now()
        {
            return Some(ToolError::timed_out(
                ctx.deadline_and_timeout().and_then(|(_, t)| t),
            ));
        }
        let sources = ctx.scope().cancel_sources();
        if !sources.is_empty() && sources.iter().any(CancellationToken::is_cancelled) {
            return Some(ToolError::cancelled(None));
        }
        // Stopped through its own handle (a spawned call aborted before it started).
        if let Some(state) = ctx.state_if_created()
            && state.is_cancelled()
        {
            return Some(state.stop_error());
        }
        None
    }

    /// Runs the handler synchronously, on the calling thread. Async and streaming
    /// tools give `ASYNC_ONLY`.
    ///
    /// A sync handler cannot be interrupted: a call that is already cancelled or out
    /// of time does not start, and one that starts runs to its end (a late value is
    /// `TIMEOUT`).
    pub(crate) fn call_sync(&self, ctx: &Ctx, args: Cow<'_, Value>) -> Result<Value, ToolError> {
        let result = self.call_sync_body(ctx, args);
        if let Some(state) = ctx.state_if_created() {
            state.run_cleanups();
        }
        result
    }

    /// [`call_sync`](Self::call_sync) for an async caller: the cleanups' sync hooks run
    /// now, and their async ones are returned to be awaited (their failures join the
    /// call's) instead of being left to run on their own.
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    pub(crate) fn call_sync_awaiting(
        &self,
        ctx: &Ctx,
        args: Cow<'_, Value>,
    ) -> (
        Result<Value, ToolError>,
        Option<BoxFuture<'static, Vec<ToolError>>>,
    ) {
        let result = self.call_sync_body(ctx, args);
        let cleanups = ctx
            .state_if_created()
            .and_then(|state| state.cleanups_future());
        (result, cleanups)
    }

    /// A sync call up to its cleanups.
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    fn call_sync_body(&self, ctx: &Ctx, args: Cow<'_, Value>) -> Result<Value, ToolError> {
        if !matches!(self.handler, Handler::Sync(_) | Handler::Acts(_)) {
            return Err(self.async_only());
        }
        // A sync caller cannot wait for a slot: at the limit, say so.
        if let Some(limit) = &self.concurrency {
            let _permit = Arc::clone(limit)
                .try_acquire_owned()
                .map_err(|_| ToolError::Busy {
                    name: self.definition.name.clone(),
                })?;
            return self.sync_body(ctx, args);
        }
        self.sync_body(ctx, args)
    }

    fn async_only(&self) -> ToolError {
        ToolError::AsyncOnly {
            name: self.definition.name.clone(),
        }
    }

    /// A sync handler's call (a plain tool's, or the sync method a service's `act`
    /// picks), once any concurrency slot is held.
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    fn sync_body(&self, ctx: &Ctx, args: Cow<'_, Value>) -> Result<Value, ToolError> {
        if let Some(err) = Self::stopped_before_start(ctx) {
            return Err(err);
        }
        let mut args = self.prepare(args)?;
        let f = match &self.handler {
            Handler::Sync(f) => f,
            Handler::Acts(acts) => {
                // `act` is taken out: a borrowed object is copied here.
                let index = acts.select(self.name(), args.to_mut())?;
                let act = &acts.acts[index];
                let Handler::Sync(f) = &act.handler else {
                    return Err(self.async_only());
                };
                let Some(timeout) = act.timeout else {
                    return Self::sync_invoke(f, ctx, args);
                };
                // The method's own timeout: a late value is `TIMEOUT`.
                let started = crate::time::Instant::now();
                let result = Self::sync_invoke(f, ctx, args);
                if started.elapsed() >= timeout {
                    return Err(ToolError::timed_out(Some(timeout)));
                }
                return result;
            }
            _ => return Err(self.async_only()),
        };
        Self::sync_invoke(f, ctx, args)
    }

    /// Runs a sync handler on checked arguments, catching a panic. A body that
    /// returns after the call's deadline is a `TIMEOUT` (it cannot be interrupted; its
    /// late value is dropped). The caller runs the cleanups.
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    fn sync_invoke(f: &SyncHandler, ctx: &Ctx, args: Cow<'_, Value>) -> Result<Value, ToolError> {
        let caught = {
            let _catching = Catching::enter();
            catch_unwind(AssertUnwindSafe(|| f.call(ctx, args)))
        };
        let result = caught.unwrap_or_else(|p| Err(panicked(&*p)));
        // The clock is read only for a call with a deadline.
        if let Some(deadline) = ctx.deadline()
            && crate::time::Instant::now() >= deadline
        {
            return Err(ToolError::timed_out(
                ctx.deadline_and_timeout().and_then(|(_, timeout)| timeout),
            ));
        }
        result
    }

    /// The handler that runs a call: the tool's own, or for a service the one its
    /// method `index` has.
    fn handler_at(&self, index: Option<usize>) -> &Handler {
        match (&self.handler, index) {
            (Handler::Acts(acts), Some(index)) => &acts.acts[index].handler,
            (handler, _) => handler,
        }
    }

    /// Starts the tool of `ctx`. Sync handlers run at once; async and streaming ones
    /// (collected) run as the returned future is polled, raced against cancellation
    /// and the deadline. A panic anywhere becomes `PANICKED`.
    pub(crate) fn call(ctx: Ctx, args: Cow<'_, Value>) -> Running {
        Self::call_with(ctx, args, false)
    }

    /// [`call`](Self::call), watching the call's own token when `abortable` (a spawned
    /// call's handle can abort it).
    pub(crate) fn call_with(ctx: Ctx, args: Cow<'_, Value>, abortable: bool) -> Running {
        if ctx.tool().runs_inline() {
            let (result, cleanups) = ctx.tool().call_sync_awaiting(&ctx, args);
            return match cleanups {
                None => Running::Ready(Some(result)),
                Some(cleanups) => Running::Cleaning(Some(result), cleanups, None),
            };
        }
        match Self::start(ctx, args, false, abortable) {
            Ok(Started::Value(drive)) => Running::InFlight(drive),
            Ok(Started::Stream(..)) => unreachable!("`start` collects streams when asked to"),
            Err(err) => Running::Ready(Some(Err(err))),
        }
    }

    /// Starts an async or streaming handler: checks the arguments, sets up the watch
    /// (deadline, cancellation) and calls the handler. Streams are collected into an
    /// array unless `as_stream`.
    pub(crate) fn start(
        ctx: Ctx,
        args: Cow<'_, Value>,
        as_stream: bool,
        abortable: bool,
    ) -> Result<Started, ToolError> {
        if let Some(err) = Self::stopped_before_start(&ctx) {
            return Err(err);
        }
        // The handler borrows the tool while `ctx` moves into it: hold the tool apart.
        let tool = ctx.tool().clone();
        let mut args = tool.prepare(args)?;
        let act = match &tool.handler {
            // `act` is taken out: a borrowed object is copied here.
            Handler::Acts(acts) => Some(acts.select(tool.name(), args.to_mut())?),
            _ => None,
        };
        let mut ctx = ctx;
        if let (Handler::Acts(acts), Some(index)) = (&tool.handler, act)
            && let Some(timeout) = acts.acts[index].timeout
        {
            ctx.limit(timeout);
        }
        let state = Arc::clone(ctx.state());
        let watch = Watch::new(
            Arc::clone(&state),
            ctx.scope(),
            ctx.deadline_and_timeout(),
            abortable,
        );
        let limit = tool.concurrency.clone();
        let catching = Catching::enter();
        let started = catch_unwind(AssertUnwindSafe(|| match tool.handler_at(act) {
            Handler::Async(f) => Started::Value(Drive::new(gated(limit, f(ctx, args)), watch)),
            Handler::Stream(f) if as_stream => {
                Started::Stream(gated_stream(limit, f(ctx, args)), watch)
            }
            Handler::Stream(f) => {
                let bound = ctx.scope().collect_limit();
                let name = tool.name().to_owned();
                Started::Value(Drive::new(
                    gated(limit, collect(f(ctx, args), bound, name)),
                    watch,
                ))
            }
            Handler::Either(f) if as_stream => {
                let answering = f(ctx, args);
                let opening = Box::pin(async move {
                    Ok(match answering.await? {
                        Answer::Items(items) => items,
                        Answer::Value(value) => futures::stream::once(async { Ok(value) }).boxed(),
                    })
                });
                Started::Stream(gated_stream(limit, opening), watch)
            }
            Handler::Either(f) => {
                let bound = ctx.scope().collect_limit();
                let name = tool.name().to_owned();
                let answering = f(ctx, args);
                let answer = Box::pin(async move {
                    match answering.await? {
                        Answer::Value(value) => Ok(value),
                        Answer::Items(items) => {
                            collect(Box::pin(async { Ok(items) }), bound, name).await
                        }
                    }
                });
                Started::Value(Drive::new(gated(limit, answer), watch))
            }
            Handler::Sync(_) | Handler::Acts(_) => {
                // Here to wait for a concurrency slot (which `gated` holds), or for a
                // service's sync method; then it runs inline.
                let tool = tool.clone();
                let args = args.into_owned();
                let body = Box::pin(async move {
                    if let Some(err) = Self::stopped_before_start(&ctx) {
                        return Err(err);
                    }
                    match tool.handler_at(act) {
                        Handler::Sync(f) => Self::sync_invoke(f, &ctx, Cow::Owned(args)),
                        _ => Err(ToolError::failed("the handler changed kind")),
                    }
                });
                Started::Value(Drive::new(gated(limit, body), watch))
            }
        }));
        drop(catching);
        started.map_err(|p| {
            state.run_cleanups();
            panicked(&*p)
        })
    }
}

/// A started async or streaming call.
pub(crate) enum Started {
    Value(Drive),
    Stream(BoxFuture<'static, Result<ItemStream, ToolError>>, Watch),
}

/// `future`, started once a concurrency slot is free (at once without a limit). The
/// wait is part of the call, so it can be cancelled or time out like the rest.
fn gated(
    limit: Option<Arc<tokio::sync::Semaphore>>,
    future: BoxFuture<'static, Result<Value, ToolError>>,
) -> BoxFuture<'static, Result<Value, ToolError>> {
    match limit {
        None => future,
        Some(limit) => Box::pin(async move {
            let _permit = acquire(limit).await?;
            future.await
        }),
    }
}

/// The stream of `open`, holding a concurrency slot until the stream is dropped.
fn gated_stream(
    limit: Option<Arc<tokio::sync::Semaphore>>,
    open: BoxFuture<'static, Result<ItemStream, ToolError>>,
) -> BoxFuture<'static, Result<ItemStream, ToolError>> {
    match limit {
        None => open,
        Some(limit) => Box::pin(async move {
            let permit = acquire(limit).await?;
            let items = open.await?;
            Ok(items
                .map(move |item| {
                    let _held = &permit;
                    item
                })
                .boxed())
        }),
    }
}

async fn acquire(
    limit: Arc<tokio::sync::Semaphore>,
) -> Result<tokio::sync::OwnedSemaphorePermit, ToolError> {
    // The semaphore is never closed; a closed one would mean the tool is gone.
    limit
        .acquire_owned()
        .await
        .map_err(|_| ToolError::failed("the tool's concurrency limit is closed"))
}

/// A streaming handler's items gathered into one array (for `run`), within `bound`.
///
/// Each item spends the task's cooperative budget, so a stream that is always ready
/// still hands the worker back to the runtime now and then: other calls run, and the
/// call's deadline and cancellation (watched by the [`Drive`] around this future)
/// strike between items.
pub(crate) fn collect(
    open: BoxFuture<'static, Result<ItemStream, ToolError>>,
    bound: CollectLimit,
    tool: String,
) -> BoxFuture<'static, Result<Value, ToolError>> {
    Box::pin(async move {
        let mut stream = open.await?;
        let mut items = Vec::new();
        let mut bytes = 0usize;
        while let Some(item) = stream.next().await {
            let item = item?;
            bytes = bytes.saturating_add(json_size(&item));
            if items.len() >= bound.items || bytes > bound.bytes {
                return Err(bound.exceeded(&tool, items.len() + 1, bytes));
            }
            items.push(item);
            tokio::task::coop::consume_budget().await;
        }
        Ok(Value::Array(items))
    })
}
