//! A call through its call middleware ([`crate::layer`]): the visibility check, the
//! layers in order, then the call's own steps (admission, argument check, handler)
//! at the end of the chain.

use std::borrow::Cow;
use std::sync::Arc;

use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
use serde_json::Value;

use super::ctx::Ctx;
use super::scope::Scope;
use super::start::{Started, collect};
use super::stream::ToolStream;
use super::task::Running;
use crate::error::ToolError;
use crate::layer::{self, Call, Layers, Mode, Next, Reply, ReplyFuture};
use crate::registry::Registry;
use crate::registry::{CallStatus, Observer};
use crate::tool::Ready;
use crate::tool::{ToolFunc, ToolRef};

/// The layers a call through `registry` with `scope` passes: the registry's (its
/// ancestors' first), then the runner's. `None` when there are none.
///
/// The check for none is inlined into every run path.
#[expect(
    clippy::inline_always,
    reason = "the run hot path, counted in benches/instructions.rs"
)]
#[inline(always)]
pub(crate) fn layers(registry: &Registry, scope: &Scope) -> Option<Layers> {
    let own = registry.layers();
    if own.is_none() && scope.layers().is_none() {
        return None;
    }
    layers_of(own, scope)
}

#[inline(never)]
fn layers_of(own: Option<Layers>, scope: &Scope) -> Option<Layers> {
    match (own, scope.layers()) {
        (None, None) => None,
        (Some(own), None) => Some(own),
        (None, Some(runner)) => Some(Arc::clone(runner)),
        (Some(own), Some(runner)) => Some(own.iter().chain(runner.iter()).cloned().collect()),
    }
}

/// `NOT_FOUND` for `name` unless every layer lets the caller see the tool.
pub(crate) fn check_visible(layers: &Layers, ctx: &Ctx, name: &str) -> Result<(), ToolError> {
    if layer::visible(layers, ctx.definition(), &ctx.viewer()) {
        Ok(())
    } else {
        Err(ToolError::not_found(name))
    }
}

/// Starts a call through `layers` (visibility already checked): the layers that
/// decide at once have decided when this returns. A layer that panics fails the
/// call with `PANICKED`.
pub(crate) fn start(
    layers: Layers,
    ctx: Ctx,
    ready: Option<Ready>,
    mode: Mode,
    args: Value,
) -> ReplyFuture {
    let call = Call {
        ctx,
        args,
        mode,
        ready,
    };
    let started = {
        let _catching = crate::panic::Catching::enter();
        std::panic::catch_unwind(AssertUnwindSafe(|| Next::new(layers, end).run(call)))
    };
    started.unwrap_or_else(|panic| ReplyFuture::ready(Err(crate::panic::panicked(&*panic))))
}

/// Polls a started chain; a layer that panics fails the call with `PANICKED`.
fn poll_reply(
    running: &mut ReplyFuture,
    cx: &mut std::task::Context<'_>,
) -> std::task::Poll<Result<Reply, ToolError>> {
    let _catching = crate::panic::Catching::enter();
    match std::panic::catch_unwind(AssertUnwindSafe(|| {
        std::pin::Pin::new(&mut *running).poll(cx)
    })) {
        Ok(polled) => polled,
        Err(panic) => std::task::Poll::Ready(Err(crate::panic::panicked(&*panic))),
    }
}

/// The reply of a started chain.
pub(crate) async fn finish(mut running: ReplyFuture) -> Result<Reply, ToolError> {
    std::future::poll_fn(|cx| poll_reply(&mut running, cx)).await
}

/// One value out of a reply: a stream a layer handed back for a value call is
/// collected within the call's bound.
pub(crate) async fn value_of(
    reply: Reply,
    bound: crate::options::CollectLimit,
    tool: &ToolRef,
) -> Result<Value, ToolError> {
    match reply {
        Reply::Value(value) => Ok(value),
        Reply::Stream(items) => {
            let name = tool.name().to_owned();
            collect(Box::pin(std::future::ready(Ok(items))), bound, name).await
        }
    }
}

/// A stream out of a reply.
pub(crate) fn stream_of(reply: Result<Reply, ToolError>) -> ToolStream {
    match reply {
        Ok(Reply::Stream(items)) => ToolStream::boxed(items),
        Ok(Reply::Value(value)) => ToolStream::single(Running::Ready(Some(Ok(value)))),
        Err(err) => ToolStream::failed(err),
    }
}

/// Whether a tool's setup still runs (`NOT_READY` for sync entry points) or failed.
#[expect(
    clippy::inline_always,
    reason = "the run hot path, counted in benches/instructions.rs"
)]
#[inline(always)]
pub(crate) fn check_ready(ready: Option<&Ready>, name: &str) -> Result<(), ToolError> {
    match ready {
        None => Ok(()),
        Some(ready) => check_setup(ready, name),
    }
}

/// [`check_ready`] of a tool with a setup: done, failed, or still running.
#[inline(never)]
fn check_setup(ready: &Ready, name: &str) -> Result<(), ToolError> {
    match ready.peek() {
        Some(Ok(())) => Ok(()),
        Some(Err(err)) => Err(err.clone()),
        None => Err(ToolError::NotReady {
            name: name.to_owned(),
        }),
    }
}

fn observe(ctx: &Ctx) -> Option<Observer> {
    Observer::start(ctx.registry(), ctx.tool_name(), ctx.call_id())
}

/// Runs a sync tool on this thread, reporting the call to `observer`.
pub(crate) fn call_inline(
    ctx: &Ctx,
    observer: Option<Observer>,
    args: Cow<'_, Value>,
) -> Result<Value, ToolError> {
    let result = {
        // Calls the tool makes are children of its span.
        let _in = observer.as_ref().map(|o| o.span().enter());
        ctx.tool().call_sync(ctx, args)
    };
    report(observer, &result);
    result
}

/// Tells `observer`, if any, how a call ended.
#[expect(
    clippy::inline_always,
    reason = "the run hot path, counted in benches/instructions.rs"
)]
#[inline(always)]
pub(crate) fn report(observer: Option<Observer>, result: &Result<Value, ToolError>) {
    if let Some(observer) = observer {
        observer.finish(CallStatus::of(result));
    }
}

/// A sync tool's call for an async caller: done, or (when it registered async
/// cleanups) a future that waits for them and joins their failures to the call's.
#[expect(
    clippy::inline_always,
    reason = "the run hot path, counted in benches/instructions.rs"
)]
#[inline(always)]
pub(crate) fn call_inline_awaiting(
    ctx: &Ctx,
    observer: Option<Observer>,
    args: Cow<'_, Value>,
) -> Running {
    let (result, cleanups) = {
        let _in = observer.as_ref().map(|o| o.span().enter());
        ctx.tool().call_sync_awaiting(ctx, args)
    };
    match cleanups {
        None => {
            report(observer, &result);
            Running::Ready(Some(result))
        }
        Some(cleanups) => Running::Cleaning(Some(result), cleanups, observer),
    }
}

/// A streaming call of a tool that is ready: its items, or a non-streaming tool's one
/// result.
pub(crate) fn start_stream(ctx: Ctx, args: Value) -> ToolStream {
    let observer = observe(&ctx);
    if !ctx.tool().is_stream() {
        return ToolStream::single(ToolFunc::call(ctx, Cow::Owned(args)).observed(observer));
    }
    match ToolFunc::start(ctx, Cow::Owned(args), true, false) {
        Ok(Started::Stream(opening, watch)) => ToolStream::items(opening, watch).observed(observer),
        Ok(Started::Value(drive)) => {
            ToolStream::single(Running::InFlight(drive).observed(observer))
        }
        Err(err) => {
            if let Some(observer) = observer {
                observer.finish(CallStatus::of(&Err(err.clone())));
            }
            ToolStream::failed(err)
        }
    }
}

/// The end of every chain: the call's own steps, as the caller asked for them. What
/// can be done at once (a sync tool, a stream's start) is done before it returns.
fn end(call: Call) -> ReplyFuture {
    let Call {
        ctx,
        args,
        mode,
        ready,
    } = call;
    let settled = ready.as_ref().is_none_or(|r| r.peek().is_some());
    if mode == Mode::Sync {
        let result = check_ready(ready.as_ref(), ctx.tool_name()).and_then(|()| {
            let observer = observe(&ctx);
            call_inline(&ctx, observer, Cow::Owned(args))
        });
        return ReplyFuture::ready(result.map(Reply::Value));
    }
    if settled && mode == Mode::Value && ctx.tool().runs_inline() {
        if let Err(err) = check_ready(ready.as_ref(), ctx.tool_name()) {
            return ReplyFuture::ready(Err(err));
        }
        let observer = observe(&ctx);
        return match call_inline_awaiting(&ctx, observer, Cow::Owned(args)) {
            Running::Ready(result) => ReplyFuture::ready(
                result
                    .unwrap_or_else(|| Err(ToolError::failed("call polled after completion")))
                    .map(Reply::Value),
            ),
            cleaning => ReplyFuture::new(cleaning.map(|result| result.map(Reply::Value))),
        };
    }
    if mode == Mode::Stream {
        if settled {
            let started = check_ready(ready.as_ref(), ctx.tool_name())
                .map(|()| Reply::Stream(Box::pin(start_stream(ctx, args))));
            return ReplyFuture::ready(started);
        }
        return ReplyFuture::new(async move {
            if let Some(ready) = ready {
                ready.await?;
            }
            Ok(Reply::Stream(Box::pin(start_stream(ctx, args))))
        });
    }
    ReplyFuture::new(
        async move {
            if let Some(ready) = ready {
                ready.await?;
            }
            let observer = observe(&ctx);
            if !ctx.tool().runs_inline() {
                return ToolFunc::call_with(ctx, Cow::Owned(args), mode == Mode::Spawn)
                    .observed(observer)
                    .await;
            }
            if mode == Mode::Spawn {
                // A sync tool may block: keep it off the async workers.
                let blocking = move || call_inline_awaiting(&ctx, observer, Cow::Owned(args));
                return match tokio::task::spawn_blocking(blocking).await {
                    Ok(call) => call.await,
                    Err(err) => Err(ToolError::failed(err)),
                };
            }
            call_inline_awaiting(&ctx, observer, Cow::Owned(args)).await
        }
        .map(|result| result.map(Reply::Value)),
    )
}
