//! A running call: the future that races a handler against cancellation and its
//! deadline, runs cleanups on every way out, and the handle of a spawned call.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::time::Instant;

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::error::ToolError;
use crate::exec::deadline::{Timer, timer};
use crate::exec::scope::Scope;
use crate::exec::state::{CallState, cancelled_error, with_cleanup_errors};
use crate::panic::panicked;
use crate::registry::{CallStatus, Observer};

/// What a running call watches besides its handler: its own token, extra caller
/// tokens (when there is more than one, the call's token cannot be their child), and
/// its deadline.
pub(crate) struct Watch {
    state: Arc<CallState>,
    /// The call's token, watched when something can cancel the call: a caller's
    /// token, or a handle's `abort`. A plain call can only be dropped.
    cancelled: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    sources: Vec<Pin<Box<WaitForCancellationFutureOwned>>>,
    sleep: Option<Timer>,
    deadline: Option<(Instant, Option<Duration>)>,
}

impl Watch {
    pub(crate) fn new(
        state: Arc<CallState>,
        scope: &Scope,
        deadline: Option<(Instant, Option<Duration>)>,
        abortable: bool,
    ) -> Self {
        // Sources the call's token does not derive from (several, with no runtime to
        // merge them) are watched here.
        let sources: Vec<_> = scope
            .unmerged_sources()
            .iter()
            .map(|t| Box::pin(t.clone().cancelled_owned()))
            .collect();
        let watched = abortable || !scope.cancel_sources().is_empty();
        Self {
            cancelled: watched.then(|| Box::pin(state.token().clone().cancelled_owned())),
            state,
            sources,
            sleep: deadline.and_then(|(at, _)| timer(at)),
            deadline,
        }
    }

    pub(crate) fn state(&self) -> &Arc<CallState> {
        &self.state
    }

    /// `Ready(err)` once the call must stop: cancelled (`CANCELLED`) or out of time
    /// (`TIMEOUT`). The call's token is cancelled either way, so cooperative work stops.
    pub(crate) fn poll_stop(&mut self, cx: &mut Context<'_>) -> Poll<ToolError> {
        if let Some(cancelled) = &mut self.cancelled
            && cancelled.as_mut().poll(cx).is_ready()
        {
            return Poll::Ready(cancelled_error(&self.state));
        }
        if self
            .sources
            .iter_mut()
            .any(|s| s.as_mut().poll(cx).is_ready())
        {
            self.state.abort(None);
            return Poll::Ready(cancelled_error(&self.state));
        }
        if let Some(sleep) = &mut self.sleep
            && sleep.as_mut().poll(cx).is_ready()
        {
            self.state
                .stop(ToolError::timed_out(self.deadline.and_then(|(_, t)| t)));
            return Poll::Ready(cancelled_error(&self.state));
        }
        Poll::Pending
    }

    /// Settles a nested call's `TIMEOUT` that arrived at or after this call's deadline:
    /// this call has run out of time too, even though the nested call noticed first,
    /// so its token fires (work it started stops) and the error becomes its own.
    pub(crate) fn settle(&self, result: Result<Value, ToolError>) -> Result<Value, ToolError> {
        // Only a `TIMEOUT` from inside can mean this call is out of time too; any
        // other result stands as it is (and costs no clock read).
        let (Err(ToolError::Timeout { .. }), Some((deadline, timeout))) = (&result, self.deadline)
        else {
            return result;
        };
        if Instant::now() < deadline {
            return result;
        }
        self.state.stop(ToolError::timed_out(timeout));
        Err(cancelled_error(&self.state))
    }
}

/// Runs the call's cleanups when dropped, and cancels the call's token if it had not
/// finished: the way out when the caller drops the call's future.
pub(crate) struct Finish {
    state: Arc<CallState>,
    finished: bool,
    /// Reports the call's end to the registry's subscribers and `tracing`.
    observer: Option<Observer>,
}

impl Finish {
    pub(crate) fn new(state: Arc<CallState>) -> Self {
        Self {
            state,
            finished: false,
            observer: None,
        }
    }

    pub(crate) fn observe(&mut self, observer: Option<Observer>) {
        self.observer = observer;
    }

    pub(crate) fn span(&self) -> Option<&tracing::Span> {
        self.observer.as_ref().map(Observer::span)
    }

    /// The call ended with `status`.
    pub(crate) fn finished(&mut self, status: impl FnOnce() -> CallStatus) {
        self.finished = true;
        if let Some(observer) = self.observer.take() {
            observer.finish(status());
        }
    }
}

impl Drop for Finish {
    fn drop(&mut self) {
        if !self.finished {
            self.state.abort(None);
        }
        self.state.run_cleanups();
    }
}

/// Async cleanups in progress, and the call's result waiting for them.
struct Cleaning {
    cleanups: BoxFuture<'static, Vec<ToolError>>,
    result: Result<Value, ToolError>,
}

type CaughtFuture =
    futures::future::CatchUnwind<AssertUnwindSafe<BoxFuture<'static, Result<Value, ToolError>>>>;

/// An async call in flight: the handler's future raced against the watch.
pub(crate) struct Drive {
    future: Option<CaughtFuture>,
    /// The call's async cleanups, running, with the result they wait to join.
    cleaning: Option<Box<Cleaning>>,
    watch: Watch,
    finish: Finish,
}

impl Drive {
    pub(crate) fn new(future: BoxFuture<'static, Result<Value, ToolError>>, watch: Watch) -> Self {
        let finish = Finish::new(Arc::clone(watch.state()));
        Self {
            future: Some(AssertUnwindSafe(future).catch_unwind()),
            cleaning: None,
            watch,
            finish,
        }
    }

    /// Reports the call's end to `observer` (subscribers, `tracing`).
    pub(crate) fn observed(mut self, observer: Option<Observer>) -> Self {
        self.finish.observe(observer);
        self
    }

    /// The body is done: its future goes first, then the cleanups it registered (the
    /// async ones awaited before the call resolves).
    fn end(
        &mut self,
        result: Result<Value, ToolError>,
        cx: &mut Context<'_>,
    ) -> Poll<Result<Value, ToolError>> {
        self.future = None;
        match self.watch.state().cleanups_future() {
            None => self.complete(result),
            Some(cleanups) => {
                self.cleaning = Some(Box::new(Cleaning { cleanups, result }));
                self.poll_cleaning(cx)
            }
        }
    }

    fn poll_cleaning(&mut self, cx: &mut Context<'_>) -> Poll<Result<Value, ToolError>> {
        let Some(cleaning) = self.cleaning.as_mut() else {
            return Poll::Ready(Err(ToolError::failed("call polled after completion")));
        };
        let errors = std::task::ready!(cleaning.cleanups.as_mut().poll(cx));
        let result = match self.cleaning.take() {
            Some(cleaning) => with_cleanup_errors(cleaning.result, errors),
            None => Err(ToolError::failed("call polled after completion")),
        };
        self.complete(result)
    }

    fn complete(&mut self, result: Result<Value, ToolError>) -> Poll<Result<Value, ToolError>> {
        self.finish.finished(|| CallStatus::of(&result));
        Poll::Ready(result)
    }
}

impl Future for Drive {
    type Output = Result<Value, ToolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        // Every field is `Unpin` (futures are boxed).
        let this = self.get_mut();
        // Only observed calls have a span (a clone is cheap next to what observing costs).
        let span = this.finish.span().cloned();
        let _entered = span.as_ref().map(tracing::Span::enter);
        if this.cleaning.is_some() {
            return this.poll_cleaning(cx);
        }
        let Some(future) = this.future.as_mut() else {
            return Poll::Ready(Err(ToolError::failed("call polled after completion")));
        };
        let polled = {
            let _catching = crate::panic::Catching::enter();
            Pin::new(future).poll(cx)
        };
        if let Poll::Ready(caught) = polled {
            let result = this
                .watch
                .settle(caught.unwrap_or_else(|p| Err(panicked(&*p))));
            return this.end(result, cx);
        }
        match this.watch.poll_stop(cx) {
            Poll::Ready(err) => this.end(Err(err), cx),
            Poll::Pending => Poll::Pending,
        }
    }
}

/// The future of a call: finished already (sync tools, early errors) or in flight.
pub(crate) enum Running {
    Ready(Option<Result<Value, ToolError>>),
    /// A sync body's result, waiting for its async cleanups.
    Cleaning(
        Option<Result<Value, ToolError>>,
        BoxFuture<'static, Vec<ToolError>>,
        Option<Observer>,
    ),
    InFlight(Drive),
}

impl Running {
    /// Reports the call's end to `observer` (subscribers, `tracing`).
    pub(crate) fn observed(self, observer: Option<Observer>) -> Self {
        match self {
            Self::InFlight(drive) => Self::InFlight(drive.observed(observer)),
            // Reported once the cleanups settled.
            Self::Cleaning(result, cleanups, _) => Self::Cleaning(result, cleanups, observer),
            Self::Ready(result) => {
                if let (Some(observer), Some(result)) = (observer, &result) {
                    observer.finish(CallStatus::of(result));
                }
                Self::Ready(result)
            }
        }
    }
}

impl Future for Running {
    type Output = Result<Value, ToolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match self.get_mut() {
            Self::Ready(result) => Poll::Ready(
                result
                    .take()
                    .unwrap_or_else(|| Err(ToolError::failed("call polled after completion"))),
            ),
            Self::Cleaning(result, cleanups, observer) => {
                let errors = std::task::ready!(cleanups.as_mut().poll(cx));
                let result = result
                    .take()
                    .unwrap_or_else(|| Err(ToolError::failed("call polled after completion")));
                let result = with_cleanup_errors(result, errors);
                if let Some(observer) = observer.take() {
                    observer.finish(CallStatus::of(&result));
                }
                Poll::Ready(result)
            }
            Self::InFlight(drive) => Pin::new(drive).poll(cx),
        }
    }
}

/// A call started with `spawn`: await it for the result, or [`abort`](Self::abort) it.
///
/// The call runs on the tokio runtime whether or not the handle is awaited; dropping
/// the handle leaves it running. Once the call is stopped (aborted, a caller's token,
/// its deadline) the handle reports that stop, even if a result arrived meanwhile.
/// Aborting resolves the handle with `CANCELLED` at once,
/// even when the tool ignores cancellation: an async tool's future is dropped, a sync
/// tool (which runs on tokio's blocking pool and cannot be interrupted) finishes on
/// its own and its result is discarded.
#[must_use = "a spawned call runs anyway; keep the handle to get its result or abort it"]
pub struct CallHandle {
    state: Option<Arc<CallState>>,
    join: Option<tokio::task::JoinHandle<Result<Value, ToolError>>>,
    cancelled: Option<Pin<Box<WaitForCancellationFutureOwned>>>,
    early: Option<ToolError>,
}

impl std::fmt::Debug for CallHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallHandle")
            .field("finished", &self.is_finished())
            .finish_non_exhaustive()
    }
}

impl CallHandle {
    pub(crate) fn spawned(
        state: Arc<CallState>,
        join: tokio::task::JoinHandle<Result<Value, ToolError>>,
    ) -> Self {
        Self {
            cancelled: Some(Box::pin(state.token().clone().cancelled_owned())),
            state: Some(state),
            join: Some(join),
            early: None,
        }
    }

    pub(crate) fn failed(err: ToolError) -> Self {
        Self {
            state: None,
            join: None,
            cancelled: None,
            early: Some(err),
        }
    }

    /// Cancels the call; it ends with `CANCELLED` carrying `reason`.
    pub fn abort(&self, reason: impl Into<String>) {
        if let Some(state) = &self.state {
            state.abort(Some(reason.into()));
        }
    }

    /// The call's cancellation token.
    pub fn cancellation_token(&self) -> CancellationToken {
        self.state
            .as_ref()
            .map_or_else(CancellationToken::new, |s| s.token().clone())
    }

    /// Whether the call has ended.
    pub fn is_finished(&self) -> bool {
        self.join
            .as_ref()
            .is_none_or(tokio::task::JoinHandle::is_finished)
    }
}

impl Future for CallHandle {
    type Output = Result<Value, ToolError>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = self.get_mut();
        if let Some(err) = this.early.take() {
            return Poll::Ready(Err(err));
        }
        let Some(join) = this.join.as_mut() else {
            return Poll::Ready(Err(ToolError::failed(
                "call handle polled after completion",
            )));
        };
        // A stop (abort, caller token, deadline) wins over a result not yet collected,
        // so an aborted call always reads as stopped, however the race went.
        if let (Some(cancelled), Some(state)) = (this.cancelled.as_mut(), &this.state)
            && cancelled.as_mut().poll(cx).is_ready()
        {
            this.join = None;
            return Poll::Ready(Err(cancelled_error(state)));
        }
        let joined = std::task::ready!(Pin::new(join).poll(cx));
        this.join = None;
        Poll::Ready(match joined {
            Ok(result) => result,
            Err(err) if err.is_panic() => Err(panicked(&*err.into_panic())),
            Err(_) => Err(ToolError::cancelled(Some("the runtime shut down".into()))),
        })
    }
}
