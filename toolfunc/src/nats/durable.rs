//! Durable calls on JetStream: a call submitted to a worker
//! (`<prefix>.submit.<tool>`) is stored in a work-queue stream before it is
//! acknowledged, workers take it from a shared durable consumer (a worker that dies
//! mid-call has it redelivered to another), and the outcome is kept in a key-value
//! bucket for the retention time and read through a worker (`<prefix>.outcome`),
//! which shows it to its owner only.
//!
//! Who runs a call is decided in the bucket, by compare-and-set on the record's
//! revision: a worker claims the call for a lease it renews while the call runs,
//! another that is handed the call while the lease holds gives it back, and the
//! first outcome written wins. Records a worker writes are sealed with a secret
//! only the stored call carries, so a record written by anyone else (a forged
//! `completed`, or a claim that never ends) is taken for no record at all.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::HeaderMap;
use async_nats::jetstream::{self, AckKind, consumer, kv, stream};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::guard::Guard;
use super::share::{Place, Shares};
use super::spans::{failed, process_span};
use super::wire::{self, CALL_ID, CALLER, lock};
use crate::error::ToolError;
use crate::id::random_hex;
use crate::identity::Identity;
use crate::options::CallOptions;
use crate::propagate;
use crate::registry::Registry;
use crate::remote::ledger::{TaskInfo, TaskPoll, TaskStatus};
use crate::remote::{self, Lookup};
use crate::trace::TraceContext;

/// How durable calls are kept: how long a worker may go silent before its call
/// goes to another, how often a call is tried, how long outcomes are kept, how
/// many calls may wait. Workers that serve durable calls set it with
/// [`WorkerBuilder::durable`](super::WorkerBuilder::durable); the first one to
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

/// The stream, consumer and bucket names of a prefix.
pub(crate) fn stream_name(prefix: &str) -> String {
    format!("{}_TASKS", name_part(prefix).to_ascii_uppercase())
}

pub(crate) fn bucket_name(prefix: &str) -> String {
    format!("{}_results", name_part(prefix))
}

/// The bucket of the cancels owners asked for, by call id.
pub(crate) fn cancels_name(prefix: &str) -> String {
    format!("{}_cancels", name_part(prefix))
}

const CONSUMER: &str = "workers";

/// On a stored call: when it was submitted (ms since the epoch).
const SUBMITTED: &str = "Tf-Submitted";
/// On a stored call: whose it is (the verified subject, else the stated caller).
const OWNER: &str = "Tf-Owner";
/// On a stored call: the identity its submitter proved (`{"sub", "iss", "scopes"}`).
const IDENTITY: &str = "Tf-Identity";
/// On a stored call: the secret the workers seal its records with.
const SEAL_KEY: &str = "Tf-Seal-Key";

fn name_part(prefix: &str) -> String {
    prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `<prefix>.task.<tool>`: the subjects of the stream.
pub(crate) fn task_subject(prefix: &str, tool: &str) -> String {
    format!("{prefix}.task.{tool}")
}

/// The oldest nats-server whose JetStream API durable calls use (2.10: the
/// consumer and stream settings and the answers async-nats expects).
pub(crate) const MIN_SERVER: (u64, u64) = (2, 10);

/// Refuses a nats-server older than [`MIN_SERVER`], naming the version found, before
/// its JetStream answers fail to decode.
pub(crate) fn check_server_version(version: &str) -> Result<(), ToolError> {
    let mut parts = version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map(|part| part.parse::<u64>().ok());
    let found = (parts.next().flatten(), parts.next().flatten());
    match found {
        (Some(major), Some(minor)) if (major, minor) >= MIN_SERVER => Ok(()),
        _ => Err(ToolError::custom(
            "UNSUPPORTED",
            503,
            format!(
                "durable calls need nats-server {}.{} or later, with JetStream; this server is \
                 version {version:?}",
                MIN_SERVER.0, MIN_SERVER.1
            ),
        )),
    }
}

fn jetstream_error(what: &str, err: &dyn std::fmt::Display) -> ToolError {
    ToolError::custom(
        "UNREACHABLE",
        503,
        format!("JetStream: cannot {what}: {err}"),
    )
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Opens (or creates) the stream and the bucket.
async fn open(
    js: &jetstream::Context,
    prefix: &str,
    settings: &DurableSettings,
) -> Result<(stream::Stream, kv::Store), ToolError> {
    let stream = js
        .get_or_create_stream(stream::Config {
            name: stream_name(prefix),
            subjects: vec![task_subject(prefix, ">")],
            retention: stream::RetentionPolicy::WorkQueue,
            max_messages: settings.max_pending,
            discard: stream::DiscardPolicy::New,
            storage: stream::StorageType::File,
            duplicate_window: Duration::from_secs(120),
            ..Default::default()
        })
        .await
        .map_err(|e| jetstream_error("open the task stream", &e))?;
    let store = open_bucket(js, prefix, settings).await?;
    Ok((stream, store))
}

/// The bucket; created with `settings` when it is missing.
async fn open_bucket(
    js: &jetstream::Context,
    prefix: &str,
    settings: &DurableSettings,
) -> Result<kv::Store, ToolError> {
    open_named(js, bucket_name(prefix), prefix, settings).await
}

/// The bucket `bucket`; created with `settings` when it is missing.
async fn open_named(
    js: &jetstream::Context,
    bucket: String,
    prefix: &str,
    settings: &DurableSettings,
) -> Result<kv::Store, ToolError> {
    if let Ok(store) = js.get_key_value(&bucket).await {
        return Ok(store);
    }
    let created = js
        .create_key_value(kv::Config {
            bucket: bucket.clone(),
            description: format!("toolfunc durable results under `{prefix}`"),
            history: 1,
            max_age: settings.retention,
            storage: stream::StorageType::File,
            num_replicas: 1,
            ..Default::default()
        })
        .await;
    match created {
        Ok(store) => Ok(store),
        // Another worker made it first, with settings of its own: use that one.
        Err(err) => js
            .get_key_value(&bucket)
            .await
            .map_err(|_| jetstream_error("create the result bucket", &err)),
    }
}

/// What a worker's durable side shares: the bucket, the stream, the checks.
#[derive(Clone)]
struct Durable {
    client: async_nats::Client,
    js: jetstream::Context,
    store: kv::Store,
    /// The cancels owners asked for, by call id.
    cancels: kv::Store,
    prefix: String,
    guard: Arc<Guard>,
    /// The tools served, for the scopes a submitted call needs.
    registry: Registry,
    /// The fleet's key, when the workers share one.
    fleet: Option<ring::hmac::Key>,
}

/// Takes durable calls from the shared consumer and runs them until the task is
/// aborted: only as many as it has room to run (so none waits unacknowledged in a
/// buffer); answers submits and outcome reads; and answers for calls JetStream
/// gave up redelivering.
pub(crate) async fn serve(
    client: async_nats::Client,
    registry: Registry,
    (prefix, worker): (String, String),
    settings: DurableSettings,
    guard: Arc<Guard>,
) -> Result<tokio::task::JoinHandle<()>, ToolError> {
    check_server_version(&client.server_info().version)?;
    let concurrency = settings.per_worker;
    let js = jetstream::new(client.clone());
    let (stream, store) = open(&js, &prefix, &settings).await?;
    let cancels = open_named(&js, cancels_name(&prefix), &prefix, &settings).await?;
    let mut consumer: consumer::PullConsumer = stream
        .get_or_create_consumer(
            CONSUMER,
            consumer::pull::Config {
                durable_name: Some(CONSUMER.to_owned()),
                ack_policy: consumer::AckPolicy::Explicit,
                ack_wait: settings.ack_wait,
                max_deliver: settings.max_deliver,
                ..Default::default()
            },
        )
        .await
        .map_err(|e| jetstream_error("open the workers' consumer", &e))?;
    // The consumer is shared: its settings, not this worker's, decide when a call
    // is redelivered and how often.
    let (ack_wait, max_deliver) = match consumer.info().await {
        Ok(info) => (info.config.ack_wait, info.config.max_deliver),
        Err(_) => (settings.ack_wait, settings.max_deliver),
    };
    if ack_wait != settings.ack_wait || max_deliver != settings.max_deliver {
        tracing::warn!(
            ?ack_wait,
            max_deliver,
            "the workers' consumer was created with other durable settings; using its own"
        );
    }
    let queue = format!("{prefix}.workers");
    // Calls delivered `max_deliver` times without an outcome: one worker (a queue
    // group) writes `WORKER_LOST` for them and takes them out of the queue.
    let advisories = client
        .queue_subscribe(
            format!(
                "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{}.{CONSUMER}",
                stream_name(&prefix)
            ),
            queue.clone(),
        )
        .await
        .map_err(|e| jetstream_error("follow redelivery advisories", &e))?;
    let submits = client
        .queue_subscribe(wire::submit_subject(&prefix, ">"), queue.clone())
        .await
        .map_err(|e| jetstream_error("take durable submits", &e))?;
    let reads = client
        .queue_subscribe(wire::outcome_subject(&prefix), queue.clone())
        .await
        .map_err(|e| jetstream_error("take outcome reads", &e))?;
    let cancels_asked = client
        .queue_subscribe(wire::cancel_subject(&prefix), queue)
        .await
        .map_err(|e| jetstream_error("take cancels", &e))?;
    let cancelled = client
        .subscribe(wire::cancelled_subject(&prefix))
        .await
        .map_err(|e| jetstream_error("hear cancels", &e))?;
    let durable = Durable {
        client,
        js,
        store,
        cancels: cancels.clone(),
        fleet: fleet_key(&settings),
        prefix,
        guard,
        registry: registry.clone(),
    };
    let job = Job {
        registry,
        store: durable.store.clone(),
        worker,
        ack_wait,
        max_deliver,
        skip: task_subject(&durable.prefix, "").len(),
        running: Arc::new(Mutex::new(HashSet::new())),
        owners: Shares::new(
            settings
                .per_owner
                .unwrap_or((settings.per_worker / 4).max(1)),
        ),
        cancels,
        tokens: Arc::new(Mutex::new(HashMap::new())),
        fleet: fleet_key(&settings),
        max_run_time: settings.max_run_time,
    };
    Ok(tokio::spawn(async move {
        let _gave_up = wire::Abort(tokio::spawn(give_up(
            advisories,
            stream,
            (durable.store.clone(), durable.fleet.clone()),
            ack_wait,
        )));
        let _submits = wire::Abort(tokio::spawn(serve_submits(durable.clone(), submits)));
        let _reads = wire::Abort(tokio::spawn(serve_reads(durable.clone(), reads)));
        let _cancels = wire::Abort(tokio::spawn(serve_cancels(durable, cancels_asked)));
        let _cancelled = wire::Abort(tokio::spawn(hear_cancels(job.clone(), cancelled)));
        take_calls(consumer, concurrency, job).await;
    }))
}

/// Takes calls from the consumer, as many as there is room to run, and runs them.
async fn take_calls(mut consumer: consumer::PullConsumer, concurrency: usize, job: Job) {
    let limit = Arc::new(tokio::sync::Semaphore::new(concurrency));
    loop {
        // Wait for room, then ask for as many calls as there is room for.
        let Ok(first) = Arc::clone(&limit).acquire_owned().await else {
            return;
        };
        let room = 1 + limit.available_permits();
        let batch = consumer
            .batch()
            .max_messages(room)
            .expires(Duration::from_secs(5))
            .messages()
            .await;
        let Ok(mut batch) = batch else {
            tokio::time::sleep(Duration::from_millis(500)).await;
            continue;
        };
        let mut permit = Some(first);
        while let Some(next) = batch.next().await {
            let Ok(message) = next else { continue };
            let held = if let Some(held) = permit.take() {
                held
            } else if let Ok(held) = Arc::clone(&limit).try_acquire_owned() {
                held
            } else {
                // No room after all: give it back for another worker.
                let _ = message.ack_with(AckKind::Nak(None)).await;
                continue;
            };
            let job = job.clone();
            tokio::spawn(async move {
                job.run(message).await;
                drop(held);
            });
        }
        // Keep the info fresh so a changed consumer is noticed on restart.
        let _ = consumer.info().await;
    }
}

/// Answers an error to a request that was not made through the service API.
async fn answer_error(client: &async_nats::Client, reply: &str, err: &ToolError) {
    let _ = client
        .publish_with_headers(
            reply.to_owned(),
            wire::service_error_headers(err),
            bytes::Bytes::new(),
        )
        .await;
}

async fn answer_value(client: &async_nats::Client, reply: &str, value: &Value) {
    let _ = client
        .publish(reply.to_owned(), value.to_string().into())
        .await;
}

async fn serve_submits(durable: Durable, mut submits: async_nats::Subscriber) {
    while let Some(message) = submits.next().await {
        let durable = durable.clone();
        tokio::spawn(async move {
            let Some(reply) = durable.guard.reply(&message).map(str::to_owned) else {
                return;
            };
            match durable.submit(&message).await {
                Ok(answer) => answer_value(&durable.client, &reply, &answer).await,
                Err(err) if err.code() == NOT_ANSWERED => {}
                Err(err) => answer_error(&durable.client, &reply, &err).await,
            }
        });
    }
}

async fn serve_reads(durable: Durable, mut reads: async_nats::Subscriber) {
    while let Some(message) = reads.next().await {
        let durable = durable.clone();
        tokio::spawn(async move {
            let Some(reply) = durable.guard.reply(&message).map(str::to_owned) else {
                return;
            };
            match durable.read(&message).await {
                Ok(answer) => answer_value(&durable.client, &reply, &answer).await,
                Err(err) if err.code() == NOT_ANSWERED => {}
                Err(err) => answer_error(&durable.client, &reply, &err).await,
            }
        });
    }
}

async fn serve_cancels(durable: Durable, mut asked: async_nats::Subscriber) {
    while let Some(message) = asked.next().await {
        let durable = durable.clone();
        tokio::spawn(async move {
            let Some(reply) = durable.guard.reply(&message).map(str::to_owned) else {
                return;
            };
            match durable.cancel(&message).await {
                Ok(answer) => answer_value(&durable.client, &reply, &answer).await,
                Err(err) if err.code() == NOT_ANSWERED => {}
                Err(err) => answer_error(&durable.client, &reply, &err).await,
            }
        });
    }
}

/// Cancels the calls this worker runs that a `cancelled` message names, when the
/// cancels bucket says their owner asked (the message alone proves nothing).
async fn hear_cancels(job: Job, mut heard: async_nats::Subscriber) {
    while let Some(message) = heard.next().await {
        let Ok(id) = std::str::from_utf8(&message.payload) else {
            continue;
        };
        if !valid_key(id) {
            continue;
        }
        let token = lock(&job.tokens).get(id).cloned();
        if let Some(token) = token
            && job.cancel_asked(id).await
        {
            token.cancel();
        }
    }
}

/// The code of a request left unanswered: its reply subject is not its caller's.
const NOT_ANSWERED: &str = "NOT_ANSWERED";

fn not_answered() -> ToolError {
    ToolError::custom(
        NOT_ANSWERED,
        403,
        "the reply subject is not the caller's inbox",
    )
}

fn bad_id(id: &str) -> ToolError {
    ToolError::custom(
        "BAD_ID",
        400,
        format!(
            "`{}` cannot be a durable call's id: 1 to 256 of A-Z a-z 0-9 - _ = / . (not first or last)",
            wire::short(id, 64)
        ),
    )
}

/// The identity of a stored call, as its header carries it.
fn identity_header(identity: &Identity) -> String {
    json!({"sub": identity.subject(), "iss": identity.issuer(), "scopes": identity.scopes()})
        .to_string()
}

fn identity_from_header(text: &str) -> Option<Identity> {
    let value: Value = serde_json::from_str(text).ok()?;
    let mut identity = Identity::new(value.get("sub")?.as_str()?);
    if let Some(issuer) = value.get("iss").and_then(Value::as_str) {
        identity = identity.with_issuer(issuer);
    }
    if let Some(scopes) = value.get("scopes").and_then(Value::as_array) {
        identity = identity.with_scopes(scopes.iter().filter_map(Value::as_str));
    }
    Some(identity)
}

impl Durable {
    /// Stores a submitted call: its record (`queued`) first, so no id is taken
    /// twice, then the call itself; answers `{"id", "status": "queued"}`.
    async fn submit(&self, message: &async_nats::Message) -> Result<Value, ToolError> {
        let headers = message.headers.as_ref();
        self.guard.screen(headers)?;
        let identity = self.guard.identity(headers).await?;
        if let Some(reply) = message.reply.as_deref()
            && !self.guard.fits(reply, identity.as_ref())
        {
            return Err(not_answered());
        }
        let tool = message
            .subject
            .get(wire::submit_subject(&self.prefix, "").len()..)
            .unwrap_or_default();
        if !wire::subject_safe(tool) {
            return Err(ToolError::not_found(tool));
        }
        let id = match wire::header(headers, CALL_ID) {
            Some(id) if valid_key(id) => id.to_owned(),
            Some(id) => return Err(bad_id(id)),
            None => random_hex(),
        };
        // Only an object of named arguments is a call; its schema is checked when
        // it runs.
        let args = wire::arguments(&message.payload)?;
        // A tool or act the caller lacks the scopes for is refused now, not when
        // it runs (a tool this worker does not serve is judged by one that does).
        if let Some(identity) = &identity {
            let options = CallOptions::new().identity(identity.clone());
            match remote::find(&self.registry, tool, Lookup::TOOL, Some(&options)) {
                Ok(found) => found.authorize(Some(&options), Some(&args))?,
                Err(err) if err.code() == remote::INSUFFICIENT_SCOPE => return Err(err),
                Err(_) => {}
            }
        }
        let caller = wire::header(headers, CALLER);
        let owner = identity.as_ref().map(Identity::key).or(caller);
        let submitted = now_ms();
        let queued = json!({
            "id": id, "tool": tool, "status": "queued", "attempt": 0,
            "owner": owner, "caller": caller, "submitted": submitted, "updated": submitted,
        });
        let mut queued = queued;
        if let Some(fleet) = &self.fleet {
            fleet_sign(fleet, &id, &mut queued);
        }
        match self.store.create(&id, queued.to_string().into()).await {
            Ok(_) => {}
            Err(err) if err.kind() == kv::CreateErrorKind::AlreadyExists => {
                return Err(ToolError::custom(
                    "DUPLICATE",
                    409,
                    format!("a durable call with the id `{id}` exists already"),
                ));
            }
            Err(err) => return Err(jetstream_error("record the call", &err)),
        }
        let mut stored = HeaderMap::new();
        stored.insert(CALL_ID, wire::header_value(&id));
        stored.insert("Nats-Msg-Id", wire::header_value(&id));
        stored.insert(SUBMITTED, submitted.to_string().as_str());
        stored.insert(SEAL_KEY, random_hex().as_str());
        if let Some(owner) = owner {
            stored.insert(OWNER, wire::header_value(owner));
        }
        if let Some(caller) = caller {
            stored.insert(CALLER, wire::header_value(caller));
        }
        if let Some(identity) = &identity {
            stored.insert(IDENTITY, wire::header_value(&identity_header(identity)));
        }
        // The submitter's trace context (checked), for the span of the run.
        let trace = TraceContext::read(|name| wire::header(headers, name));
        for (field, value) in trace.iter().flat_map(TraceContext::entries) {
            stored.insert(field, wire::header_value(value));
        }
        let sent = match self
            .js
            .publish_with_headers(
                task_subject(&self.prefix, tool),
                stored,
                message.payload.clone(),
            )
            .await
        {
            Ok(ack) => ack.await.map(|_| ()).map_err(|e| e.to_string()),
            Err(err) => Err(err.to_string()),
        };
        if let Err(why) = sent {
            let _ = self.store.delete(&id).await;
            return Err(ToolError::custom(
                "NOT_STORED",
                503,
                format!("the call to `{tool}` was not stored: {why}"),
            ));
        }
        Ok(json!({"id": id, "status": "queued"}))
    }

    /// Cancels a call for its owner (`{"id": ..}` in the payload, or a
    /// `Tf-Call-Id` header): one still queued ends `CANCELLED` when a worker takes
    /// it, one running is cancelled where it runs; one already done is answered
    /// as it stands. `NOT_FOUND` for an id no call has and for another owner's
    /// call alike.
    async fn cancel(&self, message: &async_nats::Message) -> Result<Value, ToolError> {
        let record = self.read(message).await?;
        let id = record
            .get("id")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_owned();
        let status = record
            .get("status")
            .and_then(Value::as_str)
            .unwrap_or_default();
        if matches!(status, "completed" | "failed") || !valid_key(&id) {
            return Ok(record);
        }
        self.cancels
            .put(&id, bytes::Bytes::from_static(b"1"))
            .await
            .map_err(|e| jetstream_error("record the cancel", &e))?;
        let _ = self
            .client
            .publish(wire::cancelled_subject(&self.prefix), id.clone().into())
            .await;
        Ok(json!({"id": id, "status": "cancelling"}))
    }

    /// A call's record, for its owner only (`{"id": ..}` in the payload, or a
    /// `Tf-Call-Id` header): `NOT_FOUND` for an id no call has and for another
    /// owner's call alike.
    async fn read(&self, message: &async_nats::Message) -> Result<Value, ToolError> {
        let headers = message.headers.as_ref();
        self.guard.screen(headers)?;
        let identity = self.guard.identity(headers).await?;
        if let Some(reply) = message.reply.as_deref()
            && !self.guard.fits(reply, identity.as_ref())
        {
            return Err(not_answered());
        }
        let reader = identity
            .as_ref()
            .map(Identity::key)
            .or_else(|| wire::header(headers, CALLER));
        let asked = serde_json::from_slice::<Value>(&message.payload).ok();
        let id = asked
            .as_ref()
            .and_then(|v| v.get("id"))
            .and_then(Value::as_str)
            .or_else(|| wire::header(headers, CALL_ID))
            .unwrap_or_default()
            .to_owned();
        if !valid_key(&id) {
            return Err(unknown(&id));
        }
        let entry = self
            .store
            .entry(&id)
            .await
            .map_err(|e| jetstream_error("read the call's state", &e))?;
        let Some(entry) = entry.filter(|e| e.operation == kv::Operation::Put) else {
            return Err(unknown(&id));
        };
        let Ok(Value::Object(mut record)) = serde_json::from_slice::<Value>(&entry.value) else {
            return Err(unknown(&id));
        };
        if let Some(fleet) = &self.fleet
            && !fleet_verify(fleet, &id, &Value::Object(record.clone()))
        {
            tracing::warn!(%id, "a durable record no worker sealed; not answered");
            return Err(unknown(&id));
        }
        record.remove("fleet");
        if let Some(owner) = record.get("owner").and_then(Value::as_str)
            && reader != Some(owner)
        {
            return Err(unknown(&id));
        }
        record.remove("seal");
        record.remove("lease");
        Ok(Value::Object(record))
    }
}

/// Answers for calls JetStream stopped redelivering: a `WORKER_LOST` outcome
/// (unless a worker still holds the call, which then writes its own), and the
/// call out of the queue.
async fn give_up(
    mut advisories: async_nats::Subscriber,
    stream: stream::Stream,
    (store, fleet): (kv::Store, Option<ring::hmac::Key>),
    ack_wait: Duration,
) {
    while let Some(advisory) = advisories.next().await {
        let Some(sequence) = serde_json::from_slice::<Value>(&advisory.payload)
            .ok()
            .and_then(|v| v.get("stream_seq").and_then(Value::as_u64))
        else {
            continue;
        };
        let Ok(message) = stream.get_raw_message(sequence).await else {
            continue;
        };
        let stream = stream.clone();
        let store = store.clone();
        let fleet = fleet.clone();
        tokio::spawn(async move {
            let headers = Some(&message.headers);
            let id = wire::header(headers, CALL_ID).filter(|id| valid_key(id));
            let key = wire::header(headers, SEAL_KEY);
            if let (Some(id), Some(key)) = (id, key) {
                let seal = Seal::new(id, key).with_fleet(fleet.as_ref());
                let err = ToolError::custom(
                    "WORKER_LOST",
                    503,
                    "every worker that took this durable call was lost before it finished",
                );
                let mut lost = json!({
                    "id": id, "status": "failed", "worker": "", "attempt": 0,
                    "owner": wire::header(headers, OWNER),
                    "caller": wire::header(headers, CALLER),
                    "updated": now_ms(),
                    "error": serde_json::to_value(&err).unwrap_or(Value::Null),
                });
                seal.sign(&mut lost);
                // A worker that still holds the call writes its outcome: wait for
                // its claim to end before writing this one.
                for _ in 0..64 {
                    match read(&store, id, &seal).await {
                        Ok(Read::Done) => break,
                        Ok(Read::Held { until, .. }) => {
                            tokio::time::sleep(until.max(ack_wait / 3)).await;
                        }
                        Ok(Read::Free { revision }) => {
                            if write_rev(&store, id, revision, &lost).await.is_some() {
                                break;
                            }
                        }
                        Err(_) => tokio::time::sleep(ack_wait / 3).await,
                    }
                }
            }
            let _ = stream.delete_message(sequence).await;
        });
    }
}

/// Whether an id can be a key of the bucket (and names one key, not a pattern).
pub(crate) fn valid_key(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && !id.starts_with('.')
        && !id.ends_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '=' | '/' | '.'))
}

/// What seals a call's records: HMAC-SHA256 under the secret its stored message
/// carries, over the fields that decide who runs it.
#[derive(Clone)]
struct Seal {
    id: String,
    key: ring::hmac::Key,
    /// The fleet's key, when the workers share one.
    fleet: Option<ring::hmac::Key>,
}

impl Seal {
    fn new(id: &str, secret: &str) -> Self {
        Self {
            id: id.to_owned(),
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes()),
            fleet: None,
        }
    }

    fn text(&self, record: &Value) -> String {
        seal_text(&self.id, record)
    }

    /// Adds the seal to a record this worker writes.
    fn sign(&self, record: &mut Value) {
        let text = self.text(record);
        let tag = ring::hmac::sign(&self.key, text.as_bytes());
        record["seal"] = Value::String(hex(tag.as_ref()));
        if let Some(fleet) = &self.fleet {
            record["fleet"] = Value::String(hex(ring::hmac::sign(fleet, text.as_bytes()).as_ref()));
        }
    }

    /// The same call's seal with the fleet's key too.
    fn with_fleet(mut self, fleet: Option<&ring::hmac::Key>) -> Self {
        self.fleet = fleet.cloned();
        self
    }

    /// Whether a record carries this call's seal.
    fn verify(&self, record: &Value) -> bool {
        let Some(seal) = record.get("seal").and_then(Value::as_str).and_then(unhex) else {
            return false;
        };
        ring::hmac::verify(&self.key, self.text(record).as_bytes(), &seal).is_ok()
    }
}

/// What a record's seals cover: the fields that decide who runs the call
/// (status, worker, attempt, lease), whose it is (owner), and what it came to (a
/// digest of its result or error).
fn seal_text(id: &str, record: &Value) -> String {
    let field = |key: &str| match record.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let digest = |key: &str| {
        record.get(key).map_or_else(String::new, |value| {
            let bytes = serde_json::to_vec(value).unwrap_or_default();
            hex(ring::digest::digest(&ring::digest::SHA256, &bytes).as_ref())
        })
    };
    format!(
        "{id}\n{}\n{}\n{}\n{}\n{}\n{}\n{}",
        field("status"),
        field("worker"),
        field("attempt"),
        field("lease"),
        field("owner"),
        digest("result"),
        digest("error"),
    )
}

/// The fleet's key of `settings`, when they have one.
fn fleet_key(settings: &DurableSettings) -> Option<ring::hmac::Key> {
    settings
        .fleet_key
        .as_deref()
        .map(|secret| ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret))
}

/// Seals a record of call `id` with the fleet's key.
fn fleet_sign(fleet: &ring::hmac::Key, id: &str, record: &mut Value) {
    let tag = ring::hmac::sign(fleet, seal_text(id, record).as_bytes());
    record["fleet"] = Value::String(hex(tag.as_ref()));
}

/// Whether a record of call `id` carries the fleet's seal.
fn fleet_verify(fleet: &ring::hmac::Key, id: &str, record: &Value) -> bool {
    let Some(tag) = record.get("fleet").and_then(Value::as_str).and_then(unhex) else {
        return false;
    };
    ring::hmac::verify(fleet, seal_text(id, record).as_bytes(), &tag).is_ok()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Where a call stands in the bucket, as the workers judge it.
enum Read {
    /// A sealed outcome: the call ran.
    Done,
    /// A worker's sealed claim that still holds, for `until` more.
    Held { worker: String, until: Duration },
    /// No outcome and no live claim (queued, a claim past its lease, a record no
    /// worker sealed, or none): the call may be claimed over this revision (0: no
    /// record).
    Free { revision: u64 },
}

async fn read(store: &kv::Store, id: &str, seal: &Seal) -> Result<Read, ToolError> {
    let entry = store
        .entry(id)
        .await
        .map_err(|e| jetstream_error("read the call's state", &e))?;
    let Some(entry) = entry else {
        return Ok(Read::Free { revision: 0 });
    };
    let revision = entry.revision;
    if entry.operation != kv::Operation::Put {
        return Ok(Read::Free { revision });
    }
    let Ok(record) = serde_json::from_slice::<Value>(&entry.value) else {
        return Ok(Read::Free { revision });
    };
    if !seal.verify(&record) {
        return Ok(Read::Free { revision });
    }
    match record.get("status").and_then(Value::as_str) {
        Some("completed" | "failed") => Ok(Read::Done),
        Some("working") => {
            let lease = record.get("lease").and_then(Value::as_u64).unwrap_or(0);
            let now = now_ms();
            if lease > now {
                Ok(Read::Held {
                    worker: record
                        .get("worker")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    until: Duration::from_millis(lease - now),
                })
            } else {
                Ok(Read::Free { revision })
            }
        }
        _ => Ok(Read::Free { revision }),
    }
}

/// Writes `record` over `revision` (0: where there is none) and answers the new
/// revision; `None` when the record changed meanwhile (or cannot be written).
async fn write_rev(store: &kv::Store, id: &str, revision: u64, record: &Value) -> Option<u64> {
    let body = bytes::Bytes::from(record.to_string());
    if revision == 0 {
        store.create(id, body).await.ok()
    } else {
        store.update(id, body, revision).await.ok()
    }
}

#[derive(Clone)]
struct Job {
    registry: Registry,
    store: kv::Store,
    worker: String,
    ack_wait: Duration,
    max_deliver: i64,
    skip: usize,
    /// The calls this worker runs now, by id: a second delivery of one is left
    /// to the first.
    running: Arc<Mutex<HashSet<String>>>,
    /// How many calls each owner runs on this worker now, each at most its
    /// share.
    owners: Shares,
    /// The cancels owners asked for, by call id.
    cancels: kv::Store,
    /// How to cancel each call this worker runs now, by id.
    tokens: Arc<Mutex<HashMap<String, CancellationToken>>>,
    /// The fleet's key, when the workers share one.
    fleet: Option<ring::hmac::Key>,
    /// The longest a call runs.
    max_run_time: Duration,
}

/// How a claim on a call came out.
enum Claim {
    /// This worker holds it, at this revision.
    Held(u64),
    /// The call ran already.
    Done,
    /// Another worker holds it, for this long still.
    Busy(Duration),
}

/// The options of a durable call's run: its id, the caller it stated, the
/// identity its submitter proved, the token a lost claim cancels.
fn options(
    id: &str,
    caller: Option<&str>,
    identity: Option<Identity>,
    cancel: CancellationToken,
) -> CallOptions {
    let mut options = CallOptions::new()
        .surface(crate::options::Surface::Nats)
        .call_id(id)
        .cancel_on(cancel);
    if let Some(caller) = caller {
        options = options.caller(caller);
    }
    if let Some(identity) = identity {
        options = options.identity(identity);
    }
    options
}

/// Forgets how to cancel a call when its run ends.
struct Forget(Arc<Mutex<HashMap<String, CancellationToken>>>, String);

impl Drop for Forget {
    fn drop(&mut self) {
        lock(&self.0).remove(&self.1);
    }
}

/// Takes a call out of the running set when its run ends.
struct Running<'a>(&'a Mutex<HashSet<String>>, String);

impl Drop for Running<'_> {
    fn drop(&mut self) {
        lock(self.0).remove(&self.1);
    }
}

impl Job {
    /// The id and seal of a task message a worker stored; `None` (the message
    /// taken out of the queue) for any other.
    async fn stored(&self, message: &jetstream::Message, tool: &str) -> Option<(String, Seal)> {
        let headers = message.headers.as_ref();
        let (Some(id), Some(secret)) = (
            wire::header(headers, CALL_ID)
                .filter(|id| valid_key(id))
                .map(str::to_owned),
            wire::header(headers, SEAL_KEY),
        ) else {
            // Not a call a worker stored: nothing to answer under.
            tracing::warn!(%tool, "a durable task message no worker stored; dropped");
            let _ = message.ack_with(AckKind::Term).await;
            return None;
        };
        let seal = Seal::new(&id, secret).with_fleet(self.fleet.as_ref());
        Some((id, seal))
    }

    /// The call's place in its owner's share of this worker's slots: `Some(None)`
    /// on its last delivery past the share (it runs all the same); `None` when it
    /// was given back for a while (longer each time).
    async fn share(
        &self,
        message: &jetstream::Message,
        owner: Option<&str>,
        attempt: i64,
    ) -> Option<Option<Place>> {
        let share = self.owners.take(owner.unwrap_or_default());
        if share.is_none() && attempt < self.max_deliver {
            let wait = Duration::from_secs(u64::try_from(attempt.max(1)).unwrap_or(1) * 2);
            let _ = message.ack_with(AckKind::Nak(Some(wait))).await;
            return None;
        }
        Some(share)
    }

    /// Whether the owner of call `id` asked for it to be cancelled.
    async fn cancel_asked(&self, id: &str) -> bool {
        matches!(self.cancels.get(id).await, Ok(Some(_)))
    }

    /// How long a claim lasts from its last renewal.
    fn lease(&self) -> Duration {
        self.ack_wait * 2
    }

    async fn claim(&self, id: &str, seal: &Seal, working: &Value) -> Result<Claim, ToolError> {
        for _ in 0..8 {
            match read(&self.store, id, seal).await? {
                Read::Done => return Ok(Claim::Done),
                Read::Held { worker, until } if worker != self.worker => {
                    return Ok(Claim::Busy(until));
                }
                Read::Held { .. } => {}
                Read::Free { revision } => {
                    if let Some(revision) = write_rev(&self.store, id, revision, working).await {
                        return Ok(Claim::Held(revision));
                    }
                }
            }
        }
        Ok(Claim::Busy(Duration::from_millis(200)))
    }

    /// Runs a stored call in its span: the child of its submitter's span (the
    /// trace context stored with it), whenever and wherever it runs.
    async fn run_traced(
        &self,
        (found, args): (remote::Found, Value),
        mut options: CallOptions,
        message: &jetstream::Message,
        id: &str,
    ) -> Result<Value, ToolError> {
        let trace = TraceContext::read(|name| wire::header(message.headers.as_ref(), name));
        let span = process_span(&message.subject, id);
        propagate::adopt(&span, trace.as_ref());
        if let Some(trace) = trace {
            options = options.insert(trace);
        }
        let runner = self.registry.with(options);
        let outcome = tracing::Instrument::instrument(found.run(&runner, args), span.clone()).await;
        failed(&span, outcome.as_ref().err());
        outcome
    }

    async fn run(self, message: jetstream::Message) {
        let tool = message
            .subject
            .get(self.skip..)
            .unwrap_or_default()
            .to_owned();
        let headers = message.headers.as_ref();
        let Some((id, seal)) = self.stored(&message, &tool).await else {
            return;
        };
        if !lock(&self.running).insert(id.clone()) {
            // This worker runs it already; that run acknowledges it.
            return;
        }
        let _running = Running(&self.running, id.clone());
        let attempt = message.info().map_or(1, |info| info.delivered);
        let owner = wire::header(headers, OWNER).map(str::to_owned);
        let caller = wire::header(headers, CALLER).map(str::to_owned);
        let identity = wire::header(headers, IDENTITY).and_then(identity_from_header);
        let submitted = wire::header(headers, SUBMITTED).and_then(|t| t.parse::<u64>().ok());
        let record = |status: &str, lease: u64| {
            let mut record = json!({
                "id": id, "tool": tool, "status": status, "worker": self.worker,
                "attempt": attempt, "owner": owner, "caller": caller,
                "submitted": submitted, "updated": now_ms(),
            });
            if lease > 0 {
                record["lease"] = json!(lease);
            }
            seal.sign(&mut record);
            record
        };
        // Hidden tools are not reachable over NATS, durable calls included.
        // Found once; layers judge the call in the execution core, with its options.
        let found = remote::find(&self.registry, &tool, Lookup::TOOL, None)
            .ok()
            .filter(|found| wire::subject_safe(found.name()));
        if found.is_none() && attempt < self.max_deliver {
            // Another worker may serve it: give it back.
            let _ = message
                .ack_with(AckKind::Nak(Some(Duration::from_millis(200))))
                .await;
            return;
        }
        // One owner runs at most its share here; past it the call is given back
        // for a while (longer each time), and runs on its last delivery.
        let Some(_share) = self.share(&message, owner.as_deref(), attempt).await else {
            return;
        };
        let lease = || now_ms().saturating_add(millis(self.lease()));
        let Some(revision) = self
            .take(&message, (&id, &seal), &record("working", lease()))
            .await
        else {
            return;
        };
        // Signs of life while the call runs, so it is not given to another
        // worker, and the claim renewed; a claim lost to another worker cancels
        // this run.
        let cancel = CancellationToken::new();
        // Its owner may cancel it: by a `cancelled` message while it runs, or
        // before it was taken.
        lock(&self.tokens).insert(id.clone(), cancel.clone());
        let _token = Forget(Arc::clone(&self.tokens), id.clone());
        let asked_to_cancel = self.cancel_asked(&id).await;
        let held = Arc::new(Mutex::new(Some(revision)));
        let beat = self.keep_claim(
            message.clone(),
            (&id, &seal),
            record("working", 1),
            (Arc::clone(&held), cancel.clone()),
        );
        let outcome = match (wire::arguments(&message.payload), found) {
            _ if asked_to_cancel => Err(ToolError::Cancelled {
                reason: Some("cancelled by its owner".into()),
            }),
            (Ok(_), None) => Err(ToolError::not_found_because(
                tool.clone(),
                "no NATS worker serves a tool by this name",
            )),
            (Ok(args), Some(found)) => {
                let options = options(&id, caller.as_deref(), identity, cancel.clone())
                    .timeout(self.max_run_time);
                // Judged again where it runs: the worker that took the submit may
                // not serve the tool, and so could not check its scopes.
                match found.authorize(Some(&options), Some(&args)) {
                    Ok(()) => self.run_traced((found, args), options, &message, &id).await,
                    Err(err) => Err(err),
                }
            }
            (Err(err), _) => Err(err),
        };
        beat.abort();
        if lock(&held).is_none() {
            // Another worker holds the call now: its run answers and acknowledges.
            tracing::debug!(%id, "a durable call's claim went to another worker");
            return;
        }
        let status = if outcome.is_ok() {
            "completed"
        } else {
            "failed"
        };
        let mut done = record(status, 0);
        match outcome {
            Ok(value) => done["result"] = value,
            Err(err) => done["error"] = serde_json::to_value(&err).unwrap_or(Value::Null),
        }
        // Sealed with what it came to.
        seal.sign(&mut done);
        self.settle(&id, &seal, &done, record("failed", 0)).await;
        // Acknowledged once the outcome is kept; confirmed, so a lost ack does not
        // run the call again.
        if message.double_ack().await.is_err() && attempt >= self.max_deliver {
            tracing::warn!(%id, "the last delivery of a durable call could not be acknowledged");
        }
    }

    /// Claims the call for this worker: the claim's revision, or `None` when the
    /// message was answered otherwise (acknowledged for a call that ran, given
    /// back while another worker holds it or the bucket is out of reach).
    async fn take(
        &self,
        message: &jetstream::Message,
        (id, seal): (&str, &Seal),
        working: &Value,
    ) -> Option<u64> {
        match self.claim(id, seal, working).await {
            Ok(Claim::Held(revision)) => return Some(revision),
            Ok(Claim::Done) => {
                // Delivered again after its outcome was written (the worker died
                // before it acknowledged): the call ran; do not run it twice.
                let _ = message.double_ack().await;
            }
            Ok(Claim::Busy(until)) => {
                // Another worker runs it and is alive: back when its claim ends.
                let _ = message
                    .ack_with(AckKind::Nak(Some(until + Duration::from_millis(100))))
                    .await;
            }
            Err(err) => {
                tracing::warn!(%id, error = %err, "cannot claim a durable call");
                let _ = message
                    .ack_with(AckKind::Nak(Some(Duration::from_millis(500))))
                    .await;
            }
        }
        None
    }

    /// Keeps `done`, or (when it is too large for the bucket) `failed` with a
    /// `TOO_LARGE` error that says so.
    async fn settle(&self, id: &str, seal: &Seal, done: &Value, mut failed: Value) {
        if !self.finish(id, seal, done).await {
            let err = ToolError::custom(
                "TOO_LARGE",
                413,
                "the call's outcome is larger than the result bucket keeps",
            );
            failed["error"] = serde_json::to_value(&err).unwrap_or(Value::Null);
            seal.sign(&mut failed);
            self.finish(id, seal, &failed).await;
        }
    }

    /// Sends JetStream a sign of life every third of `ack_wait` and renews the
    /// claim (`working`, this worker's) in the bucket; when the claim is lost to
    /// another worker's claim or outcome, clears `held` and cancels the run.
    fn keep_claim(
        &self,
        progress: jetstream::Message,
        (id, seal): (&str, &Seal),
        working: Value,
        (held, cancel): (Arc<Mutex<Option<u64>>>, CancellationToken),
    ) -> tokio::task::JoinHandle<()> {
        let every = self.ack_wait / 3;
        let lease = self.lease();
        let (store, id, seal) = (self.store.clone(), id.to_owned(), seal.clone());
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(every);
            ticks.tick().await;
            loop {
                ticks.tick().await;
                if progress.ack_with(AckKind::Progress).await.is_err() {
                    return;
                }
                let Some(revision) = *lock(&held) else { return };
                let mut next = working.clone();
                next["lease"] = json!(now_ms().saturating_add(millis(lease)));
                next["updated"] = json!(now_ms());
                seal.sign(&mut next);
                let mut renewed = write_rev(&store, &id, revision, &next).await;
                if renewed.is_none() {
                    // Changed meanwhile: a record no worker sealed (or a lapsed
                    // claim) is claimed over; another worker's claim or outcome
                    // ends this run.
                    if let Ok(Read::Free { revision }) = read(&store, &id, &seal).await {
                        renewed = write_rev(&store, &id, revision, &next).await;
                    }
                }
                *lock(&held) = renewed;
                if renewed.is_none() {
                    cancel.cancel();
                    return;
                }
            }
        })
    }

    /// Writes an outcome unless another is there already: the first finished
    /// outcome wins. `false` when it could not be written at all.
    async fn finish(&self, id: &str, seal: &Seal, done: &Value) -> bool {
        for _ in 0..8 {
            let revision = match read(&self.store, id, seal).await {
                Ok(Read::Done) => return true,
                Ok(Read::Free { revision }) => revision,
                // Another worker took the call over and runs it still: this run
                // finished first.
                Ok(Read::Held { .. }) => match self.store.entry(id).await {
                    Ok(Some(entry)) => entry.revision,
                    _ => continue,
                },
                Err(err) => {
                    tracing::warn!(%id, error = %err, "cannot read a durable call's state");
                    tokio::time::sleep(Duration::from_millis(200)).await;
                    continue;
                }
            };
            if write_rev(&self.store, id, revision, done).await.is_some() {
                return true;
            }
        }
        tracing::warn!(%id, "cannot keep a durable call's outcome");
        false
    }
}

pub(crate) fn unknown(id: &str) -> ToolError {
    ToolError::not_found_because(
        id,
        "no durable call has this id, or its outcome is past retention",
    )
}

/// A record, as a worker's outcome read answers it, as what a poll says.
pub(crate) fn decode(id: &str, bytes: &[u8]) -> TaskPoll {
    let Ok(record) = serde_json::from_slice::<Value>(bytes) else {
        return TaskPoll::Done(Err(ToolError::Output {
            path: None,
            message: format!("the state of the durable call `{id}` is not JSON"),
        }));
    };
    let text = |key: &str| record.get(key).and_then(Value::as_str).map(str::to_owned);
    match record.get("status").and_then(Value::as_str) {
        Some("completed") => {
            TaskPoll::Done(Ok(record.get("result").cloned().unwrap_or(Value::Null)))
        }
        Some("failed") => TaskPoll::Done(Err(record
            .get("error")
            .cloned()
            .and_then(|e| serde_json::from_value::<ToolError>(e).ok())
            .unwrap_or_else(|| ToolError::custom("FAILED", 500, "the durable call failed")))),
        _ => {
            let submitted = record.get("submitted").and_then(Value::as_u64).unwrap_or(0);
            let started = UNIX_EPOCH
                .checked_add(Duration::from_millis(submitted))
                .unwrap_or(UNIX_EPOCH);
            TaskPoll::Working(TaskInfo {
                id: id.to_owned(),
                tool: text("tool").unwrap_or_default(),
                act: None,
                caller: text("caller"),
                status: TaskStatus::Working,
                started,
                updated: started,
                running_for: SystemTime::now()
                    .duration_since(started)
                    .unwrap_or_default(),
                progress: None,
                questions: Vec::new(),
                retention: remote::ledger::Retention::UntilRemoved,
                streamed: false,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_older_than_2_10_are_named_and_refused() {
        for ok in ["2.10.0", "2.11.4", "2.12.0-RC.1", "3.0.0", "v2.10.29"] {
            assert!(check_server_version(ok).is_ok(), "{ok}");
        }
        for old in ["2.9.25", "2.2.0", "1.4.1", "", "unknown"] {
            let err = check_server_version(old).expect_err(old);
            assert_eq!(err.code(), "UNSUPPORTED");
            assert!(err.to_string().contains("2.10 or later"), "{err}");
            assert!(err.to_string().contains(&format!("{old:?}")), "{err}");
        }
    }

    #[test]
    fn seals_cover_the_fields_that_decide_who_runs_a_call() {
        let seal = Seal::new("id-1", "secret");
        let mut record = json!({"status": "working", "worker": "w", "attempt": 1, "lease": 5});
        seal.sign(&mut record);
        assert!(seal.verify(&record));
        let mut longer = record.clone();
        longer["lease"] = json!(6);
        assert!(!seal.verify(&longer));
        let mut done = record.clone();
        done["status"] = json!("completed");
        assert!(!seal.verify(&done));
        // What it came to and whose it is are sealed too.
        let mut outcome = record.clone();
        outcome["result"] = json!({"paid": 10});
        outcome["owner"] = json!("ann");
        seal.sign(&mut outcome);
        assert!(seal.verify(&outcome));
        for (key, forged) in [
            ("result", json!({"paid": 1000})),
            ("owner", json!("eve")),
            ("error", json!({})),
        ] {
            let mut forged_record = outcome.clone();
            forged_record[key] = forged;
            assert!(!seal.verify(&forged_record), "{key}");
        }
        assert!(!Seal::new("id-1", "other").verify(&record));
        assert!(!Seal::new("id-2", "secret").verify(&record));
        let mut garbage = record;
        garbage["seal"] = json!("zz");
        assert!(!seal.verify(&garbage));
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(unhex(&hex(&[0, 1, 254, 255])), Some(vec![0, 1, 254, 255]));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }

    #[test]
    fn identities_survive_their_header() {
        let who = Identity::new("ann")
            .with_issuer("https://i")
            .with_scopes(["a", "b"]);
        let back = identity_from_header(&identity_header(&who)).unwrap();
        assert_eq!(back.subject(), "ann");
        assert_eq!(back.issuer(), Some("https://i"));
        assert_eq!(back.scopes(), ["a", "b"]);
        assert!(identity_from_header("{}").is_none());
    }
}
