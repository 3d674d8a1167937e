//! `CallState`: the state machine of one call (its token, what stopped it, its
//! cleanups), shared by every clone of its `Ctx` and the code driving it, and how
//! the cleanups run when the call ends.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::error::ToolError;
use crate::exec::scope::Scope;

const OPEN: u8 = 0;
const USED: u8 = 1;
const CLOSED: u8 = 2;

/// A cleanup registered by a call.
pub(super) enum Cleanup {
    Sync(Box<dyn FnOnce() + Send>),
    Async(BoxFuture<'static, Result<(), ToolError>>),
}

/// Per-call state shared by every clone of a call's `Ctx` and by the code driving the
/// call.
pub(crate) struct CallState {
    /// The call's token, made on first use (most calls never need one).
    token: OnceLock<CancellationToken>,
    /// The single caller token the call's token derives from, if there is one.
    parent: Option<CancellationToken>,
    /// Set by `abort` before any token exists; a token made later starts cancelled.
    aborted: AtomicBool,
    /// What stopped the call, as the caller will see it (the first stop wins);
    /// boxed, as most calls are never stopped and the state of each call in flight
    /// stays small.
    stop: OnceLock<Box<ToolError>>,
    /// `OPEN` (no cleanup yet), `USED` (some registered) or `CLOSED` (the call ended
    /// with none): most calls have none, and never take the lock.
    cleanup_state: AtomicU8,
    cleanups: Mutex<Option<Vec<Cleanup>>>,
}

impl CallState {
    pub(super) fn new(scope: &Scope) -> Self {
        // The call's token is a child of the caller's (one source, or several merged):
        // cancellation propagates without anyone watching.
        Self {
            token: OnceLock::new(),
            parent: scope.data().and_then(|d| d.parent_token().cloned()),
            aborted: AtomicBool::new(false),
            stop: OnceLock::new(),
            cleanup_state: AtomicU8::new(OPEN),
            cleanups: Mutex::new(Some(Vec::new())),
        }
    }

    pub(crate) fn token(&self) -> &CancellationToken {
        let mut made = false;
        let token = self.token.get_or_init(|| {
            made = true;
            self.parent
                .as_ref()
                .map_or_else(CancellationToken::new, CancellationToken::child_token)
        });
        // `abort` sets the flag before it looks for a token, and a new token looks at
        // the flag after it is stored: one of the two sees the other.
        if made && self.aborted.load(Ordering::SeqCst) {
            token.cancel();
        }
        token
    }

    /// Whether the call has been cancelled, without making a token.
    pub(crate) fn is_cancelled(&self) -> bool {
        self.aborted.load(Ordering::SeqCst)
            || self
                .parent
                .as_ref()
                .is_some_and(CancellationToken::is_cancelled)
            || self
                .token
                .get()
                .is_some_and(CancellationToken::is_cancelled)
    }

    /// Stops the call with `error` (`CANCELLED` or `TIMEOUT`); the first stop wins.
    pub(crate) fn stop(&self, error: ToolError) {
        if self.stop.get().is_none() {
            let _ = self.stop.set(Box::new(error));
        }
        self.aborted.store(true, Ordering::SeqCst);
        if let Some(token) = self.token.get() {
            token.cancel();
        }
    }

    /// Cancels the call, with the caller's reason.
    pub(crate) fn abort(&self, reason: Option<String>) {
        self.stop(ToolError::cancelled(reason));
    }

    /// The error the call ended with when it was stopped.
    pub(crate) fn stop_error(&self) -> ToolError {
        self.stop
            .get()
            .map_or_else(|| ToolError::cancelled(None), |error| (**error).clone())
    }

    pub(super) fn push_cleanup(&self, cleanup: Cleanup) {
        if self
            .cleanup_state
            .compare_exchange(OPEN, USED, Ordering::SeqCst, Ordering::SeqCst)
            == Err(CLOSED)
        {
            // The call already ended: run it now rather than never.
            start_cleanups(vec![cleanup]);
            return;
        }
        let mut slot = self.cleanups.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(list) = slot.as_mut() {
            list.push(cleanup);
        } else {
            // The call already ended: run it now rather than never.
            drop(slot);
            start_cleanups(vec![cleanup]);
        }
    }

    fn take_cleanups(&self) -> Vec<Cleanup> {
        // None registered: close without the lock; a later one then runs at once.
        if self
            .cleanup_state
            .compare_exchange(OPEN, CLOSED, Ordering::SeqCst, Ordering::SeqCst)
            .is_ok()
            || self.cleanup_state.load(Ordering::SeqCst) == CLOSED
        {
            return Vec::new();
        }
        let mut list = self
            .cleanups
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
            .unwrap_or_default();
        list.reverse();
        list
    }

    /// Runs the registered cleanups, once (later calls find nothing to run): sync ones
    /// here, async ones started on the tokio runtime (their failures logged).
    pub(crate) fn run_cleanups(&self) {
        start_cleanups(self.take_cleanups());
    }

    /// The registered cleanups as one future that runs them all, in order, and
    /// returns their failures; `None` (after running them) when none is async.
    pub(crate) fn cleanups_future(&self) -> Option<BoxFuture<'static, Vec<ToolError>>> {
        let list = self.take_cleanups();
        if !list.iter().any(|c| matches!(c, Cleanup::Async(_))) {
            start_cleanups(list);
            return None;
        }
        Some(Box::pin(async move {
            let mut errors = Vec::new();
            for cleanup in list {
                match cleanup {
                    Cleanup::Sync(run) => run_sync_cleanup(run),
                    Cleanup::Async(run) => match AssertUnwindSafe(run).catch_unwind().await {
                        Ok(Ok(())) => {}
                        Ok(Err(err)) => errors.push(err),
                        Err(panic) => errors.push(crate::panic::panicked(&*panic)),
                    },
                }
            }
            errors
        }))
    }
}

pub(crate) fn cancelled_error(state: &CallState) -> ToolError {
    state.stop_error()
}

fn start_cleanups(list: Vec<Cleanup>) {
    let mut pending = Vec::new();
    for cleanup in list {
        match cleanup {
            Cleanup::Sync(run) => run_sync_cleanup(run),
            Cleanup::Async(mut run) => match (&mut run).now_or_never() {
                Some(Ok(())) => {}
                Some(Err(err)) => tracing::error!(error = %err, "a cleanup failed"),
                None => pending.push(run),
            },
        }
    }
    if pending.is_empty() {
        return;
    }
    let started = crate::detach::detach(async move {
        for run in pending {
            if let Err(err) = run.await {
                tracing::error!(error = %err, "a cleanup failed");
            }
        }
    });
    if !started {
        tracing::warn!("an asynchronous cleanup needs a tokio runtime; it did not run");
    }
}

fn run_sync_cleanup(run: Box<dyn FnOnce() + Send>) {
    let caught = {
        let _catching = crate::panic::Catching::enter();
        std::panic::catch_unwind(AssertUnwindSafe(run))
    };
    if let Err(panic) = caught {
        let message = crate::panic::panic_message(&*panic);
        tracing::error!(panic = %message, "a cleanup hook panicked");
    }
}

/// A call's result with its cleanups' failures: the cleanups' alone when the call
/// succeeded, both (the call's first) when it failed too.
pub(crate) fn with_cleanup_errors(
    result: Result<Value, ToolError>,
    mut errors: Vec<ToolError>,
) -> Result<Value, ToolError> {
    if errors.is_empty() {
        return result;
    }
    match result {
        Ok(_) => {
            Err(ToolError::aggregate(errors).unwrap_or_else(|| ToolError::failed("cleanup failed")))
        }
        Err(err) => {
            errors.insert(0, err);
            Err(ToolError::Aggregate { errors })
        }
    }
}
