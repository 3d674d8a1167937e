//! The worker: serves a registry as a NATS service, one queue-grouped endpoint per
//! tool, so every worker of the service shares the calls.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::service::{self, Request, ServiceExt};
use async_nats::{HeaderMap, RequestErrorKind};
use futures::StreamExt;
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

#[allow(deprecated)] // Still filled in for the code that reads it.
use super::TraceParent;
use super::durable::DurableSettings;
use super::guard::{self, Guard};
use super::share::{Place, Shares};
use super::spans::{failed, process_span};
use super::wire::{
    self, CALL_ID, CALLER, CANCEL, CONTROL, CONTROL_KEY, CREDIT, HEARTBEAT, KIND, STREAM, lock,
};
use crate::auth::Authenticator;
use crate::error::ToolError;
use crate::identity::Identity;
use crate::options::{CallOptions, Surface};
use crate::propagate;
use crate::registry::SubscriptionError;
use crate::registry::{Registry, RegistryEvent};
use crate::remote::{self, Catalog, Found, Lookup};
use crate::trace::TraceContext;
use tokio_util::sync::CancellationToken;

/// Most calls a worker runs at once unless set.
const MAX_IN_FLIGHT: usize = 1024;
/// The deadline of a call that names none (`Tf-Timeout`), unless set.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);
/// How often a worker asks whether a caller that asked for no heartbeats still
/// listens, unless set.
pub const DEFAULT_PROBE_EVERY: Duration = Duration::from_secs(5);
/// Bounds on what a caller may ask for.
const HEARTBEAT_MS: std::ops::RangeInclusive<u64> = 50..=60_000;
const WINDOW: std::ops::RangeInclusive<u32> = 1..=1024;

/// Sets up a [`Worker`]: the service name, the subject prefix, the cap on calls in
/// flight, who may call. Made by [`Worker::builder`].
#[derive(Clone)]
#[must_use]
pub struct WorkerBuilder {
    registry: Registry,
    name: String,
    prefix: Option<String>,
    version: String,
    description: Option<String>,
    max_in_flight: usize,
    max_per_caller: Option<usize>,
    default_deadline: Duration,
    probe_every: Option<Duration>,
    durable: Option<DurableSettings>,
    authenticator: Option<Arc<dyn Authenticator>>,
    inbox_prefix: String,
    max_header: usize,
    inbox_per_subject: bool,
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
    /// submitted with [`Client::submit`](super::Client::submit) are stored before
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
    pub fn inbox_per_subject(mut self, on: bool) -> Self {
        self.inbox_per_subject = on;
        self
    }

    /// The longest `Tf-Caller`, `Tf-Call-Id` and `Tf-Control-Key` a request may
    /// carry, in bytes: the worker keeps them while the call runs (a durable call
    /// stores them), so a longer one is refused `INVALID_HEADER` (400) before
    /// anything is kept. [`DEFAULT_MAX_HEADER`](super::DEFAULT_MAX_HEADER) (256)
    /// unless set.
    pub fn max_header(mut self, bytes: usize) -> Self {
        self.max_header = bytes.max(1);
        self
    }

    /// Connects to the NATS server at `url` (`nats://host:4222`, `host:4222`, a
    /// comma-separated list) and starts serving; see [`start`](Self::start).
    pub async fn connect(self, url: &str) -> Result<Worker, ToolError> {
        let client = async_nats::connect(url)
            .await
            .map_err(|e| nats_error(&format!("connect to {url}"), &e))?;
        self.start(client).await
    }

    /// Starts serving on `client`: the service, one endpoint per callable tool, the
    /// control subjects, and a watch on the registry that adds and removes
    /// endpoints as tools come and go.
    pub async fn start(self, client: async_nats::Client) -> Result<Worker, ToolError> {
        let prefix = self.prefix.unwrap_or_else(|| self.name.clone());
        wire::check_prefix(&prefix)?;
        let mut builder = client.service_builder();
        if let Some(description) = &self.description {
            builder = builder.description(description);
        }
        let service = builder
            .queue_group(format!("{prefix}.workers"))
            .start(&self.name, &self.version)
            .await
            .map_err(|e| nats_error("start the service", &*e))?;
        let id = service.info().await.id;
        let guard = Arc::new(Guard::new(
            self.authenticator.clone(),
            self.inbox_prefix,
            (self.max_header, self.inbox_per_subject),
        ));
        let shared = Arc::new(Shared {
            guard: Arc::clone(&guard),
            client: client.clone(),
            registry: self.registry.clone(),
            prefix: prefix.clone(),
            id: id.clone(),
            control: wire::control_subject(&prefix, Some(&id)),
            calls: Mutex::new(HashMap::new()),
            in_flight: Arc::new(Semaphore::new(self.max_in_flight)),
            max_in_flight: self.max_in_flight,
            shares: Shares::new(
                self.max_per_caller
                    .unwrap_or((self.max_in_flight / 4).max(1)),
            ),
            default_deadline: self.default_deadline,
            probe_every: self.probe_every,
            endpoints: Mutex::new(HashMap::new()),
            service: Mutex::new(Some(service)),
        });
        let mut tasks = Vec::new();
        let mut controls = Vec::new();
        // Discovery, answered by any one worker; and this worker's own list.
        let tools = shared
            .endpoint(Some("tools"), &wire::tools_subject(&prefix), HashMap::new())
            .await?;
        tasks.push(tokio::spawn(serve_discovery(Arc::clone(&shared), tools)));
        let own = shared
            .endpoint(
                None,
                &wire::worker_tools_subject(&prefix, &id),
                HashMap::new(),
            )
            .await?;
        tasks.push(tokio::spawn(serve_discovery(Arc::clone(&shared), own)));
        // Control: the broadcast subject and this worker's own.
        for subject in [wire::control_subject(&prefix, None), shared.control.clone()] {
            let subscriber = client
                .subscribe(subject)
                .await
                .map_err(|e| nats_error("subscribe to the control subject", &e))?;
            controls.push(tokio::spawn(serve_control(Arc::clone(&shared), subscriber)));
        }
        if let Some(settings) = self.durable {
            tasks.push(
                super::durable::serve(
                    client.clone(),
                    self.registry.clone(),
                    (prefix.clone(), id.clone()),
                    settings,
                    guard,
                )
                .await?,
            );
        }
        let events = self.registry.subscribe_tool_changes();
        sync(&shared).await;
        tasks.push(tokio::spawn(watch(Arc::clone(&shared), events)));
        Ok(Worker {
            shared,
            tasks,
            controls,
        })
    }
}

/// A registry served over NATS. Start one per process (or several); every worker
/// of the same service name and prefix takes a share of the calls through the
/// queue group, with no configuration anywhere else.
///
/// ```no_run
/// # async fn run() -> Result<(), toolfunc::ToolError> {
/// let nats = async_nats::connect("127.0.0.1:4222").await.expect("nats-server");
/// let worker = toolfunc::nats::Worker::builder(toolfunc::Registry::global())
///     .start(nats)
///     .await?;
/// println!("serving as {}", worker.id());
/// # Ok(()) }
/// ```
///
/// Dropping the worker stops it taking calls; [`stop`](Self::stop) also waits for
/// the calls it has taken.
#[derive(Debug)]
pub struct Worker {
    shared: Arc<Shared>,
    /// What takes calls: discovery, the registry watch, durable calls.
    tasks: Vec<JoinHandle<()>>,
    /// The control subjects: kept until the running calls are done.
    controls: Vec<JoinHandle<()>>,
}

impl Worker {
    /// A worker for `registry` with the default settings.
    pub fn builder(registry: impl Into<Registry>) -> WorkerBuilder {
        WorkerBuilder {
            registry: registry.into(),
            name: wire::DEFAULT_PREFIX.to_owned(),
            prefix: None,
            version: env!("CARGO_PKG_VERSION").to_owned(),
            description: None,
            max_in_flight: MAX_IN_FLIGHT,
            max_per_caller: None,
            default_deadline: DEFAULT_DEADLINE,
            probe_every: Some(DEFAULT_PROBE_EVERY),
            durable: None,
            authenticator: None,
            inbox_prefix: guard::DEFAULT_INBOX.to_owned(),
            max_header: guard::DEFAULT_MAX_HEADER,
            inbox_per_subject: false,
        }
    }

    /// This worker's id (the service instance id in `$SRV.INFO` and `$SRV.PING`).
    pub fn id(&self) -> &str {
        &self.shared.id
    }

    /// The subject prefix.
    pub fn prefix(&self) -> &str {
        &self.shared.prefix
    }

    /// The names of the tools this worker has endpoints for, sorted.
    pub fn tools(&self) -> Vec<String> {
        let mut names: Vec<String> = lock(&self.shared.endpoints).keys().cloned().collect();
        names.sort();
        names
    }

    /// How many requests this worker dropped unanswered because their reply
    /// subject was not under its [inbox prefix](WorkerBuilder::inbox_prefix).
    pub fn dropped_replies(&self) -> u64 {
        self.shared.guard.dropped()
    }

    /// How many calls are running now.
    pub fn in_flight(&self) -> usize {
        self.shared.max_in_flight - self.shared.in_flight.available_permits()
    }

    /// A reader of [`in_flight`](Self::in_flight) that outlives this borrow: for a
    /// gauge read by callback (`toolfunc.nats.calls.in_flight` with
    /// [`Metrics::gauge`](crate::layer::Metrics::gauge)). It holds the worker
    /// weakly, and reads 0 once the worker is gone.
    pub fn in_flight_reader(&self) -> impl Fn() -> u64 + Send + Sync + 'static + use<> {
        let shared = Arc::downgrade(&self.shared);
        move || {
            shared.upgrade().map_or(0, |shared| {
                let running = shared
                    .max_in_flight
                    .saturating_sub(shared.in_flight.available_permits());
                u64::try_from(running).unwrap_or(u64::MAX)
            })
        }
    }

    /// Stops taking calls, waits up to `grace` for the running ones, cancels the
    /// rest, and leaves the service.
    pub async fn stop(mut self, grace: Duration) {
        self.halt();
        let all = u32::try_from(self.shared.max_in_flight).unwrap_or(u32::MAX);
        let drained = tokio::time::timeout(grace, self.shared.in_flight.acquire_many(all)).await;
        if drained.is_err() {
            for control in lock(&self.shared.calls).values().flatten() {
                control.cancel.cancel();
            }
        }
        for task in self.controls.drain(..) {
            task.abort();
        }
        let service = lock(&self.shared.service).take();
        if let Some(service) = service {
            let _ = service.stop().await;
        }
    }

    /// Stops taking calls (the running ones go on).
    fn halt(&mut self) {
        for task in self.tasks.drain(..) {
            task.abort();
        }
        for (_, task) in lock(&self.shared.endpoints).drain() {
            task.abort();
        }
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.halt();
        for task in self.controls.drain(..) {
            task.abort();
        }
        // Leave the service, so `$SRV` stops listing this worker.
        if let Some(service) = lock(&self.shared.service).take()
            && let Ok(runtime) = tokio::runtime::Handle::try_current()
        {
            runtime.spawn(async move {
                let _ = service.stop().await;
            });
        }
    }
}

#[derive(Debug)]
struct Shared {
    /// Who may ask what: the authenticator, the inbox prefix.
    guard: Arc<Guard>,
    client: async_nats::Client,
    registry: Registry,
    prefix: String,
    id: String,
    /// This worker's control subject.
    control: String,
    /// Running calls by call id: how to cancel them and feed their credits
    /// (several callers may pick one id; each controls only its own).
    calls: Mutex<HashMap<String, Vec<Arc<Control>>>>,
    in_flight: Arc<Semaphore>,
    max_in_flight: usize,
    /// The deadline of a call that names none.
    default_deadline: Duration,
    /// How often the inbox of a caller that asked for no heartbeats is probed.
    probe_every: Option<Duration>,
    /// Calls running per caller (subject, label, or `""` for none), each at most
    /// its share.
    shares: Shares,
    /// The endpoint task of each served tool.
    endpoints: Mutex<HashMap<String, JoinHandle<()>>>,
    service: Mutex<Option<service::Service>>,
}

#[derive(Debug)]
struct Control {
    cancel: CancellationToken,
    /// Items the consumer can still take.
    credit: Semaphore,
    /// When the consumer last sent a control message (or the call began).
    heard: Mutex<tokio::time::Instant>,
    /// The requester's secret (`Tf-Control-Key`), which its control messages show.
    key: Option<String>,
    /// The verified subject of the requester: with one, only its control messages act.
    subject: Option<String>,
}

impl Control {
    /// Whether a control message showing `key`, from `who`, is the requester's:
    /// a call with a verified subject obeys that subject only; any other, the
    /// message that shows its secret.
    fn obeys(&self, key: Option<&str>, who: Option<&Identity>) -> bool {
        match &self.subject {
            Some(mine) => who.is_some_and(|who| who.key() == mine),
            None => self
                .key
                .as_deref()
                .zip(key)
                .is_some_and(|(mine, shown)| guard::same_secret(mine, shown)),
        }
    }
}

fn nats_error(what: &str, err: &(dyn std::error::Error + '_)) -> ToolError {
    ToolError::custom("UNREACHABLE", 503, format!("NATS: cannot {what}: {err}"))
}

impl Shared {
    async fn endpoint(
        &self,
        name: Option<&str>,
        subject: &str,
        metadata: HashMap<String, String>,
    ) -> Result<service::endpoint::Endpoint, ToolError> {
        let builder = {
            let service = lock(&self.service);
            let Some(service) = service.as_ref() else {
                return Err(ToolError::custom("STOPPED", 503, "the worker is stopped"));
            };
            service.endpoint_builder()
        };
        let builder = match name {
            Some(name) => builder.name(name),
            None => builder,
        };
        builder
            .metadata(metadata)
            .add(subject)
            .await
            .map_err(|e| nats_error(&format!("add the endpoint `{subject}`"), &*e))
    }
}

/// Adds an endpoint for every callable tool that has none and removes the
/// endpoints of tools that are gone; tells clients when something changed.
async fn sync(shared: &Arc<Shared>) {
    let offered = Catalog::of(&shared.registry);
    let wanted: HashMap<&str, &crate::tool::ToolDefinition> = wire::served(&offered)
        .map(|def| (def.name.as_str(), def))
        .collect();
    let mut changed = false;
    {
        let mut endpoints = lock(&shared.endpoints);
        endpoints.retain(|name, task| {
            let keep = wanted.contains_key(name.as_str());
            if !keep {
                task.abort();
                changed = true;
            }
            keep
        });
    }
    for (name, def) in wanted {
        if lock(&shared.endpoints).contains_key(name) {
            continue;
        }
        let mut metadata = HashMap::new();
        metadata.insert("tool".to_owned(), name.to_owned());
        if def.stream {
            metadata.insert("stream".to_owned(), "true".to_owned());
        }
        let subject = wire::call_subject(&shared.prefix, name);
        // Unnamed: the endpoint is known by its subject, unique per tool.
        match shared.endpoint(None, &subject, metadata).await {
            Ok(endpoint) => {
                let task = tokio::spawn(serve_tool(Arc::clone(shared), endpoint, name.to_owned()));
                lock(&shared.endpoints).insert(name.to_owned(), task);
                changed = true;
            }
            Err(err) => {
                tracing::warn!(tool = %name, error = %err, "cannot serve the tool over NATS");
            }
        }
    }
    if changed {
        // Only which worker changed: clients ask it (`<prefix>.tools.<worker>`) and
        // any worker for the definitions, and take none from an event, which
        // anyone allowed to publish there could have sent.
        let event = serde_json::json!({"worker": shared.id});
        let _ = shared
            .client
            .publish(
                wire::events_subject(&shared.prefix),
                event.to_string().into(),
            )
            .await;
    }
}

/// Follows the registry: every change to the catalog re-syncs the endpoints.
async fn watch(shared: Arc<Shared>, mut events: crate::registry::Subscription) {
    loop {
        match events.recv().await {
            Ok(
                RegistryEvent::Added { .. }
                | RegistryEvent::Removed { .. }
                | RegistryEvent::Cleared,
            )
            | Err(SubscriptionError::Lagged(_)) => sync(&shared).await,
            Ok(_) => {}
            Err(SubscriptionError::Closed) => return,
        }
    }
}

async fn serve_discovery(shared: Arc<Shared>, mut endpoint: service::endpoint::Endpoint) {
    while let Some(request) = endpoint.next().await {
        if shared.guard.reply(&request.message).is_none() {
            continue;
        }
        let headers = request.message.headers.as_ref();
        if let Err(err) = shared.guard.screen(headers) {
            respond_error(&request, &err).await;
            continue;
        }
        let identity = match shared.guard.identity(headers).await {
            Ok(identity) => identity,
            Err(err) => {
                respond_error(&request, &err).await;
                continue;
            }
        };
        if let Some(reply) = request.message.reply.as_deref()
            && !shared.guard.fits(reply, identity.as_ref())
        {
            continue;
        }
        // Listed as the layers and its scopes show them to this caller: a tool it
        // may not see is not in its list (and calling it is `NOT_FOUND`, or 403
        // `INSUFFICIENT_SCOPE` for one it lacks the scopes for).
        let mut viewer = CallOptions::new().surface(Surface::Nats);
        if let Some(identity) = identity {
            viewer = viewer.identity(identity);
        }
        if let Some(caller) = wire::header(headers, CALLER) {
            viewer = viewer.caller(caller);
        }
        let body = wire::discovery(
            &shared.registry,
            &remote::Sight::of(&shared.registry, Some(&viewer)),
        )
        .to_string();
        let _ = request.respond(Ok(body.into())).await;
    }
}

async fn serve_control(shared: Arc<Shared>, mut subscriber: async_nats::Subscriber) {
    while let Some(message) = subscriber.next().await {
        let headers = message.headers.as_ref();
        let Some(id) = wire::header(headers, CALL_ID) else {
            continue;
        };
        if !lock(&shared.calls).contains_key(id) {
            continue;
        }
        // With an authenticator, a control message proves who sends it too.
        let Ok(who) = shared.guard.identity(headers).await else {
            continue;
        };
        let key = wire::header(headers, CONTROL_KEY);
        let controls: Vec<Arc<Control>> = lock(&shared.calls)
            .get(id)
            .map(|all| {
                all.iter()
                    .filter(|c| c.obeys(key, who.as_ref()))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for control in controls {
            *lock(&control.heard) = tokio::time::Instant::now();
            if let Some(credit) = wire::header(headers, CREDIT).and_then(|c| c.parse::<u32>().ok())
            {
                let room =
                    (*WINDOW.end() as usize).saturating_sub(control.credit.available_permits());
                control.credit.add_permits((credit as usize).min(room));
            }
            if wire::header(headers, CANCEL).is_some() {
                control.cancel.cancel();
            }
        }
    }
}

async fn serve_tool(shared: Arc<Shared>, mut endpoint: service::endpoint::Endpoint, tool: String) {
    while let Some(request) = endpoint.next().await {
        tokio::spawn(handle(Arc::clone(&shared), request, tool.clone()));
    }
}

/// What a call asked for in its headers.
struct Asked {
    call_id: String,
    key: Option<String>,
    timeout: Option<Duration>,
    options: CallOptions,
    heartbeat: Option<Duration>,
    window: Option<u32>,
    /// The caller's W3C trace context, if it sent one.
    trace: Option<TraceContext>,
}

/// Numbers the calls that came without an id.
static NEXT_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn asked(
    headers: Option<&HeaderMap>,
    (worker, default_deadline): (&str, Duration),
    identity: Option<Identity>,
) -> Result<Asked, ToolError> {
    let number = |name: &str| -> Result<Option<u64>, ToolError> {
        wire::header(headers, name)
            .map(|text| {
                text.parse::<u64>().map_err(|_| {
                    ToolError::custom(
                        "INVALID_HEADER",
                        400,
                        format!("`{name}` must be a whole number, not `{text}`"),
                    )
                })
            })
            .transpose()
    };
    let mut options = CallOptions::new().surface(Surface::Nats);
    let timeout = number(wire::TIMEOUT)?.map(Duration::from_millis);
    // A call that names no deadline gets the worker's (a stream ends by its own
    // idle rule): a caller that has gone without a word holds no slot for ever.
    let streams = wire::header(headers, STREAM).is_some();
    if let Some(timeout) = timeout.or((!streams).then_some(default_deadline)) {
        options = options.timeout(timeout);
    }
    if let Some(caller) = wire::header(headers, CALLER) {
        options = options.caller(caller);
    }
    if let Some(identity) = identity {
        options = options.identity(identity);
    }
    if let Some(parent) = wire::header(headers, wire::TRACEPARENT) {
        #[allow(deprecated)] // Still there for the code that reads it.
        {
            options = options.insert(TraceParent(parent.to_owned()));
        }
    }
    let trace = TraceContext::read(|name| wire::header(headers, name));
    if let Some(incoming) = &trace {
        options = options.insert(incoming.clone());
    }
    let heartbeat = number(HEARTBEAT)?
        .map(|ms| Duration::from_millis(ms.clamp(*HEARTBEAT_MS.start(), *HEARTBEAT_MS.end())));
    let window = number(STREAM)?.map(|n| {
        u32::try_from(n)
            .unwrap_or(u32::MAX)
            .clamp(*WINDOW.start(), *WINDOW.end())
    });
    let call_id = wire::header(headers, CALL_ID).map_or_else(
        || {
            format!(
                "{}-{}",
                worker,
                NEXT_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
            )
        },
        str::to_owned,
    );
    Ok(Asked {
        call_id,
        key: wire::header(headers, CONTROL_KEY).map(str::to_owned),
        timeout,
        options,
        heartbeat,
        window,
        trace,
    })
}

/// A slot of the worker for a call of `subject` (else the caller `headers`
/// name): `OVERLOADED` (503) when the worker runs its `max_in_flight` calls,
/// `BUSY` (429) when this caller runs its share.
fn slot(
    shared: &Shared,
    subject: Option<&str>,
    headers: Option<&HeaderMap>,
) -> Result<(tokio::sync::OwnedSemaphorePermit, Place), ToolError> {
    let Ok(permit) = Arc::clone(&shared.in_flight).try_acquire_owned() else {
        return Err(ToolError::custom(
            "OVERLOADED",
            503,
            format!(
                "the worker runs {} calls already; try again or another worker",
                shared.max_in_flight
            ),
        ));
    };
    Ok((permit, caller_place(shared, subject, headers)?))
}

/// A place for a call of the caller `subject` verified, else the one its
/// `Tf-Caller` names; `BUSY` (429) when it runs its share already.
fn caller_place(
    shared: &Shared,
    subject: Option<&str>,
    headers: Option<&HeaderMap>,
) -> Result<Place, ToolError> {
    let key = match subject {
        Some(subject) => format!("sub:{subject}"),
        None => {
            wire::header(headers, CALLER).map_or_else(String::new, |label| format!("label:{label}"))
        }
    };
    shared.shares.take(&key).ok_or_else(|| {
        ToolError::custom(
            "BUSY",
            429,
            format!(
                "this caller runs {} calls on this worker already, its share; wait for one \
                 to end",
                shared.shares.max()
            ),
        )
    })
}

/// Removes a call's control entry when the call ends, however it ends.
struct Registered<'a> {
    shared: &'a Shared,
    id: String,
    control: Arc<Control>,
    heartbeat: Option<JoinHandle<()>>,
}

impl Drop for Registered<'_> {
    fn drop(&mut self) {
        if let Some(task) = self.heartbeat.take() {
            task.abort();
        }
        let mut calls = lock(&self.shared.calls);
        if let Some(all) = calls.get_mut(&self.id) {
            all.retain(|c| !Arc::ptr_eq(c, &self.control));
            if all.is_empty() {
                calls.remove(&self.id);
            }
        }
    }
}

async fn handle(shared: Arc<Shared>, request: Request, tool: String) {
    // A publish with nowhere to answer, or with an answer meant for a subject that
    // is no inbox: nothing is run for it.
    let Some(reply) = shared.guard.reply(&request.message).map(str::to_owned) else {
        return;
    };
    let headers = request.message.headers.as_ref();
    if let Err(err) = shared.guard.screen(headers) {
        return respond_error(&request, &err).await;
    }
    let identity = match shared.guard.identity(headers).await {
        Ok(identity) => identity,
        Err(err) => return respond_error(&request, &err).await,
    };
    if !shared.guard.fits(&reply, identity.as_ref()) {
        return;
    }
    let subject = identity.as_ref().map(|who| who.key().to_owned());
    let asked = match asked(headers, (&shared.id, shared.default_deadline), identity) {
        Ok(asked) => asked,
        Err(err) => return respond_error(&request, &err).await,
    };
    let args = match wire::arguments(&request.message.payload) {
        Ok(args) => args,
        Err(err) => return respond_error(&request, &err).await,
    };
    // Found once, for this caller: the endpoint's tool may have gone since, or a
    // layer may hide it from this caller.
    let found = match remote::find(&shared.registry, &tool, Lookup::TOOL, Some(&asked.options)) {
        Ok(found) => found,
        Err(err) => return respond_error(&request, &err).await,
    };
    // The act the arguments name needs its scopes too.
    if let Err(err) = found.authorize(Some(&asked.options), Some(&args)) {
        return respond_error(&request, &err).await;
    }
    let _slot = match slot(&shared, subject.as_deref(), headers) {
        Ok(slot) => slot,
        Err(err) => return respond_error(&request, &err).await,
    };
    let control = Arc::new(Control {
        cancel: CancellationToken::new(),
        credit: Semaphore::new(asked.window.unwrap_or(0) as usize),
        heard: Mutex::new(tokio::time::Instant::now()),
        key: asked.key.clone(),
        subject,
    });
    lock(&shared.calls)
        .entry(asked.call_id.clone())
        .or_default()
        .push(Arc::clone(&control));
    let heartbeat = watch_caller(&shared, asked.heartbeat, &reply, &control.cancel);
    let registered = Registered {
        shared: &shared,
        id: asked.call_id.clone(),
        control: Arc::clone(&control),
        heartbeat,
    };
    let options = asked
        .options
        .cancel_on(control.cancel.clone())
        .call_id(asked.call_id.clone());
    let span = process_span(&request.message.subject, &asked.call_id);
    propagate::adopt(&span, asked.trace.as_ref());
    let work = async {
        if asked.window.is_some() {
            let limits = StreamLimits {
                deadline: asked.timeout.map(|t| tokio::time::Instant::now() + t),
                idle: asked.heartbeat.map_or(STREAM_IDLE, |every| every * 3),
            };
            stream(
                &shared,
                (&request, &reply),
                (found, args),
                options,
                &control,
                limits,
            )
            .await;
        } else {
            match found.run(&shared.registry.with(options), args).await {
                Ok(value) => respond_value(&shared, &request, &value).await,
                Err(err) => respond_error(&request, &err).await,
            }
        }
    };
    tracing::Instrument::instrument(work, span).await;
    drop(registered);
}

/// Sends the caller a heartbeat every `every` while its call runs. Each is a
/// request that nobody answers: the server says at once when no one listens on the
/// caller's inbox any more (the caller has gone), and the call is cancelled.
fn heartbeat(
    shared: &Shared,
    reply: String,
    cancel: CancellationToken,
    every: Duration,
) -> JoinHandle<()> {
    heartbeat_with(shared, reply, cancel, every, true)
}

/// Watches whether the caller still listens while its call runs: the heartbeats
/// it asked for, else probes beside its inbox; `None` when neither can be done.
fn watch_caller(
    shared: &Shared,
    asked: Option<Duration>,
    reply: &str,
    cancel: &CancellationToken,
) -> Option<JoinHandle<()>> {
    match asked {
        Some(every) => Some(heartbeat(shared, reply.to_owned(), cancel.clone(), every)),
        // No heartbeats asked: whether the caller's inbox still listens is asked
        // of a subject beside it, which the caller ignores.
        None => shared.probe_every.and_then(|every| {
            let probe = sibling(reply)?;
            Some(heartbeat_with(shared, probe, cancel.clone(), every, false))
        }),
    }
}

/// A subject beside `reply` under the same inbox (its last token replaced):
/// a client that multiplexes its requests over one wildcard subscription
/// (`_INBOX.<id>.*`: async-nats, nats-py, the `nats` CLI) hears it and drops it as
/// no answer of its own; `None` for an inbox of one request alone (`_INBOX.<id>`),
/// which has no such subject.
fn sibling(reply: &str) -> Option<String> {
    let (inbox, last) = reply.rsplit_once('.')?;
    (inbox.contains('.') && !last.is_empty()).then(|| format!("{inbox}.tf-probe"))
}

/// Sends `to` a request every `every` while a call runs (a heartbeat the caller
/// reads when `tell` is on, an empty probe otherwise); cancels the call when the
/// server says no one listens there any more.
fn heartbeat_with(
    shared: &Shared,
    to: String,
    cancel: CancellationToken,
    every: Duration,
    tell: bool,
) -> JoinHandle<()> {
    let client = shared.client.clone();
    let control_subject = shared.control.clone();
    let reply = to;
    tokio::spawn(async move {
        let mut ticks = tokio::time::interval(every);
        ticks.tick().await;
        loop {
            ticks.tick().await;
            let mut headers = HeaderMap::new();
            if tell {
                headers.insert(KIND, wire::KIND_HEARTBEAT);
                headers.insert(CONTROL, wire::header_value(&control_subject));
            }
            let probe = async_nats::Request::new()
                .headers(headers)
                .timeout(Some(every));
            match client.send_request(reply.clone(), probe).await {
                Err(err) if err.kind() == RequestErrorKind::NoResponders => {
                    tracing::debug!("a NATS caller has gone; cancelling its call");
                    cancel.cancel();
                    return;
                }
                Err(err) if err.kind() == RequestErrorKind::TimedOut => {}
                Err(_) => return,
                Ok(_) => {}
            }
        }
    })
}

/// How long a stream may wait for its consumer.
#[derive(Clone, Copy)]
struct StreamLimits {
    /// The caller's deadline.
    deadline: Option<tokio::time::Instant>,
    /// How long the consumer may stay silent while the stream waits for credit.
    idle: Duration,
}

/// A consumer that asked for no heartbeats may stay silent this long.
const STREAM_IDLE: Duration = Duration::from_secs(60);

/// Runs a streaming call: each item one message, never more ahead of the consumer
/// than its credits, then an end marker or the error.
async fn stream(
    shared: &Shared,
    (request, reply): (&Request, &str),
    (found, args): (Found, Value),
    options: CallOptions,
    control: &Control,
    limits: StreamLimits,
) {
    let tool = found.name().to_owned();
    let tool = tool.as_str();
    let mut items = found.stream(&shared.registry.with(options), args);
    loop {
        let next = tokio::select! {
            next = items.next() => next,
            () = control.cancel.cancelled() => return,
        };
        match next {
            None => {
                let mut headers = HeaderMap::new();
                headers.insert(KIND, wire::KIND_END);
                let _ = request
                    .respond_with_headers(Ok(bytes::Bytes::new()), headers)
                    .await;
                return;
            }
            Some(Err(err)) => return respond_error(request, &err).await,
            Some(Ok(item)) => {
                // Wait for credit, but not past the deadline, nor for a consumer
                // that has gone quiet (a live one sends a credit or a keep-alive
                // every heartbeat).
                let credit = loop {
                    let quiet = *lock(&control.heard) + limits.idle;
                    let until = limits.deadline.map_or(quiet, |d| d.min(quiet));
                    tokio::select! {
                        credit = control.credit.acquire() => break credit,
                        () = control.cancel.cancelled() => return,
                        () = tokio::time::sleep_until(until) => {
                            let now = tokio::time::Instant::now();
                            if limits.deadline.is_some_and(|d| now >= d) {
                                let err = ToolError::Timeout { after_ms: None };
                                return respond_error(request, &err).await;
                            }
                            if now >= *lock(&control.heard) + limits.idle {
                                tracing::debug!(tool, "a stream's consumer went quiet; stopping");
                                return;
                            }
                        }
                    }
                };
                match credit {
                    Ok(permit) => permit.forget(),
                    Err(_) => return,
                }
                let body = match encode(shared, &item) {
                    Ok(body) => body,
                    Err(err) => return respond_error(request, &err).await,
                };
                let mut headers = HeaderMap::new();
                headers.insert(KIND, wire::KIND_ITEM);
                headers.insert(CONTROL, wire::header_value(&shared.control));
                if let Err(err) = shared
                    .client
                    .publish_with_headers(reply.to_owned(), headers, body)
                    .await
                {
                    tracing::debug!(tool, error = %err, "a stream's consumer is gone");
                    return;
                }
            }
        }
    }
}

/// A value as a payload, refused when it is larger than the server takes.
fn encode(shared: &Shared, value: &Value) -> Result<bytes::Bytes, ToolError> {
    wire::payload(&shared.client, value, "the answer")
}

async fn respond_value(shared: &Shared, request: &Request, value: &Value) {
    match encode(shared, value) {
        Ok(body) => {
            let _ = request.respond(Ok(body)).await;
        }
        Err(err) => respond_error(request, &err).await,
    }
}

/// Answers `err`; the call's span (when it runs in one) records it.
async fn respond_error(request: &Request, err: &ToolError) {
    failed(&tracing::Span::current(), Some(err));
    let status = service::error::Error {
        status: wire::short(&err.to_string(), wire::MAX_ERROR_TEXT),
        code: usize::from(err.status()),
    };
    let sent = request
        .respond_with_headers(Err(status.clone()), wire::error_headers(err))
        .await;
    if sent.is_err() {
        // Too large even trimmed (or the connection is gone): the code and status
        // alone still tell the caller what happened.
        let mut headers = HeaderMap::new();
        headers.insert(wire::ERROR_CODE, wire::header_value(err.code()));
        let _ = request.respond_with_headers(Err(status), headers).await;
    }
}
