//! Streaming results: [`ToolStream`], the stream `run_stream` returns, and
//! [`callbacks`], an adaptor that hooks a stream's lifecycle (start, items, end,
//! errors, cancellation) with a close hook that runs exactly once.

use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{BoxFuture, CatchUnwind};
use futures::{FutureExt, Stream};
use serde_json::Value;

use crate::error::ToolError;
use crate::exec::task::{Finish, Running, Watch};
use crate::panic::panicked;
use crate::registry::{CallStatus, Observer};
use crate::tool::ItemStream;

pub use crate::tool::Answer;

/// The items of one call, as `run_stream` returns them: `Ok` items, then at most one
/// `Err` that ends the stream.
///
/// Items are produced only as the stream is polled (backpressure). Dropping the stream
/// before its end cancels the call (the producer stops) and runs its cleanups. The
/// call's deadline and cancellation apply to the whole stream: when either strikes, the
/// stream yields `TIMEOUT` or `CANCELLED` and ends.
///
/// A tool that does not stream yields its one result.
pub struct ToolStream {
    inner: Inner,
}

enum Inner {
    /// A non-streaming call (or an error before the call started).
    Single(Option<Running>),
    /// A stream that starts once something it waits for is done (a tool's setup).
    Deferred(BoxFuture<'static, Result<ToolStream, ToolError>>),
    /// Items a call middleware layer handed back.
    Boxed(ItemStream),
    Items {
        phase: Phase,
        watch: Watch,
        finish: Finish,
    },
    Done,
}

enum Phase {
    Opening(CatchUnwind<AssertUnwindSafe<BoxFuture<'static, Result<ItemStream, ToolError>>>>),
    Streaming(ItemStream),
}

impl fmt::Debug for ToolStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let state = match &self.inner {
            Inner::Single(_) => "single",
            Inner::Deferred(_) => "waiting",
            Inner::Items {
                phase: Phase::Opening(_),
                ..
            } => "opening",
            Inner::Items { .. } | Inner::Boxed(_) => "streaming",
            Inner::Done => "done",
        };
        f.debug_struct("ToolStream").field("state", &state).finish()
    }
}

impl ToolStream {
    pub(crate) fn single(call: Running) -> Self {
        Self {
            inner: Inner::Single(Some(call)),
        }
    }

    pub(crate) fn deferred(start: BoxFuture<'static, Result<ToolStream, ToolError>>) -> Self {
        Self {
            inner: Inner::Deferred(start),
        }
    }

    /// Reports the call's end to `observer` (subscribers, `tracing`).
    pub(crate) fn observed(mut self, observer: Option<Observer>) -> Self {
        if let Inner::Items { finish, .. } = &mut self.inner {
            finish.observe(observer);
        }
        self
    }

    /// The items a layer handed back, passed on until the first error or the end.
    pub(crate) fn boxed(items: ItemStream) -> Self {
        Self {
            inner: Inner::Boxed(items),
        }
    }

    pub(crate) fn failed(err: ToolError) -> Self {
        Self::single(Running::Ready(Some(Err(err))))
    }

    pub(crate) fn items(
        opening: BoxFuture<'static, Result<ItemStream, ToolError>>,
        watch: Watch,
    ) -> Self {
        let finish = Finish::new(Arc::clone(watch.state()));
        Self {
            inner: Inner::Items {
                phase: Phase::Opening(AssertUnwindSafe(opening).catch_unwind()),
                watch,
                finish,
            },
        }
    }

    /// Ends the stream: the producer is dropped first, then the call's cleanups run.
    fn end(
        &mut self,
        last: Option<Result<Value, ToolError>>,
    ) -> Poll<Option<Result<Value, ToolError>>> {
        if let Inner::Items { mut finish, .. } = std::mem::replace(&mut self.inner, Inner::Done) {
            finish.finished(|| match &last {
                Some(Err(ToolError::Cancelled { .. })) => CallStatus::Cancelled,
                Some(Err(err)) => CallStatus::Error(err.code().to_owned()),
                _ => CallStatus::Ok,
            });
        }
        Poll::Ready(last)
    }
}

impl Stream for ToolStream {
    type Item = Result<Value, ToolError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        // Every field is `Unpin` (the producer and futures are boxed).
        let this = self.get_mut();
        loop {
            match &mut this.inner {
                Inner::Done => return Poll::Ready(None),
                Inner::Deferred(start) => match std::task::ready!(start.as_mut().poll(cx)) {
                    Ok(stream) => *this = stream,
                    Err(err) => return this.end(Some(Err(err))),
                },
                Inner::Boxed(items) => {
                    return match std::task::ready!(items.as_mut().poll_next(cx)) {
                        Some(Ok(item)) => Poll::Ready(Some(Ok(item))),
                        last => this.end(last),
                    };
                }
                Inner::Single(call) => {
                    let Some(pending) = call.as_mut() else {
                        return this.end(None);
                    };
                    let result = std::task::ready!(Pin::new(pending).poll(cx));
                    return this.end(Some(result));
                }
                Inner::Items { phase, watch, .. } => {
                    if let Poll::Ready(err) = watch.poll_stop(cx) {
                        return this.end(Some(Err(err)));
                    }
                    match phase {
                        Phase::Opening(opening) => {
                            let polled = {
                                let _catching = crate::panic::Catching::enter();
                                Pin::new(opening).poll(cx)
                            };
                            match std::task::ready!(polled) {
                                Ok(Ok(items)) => *phase = Phase::Streaming(items),
                                Ok(Err(err)) => return this.end(Some(Err(err))),
                                Err(panic) => return this.end(Some(Err(panicked(&*panic)))),
                            }
                        }
                        Phase::Streaming(items) => {
                            // Each item spends the task's budget: a producer that is
                            // always ready still yields to the runtime now and then,
                            // and the stop check above runs between items.
                            let coop = std::task::ready!(tokio::task::coop::poll_proceed(cx));
                            let polled = {
                                let _catching = crate::panic::Catching::enter();
                                catch_unwind(AssertUnwindSafe(|| items.as_mut().poll_next(cx)))
                            };
                            return match polled {
                                Ok(Poll::Pending) => Poll::Pending,
                                Ok(Poll::Ready(Some(Ok(item)))) => {
                                    coop.made_progress();
                                    Poll::Ready(Some(Ok(item)))
                                }
                                Ok(Poll::Ready(Some(Err(err)))) => this.end(Some(Err(err))),
                                Ok(Poll::Ready(None)) => this.end(None),
                                Err(panic) => this.end(Some(Err(panicked(&*panic)))),
                            };
                        }
                    }
                }
            }
        }
    }
}

/// How a stream ended, and why, as [`Callbacks::on_close`] is told.
///
/// For a [`ToolStream`], a call stopped from outside ends with its error: `TIMEOUT`
/// past its deadline, `CANCELLED` with the reason its caller gave
/// ([`ToolError::Cancelled`]); [`StreamEnd::reason`] reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd<'a, E> {
    /// The stream ran to its end.
    Final,
    /// The stream yielded this error (and ended there).
    Error(&'a E),
    /// The consumer dropped the stream before its end.
    Cancel,
}

impl StreamEnd<'_, ToolError> {
    /// Why a tool stream stopped early: the consumer dropped it
    /// (`Some("dropped by the consumer")`), or its call was cancelled (the reason
    /// the canceller gave, if any). `None` for a stream that ended on its own or
    /// failed otherwise.
    pub fn reason(&self) -> Option<&str> {
        match self {
            Self::Cancel => Some("dropped by the consumer"),
            Self::Error(ToolError::Cancelled { reason }) => {
                Some(reason.as_deref().unwrap_or("cancelled"))
            }
            Self::Final | Self::Error(_) => None,
        }
    }
}

type Hook = Box<dyn FnOnce() + Send>;
type ItemHook<T> = Box<dyn FnMut(T) -> T + Send>;
type ErrorHook<E> = Box<dyn FnMut(&E) + Send>;
type CloseHook<E> = Box<dyn FnOnce(StreamEnd<'_, E>) + Send>;

pin_project_lite::pin_project! {
    /// Wraps a stream of `Result`s with lifecycle hooks; see [`callbacks`].
    #[must_use = "streams do nothing unless polled"]
    pub struct Callbacks<S, T, E> {
        // Held inline, not boxed: the wrapped stream's state stays where the
        // compiler can keep it, so the adaptor costs a branch per item, no more.
        #[pin]
        inner: S,
        hooks: Hooks<T, E>,
    }

    impl<S, T, E> PinnedDrop for Callbacks<S, T, E> {
        fn drop(this: Pin<&mut Self>) {
            this.project().hooks.close(StreamEnd::Cancel);
        }
    }
}

/// Where a [`Callbacks`] stream is: one byte, so an item costs one comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum HookPhase {
    NotStarted,
    /// Started, with no item hook: items pass through untouched.
    PassThrough,
    /// Started, with an item hook.
    Hooked,
    Ended,
}

struct Hooks<T, E> {
    phase: HookPhase,
    on_start: Option<Hook>,
    on_item: Option<ItemHook<T>>,
    on_final: Option<Hook>,
    on_error: Option<ErrorHook<E>>,
    on_cancel: Option<Hook>,
    on_close: Option<CloseHook<E>>,
}

/// Hooks a stream's lifecycle. `on_close` runs exactly once with how the stream
/// ended — [`Final`](StreamEnd::Final), [`Error`](StreamEnd::Error) with the error,
/// or [`Cancel`](StreamEnd::Cancel) (dropped early) — which makes it the place to
/// release resources. The first error ends the wrapped stream.
///
/// Without `on_item` items pass through untouched: no per-item work beyond one branch,
/// no allocation.
///
/// ```
/// use std::sync::{Arc, Mutex};
/// use futures::StreamExt;
/// use toolfunc::stream::{callbacks, StreamEnd};
///
/// let closed = Arc::new(Mutex::new(String::new()));
/// let seen = Arc::clone(&closed);
/// let items = futures::stream::iter([Ok("a"), Ok("b"), Err("disk full".to_owned())]);
/// let upper = callbacks(items)
///     .on_item(|s: &str| if s == "a" { "A" } else { s })
///     .on_close(move |end| {
///         *seen.lock().unwrap() = match end {
///             StreamEnd::Final => "final".to_owned(),
///             StreamEnd::Error(err) => format!("failed: {err}"),
///             StreamEnd::Cancel => "dropped".to_owned(),
///         };
///     });
///
/// let out: Vec<_> = futures::executor::block_on(upper.collect());
/// assert_eq!(out, [Ok("A"), Ok("b"), Err("disk full".to_owned())]);
/// assert_eq!(*closed.lock().unwrap(), "failed: disk full");
/// ```
pub fn callbacks<S, T, E>(stream: S) -> Callbacks<S, T, E>
where
    S: Stream<Item = Result<T, E>>,
{
    Callbacks {
        inner: stream,
        hooks: Hooks {
            phase: HookPhase::NotStarted,
            on_start: None,
            on_item: None,
            on_final: None,
            on_error: None,
            on_cancel: None,
            on_close: None,
        },
    }
}

impl<S, T, E> Callbacks<S, T, E> {
    /// Runs once, when the stream is first polled.
    pub fn on_start(mut self, hook: impl FnOnce() + Send + 'static) -> Self {
        self.hooks.on_start = Some(Box::new(hook));
        self
    }

    /// Sees (and may replace) each item.
    pub fn on_item(mut self, hook: impl FnMut(T) -> T + Send + 'static) -> Self {
        self.hooks.on_item = Some(Box::new(hook));
        self
    }

    /// Runs once when the stream ends normally.
    pub fn on_final(mut self, hook: impl FnOnce() + Send + 'static) -> Self {
        self.hooks.on_final = Some(Box::new(hook));
        self
    }

    /// Sees the error that ends the stream.
    pub fn on_error(mut self, hook: impl FnMut(&E) + Send + 'static) -> Self {
        self.hooks.on_error = Some(Box::new(hook));
        self
    }

    /// Runs once when the consumer drops the stream before its end.
    pub fn on_cancel(mut self, hook: impl FnOnce() + Send + 'static) -> Self {
        self.hooks.on_cancel = Some(Box::new(hook));
        self
    }

    /// Runs exactly once, however the stream ends, with how and why
    /// ([`StreamEnd`]).
    pub fn on_close(mut self, hook: impl FnOnce(StreamEnd<'_, E>) + Send + 'static) -> Self {
        self.hooks.on_close = Some(Box::new(hook));
        self
    }
}

impl<T, E> Hooks<T, E> {
    #[cold]
    fn close(&mut self, end: StreamEnd<'_, E>) {
        if self.phase == HookPhase::Ended {
            return;
        }
        self.phase = HookPhase::Ended;
        let hook = match end {
            StreamEnd::Final => self.on_final.take(),
            StreamEnd::Cancel => self.on_cancel.take(),
            StreamEnd::Error(_) => None,
        };
        if let Some(hook) = hook {
            hook();
        }
        if let Some(close) = self.on_close.take() {
            close(end);
        }
    }
}

impl<S, T, E> fmt::Debug for Callbacks<S, T, E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Callbacks")
            .field("phase", &self.hooks.phase)
            .finish_non_exhaustive()
    }
}

impl<S, T, E> Stream for Callbacks<S, T, E>
where
    S: Stream<Item = Result<T, E>>,
{
    type Item = Result<T, E>;

    // Small on purpose (the rare paths are out of line) and inlined, so an item
    // passes through without a call.
    #[inline]
    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.project();
        let hooks = this.hooks;
        if hooks.phase == HookPhase::PassThrough {
            let poll = this.inner.poll_next(cx);
            // An item goes back exactly as it came: no unwrapping and re-wrapping,
            // which would cost more than the rest of the adaptor.
            if let Poll::Ready(Some(Ok(_))) | Poll::Pending = &poll {
                return poll;
            }
            return poll.map(|end| hooks.observe(end));
        }
        match hooks.phase {
            HookPhase::Ended => return Poll::Ready(None),
            HookPhase::NotStarted => hooks.start(),
            HookPhase::PassThrough | HookPhase::Hooked => {}
        }
        this.inner.poll_next(cx).map(|polled| hooks.observe(polled))
    }
}

impl<T, E> Hooks<T, E> {
    #[cold]
    fn start(&mut self) {
        self.phase = if self.on_item.is_some() {
            HookPhase::Hooked
        } else {
            HookPhase::PassThrough
        };
        if let Some(hook) = self.on_start.take() {
            hook();
        }
    }

    /// Everything but a passed-through item: transformed items, the error, the end.
    fn observe(&mut self, polled: Option<Result<T, E>>) -> Option<Result<T, E>> {
        match polled {
            Some(Ok(item)) => Some(Ok(match &mut self.on_item {
                Some(hook) => hook(item),
                None => item,
            })),
            Some(Err(err)) => {
                self.error(&err);
                Some(Err(err))
            }
            None => {
                self.close(StreamEnd::Final);
                None
            }
        }
    }

    #[cold]
    fn error(&mut self, err: &E) {
        if let Some(hook) = &mut self.on_error {
            hook(err);
        }
        self.close(StreamEnd::Error(err));
    }
}
