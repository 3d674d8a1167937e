//! The settings of a [`Worker`](super::Worker) ([`WorkerBuilder`]): the service
//! name and prefix, the caps on calls in flight, deadlines and probes, durable
//! calls, who may call and where answers may go.

use std::sync::Arc;
use std::time::Duration;

use crate::auth::Authenticator;
use crate::nats::durable::settings::DurableSettings;
use crate::registry::Registry;

/// Most calls a worker runs at once unless set.
pub(super) const MAX_IN_FLIGHT: usize = 1024;
/// The deadline of a call that names none (`Tf-Timeout`), unless set.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);
/// How often a worker asks whether a caller that asked for no heartbeats still
/// listens, unless set.
pub const DEFAULT_PROBE_EVERY: Duration = Duration::from_secs(5);

/// Sets up a [`Worker`]: the service name, the subject prefix, the cap on calls in
/// flight, who may call. Made by [`Worker::builder`].
///
/// [`Worker`]: super::Worker
/// [`Worker::builder`]: super::Worker::builder
#[derive(Clone)]
#[must_use]
pub struct WorkerBuilder {
    pub(super) registry: Registry,
    pub(super) name: String,
    pub(super) prefix: Option<String>,
    pub(super) version: String,
    pub(super) description: Option<String>,
    pub(super) max_in_flight: usize,
    pub(super) max_per_caller: Option<usize>,
    pub(super) default_deadline: Duration,
    pub(super) probe_every: Option<Duration>,
    pub(super) durable: Option<DurableSettings>,
    pub(super) authenticator: Option<Arc<dyn Authenticator>>,
    pub(super) inbox_prefix: String,
    pub(super) max_header: usize,
    pub(super) inbox_per_subject: bool,
}

impl std::fmt::Debug for WorkerBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WorkerBuilder")
            .field("registry", &self.registry)
            .field("name", &self.name)
            .field("prefix", &self.prefix)
            .field("version", &self.version)
            .field("description", &self.description)
            .field("max_in_flight", &self.max_in_flight)
            .field("max_per_caller", &self.max_per_caller)
            .field("default_deadline", &self.default_deadline)
            .field("probe_every", &self.probe_every)
            .field("durable", &self.durable)
            .field("authenticator", &self.authenticator.is_some())
            .field("inbox_prefix", &self.inbox_prefix)
            .field("max_header", &self.max_header)
            .field("inbox_per_subject", &self.inbox_per_subject)
            .finish()
    }
}

impl WorkerBuilder {
    /// The NATS service name (`$SRV.INFO.<name>`; letters, digits, `_`, `-`).
    /// `toolfunc` unless set. Workers with the same name and prefix share calls.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// The subject prefix (`<prefix>.call.<tool>`, …). The service name unless set.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// The service version in `$SRV.INFO` (semver); the crate's version unless set.
    pub fn version(mut self, version: impl Into<String>) -> Self {
        self.version = version.into();
        self
    }

    /// The service description in `$SRV.INFO`.
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = Some(description.into());
        self
    }

    /// Most calls this worker runs at once (1024 unless set); one more is answered
    /// `OVERLOADED` (503) at once, so the caller can go elsewhere.
    pub fn max_in_flight(mut self, max: usize) -> Self {
        self.max_in_flight = max.max(1);
        self
    }

    /// The deadline of a call that names none (no `Tf-Timeout`: a client other
    /// than toolfunc's): past it the call is cancelled and answered `TIMEOUT`, so a
    /// caller that has gone does not hold a slot for ever. [`DEFAULT_DEADLINE`]
    /// (60 s) unless set; a call that names a deadline keeps its own.
    pub fn default_deadline(mut self, deadline: Duration) -> Self {
        self.default_deadline = deadline;
        self
    }

    /// How often the worker asks whether a caller that asked for no heartbeats
    /// still listens on its inbox, while its call runs: an empty request to a
    /// subject beside its reply subject (`_INBOX.<id>.tf-probe` for a reply to
    /// `_INBOX.<id>.<n>`), which a client that multiplexes its requests over one
    /// subscription (async-nats, nats-py, the `nats` CLI) hears and drops. When the
    /// server answers that no one listens there, the caller has gone, and its call
    /// is cancelled. A reply subject of one token under the inbox prefix is never
    /// probed. [`DEFAULT_PROBE_EVERY`] (5 s) unless set; `None` probes nothing.
    pub fn probe_every(mut self, every: Option<Duration>) -> Self {
        self.probe_every = every;
        self
    }

    /// Most calls this worker runs at once for one caller: the subject its token
    /// proves (with an [authenticator](Self::authenticate)), else the `Tf-Caller`
    /// it states (a label), else every caller that states none together. One more
    /// is answered `BUSY` (429) at once, while other callers still get slots: one
    /// client cannot take every slot of [`max_in_flight`](Self::max_in_flight).
    /// A quarter of `max_in_flight` unless set.
    pub fn max_in_flight_per_caller(mut self, max: usize) -> Self {
        self.max_per_caller = Some(max.max(1));
        self
    }

    /// Also takes durable calls (JetStream must be on in the server): calls
    /// submitted with [`Client::submit`](crate::nats::Client::submit) are stored before
    /// they are acknowledged, taken by one worker at a time, given to another if
    /// that worker dies, and their outcomes kept for the retention time. A durable
    /// call runs at least once: make its tool safe to run again.
    pub fn durable(mut self, settings: DurableSettings) -> Self {
        self.durable = Some(settings);
        self
    }

    /// Requires of every request an `Authorization: Bearer <token>` header that
    /// `authenticator` verifies: calls, streams, discovery, control messages,
    /// durable submits and outcome reads. A call without one, or with one it
    /// refuses, is answered `UNAUTHENTICATED` (401; `UNAVAILABLE`, 503, when the
    /// token cannot be checked now) and runs nothing; a control message is
    /// ignored. The verified [`Identity`] rides on the call
    /// ([`Ctx::identity`](crate::Ctx::identity)), so layers and limits key on its
    /// subject, and durable calls belong to it; what a client states about itself
    /// (`Tf-Caller`) stays a label.
    ///
    /// [`Identity`]: crate::identity::Identity
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), toolfunc::ToolError> {
    /// use toolfunc::auth::ApiKeys;
    /// use toolfunc::{Identity, Registry};
    ///
    /// let worker = toolfunc::nats::Worker::builder(Registry::global())
    ///     .authenticate(ApiKeys::new().key("s3cret", Identity::new("ci")))
    ///     .connect("nats://127.0.0.1:4222")
    ///     .await?;
    /// let client = toolfunc::nats::Client::builder()
    ///     .token("s3cret")
    ///     .connect("nats://127.0.0.1:4222")
    ///     .await?;
    /// # let _ = (worker, client); Ok(()) }
    /// ```
    pub fn authenticate(mut self, authenticator: impl Authenticator) -> Self {
        self.authenticator = Some(Arc::new(authenticator));
        self
    }

    /// The subjects this worker answers to: a request whose reply subject does
    /// not start with `prefix` is dropped unanswered and counted
    /// ([`Worker::dropped_replies`]), so no one can point a worker's answers,
    /// heartbeats or stream items at a subject of their choosing. `_INBOX.`
    /// unless set (async-nats's, nats-py's and the `nats` CLI's inboxes); set it
    /// when clients use another (`ConnectOptions::custom_inbox_prefix`).
    ///
    /// [`Worker::dropped_replies`]: super::Worker::dropped_replies
    pub fn inbox_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.inbox_prefix = prefix.into();
        self
    }

    /// With an [authenticator](Self::authenticate): answers a verified caller
    /// only under its own inbox, `<inbox prefix><subject>.` (`_INBOX.alice.` for
    /// the subject `alice`, as `interop/nats/roles.conf` gives each user, with
    /// async-nats's `custom_inbox_prefix`), so one caller cannot point a worker's
    /// answers at another caller's inbox; a request that does is dropped and
    /// counted ([`Worker::dropped_replies`]). Off unless set: the subjects must be
    /// the NATS users' names.
    ///
    /// [`Worker::dropped_replies`]: super::Worker::dropped_replies
    pub fn inbox_per_subject(mut self, on: bool) -> Self {
        self.inbox_per_subject = on;
        self
    }

    /// The longest `Tf-Caller`, `Tf-Call-Id` and `Tf-Control-Key` a request may
    /// carry, in bytes: the worker keeps them while the call runs (a durable call
    /// stores them), so a longer one is refused `INVALID_HEADER` (400) before
    /// anything is kept. [`DEFAULT_MAX_HEADER`](crate::nats::DEFAULT_MAX_HEADER) (256)
    /// unless set.
    pub fn max_header(mut self, bytes: usize) -> Self {
        self.max_header = bytes.max(1);
        self
    }
}
