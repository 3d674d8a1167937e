//! Limits over callers: how often ([`RateLimit`]) and how many at once
//! ([`ConcurrencyLimit`]). Both refuse at once rather than wait, so they work the
//! same for sync callers and never hold a network request open; both keep bounded
//! memory however many caller ids arrive.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use futures::StreamExt;
use serde_json::json;

use super::{Call, Layer, Next, Reply, ReplyFuture};
use crate::error::ToolError;

/// How many callers a per-caller limit tracks by default; callers past it share one
/// allowance.
pub const DEFAULT_MAX_CALLERS: usize = 10_000;

/// How often a full per-caller table is swept for buckets that refilled.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Whose allowance a call draws on.
fn key(per_caller: bool, call: &Call) -> Option<&str> {
    if per_caller {
        call.ctx().principal()
    } else {
        None
    }
}

/// A token bucket per caller (or one for everyone): at most `calls` calls in a burst,
/// refilled at `calls` per `per`. A call past the allowance is refused with
/// `RATE_LIMITED` (HTTP 429) whose data gives `retryAfterMs`.
///
/// Memory is bounded: at most [`max_callers`](Self::max_callers) buckets are kept
/// (idle full buckets are dropped first); callers past that share one bucket, so a
/// flood of made-up caller ids cannot grow the table or escape the limit.
///
/// ```rust,standalone_crate
/// use std::time::Duration;
/// use serde_json::json;
/// use toolfunc::layer::RateLimit;
/// use toolfunc::{tool, CallOptions, Registry};
///
/// /// Says hello.
/// #[tool]
/// fn hello() -> &'static str {
///     "hello"
/// }
///
/// let registry = Registry::global()
///     .isolate()
///     .layer(RateLimit::new(2, Duration::from_secs(60)).per_caller());
/// let alice = registry.with(CallOptions::new().caller("alice"));
/// assert!(alice.run_sync("hello", json!({})).is_ok());
/// assert!(alice.run_sync("hello", json!({})).is_ok());
/// let refused = alice.run_sync("hello", json!({})).unwrap_err();
/// assert_eq!((refused.code(), refused.status()), ("RATE_LIMITED", 429));
/// // Bob has his own allowance.
/// let bob = registry.with(CallOptions::new().caller("bob"));
/// assert!(bob.run_sync("hello", json!({})).is_ok());
/// ```
pub struct RateLimit {
    capacity: f64,
    /// Tokens per second.
    rate: f64,
    per_caller: bool,
    max_callers: usize,
    buckets: Mutex<Buckets>,
}

#[derive(Default)]
struct Buckets {
    by_caller: HashMap<Box<str>, Bucket>,
    /// For calls with no caller, for everyone (not per caller), and for callers past
    /// the cap.
    shared: Option<Bucket>,
    /// When full buckets were last dropped to make room: at most once a second, so
    /// a flood of new caller ids cannot make every call scan the table.
    swept: Option<Instant>,
}

#[derive(Clone, Copy)]
struct Bucket {
    tokens: f64,
    at: Instant,
}

impl Bucket {
    fn full(capacity: f64, now: Instant) -> Self {
        Self {
            tokens: capacity,
            at: now,
        }
    }

    fn refill(&mut self, capacity: f64, rate: f64, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.tokens = (self.tokens + elapsed * rate).min(capacity);
        self.at = now;
    }
}

impl fmt::Debug for RateLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RateLimit")
            .field("capacity", &self.capacity)
            .field("per_second", &self.rate)
            .field("per_caller", &self.per_caller)
            .field("max_callers", &self.max_callers)
            .finish_non_exhaustive()
    }
}

impl RateLimit {
    /// At most `calls` calls per `per`, for all callers together (see
    /// [`per_caller`](Self::per_caller)). A zero `calls` refuses every call; a zero
    /// `per` is taken as one millisecond.
    pub fn new(calls: u32, per: Duration) -> Self {
        let per = per.max(Duration::from_millis(1));
        Self {
            capacity: f64::from(calls),
            rate: f64::from(calls) / per.as_secs_f64(),
            per_caller: false,
            max_callers: DEFAULT_MAX_CALLERS,
            buckets: Mutex::default(),
        }
    }

    /// Gives every caller its own allowance (calls with no caller share one).
    #[must_use]
    pub fn per_caller(mut self) -> Self {
        self.per_caller = true;
        self
    }

    /// How many callers get their own bucket (default [`DEFAULT_MAX_CALLERS`]).
    #[must_use]
    pub fn max_callers(mut self, max: usize) -> Self {
        self.max_callers = max;
        self
    }

    /// Takes one token for `caller`, or says how long until one is there.
    fn take(&self, caller: Option<&str>) -> Result<(), Duration> {
        let now = Instant::now();
        let (capacity, rate) = (self.capacity, self.rate);
        let mut buckets = self.buckets.lock().unwrap_or_else(PoisonError::into_inner);
        let Buckets {
            by_caller,
            shared,
            swept,
        } = &mut *buckets;
        let bucket = match caller {
            Some(caller) if by_caller.contains_key(caller) => by_caller.get_mut(caller),
            Some(caller) => {
                let due = swept.is_none_or(|at| now.saturating_duration_since(at) >= SWEEP_EVERY);
                if by_caller.len() >= self.max_callers && due {
                    // Full buckets are as good as new ones: drop them to make room.
                    *swept = Some(now);
                    by_caller.retain(|_, b| {
                        b.refill(capacity, rate, now);
                        b.tokens < capacity
                    });
                }
                if by_caller.len() < self.max_callers {
                    Some(
                        by_caller
                            .entry(caller.into())
                            .or_insert_with(|| Bucket::full(capacity, now)),
                    )
                } else {
                    None
                }
            }
            None => None,
        };
        let bucket = match bucket {
            Some(bucket) => bucket,
            None => shared.get_or_insert_with(|| Bucket::full(capacity, now)),
        };
        bucket.refill(capacity, rate, now);
        if bucket.tokens >= 1.0 {
            bucket.tokens -= 1.0;
            return Ok(());
        }
        if rate <= 0.0 {
            return Err(Duration::MAX);
        }
        Err(Duration::from_secs_f64((1.0 - bucket.tokens) / rate))
    }
}

impl Layer for RateLimit {
    fn call(&self, call: Call, next: Next) -> ReplyFuture {
        match self.take(key(self.per_caller, &call)) {
            Ok(()) => next.run(call),
            Err(wait) => {
                let ms = u64::try_from(wait.as_millis()).unwrap_or(u64::MAX).max(1);
                let err = ToolError::custom(
                    "RATE_LIMITED",
                    429,
                    format!("too many calls of `{}`; try again in {ms} ms", call.tool()),
                )
                .with_data(json!({"retryAfterMs": ms}));
                ReplyFuture::ready(Err(err))
            }
        }
    }
}

/// At most `max` calls in flight per caller (or for everyone): a call past it is
/// refused at once with `BUSY` (HTTP 429). A stream counts until it ends or is
/// dropped.
///
/// Memory is bounded by the calls in flight: a caller's count is dropped when its
/// last call ends, and at most [`max_callers`](Self::max_callers) callers are
/// tracked at once (a new caller past that is refused).
///
/// ```rust,standalone_crate
/// use toolfunc::layer::ConcurrencyLimit;
/// use toolfunc::Registry;
///
/// let registry = Registry::global().isolate().layer(ConcurrencyLimit::new(8).per_caller());
/// # let _ = registry;
/// ```
pub struct ConcurrencyLimit {
    max: usize,
    per_caller: bool,
    max_callers: usize,
    counts: Arc<Mutex<Counts>>,
}

#[derive(Default)]
struct Counts {
    by_caller: HashMap<Box<str>, usize>,
    shared: usize,
}

impl fmt::Debug for ConcurrencyLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConcurrencyLimit")
            .field("max", &self.max)
            .field("per_caller", &self.per_caller)
            .field("max_callers", &self.max_callers)
            .finish_non_exhaustive()
    }
}

impl ConcurrencyLimit {
    /// At most `max` calls in flight, for all callers together (see
    /// [`per_caller`](Self::per_caller)).
    pub fn new(max: usize) -> Self {
        Self {
            max,
            per_caller: false,
            max_callers: DEFAULT_MAX_CALLERS,
            counts: Arc::default(),
        }
    }

    /// Counts every caller's calls apart (calls with no caller share one count).
    #[must_use]
    pub fn per_caller(mut self) -> Self {
        self.per_caller = true;
        self
    }

    /// How many callers may have calls in flight at once (default
    /// [`DEFAULT_MAX_CALLERS`]).
    #[must_use]
    pub fn max_callers(mut self, max: usize) -> Self {
        self.max_callers = max;
        self
    }

    /// Takes a slot for `caller`, released when the permit drops.
    fn acquire(&self, caller: Option<&str>) -> Option<Permit> {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = match caller {
            None => &mut counts.shared,
            Some(caller) => {
                if !counts.by_caller.contains_key(caller)
                    && counts.by_caller.len() >= self.max_callers
                {
                    return None;
                }
                counts.by_caller.entry(caller.into()).or_default()
            }
        };
        if *slot >= self.max {
            return None;
        }
        *slot += 1;
        Some(Permit {
            counts: Arc::clone(&self.counts),
            caller: caller.map(Into::into),
        })
    }
}

/// A slot in flight; gives it back when dropped.
struct Permit {
    counts: Arc<Mutex<Counts>>,
    caller: Option<Box<str>>,
}

impl Drop for Permit {
    fn drop(&mut self) {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        match &self.caller {
            None => counts.shared = counts.shared.saturating_sub(1),
            Some(caller) => {
                if let Some(count) = counts.by_caller.get_mut(caller) {
                    *count = count.saturating_sub(1);
                    if *count == 0 {
                        counts.by_caller.remove(caller);
                    }
                }
            }
        }
    }
}

impl Layer for ConcurrencyLimit {
    fn call(&self, call: Call, next: Next) -> ReplyFuture {
        let Some(permit) = self.acquire(key(self.per_caller, &call)) else {
            let err = ToolError::Busy {
                name: call.tool().to_owned(),
            };
            return ReplyFuture::ready(Err(err));
        };
        let mut running = next.run(call);
        if let Some(reply) = running.take_ready() {
            // Done already (a sync tool): the slot goes back now, unless it streams.
            return ReplyFuture::ready(hold(reply, permit));
        }
        ReplyFuture::new(async move { hold(running.await, permit) })
    }
}

/// The reply, with `permit` held until a stream in it ends or is dropped.
fn hold(reply: Result<Reply, ToolError>, permit: Permit) -> Result<Reply, ToolError> {
    match reply? {
        // The slot is held until the stream ends or is dropped.
        Reply::Stream(items) => Ok(Reply::Stream(
            items
                .map(move |item| {
                    let _held = &permit;
                    item
                })
                .boxed(),
        )),
        value @ Reply::Value(_) => Ok(value),
    }
}
