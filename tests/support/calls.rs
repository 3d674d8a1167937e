//! What the call tests (cancellation, streaming, timeouts) share: bounded waits, and
//! a `Probe` of counters that a test hands to its tools as a `CallOptions`
//! extension, so that every test has counters of its own (tests run in parallel).
//! A tool composes what it reports: [`arm`] counts its start and registers a
//! counting cleanup, [`Probe::watch_token`] watches the call's token from a spawned
//! task, [`Probe::record_deadline`] keeps the deadline the tool saw.
#![allow(dead_code, unreachable_pub)] // each test binary uses its own part

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::time::{sleep, timeout};
use toolfunc::{CallOptions, Ctx, Registry};

/// Long enough for any healthy run, short enough that a broken one fails instead of
/// hanging; far below the minute or hour the sleeping tools would take.
pub const LIMIT: Duration = Duration::from_secs(20);

/// The deadline each tool saw, by tool name.
pub type Deadlines = Arc<Mutex<Vec<(String, Option<Instant>)>>>;

/// What the tools of a test report back.
#[derive(Clone, Default)]
pub struct Probe {
    /// Handlers that started.
    pub started: Arc<AtomicUsize>,
    /// Handlers that ran to their end.
    pub finished: Arc<AtomicUsize>,
    /// Cleanup hooks that ran.
    pub cleanups: Arc<AtomicUsize>,
    /// Watcher tasks (spawned by a tool) that saw the call's token cancelled.
    pub token_fired: Arc<AtomicUsize>,
    /// Watcher tasks that saw `ctx.is_cancelled()` after the token fired.
    pub saw_is_cancelled: Arc<AtomicUsize>,
    /// Lets a blocked sync tool go on.
    pub release: Arc<AtomicBool>,
    /// Items a streaming producer made.
    pub produced: Arc<AtomicUsize>,
    /// Set when a spawned producer task ends.
    pub stopped: Arc<AtomicBool>,
    /// Filled by [`Probe::record_deadline`].
    pub deadlines: Deadlines,
}

impl Probe {
    /// Call options that hand this probe to the tools.
    pub fn options(&self) -> CallOptions {
        CallOptions::new().insert(self.clone())
    }

    pub fn started(&self) -> usize {
        self.started.load(Ordering::SeqCst)
    }

    pub fn finished(&self) -> usize {
        self.finished.load(Ordering::SeqCst)
    }

    pub fn cleanups(&self) -> usize {
        self.cleanups.load(Ordering::SeqCst)
    }

    pub fn token_fired(&self) -> usize {
        self.token_fired.load(Ordering::SeqCst)
    }

    pub fn saw_is_cancelled(&self) -> usize {
        self.saw_is_cancelled.load(Ordering::SeqCst)
    }

    pub fn produced(&self) -> usize {
        self.produced.load(Ordering::SeqCst)
    }

    pub fn stopped(&self) -> bool {
        self.stopped.load(Ordering::SeqCst)
    }

    /// Spawns a task that waits (up to `LIMIT`) for the call's token, as work a tool
    /// starts on its own, and counts the token firing and whether `ctx.is_cancelled()`
    /// agreed. Does nothing outside a tokio runtime.
    pub fn watch_token(&self, ctx: &Ctx) -> &Self {
        if tokio::runtime::Handle::try_current().is_ok() {
            let token = ctx.cancellation_token();
            let ctx = ctx.clone();
            let probe = self.clone();
            tokio::spawn(async move {
                if timeout(LIMIT, token.cancelled()).await.is_ok() {
                    probe.token_fired.fetch_add(1, Ordering::SeqCst);
                    if ctx.is_cancelled() {
                        probe.saw_is_cancelled.fetch_add(1, Ordering::SeqCst);
                    }
                }
            });
        }
        self
    }

    /// Records the deadline the call sees, under the tool's name.
    pub fn record_deadline(&self, ctx: &Ctx) -> &Self {
        self.deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((ctx.tool_name().to_owned(), ctx.deadline()));
        self
    }

    /// The deadline `tool` recorded; panics when it recorded none.
    pub fn deadline_of(&self, tool: &str) -> Option<Instant> {
        self.deadlines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .find(|(name, _)| name == tool)
            .unwrap_or_else(|| panic!("`{tool}` did not record its deadline"))
            .1
    }
}

/// The call's probe (a fresh one when the test gave none), with the handler's start
/// counted and a cleanup registered that counts itself.
pub fn arm(ctx: &Ctx) -> Probe {
    let probe = ctx.get::<Probe>().cloned().unwrap_or_default();
    probe.started.fetch_add(1, Ordering::SeqCst);
    let cleanups = Arc::clone(&probe.cleanups);
    ctx.on_cleanup(move || {
        cleanups.fetch_add(1, Ordering::SeqCst);
    });
    probe
}

/// Lines logged by tools or hooks, in order, and a context a tool left behind.
#[derive(Clone, Default)]
pub struct Log {
    lines: Arc<Mutex<Vec<String>>>,
    kept: Arc<Mutex<Option<Ctx>>>,
}

impl Log {
    pub fn push(&self, line: impl Into<String>) {
        self.lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line.into());
    }

    pub fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Keeps a clone of `ctx` for the test.
    pub fn keep(&self, ctx: &Ctx) {
        *self.kept.lock().unwrap_or_else(PoisonError::into_inner) = Some(ctx.clone());
    }

    /// The context a tool kept, once.
    pub fn take_kept(&self) -> Option<Ctx> {
        self.kept
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }
}

/// `future`'s output; panics when it takes longer than `LIMIT`.
pub async fn bounded<F: Future>(future: F) -> F::Output {
    timeout(LIMIT, future).await.expect("finishes in time")
}

/// Waits, bounded, until `cond` holds.
pub async fn until(what: &str, cond: impl Fn() -> bool) {
    let wait = async {
        while !cond() {
            sleep(Duration::from_millis(1)).await;
        }
    };
    assert!(
        timeout(LIMIT, wait).await.is_ok(),
        "timed out waiting until {what}"
    );
}

/// Gives late, wrong extra work (a second cleanup run) a chance to show up.
pub async fn settle() {
    sleep(Duration::from_millis(50)).await;
}

/// The definition of a tool of the global registry, as JSON.
pub fn definition(name: &str) -> Value {
    let tool = Registry::global().get(name).expect("a global tool");
    serde_json::to_value(tool.definition()).expect("a definition serialises")
}
