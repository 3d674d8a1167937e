//! Limits over callers: how often ([`RateLimit`]) and how many at once
//! ([`ConcurrencyLimit`]). Both refuse at once rather than wait, so they work the
//! same for sync callers and never hold a network request open; both keep bounded
//! memory however many caller ids arrive, and however long: per caller, they keep
//! at most [`DEFAULT_MAX_CALLERS`] callers, [`DEFAULT_MAX_TABLE_BYTES`] bytes of
//! their names, and refuse a caller name longer than [`DEFAULT_MAX_CALLER_BYTES`]
//! with `TOO_LONG` (400) (each a setting).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::time::Instant;

use futures::StreamExt;
use serde_json::json;

use super::{Call, Layer, Next, Reply, ReplyFuture};
use crate::error::ToolError;
use crate::quota::too_long;

/// How many callers a per-caller limit tracks by default; callers past it share one
/// allowance.
pub const DEFAULT_MAX_CALLERS: usize = 10_000;

/// The longest caller name (the verified subject, else the stated caller) a
/// per-caller limit takes by default, in bytes; a call of a longer one is refused
/// with `TOO_LONG` (400).
pub const DEFAULT_MAX_CALLER_BYTES: usize = 256;

/// How many bytes of caller names a per-caller limit keeps by default; past them,
/// new callers are treated as past [`DEFAULT_MAX_CALLERS`].
pub const DEFAULT_MAX_TABLE_BYTES: usize = 1 << 20;

/// How often a full per-caller table is swept for buckets that refilled.
const SWEEP_EVERY: Duration = Duration::from_secs(1);

/// Whose allowance a call draws on; `TOO_LONG` for a caller name past `max` bytes,
/// which is never kept.
fn key(per_caller: bool, max: usize, call: &Call) -> Result<Option<&str>, ToolError> {
    match call.ctx().principal() {
        Some(caller) if per_caller => match too_long("caller", caller, max) {
            Some(refused) => Err(refused),
            None => Ok(Some(caller)),
        },
        _ => Ok(None),
    }
}

/// A token bucket per caller (or one for everyone): at most `calls` calls in a burst,
/// refilled at `calls` per `per`. A call past the allowance is refused with
/// `RATE_LIMITED` (HTTP 429) whose data gives `retryAfterMs`.
///
/// Memory is bounded: at most [`max_callers`](Self::max_callers) buckets are kept,
/// with at most [`max_bytes`](Self::max_bytes) of their callers' names (idle full
/// buckets are dropped first); callers past that share one bucket, so a flood of
/// made-up caller ids cannot grow the table or escape the limit. A caller name
/// longer than [`max_caller_bytes`](Self::max_caller_bytes) is refused with
/// `TOO_LONG` (400).
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
    max_caller_bytes: usize,
    max_bytes: usize,
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
    /// The bytes of the names in `by_caller`.
    bytes: usize,
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
            .field("max_caller_bytes", &self.max_caller_bytes)
            .field("max_bytes", &self.max_bytes)
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
            max_caller_bytes: DEFAULT_MAX_CALLER_BYTES,
            max_bytes: DEFAULT_MAX_TABLE_BYTES,
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

    /// The longest caller name taken, in bytes (default
    /// [`DEFAULT_MAX_CALLER_BYTES`]); a longer one is refused with `TOO_LONG`.
    #[must_use]
    pub fn max_caller_bytes(mut self, max: usize) -> Self {
        self.max_caller_bytes = max;
        self
    }

    /// How many bytes of caller names the buckets may keep (default
    /// [`DEFAULT_MAX_TABLE_BYTES`]); callers past it share one bucket.
    #[must_use]
    pub fn max_bytes(mut self, max: usize) -> Self {
        self.max_bytes = max;
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
            bytes,
        } = &mut *buckets;
        let (max_callers, max_bytes) = (self.max_callers, self.max_bytes);
        let room = |by_caller: &HashMap<Box<str>, Bucket>, bytes: usize, caller: &str| {
            by_caller.len() < max_callers && bytes.saturating_add(caller.len()) <= max_bytes
        };
        let bucket = match caller {
            Some(caller) if by_caller.contains_key(caller) => by_caller.get_mut(caller),
            Some(caller) => {
                let due = swept.is_none_or(|at| now.saturating_duration_since(at) >= SWEEP_EVERY);
                if !room(by_caller, *bytes, caller) && due {
                    // Full buckets are as good as new ones: drop them to make room.
                    *swept = Some(now);
                    by_caller.retain(|name, b| {
                        b.refill(capacity, rate, now);
                        let keep = b.tokens < capacity;
                        if !keep {
                            *bytes = bytes.saturating_sub(name.len());
                        }
                        keep
                    });
                }
                if room(by_caller, *bytes, caller) {
                    *bytes += caller.len();
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
        let caller = match key(self.per_caller, self.max_caller_bytes, &call) {
            Ok(caller) => caller,
            Err(refused) => return ReplyFuture::ready(Err(refused)),
        };
        match self.take(caller) {
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
/// last call ends, and at most [`max_callers`](Self::max_callers) callers, with at
/// most [`max_bytes`](Self::max_bytes) of their names, are tracked at once (a new
/// caller past that is refused with `BUSY`). A caller name longer than
/// [`max_caller_bytes`](Self::max_caller_bytes) is refused with `TOO_LONG` (400).
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
    max_caller_bytes: usize,
    max_bytes: usize,
    counts: Arc<Mutex<Counts>>,
}

#[derive(Default)]
struct Counts {
    by_caller: HashMap<Box<str>, usize>,
    shared: usize,
    /// The bytes of the names in `by_caller`.
    bytes: usize,
}

impl fmt::Debug for ConcurrencyLimit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ConcurrencyLimit")
            .field("max", &self.max)
            .field("per_caller", &self.per_caller)
            .field("max_callers", &self.max_callers)
            .field("max_caller_bytes", &self.max_caller_bytes)
            .field("max_bytes", &self.max_bytes)
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
            max_caller_bytes: DEFAULT_MAX_CALLER_BYTES,
            max_bytes: DEFAULT_MAX_TABLE_BYTES,
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

    /// The longest caller name taken, in bytes (default
    /// [`DEFAULT_MAX_CALLER_BYTES`]); a longer one is refused with `TOO_LONG`.
    #[must_use]
    pub fn max_caller_bytes(mut self, max: usize) -> Self {
        self.max_caller_bytes = max;
        self
    }

    /// How many bytes of names the callers with calls in flight may have, together
    /// (default [`DEFAULT_MAX_TABLE_BYTES`]); a new caller past it is refused with
    /// `BUSY`.
    #[must_use]
    pub fn max_bytes(mut self, max: usize) -> Self {
        self.max_bytes = max;
        self
    }

    /// Takes a slot for `caller`, released when the permit drops.
    fn acquire(&self, caller: Option<&str>) -> Option<Permit> {
        let mut counts = self.counts.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = match caller {
            None => &mut counts.shared,
            Some(caller) => {
                if !counts.by_caller.contains_key(caller) {
                    let bytes = counts.bytes.saturating_add(caller.len());
                    if counts.by_caller.len() >= self.max_callers || bytes > self.max_bytes {
                        return None;
                    }
                    counts.bytes = bytes;
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
                        counts.bytes = counts.bytes.saturating_sub(caller.len());
                    }
                }
            }
        }
    }
}

impl Layer for ConcurrencyLimit {
    fn call(&self, call: Call, next: Next) -> ReplyFuture {
        let caller = match key(self.per_caller, self.max_caller_bytes, &call) {
            Ok(caller) => caller,
            Err(refused) => return ReplyFuture::ready(Err(refused)),
        };
        let Some(permit) = self.acquire(caller) else {
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
