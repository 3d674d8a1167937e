//! Deadlines: when a call must end (its own timeout, the caller's, an enclosing
//! call's), and the timer that enforces one.

use std::pin::Pin;
use std::time::Duration;

use crate::exec::scope::Scope;
use crate::time::Instant;

pub(crate) fn min_duration(a: Option<Duration>, b: Option<Duration>) -> Option<Duration> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

pub(crate) fn min_deadline(a: Option<Instant>, b: Option<Instant>) -> Option<Instant> {
    match (a, b) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// When a call must end: the shorter of the tool's and the caller's timeout from now,
/// and never after an enclosing call's deadline. Reads the clock only when there is a
/// timeout.
#[expect(
    clippy::inline_always,
    reason = "the run hot path, counted in benches/instructions.rs"
)]
#[inline(always)]
pub(crate) fn deadline_for(
    tool_timeout: Option<Duration>,
    scope: &Scope,
    inherited: Option<Instant>,
) -> Option<Instant> {
    if tool_timeout.is_none() && scope.timeout().is_none() {
        return inherited;
    }
    deadline_from_now(tool_timeout, scope, inherited)
}

/// [`deadline_for`] when some timeout applies: it starts now.
#[inline(never)]
fn deadline_from_now(
    tool_timeout: Option<Duration>,
    scope: &Scope,
    inherited: Option<Instant>,
) -> Option<Instant> {
    // A timeout too long for the clock (`Duration::MAX`, a header of u64::MAX ms)
    // is no deadline at all, not an overflow.
    let own =
        min_duration(tool_timeout, scope.timeout()).and_then(|t| Instant::now().checked_add(t));
    min_deadline(own, inherited)
}

/// The deadline's timer. It is polled outside tokio's cooperative budget: a
/// handler that spent the task's budget (an always-ready stream, a busy channel)
/// must not keep its own deadline from firing.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub(super) type Timer = Pin<Box<tokio::task::coop::Unconstrained<tokio::time::Sleep>>>;

/// The deadline's timer on a page: one of its own timers (`setTimeout`), which
/// needs no runtime; the target has one thread, so it may be held as `Send`.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub(super) type Timer = Pin<Box<send_wrapper::SendWrapper<gloo_timers::future::TimeoutFuture>>>;

/// A timer for `deadline`, when a tokio runtime with its time driver is running.
/// Without one a timeout cannot be enforced: the call runs without it (and says so).
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub(super) fn timer(deadline: Instant) -> Option<Timer> {
    tokio::runtime::Handle::try_current().ok()?;
    // `sleep_until` panics when the runtime was built without `enable_time`.
    if let Ok(sleep) = std::panic::catch_unwind(|| tokio::time::sleep_until(deadline.into())) {
        Some(Box::pin(tokio::task::coop::unconstrained(sleep)))
    } else {
        tracing::warn!(
            "a call timeout is not enforced: the tokio runtime has no timer (enable_time)"
        );
        None
    }
}

/// A timer for `deadline` on the page's clock.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub(super) fn timer(deadline: Instant) -> Option<Timer> {
    let left = deadline.saturating_duration_since(Instant::now());
    let millis = u32::try_from(left.as_millis()).unwrap_or(u32::MAX);
    Some(Box::pin(send_wrapper::SendWrapper::new(
        gloo_timers::future::TimeoutFuture::new(millis),
    )))
}
