//! The settings of durable calls ([`DurableSettings`]): silence allowed, tries,
//! retention, queue length, slots per worker and per owner, run time, fleet key.

use std::sync::Arc;
use std::time::Duration;

/// How durable calls are kept: how long a worker may go silent before its call
/// goes to another, how often a call is tried, how long outcomes are kept, how
/// many calls may wait. Workers that serve durable calls set it with
/// [`WorkerBuilder::durable`](crate::nats::WorkerBuilder::durable); the first one to
/// start creates the stream and the bucket with it.
#[derive(Debug, Clone)]
#[must_use]
pub struct DurableSettings {
    pub(crate) ack_wait: Duration,
    pub(crate) max_deliver: i64,
    pub(crate) retention: Duration,
    pub(crate) max_pending: i64,
    pub(crate) per_worker: usize,
    pub(crate) per_owner: Option<usize>,
    pub(crate) max_run_time: Duration,
    pub(crate) fleet_key: Option<Arc<[u8]>>,
}

impl Default for DurableSettings {
    fn default() -> Self {
        Self {
            ack_wait: Duration::from_secs(30),
            max_deliver: 5,
            retention: Duration::from_secs(3600),
            max_pending: 100_000,
            per_worker: 16,
            per_owner: None,
            max_run_time: Duration::from_secs(3600),
            fleet_key: None,
        }
    }
}

impl DurableSettings {
    /// The defaults: 30 s of silence, 5 tries, outcomes kept 1 h, 100,000 calls
    /// waiting at most, 16 running on each worker at most.
    pub fn new() -> Self {
        Self::default()
    }

    /// How long a worker may go without a sign of life (it sends one every third
    /// of this while a call runs) before its call is given to another worker. A
    /// worker's claim on a call lasts twice this from its last sign of life: a
    /// worker handed a call whose claim still holds gives it back, so a worker
    /// that is slow but alive never has its call run beside it.
    pub fn ack_wait(mut self, wait: Duration) -> Self {
        self.ack_wait = wait.max(Duration::from_millis(300));
        self
    }

    /// How often a call is delivered at most (a worker lost each time).
    pub fn max_deliver(mut self, times: u32) -> Self {
        self.max_deliver = i64::from(times.max(1));
        self
    }

    /// How long an outcome is kept after it is written.
    pub fn retention(mut self, keep: Duration) -> Self {
        self.retention = keep.max(Duration::from_secs(1));
        self
    }

    /// How many durable calls one worker runs at once (it takes no more from the
    /// stream until one ends), so the others share the queue.
    pub fn per_worker(mut self, calls: usize) -> Self {
        self.per_worker = calls.max(1);
        self
    }

    /// How many durable calls of one owner (the verified subject, else the stated
    /// caller, else every caller that states none together) one worker runs at
    /// once: a call past it is given back for a while (longer each time), so one
    /// owner's flood of long calls does not hold every slot while others' wait;
    /// on its last delivery it runs all the same. A quarter of
    /// [`per_worker`](Self::per_worker) unless set.
    pub fn per_owner(mut self, calls: usize) -> Self {
        self.per_owner = Some(calls.max(1));
        self
    }

    /// The longest a durable call runs: past it the call is cancelled, and its
    /// outcome is `TIMEOUT`. 1 hour unless set.
    pub fn max_run_time(mut self, limit: Duration) -> Self {
        self.max_run_time = limit;
        self
    }

    /// A secret every worker of the fleet shares (at least 32 bytes): each record
    /// a worker writes also carries a seal under it (`fleet`), over who runs the
    /// call, whose it is and what it came to, and an outcome read answers only a
    /// record that carries it (any other is `NOT_FOUND`, and logged), so a record
    /// written to the bucket by anyone but a worker is never taken for a call's
    /// outcome. Without it, outcome reads trust the bucket, which only workers may
    /// write (`interop/nats/roles.conf`); the per-call seal still keeps a forged
    /// record from stopping a run.
    pub fn seal_key(mut self, secret: impl AsRef<[u8]>) -> Self {
        self.fleet_key = Some(Arc::from(secret.as_ref()));
        self
    }

    /// How many calls may wait in the stream; one more is refused when submitted.
    pub fn max_pending(mut self, calls: u32) -> Self {
        self.max_pending = i64::from(calls.max(1));
        self
    }
}
