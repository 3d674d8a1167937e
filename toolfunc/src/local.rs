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
//! On `wasm32-unknown-unknown` (a page, Node) there is one thread already: a local
//! call runs on the page's event loop, which makes `#[tool(local)]` the way to write
//! a tool that holds JavaScript values.
//!
//! A caller that is itself on one thread (a current-thread runtime, a `LocalSet`,
//! `block_on`) can skip the hop: [`Registry::run_local`] polls the call in place and
//! any local tool it reaches (the call itself, or nested calls made while it is
//! polled) runs inside that same future, on the caller's thread. Handing a local
//! call over is then a push onto the driver's queue instead of two thread
//! wake-ups.
//!
//! [`ToolBuilder::local_handler`]: crate::ToolBuilder::local_handler
//! [`Registry::run_local`]: crate::Registry::run_local

use std::cell::RefCell;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::rc::Rc;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
use std::sync::OnceLock;
use std::task::Poll;

use futures::FutureExt;
use futures::future::Either;
use futures::future::{BoxFuture, LocalBoxFuture};
use serde_json::Value;
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
use tokio::sync::mpsc;
use tokio::sync::oneshot;

use crate::error::ToolError;
use crate::exec::ctx::Ctx;
use crate::panic::panicked;

/// Builds a local call's future (on the local thread).
pub(crate) type MakeLocal =
    Box<dyn FnOnce(Ctx, Value) -> LocalBoxFuture<'static, Result<Value, ToolError>> + Send>;

/// Work for the local thread: makes the call's future there.
type Job = Box<dyn FnOnce() -> LocalBoxFuture<'static, ()> + Send>;

thread_local! {
    /// The in-place driver polling on this thread right now ([`inline`]), if any:
    /// local calls started while it polls are handed to it.
    static DRIVER: RefCell<Option<Rc<Driver>>> = const { RefCell::new(None) };
}

/// The local calls handed to an in-place driver, not yet started.
#[derive(Default)]
struct Driver {
    incoming: RefCell<Vec<Job>>,
}

/// Marks `driver` as this thread's in-place driver until dropped, restoring the
/// one before (drivers nest: a local tool may `run_local` again).
struct Entered(Option<Rc<Driver>>);

impl Entered {
    fn new(driver: &Rc<Driver>) -> Self {
        Self(DRIVER.with(|slot| slot.replace(Some(Rc::clone(driver)))))
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        let before = self.0.take();
        DRIVER.with(|slot| *slot.borrow_mut() = before);
    }
}

/// Hands `job` to this thread's in-place driver; gives it back when there is none.
fn hand_over(job: Job) -> Result<(), Job> {
    DRIVER.with(|slot| match &*slot.borrow() {
        Some(driver) => {
            driver.incoming.borrow_mut().push(job);
            Ok(())
        }
        None => Err(job),
    })
}

/// Polls `call` on this thread, running every local call it starts (its own, or a
/// nested one) in place beside it instead of on the local executor. The future is
/// not `Send`: it stays on the thread that polls it, as the local calls must.
///
/// When `call` ends, local calls still running are dropped with it: they belong
/// to it (its timeout or cancellation already gave up on them).
pub(crate) async fn inline<F: Future>(call: F) -> F::Output {
    let driver = Rc::new(Driver::default());
    let mut call = std::pin::pin!(call);
    let mut running: Vec<LocalBoxFuture<'static, ()>> = Vec::new();
    std::future::poll_fn(move |cx| {
        let _entered = Entered::new(&driver);
        loop {
            if let Poll::Ready(out) = call.as_mut().poll(cx) {
                return Poll::Ready(out);
            }
            let started = std::mem::take(&mut *driver.incoming.borrow_mut());
            let mut progressed = !started.is_empty();
            running.extend(started.into_iter().map(|job| job()));
            // Every local call shares this future's waker: any wake polls them all.
            let mut i = 0;
            while i < running.len() {
                if running[i].as_mut().poll(cx).is_ready() {
                    drop(running.swap_remove(i));
                    progressed = true;
                } else {
                    i += 1;
                }
            }
            // A local call that answered (or one that started another) may let
            // the call go on now: poll it again rather than wait for the wake.
            if !progressed && driver.incoming.borrow().is_empty() {
                return Poll::Pending;
            }
        }
    })
    .await
}

/// Starts `job` on the local executor; `false` when it is not running.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn start(job: Job) -> bool {
    executor().is_some_and(|jobs| jobs.send(job).is_ok())
}

/// Starts `job` on the page's event loop: `wasm32-unknown-unknown` has one
/// thread, and every future runs on it.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
fn start(job: Job) -> bool {
    wasm_bindgen_futures::spawn_local(job());
    true
}

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
static EXECUTOR: OnceLock<Option<mpsc::UnboundedSender<Job>>> = OnceLock::new();

/// The local executor's queue, starting its thread on first use; `None` when the
/// thread or its runtime could not be started.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
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
    let sent = match hand_over(job) {
        Ok(()) => true,
        Err(job) => start(job),
    };
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
