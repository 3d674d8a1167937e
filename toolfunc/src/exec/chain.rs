//! A call through its call middleware ([`crate::layer`]): the visibility check, the
//! layers in order, then the call's own steps (admission, argument check, handler)
//! at the end of the chain.

use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;

use super::ctx::{Ctx, Scope};
use super::start::{Started, collect};
use super::stream::ToolStream;
use super::task::Call as Running;
use crate::layer::{self, Call, Layers, Mode, Next, Ready, Reply};
use crate::registry::{CallStatus, Observer};
use crate::{Registry, ToolError, ToolFunc};

/// The layers a call through `registry` with `scope` passes: the registry's (its
/// ancestors' first), then the runner's. `None` when there are none.
pub(crate) fn layers(registry: &Registry, scope: &Scope) -> Option<Layers> {
    match (registry.layers(), scope.layers()) {
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

/// Passes a call through `layers` (visibility already checked) to its end.
pub(crate) async fn through(
    layers: Layers,
    ctx: Ctx,
    ready: Option<Ready>,
    mode: Mode,
    args: Value,
) -> Result<Reply, ToolError> {
    let call = Call {
        ctx,
        args,
        mode,
        ready,
    };
    // A layer that panics fails the call (`PANICKED`), as a handler would.
    let running = std::panic::AssertUnwindSafe(async { Next::new(&layers, end).run(call).await })
        .catch_unwind();
    match running.await {
        Ok(reply) => reply,
        Err(panic) => Err(crate::panic::panicked(&*panic)),
    }
}

/// One value out of a reply: a stream a layer handed back for a value call is
/// collected within the call's bound.
pub(crate) async fn value_of(
    reply: Reply,
    bound: crate::CollectLimit,
    tool: String,
) -> Result<Value, ToolError> {
    match reply {
        Reply::Value(value) => Ok(value),
        Reply::Stream(items) => collect(Box::pin(std::future::ready(Ok(items))), bound, tool).await,
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
pub(crate) fn check_ready(ready: Option<&Ready>, name: &str) -> Result<(), ToolError> {
    match ready.map(futures::future::Shared::peek) {
        None | Some(Some(Ok(()))) => Ok(()),
        Some(Some(Err(err))) => Err(err.clone()),
        Some(None) => Err(ToolError::NotReady {
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
    args: Value,
) -> Result<Value, ToolError> {
    let result = ctx.tool().call_sync(ctx, args);
    if let Some(observer) = observer {
        observer.finish(CallStatus::of(&result));
    }
    result
}

/// A streaming call of a tool that is ready: its items, or a non-streaming tool's one
/// result.
pub(crate) fn start_stream(ctx: Ctx, args: Value) -> ToolStream {
    let observer = observe(&ctx);
    if !ctx.tool().is_stream() {
        return ToolStream::single(ToolFunc::call(ctx, args).observed(observer));
    }
    match ToolFunc::start(ctx, args, true, false) {
        Ok(Started::Stream(opening, watch)) => ToolStream::items(opening, watch).observed(observer),
        Ok(Started::Value(drive)) => ToolStream::single(Running::Running(drive).observed(observer)),
        Err(err) => {
            if let Some(observer) = observer {
                observer.finish(CallStatus::of(&Err(err.clone())));
            }
            ToolStream::failed(err)
        }
    }
}

/// The end of every chain: the call's own steps, as the caller asked for them.
fn end(call: Call) -> BoxFuture<'static, Result<Reply, ToolError>> {
    let Call {
        ctx,
        args,
        mode,
        ready,
    } = call;
    match mode {
        Mode::Sync => {
            let result = check_ready(ready.as_ref(), ctx.tool_name()).and_then(|()| {
                let observer = observe(&ctx);
                call_inline(&ctx, observer, args)
            });
            Box::pin(std::future::ready(result.map(Reply::Value)))
        }
        Mode::Stream => Box::pin(async move {
            if let Some(ready) = ready {
                ready.await?;
            }
            Ok(Reply::Stream(Box::pin(start_stream(ctx, args))))
        }),
        Mode::Value | Mode::Spawn => async move {
            if let Some(ready) = ready {
                ready.await?;
            }
            let observer = observe(&ctx);
            if !ctx.tool().runs_inline() {
                return ToolFunc::call_with(ctx, args, mode == Mode::Spawn)
                    .observed(observer)
                    .await;
            }
            if mode == Mode::Spawn {
                // A sync tool may block: keep it off the async workers.
                return tokio::task::spawn_blocking(move || call_inline(&ctx, observer, args))
                    .await
                    .unwrap_or_else(|err| Err(ToolError::failed(err)));
            }
            call_inline(&ctx, observer, args)
        }
        .map(|result| result.map(Reply::Value))
        .boxed(),
    }
}
