//! Tools whose futures are not `Send` (`#[tool(local)]`, [`ToolBuilder::local_handler`]):
//! they hold an `Rc`, a `RefCell` or a `!Send` handle across an `.await`, so they
//! cannot move between the runtime's worker threads.
//!
//! Such a call is run on the local executor: one thread with a current-thread tokio
//! runtime and a `LocalSet`, started on first use. The caller's side is an ordinary
//! `Send` future that waits for the answer, so a local tool is called like any other
//! (by name, from any thread and surface, with its deadline, cancellation and
//! cleanups): when the caller gives up (a timeout, a cancel, a dropped request), the
//! local future is dropped on its thread.
//!
//! [`ToolBuilder::local_handler`]: crate::ToolBuilder::local_handler

use std::panic::AssertUnwindSafe;
use std::sync::OnceLock;

use futures::FutureExt;
use futures::future::Either;
use futures::future::{BoxFuture, LocalBoxFuture};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};

use crate::panic::panicked;
use crate::{Ctx, ToolError};

/// Builds a local call's future (on the local thread).
pub(crate) type MakeLocal =
    Box<dyn FnOnce(Ctx, Value) -> LocalBoxFuture<'static, Result<Value, ToolError>> + Send>;

/// Work for the local thread: makes the call's future there.
type Job = Box<dyn FnOnce() -> LocalBoxFuture<'static, ()> + Send>;

static EXECUTOR: OnceLock<Option<mpsc::UnboundedSender<Job>>> = OnceLock::new();

/// The local executor's queue, starting its thread on first use; `None` when the
/// thread or its runtime could not be started.
fn executor() -> Option<&'static mpsc::UnboundedSender<Job>> {
    EXECUTOR
        .get_or_init(|| {
            let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
            let runtime = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(runtime) => runtime,
                Err(err) => {
                    tracing::error!(error = %err, "the local executor's runtime cannot start");
                    return None;
                }
            };
            let started = std::thread::Builder::new()
                .name("toolfunc-local".into())
                .spawn(move || {
                    let local = tokio::task::LocalSet::new();
                    local.block_on(&runtime, async move {
                        while let Some(job) = queue.recv().await {
                            tokio::task::spawn_local(job());
                        }
                    });
                });
            match started {
                Ok(_) => Some(jobs),
                Err(err) => {
                    tracing::error!(error = %err, "the local executor's thread cannot start");
                    None
                }
            }
        })
        .as_ref()
}

/// Runs `make(ctx, args)` (a future that need not be `Send`) on the local executor;
/// the returned future is `Send` and resolves with its result. Dropping it drops
/// the local future at its next turn.
pub(crate) fn run(
    ctx: Ctx,
    args: Value,
    make: MakeLocal,
) -> BoxFuture<'static, Result<Value, ToolError>> {
    let (answer, answered) = oneshot::channel();
    let job: Job = Box::new(move || {
        Box::pin(async move {
            let mut answer = answer;
            let built = {
                let _catching = crate::panic::Catching::enter();
                std::panic::catch_unwind(AssertUnwindSafe(|| make(ctx, args)))
            };
            let future = match built {
                Ok(future) => future,
                Err(p) => {
                    let _ = answer.send(Err(panicked(&*p)));
                    return;
                }
            };
            let mut caught = AssertUnwindSafe(future).catch_unwind();
            // Polled as a handler: a panic is reported once, not by the panic hook.
            let call = std::future::poll_fn(move |cx| {
                let _catching = crate::panic::Catching::enter();
                caught.poll_unpin(cx)
            });
            let call = std::pin::pin!(call);
            let out = {
                // The caller gave up: drop the call here, on its own thread.
                let closed = std::pin::pin!(answer.closed());
                match futures::future::select(call, closed).await {
                    Either::Left((out, _)) => out.unwrap_or_else(|p| Err(panicked(&*p))),
                    Either::Right(((), _)) => return,
                }
            };
            let _ = answer.send(out);
        })
    });
    let sent = executor().is_some_and(|jobs| jobs.send(job).is_ok());
    Box::pin(async move {
        if !sent {
            return Err(ToolError::failed(
                "the local executor is not running, so a local tool cannot run",
            ));
        }
        answered.await.unwrap_or_else(|_| {
            Err(ToolError::failed(
                "the local executor dropped the call before it answered",
            ))
        })
    })
}
