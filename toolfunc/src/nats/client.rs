//! The client: loads a service's definitions from any worker into a local
//! registry whose tools call the workers.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::{HeaderMap, Message, StatusCode};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::time::Instant;

use super::durable;
use super::spans::{failed, send_span, submit_span};
use super::wire::{
    self, AUTHORIZATION, Abort, CALL_ID, CALLER, CANCEL, CONTROL, CONTROL_KEY, CREDIT, HEARTBEAT,
    KIND, STREAM, lock,
};
use crate::error::ToolError;
use crate::exec::ctx::Ctx;
use crate::exec::runner::Runner;
use crate::id::random_hex;
use crate::options::CallOptions;
use crate::propagate;
use crate::registry::{Registry, UnregisterOptions};
use crate::tool::ItemStream;
use crate::tool::{ToolDefinition, ToolFunc, ToolRef};
use crate::trace::TraceContext;
use crate::transport::Transport;

/// Sets up a [`Client`]: the subject prefix, how often workers prove they are
/// alive, how far a stream may run ahead, how often an idempotent call is tried,
/// how long a call may take, the bearer token it shows.
#[derive(Clone)]
#[must_use]
pub struct ClientBuilder {
    prefix: Option<String>,
    heartbeat: Duration,
    window: u32,
    attempts: u32,
    timeout: Duration,
    token: Option<String>,
}

impl Default for ClientBuilder {
    fn default() -> Self {
        Self {
            prefix: None,
            heartbeat: Duration::from_secs(1),
            window: 64,
            attempts: 3,
            timeout: DEFAULT_TIMEOUT,
            token: None,
        }
    }
}

impl std::fmt::Debug for ClientBuilder {
    // The token is a secret: only whether there is one is shown.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientBuilder")
            .field("prefix", &self.prefix)
            .field("heartbeat", &self.heartbeat)
            .field("window", &self.window)
            .field("attempts", &self.attempts)
            .field("timeout", &self.timeout)
            .field("token", &self.token.is_some())
            .finish()
    }
}

/// The deadline of a call that sets none of its own.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

impl ClientBuilder {
    /// The workers' subject prefix (`toolfunc` unless set, or the path of a
    /// `nats://host:port/<prefix>` URL).
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = Some(prefix.into());
        self
    }

    /// How often a worker sends a heartbeat while it runs a call (1 s unless set;
    /// 50 ms at least). Three missed in a row and the worker is taken for lost.
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.heartbeat = every.max(Duration::from_millis(50));
        self
    }

    /// How many items a streaming call may send ahead of the consumer (64 unless
    /// set; 1 to 1024).
    pub fn stream_window(mut self, items: u32) -> Self {
        self.window = items.clamp(1, 1024);
        self
    }

    /// How many workers an idempotent call is tried on when one is lost (3 unless
    /// set), all within the call's deadline.
    pub fn attempts(mut self, attempts: u32) -> Self {
        self.attempts = attempts.max(1);
        self
    }

    /// The deadline of every call that has none of its own (from
    /// [`CallOptions::timeout`] or an enclosing call's context): 60 s unless set.
    /// The worker gets it too (`Tf-Timeout`) and stops the call when it passes, so
    /// no call holds a worker for ever; a stream's deadline covers all its items.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Sends `Authorization: Bearer <token>` with every request (calls, streams,
    /// discovery, control messages, durable submits and outcome reads), for
    /// workers built with [`WorkerBuilder::authenticate`](super::WorkerBuilder::authenticate).
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Connects to the NATS server at `url` (`nats://host:4222`, `host:4222`, a
    /// comma-separated list; a path names the prefix) and loads the definitions.
    pub async fn connect(self, url: &str) -> Result<Client, ToolError> {
        let (servers, prefix) = split_url(url)?;
        let nats = async_nats::connect(servers.as_str())
            .await
            .map_err(|e| unreachable(&format!("connect to {servers}"), &e))?;
        let builder = match (self.prefix.is_none(), prefix) {
            (true, Some(prefix)) => self.prefix(prefix),
            _ => self,
        };
        builder.attach(nats).await
    }

    /// Uses a connected NATS client and loads the definitions.
    pub async fn attach(self, nats: async_nats::Client) -> Result<Client, ToolError> {
        let prefix = self
            .prefix
            .clone()
            .unwrap_or_else(|| wire::DEFAULT_PREFIX.to_owned());
        wire::check_prefix(&prefix)?;
        let inbox = nats.new_inbox();
        let replies = nats
            .subscribe(format!("{inbox}.*"))
            .await
            .map_err(|e| unreachable("subscribe to the reply inbox", &e))?;
        let pending: Pending = Arc::new(Mutex::new(HashMap::new()));
        let mux = tokio::spawn(route(replies, inbox.len() + 1, Arc::clone(&pending)));
        let remote = Arc::new(Remote {
            nats: nats.clone(),
            prefix: prefix.clone(),
            inbox,
            pending,
            next: AtomicU64::new(0),
            settings: self,
            _mux: Abort(mux),
        });
        // Subscribed before the first load, whose round trip makes sure the server
        // has the subscription: no announcement made after `attach` returns is missed.
        let events = nats
            .subscribe(wire::events_subject(&prefix))
            .await
            .map_err(|e| unreachable("subscribe to catalog events", &e))?;
        let registry = Registry::new();
        reload(&remote, &registry, None).await?;
        let follow = tokio::spawn(follow(events, Arc::clone(&remote), registry.clone()));
        Ok(Client {
            registry,
            remote,
            _follow: Arc::new(Abort(follow)),
        })
    }
}

/// A service served by NATS workers, as a registry: every remote tool runs by name
/// like a local one, on whichever worker the queue group picks.
///
/// The client holds a [`Registry`] ([`registry`](Self::registry)) with one tool per
/// remote tool, kept up to date while the client lives, so [`with`](Self::with),
/// aliases and the typed service clients work as for local tools, and a `&Client`
/// converts into that registry (`http::Api::new(&client)` serves the workers' tools
/// over HTTP). Errors come back as the [`ToolError`] the worker raised (same
/// `code()`), plus:
///
/// | code | status | when |
/// | --- | --- | --- |
/// | `WORKER_LOST` | 503 | the worker stopped answering mid-call (an idempotent call is tried on another first) |
/// | `OVERLOADED` | 503 | every worker tried runs its `max_in_flight` calls (a refused call ran nowhere, so it is tried again first) |
/// | `NO_WORKER` | 503 | no worker serves the tool now |
/// | `TOO_LARGE` | 413 | the arguments (or an answer) exceed the server's `max_payload` |
/// | `UNREACHABLE` | 503 | the NATS server cannot be reached |
///
/// ```no_run
/// # async fn run() -> Result<(), toolfunc::ToolError> {
/// use serde_json::json;
/// let client = toolfunc::nats::Client::connect("nats://127.0.0.1:4222").await?;
/// assert_eq!(client.run("add", json!({"a": 1, "b": 2})).await?, json!(3.0));
/// assert!(client.names().iter().any(|name| name == "add"));
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    registry: Registry,
    remote: Arc<Remote>,
    _follow: Arc<Abort>,
}

impl Client {
    /// Connects with the default settings; see [`ClientBuilder::connect`].
    pub async fn connect(url: &str) -> Result<Self, ToolError> {
        Self::builder().connect(url).await
    }

    /// A client with settings to choose.
    pub fn builder() -> ClientBuilder {
        ClientBuilder::default()
    }

    /// The registry of remote tools (its definitions follow the workers' catalogs
    /// while this client, or a clone of it, lives).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// A [`Runner`] over the remote tools whose calls all carry `options` (a
    /// timeout, a cancellation token, a caller), as [`Registry::with`] makes. Only
    /// tools this client has a definition for run through it.
    pub fn with(&self, options: CallOptions) -> Runner {
        self.registry.with(options)
    }

    /// The remote tool `name`, by name or alias, as last loaded.
    pub fn get(&self, name: &str) -> Option<ToolRef> {
        self.registry.get(name)
    }

    /// Whether a worker offered a tool by `name` (a name or an alias) when the
    /// definitions were last loaded.
    pub fn has(&self, name: &str) -> bool {
        self.registry.has(name)
    }

    /// The names of the remote tools, sorted.
    pub fn names(&self) -> Vec<String> {
        self.registry.names()
    }

    /// The definitions of the remote tools, sorted by name, as
    /// [`Registry::definitions`] gives them.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.registry.definitions()
    }

    /// The subject prefix of the service.
    pub fn prefix(&self) -> &str {
        &self.remote.prefix
    }

    /// Loads the definitions again (the client also does so by itself whenever a
    /// worker's catalog changes).
    pub async fn refresh(&self) -> Result<(), ToolError> {
        reload(&self.remote, &self.registry, None).await
    }

    /// Runs the tool `name`. A name this client has no definition for is still
    /// tried on the workers (a tool a worker gained since the last refresh).
    pub async fn run(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        if self.registry.has(name) {
            return self.registry.run(name, args).await;
        }
        // No subject is made of a name that is none (wildcards, spaces, empty
        // tokens): nothing is published for it.
        if !wire::subject_safe(name) {
            return Err(ToolError::not_found(name));
        }
        self.remote.call(None, name, args).await
    }

    /// Submits a durable call of the tool `name` (workers started with
    /// [`WorkerBuilder::durable`](super::WorkerBuilder::durable) take it) and
    /// returns its id once JetStream has stored it: from then on no worker's death
    /// loses it. [`poll`](Self::poll) or [`wait`](Self::wait) for its outcome, from
    /// this client or any other.
    pub async fn submit(&self, name: &str, args: Value) -> Result<String, ToolError> {
        let canonical = self
            .registry
            .get(name)
            .map_or_else(|| name.to_owned(), |tool| tool.name().to_owned());
        if !wire::subject_safe(&canonical) {
            return Err(ToolError::not_found(name));
        }
        let payload = self.remote.payload(&args)?;
        let id = random_hex();
        let mut headers = self.remote.auth_headers();
        headers.insert(CALL_ID, wire::header_value(&id));
        // The call carries the submitter's trace context to the worker that runs
        // it, whenever that is.
        let span = submit_span(&self.remote.prefix, &canonical);
        let trace = propagate::outgoing(&span, None);
        for (field, value) in trace.iter().flat_map(TraceContext::entries) {
            headers.insert(field, wire::header_value(value));
        }
        let submitted = async {
            let answer = self
                .remote
                .ask(
                    wire::submit_subject(&self.remote.prefix, &canonical),
                    headers,
                    payload,
                )
                .await?;
            wire::result(&answer.payload)
        }
        .await;
        failed(&span, submitted.as_ref().err());
        submitted?;
        Ok(id)
    }

    /// Where a durable call stands: still queued or working, or done with its
    /// outcome. `NOT_FOUND` for an id no call has, whose outcome expired, or
    /// that is another owner's.
    pub async fn poll(&self, id: &str) -> Result<crate::remote::ledger::TaskPoll, ToolError> {
        let answer = self
            .about_durable(wire::outcome_subject(&self.remote.prefix), id)
            .await?;
        Ok(durable::decode(id, &answer.payload))
    }

    /// Asks the durable workers at `subject` about the call `id` (`{"id": ..}`):
    /// `NOT_FOUND` at once for an id no call can have.
    async fn about_durable(&self, subject: String, id: &str) -> Result<Message, ToolError> {
        if !durable::valid_key(id) {
            return Err(durable::unknown(id));
        }
        let body = serde_json::json!({ "id": id }).to_string();
        self.remote
            .ask(subject, self.remote.auth_headers(), body.into())
            .await
    }

    /// Cancels a durable call of this client's owner (its verified subject, else
    /// its stated caller): one still queued ends `CANCELLED` when a worker takes
    /// it, one running is cancelled where it runs (its tool sees its cancellation
    /// token fire). Answers where the call stands: `cancelling`, or its record
    /// when it had ended already. `NOT_FOUND` for an id no call has, whose outcome
    /// expired, or that is another owner's.
    pub async fn cancel(&self, id: &str) -> Result<Value, ToolError> {
        let answer = self
            .about_durable(wire::cancel_subject(&self.remote.prefix), id)
            .await?;
        wire::result(&answer.payload)
    }

    /// Waits for a durable call's outcome, asking the workers again and again
    /// (every 50 ms at first, every second at most); bound it with
    /// `tokio::time::timeout`.
    pub async fn wait(&self, id: &str) -> Result<Value, ToolError> {
        let mut pause = Duration::from_millis(50);
        loop {
            if let crate::remote::ledger::TaskPoll::Done(outcome) = self.poll(id).await? {
                return outcome;
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 2).min(Duration::from_secs(1));
        }
    }

    /// Runs the tool `name` and yields its items as the worker sends them.
    pub fn run_stream(
        &self,
        name: &str,
        args: Value,
    ) -> BoxStream<'static, Result<Value, ToolError>> {
        if self.registry.has(name) {
            return self.registry.run_stream(name, args).boxed();
        }
        if !wire::subject_safe(name) {
            let err = ToolError::not_found(name);
            return futures::stream::once(async move { Err(err) }).boxed();
        }
        let remote = Arc::clone(&self.remote);
        let name = name.to_owned();
        futures::stream::once(async move { remote.open_stream(None, &name, args).await })
            .flat_map(|opened| match opened {
                Ok(items) => items,
                Err(err) => futures::stream::once(async move { Err(err) }).boxed(),
            })
            .boxed()
    }
}

/// The registry of the client's remote tools (a handle to the same registry). It
/// follows the workers' catalogs while the client lives; once every clone of the
/// client is dropped, its tools still call the workers, but no longer change.
impl From<&Client> for Registry {
    fn from(client: &Client) -> Self {
        client.registry.clone()
    }
}

// These forward to the inherent `Client::run` and `Client::run_stream`.
impl Transport for Client {
    fn run(&self, name: &str, args: Value) -> BoxFuture<'static, Result<Value, ToolError>> {
        let client = self.clone();
        let name = name.to_owned();
        Box::pin(async move { Client::run(&client, &name, args).await })
    }

    fn run_stream(&self, name: &str, args: Value) -> BoxStream<'static, Result<Value, ToolError>> {
        Client::run_stream(self, name, args)
    }
}

/// Calls waiting for messages, by the last token of their reply subject.
type Pending = Arc<Mutex<HashMap<String, Slot>>>;

/// Where the router puts what comes for one attempt: answers and items into a
/// bounded channel (a worker sends no more than its credits allow), signs of life
/// into `seen`, so heartbeats never pile up behind a paused consumer.
#[derive(Debug, Clone)]
struct Slot {
    sender: mpsc::Sender<Message>,
    seen: Arc<Seen>,
}

/// The last sign of life of an attempt's worker, and its control subject.
#[derive(Debug)]
struct Seen {
    at: Mutex<Instant>,
    control: Mutex<Option<String>>,
}

impl Seen {
    fn touch(&self, message: &Message) {
        *lock(&self.at) = Instant::now();
        if let Some(control) = wire::header(message.headers.as_ref(), CONTROL) {
            let mut known = lock(&self.control);
            if known.as_deref() != Some(control) {
                *known = Some(control.to_owned());
            }
        }
    }
}

#[derive(Debug)]
struct Remote {
    nats: async_nats::Client,
    prefix: String,
    /// `_INBOX.<id>`: every reply comes to `<inbox>.<token>`.
    inbox: String,
    pending: Pending,
    /// The next reply token.
    next: AtomicU64,
    settings: ClientBuilder,
    _mux: Abort,
}

fn unreachable(what: &str, err: &dyn std::fmt::Display) -> ToolError {
    ToolError::custom("UNREACHABLE", 503, format!("NATS: cannot {what}: {err}"))
}

fn worker_lost(tool: &str, after: Duration) -> ToolError {
    ToolError::custom(
        "WORKER_LOST",
        503,
        format!(
            "the worker running `{tool}` stopped answering ({} ms without a heartbeat); the call may or may not have run",
            after.as_millis()
        ),
    )
}

/// `nats://host:port/prefix` → (`nats://host:port`, `prefix`).
fn split_url(url: &str) -> Result<(String, Option<String>), ToolError> {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (Some(scheme), rest),
        None => (None, url),
    };
    if let Some(scheme) = scheme
        && !matches!(
            scheme.to_ascii_lowercase().as_str(),
            "nats" | "tls" | "ws" | "wss"
        )
    {
        return Err(ToolError::BadUrl {
            url: url.to_owned(),
            reason: "the scheme is not nats, tls, ws or wss".to_owned(),
        });
    }
    let (servers, path) = rest.split_once('/').unwrap_or((rest, ""));
    if servers.is_empty() {
        return Err(ToolError::BadUrl {
            url: url.to_owned(),
            reason: "no server address".to_owned(),
        });
    }
    let prefix = path.trim_matches('/');
    let servers = match scheme {
        Some(scheme) => servers
            .split(',')
            .map(|s| format!("{scheme}://{s}"))
            .collect::<Vec<_>>()
            .join(","),
        None => servers.to_owned(),
    };
    Ok((servers, (!prefix.is_empty()).then(|| prefix.to_owned())))
}

/// Routes every reply to the call waiting for it.
async fn route(mut replies: async_nats::Subscriber, skip: usize, pending: Pending) {
    while let Some(message) = replies.next().await {
        let token = message.subject.get(skip..).unwrap_or_default();
        let Some(slot) = lock(&pending).get(token).cloned() else {
            continue;
        };
        slot.seen.touch(&message);
        if wire::header(message.headers.as_ref(), KIND) == Some(wire::KIND_HEARTBEAT) {
            continue;
        }
        // Full only if a worker sends past its credits: such a message is dropped.
        let _ = slot.sender.try_send(message);
    }
}

/// Refreshes the registry whenever a worker says its catalog changed.
async fn follow(mut events: async_nats::Subscriber, remote: Arc<Remote>, registry: Registry) {
    while let Some(event) = events.next().await {
        // Several changes at once make one reload.
        let mut latest = event;
        while let Some(Some(next)) = futures::FutureExt::now_or_never(events.next()) {
            latest = next;
        }
        // An event only says that a worker's catalogue changed; what the worker
        // now serves is asked of the workers themselves, never taken from it.
        let worker = serde_json::from_slice::<Value>(&latest.payload)
            .ok()
            .and_then(|v| v.get("worker").and_then(Value::as_str).map(str::to_owned))
            .filter(|worker| !worker.contains('.') && wire::subject_safe(worker));
        if let Err(err) = reload(&remote, &registry, worker.as_deref()).await {
            tracing::debug!(error = %err, "cannot reload the NATS service's definitions");
        }
    }
}

/// Loads the definitions from any worker (plus those of `worker`, which said its
/// catalogue changed) and makes the registry hold exactly those.
async fn reload(
    remote: &Arc<Remote>,
    registry: &Registry,
    worker: Option<&str>,
) -> Result<(), ToolError> {
    let own = match worker {
        Some(worker) => discover(remote, &wire::worker_tools_subject(&remote.prefix, worker))
            .await
            .ok(),
        None => None,
    };
    let also = own.as_ref();
    let listing = match discover(remote, &wire::tools_subject(&remote.prefix)).await {
        Ok(listing) => listing,
        // A worker's announcement still adds its tools when no worker answers
        // discovery in time; nothing is removed on so little knowledge.
        Err(err) if also.is_some() => {
            tracing::debug!(error = %err, "discovery failed; adding the announced tools only");
            for (name, def) in definitions(also) {
                if !registry.has(&name)
                    && let Err(err) = remote_tool(remote, def).and_then(|t| registry.register(t))
                {
                    tracing::warn!(tool = %name, error = %err, "skipping a remote tool that cannot be registered");
                }
            }
            return Ok(());
        }
        Err(err) => return Err(err),
    };
    let mut wanted = definitions(Some(&listing));
    wanted.extend(definitions(also));
    for name in registry.names() {
        let same = registry
            .get(&name)
            .zip(wanted.get(&name))
            .is_some_and(|(tool, def)| tool.definition() == def);
        if same {
            wanted.remove(&name);
        } else {
            registry.unregister_with(&name, UnregisterOptions::new().force());
        }
    }
    for (name, def) in wanted {
        let registered = remote_tool(remote, def).and_then(|tool| registry.register(tool));
        if let Err(err) = registered {
            tracing::warn!(tool = %name, error = %err, "skipping a remote tool that cannot be registered");
        }
    }
    Ok(())
}

/// The definitions of a worker (any, on `subject` of the queue group; one, on its
/// own), keyed by name.
async fn discover(remote: &Remote, subject: &str) -> Result<Value, ToolError> {
    let answer = remote
        .nats
        .request_with_headers(
            subject.to_owned(),
            remote.auth_headers(),
            bytes::Bytes::new(),
        )
        .await
        .map_err(|e| match e.kind() {
            async_nats::RequestErrorKind::NoResponders => ToolError::custom(
                "NO_WORKER",
                503,
                format!("no worker serves `{}` on this NATS server", remote.prefix),
            ),
            _ => unreachable("load the definitions", &e),
        })?;
    if wire::is_error(answer.headers.as_ref()) {
        let headers = answer.headers.unwrap_or_default();
        return Err(wire::error_from_headers(&headers, "tools"));
    }
    wire::result(&answer.payload)
}

/// The tool definitions of a listing (`{name: definition}`); entries that are not
/// definitions, or whose names cannot be subjects, are skipped.
fn definitions(listing: Option<&Value>) -> HashMap<String, ToolDefinition> {
    let mut found = HashMap::new();
    let Some(entries) = listing.and_then(Value::as_object) else {
        return found;
    };
    for (name, entry) in entries {
        match serde_json::from_value::<ToolDefinition>(entry.clone()) {
            Ok(def) if def.name == *name && wire::subject_safe(name) => {
                found.insert(name.clone(), def);
            }
            _ => {
                tracing::warn!(tool = %name, "skipping a definition that is not a tool definition");
            }
        }
    }
    found
}

/// A local tool standing for a remote one.
fn remote_tool(remote: &Arc<Remote>, def: ToolDefinition) -> Result<ToolFunc, ToolError> {
    let name = def.name.clone();
    let streams = def.stream;
    let builder = ToolFunc::from_definition(def);
    let remote = Arc::clone(remote);
    let builder = if streams {
        builder.stream_handler(move |ctx, args| {
            let remote = Arc::clone(&remote);
            let name = name.clone();
            async move { remote.open_stream(Some(&ctx), &name, args).await }
        })
    } else {
        builder.handler(move |ctx, args| {
            let remote = Arc::clone(&remote);
            let name = name.clone();
            async move { remote.call(Some(&ctx), &name, args).await }
        })
    };
    // The worker checks the arguments; a second check here could only disagree.
    builder.unchecked().build()
}

/// Whether the tool (or the act called) has a `stream` parameter.
fn declares_stream(def: &ToolDefinition, args: &serde_json::Map<String, Value>) -> bool {
    let act = args.get("act").and_then(Value::as_str);
    let params = act
        .and_then(|a| def.acts.iter().find(|d| d.name == a || d.method() == a))
        .map_or(def.params.value(), |a| &a.params);
    params
        .get("properties")
        .and_then(|p| p.get("stream"))
        .is_some()
}

/// Whether a call may be run again on another worker: its tool (or act) says it
/// is idempotent.
fn idempotent(def: &ToolDefinition, args: &Value) -> bool {
    let act = args.get("act").and_then(Value::as_str);
    let act = act.and_then(|a| def.acts.iter().find(|d| d.name == a || d.method() == a));
    act.and_then(|a| a.annotations.idempotent)
        .or(def.annotations.idempotent)
        .unwrap_or(false)
}

/// How a wait for the next message ended.
enum Next {
    Message(Message),
    /// No worker is subscribed to the subject.
    NoResponders,
    /// No message for three heartbeats.
    Lost(Duration),
    Timeout,
}

/// One attempt of a call: its reply token and call id (both new for every attempt,
/// so a cancel or credit can only reach this attempt), its messages, and the cancel
/// it sends if it is dropped before the answer.
struct Attempt {
    remote: Arc<Remote>,
    token: String,
    call_id: String,
    /// The secret the attempt's control messages show (`Tf-Control-Key`).
    key: String,
    messages: mpsc::Receiver<Message>,
    seen: Arc<Seen>,
    armed: bool,
}

impl Attempt {
    fn open(remote: &Arc<Remote>) -> Self {
        let token = remote.next.fetch_add(1, Ordering::Relaxed).to_string();
        let (sender, messages) = mpsc::channel(remote.settings.window as usize + 8);
        let seen = Arc::new(Seen {
            at: Mutex::new(Instant::now()),
            control: Mutex::new(None),
        });
        lock(&remote.pending).insert(
            token.clone(),
            Slot {
                sender,
                seen: Arc::clone(&seen),
            },
        );
        Self {
            remote: Arc::clone(remote),
            token,
            call_id: random_hex(),
            key: random_hex(),
            messages,
            seen,
            armed: true,
        }
    }

    /// The call has its answer: nothing to cancel.
    fn disarm(&mut self) {
        self.armed = false;
    }

    fn reply(&self) -> String {
        format!("{}.{}", self.remote.inbox, self.token)
    }

    /// The next message that is not a heartbeat; `Lost` after three heartbeats
    /// with no sign of life.
    async fn next(&mut self, deadline: Option<Instant>) -> Next {
        let patience = self.remote.settings.heartbeat * 3;
        loop {
            let quiet = *lock(&self.seen.at) + patience;
            let until = deadline.map_or(quiet, |d| d.min(quiet));
            match tokio::time::timeout_at(until, self.messages.recv()).await {
                Ok(Some(message)) => {
                    if message.status == Some(StatusCode::NO_RESPONDERS) {
                        return Next::NoResponders;
                    }
                    return Next::Message(message);
                }
                // The router is gone: the client is being dropped.
                Ok(None) => return Next::Lost(patience),
                Err(_) => {
                    let now = Instant::now();
                    if deadline.is_some_and(|d| now >= d) {
                        return Next::Timeout;
                    }
                    if now >= *lock(&self.seen.at) + patience {
                        return Next::Lost(patience);
                    }
                    // A heartbeat came meanwhile: wait on.
                }
            }
        }
    }

    fn control_subject(&self) -> String {
        lock(&self.seen.control)
            .clone()
            .unwrap_or_else(|| wire::control_subject(&self.remote.prefix, None))
    }

    fn control(&self, headers: HeaderMap) {
        let subject = self.control_subject();
        let nats = self.remote.nats.clone();
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        runtime.spawn(async move {
            let _ = nats
                .publish_with_headers(subject, headers, bytes::Bytes::new())
                .await;
        });
    }

    /// The headers of a control message for this attempt: the call id, the
    /// secret that shows the message is the requester's, the bearer token.
    fn control_headers(&self) -> HeaderMap {
        control_headers(&self.remote, &self.call_id, &self.key)
    }

    fn credit(&self, items: u32) {
        let mut headers = self.control_headers();
        headers.insert(CREDIT, items.to_string().as_str());
        self.control(headers);
    }

    /// Tells the worker every heartbeat that the consumer is still there, for as
    /// long as the returned guard lives (a stream waiting on a slow reader).
    fn keep_alive(&self) -> Abort {
        let nats = self.remote.nats.clone();
        let every = self.remote.settings.heartbeat;
        let seen = Arc::clone(&self.seen);
        let prefix = self.remote.prefix.clone();
        let base = self.control_headers();
        Abort(tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                let subject = lock(&seen.control)
                    .clone()
                    .unwrap_or_else(|| wire::control_subject(&prefix, None));
                let mut headers = base.clone();
                headers.insert(CREDIT, "0");
                if nats
                    .publish_with_headers(subject, headers, bytes::Bytes::new())
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }))
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        lock(&self.remote.pending).remove(&self.token);
        if self.armed {
            let mut headers = self.control_headers();
            headers.insert(CANCEL, "the caller gave up");
            self.control(headers);
        }
    }
}

/// The headers of a control message: the call id, the requester's secret, the
/// bearer token.
fn control_headers(remote: &Remote, call_id: &str, key: &str) -> HeaderMap {
    let mut headers = remote.auth_headers();
    headers.insert(CALL_ID, wire::header_value(call_id));
    headers.insert(CONTROL_KEY, wire::header_value(key));
    headers
}

impl Remote {
    /// Headers with the bearer token, when the client has one.
    fn auth_headers(&self) -> HeaderMap {
        let mut headers = HeaderMap::new();
        if let Some(token) = &self.settings.token {
            headers.insert(
                AUTHORIZATION,
                wire::header_value(&format!("Bearer {token}")),
            );
        }
        headers
    }

    /// A request to the workers (a durable submit or outcome read): its answer,
    /// or the error it carries; `NO_WORKER` when no worker takes such requests.
    async fn ask(
        &self,
        subject: String,
        headers: HeaderMap,
        payload: bytes::Bytes,
    ) -> Result<Message, ToolError> {
        let answer = self
            .nats
            .request_with_headers(subject, headers, payload)
            .await
            .map_err(|e| match e.kind() {
                async_nats::RequestErrorKind::NoResponders => ToolError::custom(
                    "NO_WORKER",
                    503,
                    format!("no worker takes durable calls under `{}`", self.prefix),
                ),
                _ => unreachable("reach a durable worker", &e),
            })?;
        if let Some(headers) = answer.headers.as_ref().filter(|h| wire::is_error(Some(h))) {
            return Err(wire::error_from_headers(headers, "durable"));
        }
        Ok(answer)
    }

    /// A call's deadline: its context's, else the client's default.
    fn deadline(&self, ctx: Option<&Ctx>) -> Instant {
        ctx.and_then(Ctx::deadline)
            .map_or_else(|| Instant::now() + self.settings.timeout, Instant::from_std)
    }

    fn payload(&self, args: &Value) -> Result<bytes::Bytes, ToolError> {
        if !matches!(args, Value::Object(_) | Value::Null) {
            return Err(ToolError::arguments(
                "",
                "expected an object of named arguments",
            ));
        }
        wire::payload(&self.nats, args, "the arguments")
    }

    /// Whether a failed attempt may be followed by another: attempts left, and
    /// time before the deadline.
    fn may_try_again(&self, tries: u32, deadline: Option<Instant>) -> bool {
        tries < self.settings.attempts && deadline.is_none_or(|d| Instant::now() < d)
    }

    fn headers(
        &self,
        ctx: Option<&Ctx>,
        trace: Option<&TraceContext>,
        attempt: &Attempt,
        deadline: Option<Instant>,
    ) -> HeaderMap {
        let mut headers = control_headers(self, &attempt.call_id, &attempt.key);
        headers.insert(
            HEARTBEAT,
            self.settings.heartbeat.as_millis().to_string().as_str(),
        );
        if let Some(deadline) = deadline {
            let left = deadline.saturating_duration_since(Instant::now());
            headers.insert(wire::TIMEOUT, left.as_millis().max(1).to_string().as_str());
        }
        if let Some(caller) = ctx.and_then(Ctx::caller) {
            headers.insert(CALLER, wire::header_value(caller));
        }
        for (field, value) in trace.into_iter().flat_map(TraceContext::entries) {
            headers.insert(field, wire::header_value(value));
        }
        headers
    }

    async fn publish(
        &self,
        tool: &str,
        attempt: &Attempt,
        headers: HeaderMap,
        payload: bytes::Bytes,
    ) -> Result<(), ToolError> {
        self.nats
            .publish_with_reply_and_headers(
                wire::call_subject(&self.prefix, tool),
                attempt.reply(),
                headers,
                payload,
            )
            .await
            .map_err(|e| unreachable(&format!("send the call to `{tool}`"), &e))
    }

    /// A call, tried again on another worker when its worker is lost and the
    /// call is idempotent.
    async fn call(
        self: &Arc<Self>,
        ctx: Option<&Ctx>,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolError> {
        let span = send_span(&self.prefix, tool);
        let trace = propagate::outgoing(&span, ctx);
        let result = self.call_traced(ctx, trace.as_ref(), tool, args).await;
        failed(&span, result.as_ref().err());
        result
    }

    async fn call_traced(
        self: &Arc<Self>,
        ctx: Option<&Ctx>,
        trace: Option<&TraceContext>,
        tool: &str,
        args: Value,
    ) -> Result<Value, ToolError> {
        let payload = self.payload(&args)?;
        let retry = ctx.is_some_and(|ctx| idempotent(ctx.definition(), &args));
        let deadline = Some(self.deadline(ctx));
        let mut tries = 0;
        loop {
            tries += 1;
            let mut attempt = Attempt::open(self);
            let headers = self.headers(ctx, trace, &attempt, deadline);
            self.publish(tool, &attempt, headers, payload.clone())
                .await?;
            match attempt.next(deadline).await {
                Next::Message(message) => {
                    attempt.armed = false;
                    let result = answer(&message, tool);
                    // A worker at its cap ran nothing: any call may go elsewhere.
                    if let Err(err) = &result
                        && err.code() == "OVERLOADED"
                        && self.may_try_again(tries, deadline)
                    {
                        tokio::time::sleep(Duration::from_millis(20 * u64::from(tries))).await;
                        continue;
                    }
                    return result;
                }
                Next::NoResponders => {
                    attempt.armed = false;
                    return Err(no_worker(tool, ctx.is_some()));
                }
                Next::Lost(after) => {
                    if retry && self.may_try_again(tries, deadline) {
                        tracing::debug!(tool, tries, "a worker was lost; trying another");
                        continue;
                    }
                    return Err(worker_lost(tool, after));
                }
                Next::Timeout => return Err(ToolError::Timeout { after_ms: None }),
            }
        }
    }

    /// A streaming call: the first message decides between an error and a stream;
    /// a worker lost before the first item of an idempotent call is replaced.
    async fn open_stream(
        self: &Arc<Self>,
        ctx: Option<&Ctx>,
        tool: &str,
        args: Value,
    ) -> Result<ItemStream, ToolError> {
        // The span covers the call up to its first answer; the items follow.
        let span = send_span(&self.prefix, tool);
        let trace = propagate::outgoing(&span, ctx);
        let opened = self
            .open_stream_traced(ctx, trace.as_ref(), tool, args)
            .await;
        failed(&span, opened.as_ref().err());
        opened
    }

    async fn open_stream_traced(
        self: &Arc<Self>,
        ctx: Option<&Ctx>,
        trace: Option<&TraceContext>,
        tool: &str,
        args: Value,
    ) -> Result<ItemStream, ToolError> {
        let mut args = args;
        // A tool with a `stream` parameter streams only when asked to.
        if let Some(map) = args.as_object_mut()
            && ctx.is_some_and(|ctx| declares_stream(ctx.definition(), map))
        {
            map.insert("stream".into(), Value::Bool(true));
        }
        let payload = self.payload(&args)?;
        let retry = ctx.is_some_and(|ctx| idempotent(ctx.definition(), &args));
        let deadline = Some(self.deadline(ctx));
        let window = self.settings.window;
        let mut tries = 0;
        loop {
            tries += 1;
            let mut attempt = Attempt::open(self);
            let mut headers = self.headers(ctx, trace, &attempt, deadline);
            headers.insert(STREAM, window.to_string().as_str());
            self.publish(tool, &attempt, headers, payload.clone())
                .await?;
            let first = match attempt.next(deadline).await {
                Next::Message(message) => message,
                Next::NoResponders => {
                    attempt.armed = false;
                    return Err(no_worker(tool, ctx.is_some()));
                }
                Next::Lost(after) => {
                    if retry && self.may_try_again(tries, deadline) {
                        continue;
                    }
                    return Err(worker_lost(tool, after));
                }
                Next::Timeout => return Err(ToolError::Timeout { after_ms: None }),
            };
            return Ok(items(attempt, first, tool.to_owned(), deadline, window));
        }
    }
}

fn no_worker(tool: &str, known: bool) -> ToolError {
    if known {
        ToolError::custom("NO_WORKER", 503, format!("no worker serves `{tool}` now"))
    } else {
        ToolError::not_found_because(tool, "no NATS worker serves a tool by this name")
    }
}

/// The answer of a plain call.
fn answer(message: &Message, tool: &str) -> Result<Value, ToolError> {
    match &message.headers {
        Some(headers) if wire::is_error(Some(headers)) => {
            Err(wire::error_from_headers(headers, tool))
        }
        _ => wire::result(&message.payload),
    }
}

/// What one message of a stream says.
enum Part {
    Item(Value),
    End,
    Failed(ToolError),
}

fn part(message: &Message, tool: &str) -> Part {
    let headers = message.headers.as_ref();
    if let Some(headers) = headers.filter(|h| wire::is_error(Some(h))) {
        return Part::Failed(wire::error_from_headers(headers, tool));
    }
    match wire::header(headers, KIND) {
        Some(wire::KIND_END) => Part::End,
        // An item, or a worker that answered with one value: the stream of it.
        _ => match wire::result(&message.payload) {
            Ok(value) => Part::Item(value),
            Err(err) => Part::Failed(err),
        },
    }
}

/// The items of a stream, granting the worker credit as they are consumed.
fn items(
    attempt: Attempt,
    first: Message,
    tool: String,
    deadline: Option<Instant>,
    window: u32,
) -> ItemStream {
    struct State {
        attempt: Attempt,
        first: Option<Message>,
        tool: String,
        deadline: Option<Instant>,
        /// Items taken since the last credit.
        taken: u32,
        batch: u32,
        done: bool,
        /// Whether the worker sent kinds (a plain answer is one item, then done).
        framed: bool,
        /// Tells the worker the consumer is alive while it reads slowly.
        _alive: Option<Abort>,
    }
    let framed = wire::header(first.headers.as_ref(), KIND).is_some()
        || wire::is_error(first.headers.as_ref());
    let alive = framed.then(|| attempt.keep_alive());
    let state = State {
        _alive: alive,
        attempt,
        first: Some(first),
        tool,
        deadline,
        taken: 0,
        batch: (window / 2).max(1),
        done: false,
        framed,
    };
    futures::stream::unfold(state, |mut state| async move {
        if state.done {
            return None;
        }
        let message = match state.first.take() {
            Some(message) => message,
            None => match state.attempt.next(state.deadline).await {
                Next::Message(message) => message,
                Next::NoResponders => {
                    state.done = true;
                    state.attempt.armed = false;
                    return Some((Err(no_worker(&state.tool, true)), state));
                }
                Next::Lost(after) => {
                    state.done = true;
                    return Some((Err(worker_lost(&state.tool, after)), state));
                }
                Next::Timeout => {
                    state.done = true;
                    return Some((Err(ToolError::Timeout { after_ms: None }), state));
                }
            },
        };
        match part(&message, &state.tool) {
            Part::Item(value) => {
                if !state.framed {
                    state.done = true;
                    state.attempt.armed = false;
                    return Some((Ok(value), state));
                }
                state.taken += 1;
                if state.taken >= state.batch {
                    state.attempt.credit(state.taken);
                    state.taken = 0;
                }
                Some((Ok(value), state))
            }
            Part::End => {
                state.attempt.disarm();
                None
            }
            Part::Failed(err) => {
                state.done = true;
                state.attempt.armed = false;
                Some((Err(err), state))
            }
        }
    })
    .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_split_into_servers_and_prefix() {
        assert_eq!(
            split_url("nats://127.0.0.1:4222").unwrap(),
            ("nats://127.0.0.1:4222".to_owned(), None)
        );
        assert_eq!(
            split_url("nats://a:1,b:2/shop").unwrap(),
            ("nats://a:1,nats://b:2".to_owned(), Some("shop".to_owned()))
        );
        assert_eq!(split_url("localhost:4222").unwrap().0, "localhost:4222");
        assert_eq!(split_url("http://x").unwrap_err().code(), "BAD_URL");
        assert_eq!(split_url("nats:///x").unwrap_err().code(), "BAD_URL");
    }
}
