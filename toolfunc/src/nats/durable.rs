//! Durable calls on JetStream: a submitted call is stored in a work-queue stream
//! before it is acknowledged, workers take it from a shared durable consumer (a
//! worker that dies mid-call has it redelivered to another), and the outcome is
//! kept in a key-value bucket for the retention time.

use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::HeaderMap;
use async_nats::jetstream::{self, AckKind, consumer, kv, stream};
use futures::StreamExt;
use serde_json::{Value, json};

use super::wire::{self, CALL_ID, CALLER};
use crate::error::ToolError;
use crate::options::CallOptions;
use crate::registry::Registry;
use crate::remote::ledger::{TaskInfo, TaskPoll, TaskStatus};
use crate::remote::{self, Lookup};

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
}

impl Default for DurableSettings {
    fn default() -> Self {
        Self {
            ack_wait: Duration::from_secs(30),
            max_deliver: 5,
            retention: Duration::from_secs(3600),
            max_pending: 100_000,
            per_worker: 16,
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
    /// of this while a call runs) before its call is given to another worker.
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

const CONSUMER: &str = "workers";

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

/// Opens (or creates) the stream and the bucket.
pub(crate) async fn open(
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
    let store = open_bucket(js, prefix, Some(settings)).await?;
    Ok((stream, store))
}

/// The bucket; created with `settings` when it is missing and they are given.
pub(crate) async fn open_bucket(
    js: &jetstream::Context,
    prefix: &str,
    settings: Option<&DurableSettings>,
) -> Result<kv::Store, ToolError> {
    let bucket = bucket_name(prefix);
    if let Ok(store) = js.get_key_value(&bucket).await {
        return Ok(store);
    }
    let Some(settings) = settings else {
        return Err(ToolError::custom(
            "NO_WORKER",
            503,
            format!("no worker has set up durable calls under `{prefix}`"),
        ));
    };
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

/// Takes durable calls from the shared consumer and runs them until the task is
/// aborted: only as many as it has room to run (so none waits unacknowledged in a
/// buffer), and it answers for calls JetStream gave up redelivering.
pub(crate) async fn serve(
    client: async_nats::Client,
    registry: Registry,
    prefix: String,
    worker: String,
    settings: DurableSettings,
) -> Result<tokio::task::JoinHandle<()>, ToolError> {
    let concurrency = settings.per_worker;
    let js = jetstream::new(client.clone());
    let (stream, store) = open(&js, &prefix, &settings).await?;
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
    // Calls delivered `max_deliver` times without an outcome: one worker (a queue
    // group) writes `WORKER_LOST` for them and takes them out of the queue.
    let advisories = client
        .queue_subscribe(
            format!(
                "$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{}.{CONSUMER}",
                stream_name(&prefix)
            ),
            format!("{prefix}.workers"),
        )
        .await
        .map_err(|e| jetstream_error("follow redelivery advisories", &e))?;
    let limit = Arc::new(tokio::sync::Semaphore::new(concurrency));
    let skip = task_subject(&prefix, "").len();
    let job = Job {
        registry,
        store,
        worker,
        ack_wait,
        max_deliver,
        skip,
    };
    Ok(tokio::spawn(async move {
        let gave_up = tokio::spawn(give_up(advisories, stream, job.store.clone()));
        let _gave_up = wire::Abort(gave_up);
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
    }))
}

/// Answers for calls JetStream stopped redelivering: a `WORKER_LOST` outcome, and
/// the call out of the queue.
async fn give_up(mut advisories: async_nats::Subscriber, stream: stream::Stream, store: kv::Store) {
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
        let headers = Some(&message.headers);
        if let Some(id) = wire::header(headers, CALL_ID).filter(|id| valid_key(id)) {
            let done = store
                .get(id)
                .await
                .ok()
                .flatten()
                .is_some_and(|bytes| matches!(decode(id, &bytes), TaskPoll::Done(_)));
            if !done {
                let err = ToolError::custom(
                    "WORKER_LOST",
                    503,
                    "every worker that took this durable call was lost before it finished",
                );
                let record = json!({
                    "id": id, "status": "failed", "updated": now_ms(),
                    "error": serde_json::to_value(&err).unwrap_or(Value::Null),
                });
                let _ = store.put(id, record.to_string().into()).await;
            }
        }
        let _ = stream.delete_message(sequence).await;
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

#[derive(Clone)]
struct Job {
    registry: Registry,
    store: kv::Store,
    worker: String,
    ack_wait: Duration,
    max_deliver: i64,
    skip: usize,
}

impl Job {
    async fn run(self, message: jetstream::Message) {
        let tool = message
            .subject
            .get(self.skip..)
            .unwrap_or_default()
            .to_owned();
        let headers = message.headers.as_ref();
        let Some(id) = wire::header(headers, CALL_ID)
            .filter(|id| valid_key(id))
            .map(str::to_owned)
        else {
            // Not a call this crate sent: nothing to answer under.
            let _ = message.ack_with(AckKind::Term).await;
            return;
        };
        let attempt = message.info().map_or(1, |info| info.delivered);
        let caller = wire::header(headers, CALLER).map(str::to_owned);
        let submitted = wire::header(headers, "Tf-Submitted").and_then(|t| t.parse::<u64>().ok());
        let record = |status: &str| {
            json!({
                "id": id, "tool": tool, "status": status, "worker": self.worker,
                "attempt": attempt, "caller": caller, "submitted": submitted,
                "updated": now_ms(),
            })
        };
        // Delivered again after its outcome was written (the worker died before it
        // acknowledged): the call ran; do not run it twice.
        if let Ok(Some(bytes)) = self.store.get(&id).await
            && matches!(decode(&id, &bytes), TaskPoll::Done(_))
        {
            let _ = message.double_ack().await;
            return;
        }
        // Hidden tools are not reachable over NATS, durable calls included.
        // Found once; layers judge the call in the execution core, with its options.
        let found = remote::find(&self.registry, &tool, Lookup::TOOL, None)
            .ok()
            .filter(|found| wire::subject_safe(found.name()));
        let served = found.is_some();
        if !served && attempt < self.max_deliver {
            // Another worker may serve it: give it back.
            let _ = message
                .ack_with(AckKind::Nak(Some(Duration::from_millis(200))))
                .await;
            return;
        }
        self.put(&id, record("working")).await;
        // Signs of life while the call runs, so it is not given to another worker.
        let beat = {
            let every = self.ack_wait / 3;
            let progress = message.clone();
            tokio::spawn(async move {
                let mut ticks = tokio::time::interval(every);
                ticks.tick().await;
                loop {
                    ticks.tick().await;
                    if progress.ack_with(AckKind::Progress).await.is_err() {
                        return;
                    }
                }
            })
        };
        let outcome = match (wire::arguments(&message.payload), found) {
            (Ok(_), None) => Err(ToolError::not_found_because(
                tool.clone(),
                "no NATS worker serves a tool by this name",
            )),
            (Ok(args), Some(found)) => {
                let options = CallOptions::new()
                    .surface(crate::options::Surface::Nats)
                    .call_id(id.clone());
                let options = match &caller {
                    Some(caller) => options.caller(caller.clone()),
                    None => options,
                };
                found.run(&self.registry.with(options), args).await
            }
            (Err(err), _) => Err(err),
        };
        beat.abort();
        let mut done = record(match outcome {
            Ok(_) => "completed",
            Err(_) => "failed",
        });
        match outcome {
            Ok(value) => done["result"] = value,
            Err(err) => done["error"] = serde_json::to_value(&err).unwrap_or(Value::Null),
        }
        if !self.put(&id, done).await {
            // The outcome could not be kept (too large for the bucket): say so.
            let err = ToolError::custom(
                "TOO_LARGE",
                413,
                "the call's outcome is larger than the result bucket keeps",
            );
            let mut failed = record("failed");
            failed["error"] = serde_json::to_value(&err).unwrap_or(Value::Null);
            self.put(&id, failed).await;
        }
        // Acknowledged once the outcome is kept; confirmed, so a lost ack does not
        // run the call again.
        if message.double_ack().await.is_err() && attempt >= self.max_deliver {
            tracing::warn!(%id, "the last delivery of a durable call could not be acknowledged");
        }
    }

    async fn put(&self, id: &str, record: Value) -> bool {
        let body = record.to_string();
        match self.store.put(id, body.into()).await {
            Ok(_) => true,
            Err(err) => {
                tracing::warn!(%id, error = %err, "cannot keep a durable call's state");
                false
            }
        }
    }
}

/// The client's side: submit, poll, wait.
#[derive(Debug, Clone)]
pub(crate) struct Tasks {
    js: jetstream::Context,
    prefix: String,
    store: Arc<tokio::sync::OnceCell<kv::Store>>,
}

impl Tasks {
    pub(crate) fn new(client: async_nats::Client, prefix: String) -> Self {
        Self {
            js: jetstream::new(client),
            prefix,
            store: Arc::new(tokio::sync::OnceCell::new()),
        }
    }

    async fn store(&self) -> Result<&kv::Store, ToolError> {
        self.store
            .get_or_try_init(|| open_bucket(&self.js, &self.prefix, None))
            .await
    }

    pub(crate) async fn submit(
        &self,
        id: &str,
        tool: &str,
        payload: bytes::Bytes,
        caller: Option<&str>,
    ) -> Result<(), ToolError> {
        let store = self.store().await?;
        let mut headers = HeaderMap::new();
        headers.insert(CALL_ID, wire::header_value(id));
        headers.insert("Nats-Msg-Id", wire::header_value(id));
        let submitted = now_ms();
        headers.insert("Tf-Submitted", submitted.to_string().as_str());
        if let Some(caller) = caller {
            headers.insert(CALLER, wire::header_value(caller));
        }
        let ack = self
            .js
            .publish_with_headers(task_subject(&self.prefix, tool), headers, payload)
            .await
            .map_err(|e| jetstream_error("submit the call", &e))?;
        ack.await.map_err(|e| {
            ToolError::custom(
                "NOT_STORED",
                503,
                format!("the call to `{tool}` was not stored: {e}"),
            )
        })?;
        // Stored: say so, unless a worker has already written what it does.
        let queued = json!({
            "id": id, "tool": tool, "status": "queued", "attempt": 0,
            "caller": caller, "submitted": submitted, "updated": submitted,
        });
        let _ = store.create(id, queued.to_string().into()).await;
        Ok(())
    }

    pub(crate) async fn poll(&self, id: &str) -> Result<TaskPoll, ToolError> {
        if !valid_key(id) {
            return Err(unknown(id));
        }
        let store = self.store().await?;
        let entry = store
            .get(id)
            .await
            .map_err(|e| jetstream_error("read the call's state", &e))?;
        match entry {
            Some(bytes) => Ok(decode(id, &bytes)),
            None => Err(unknown(id)),
        }
    }

    pub(crate) async fn wait(&self, id: &str) -> Result<Value, ToolError> {
        if !valid_key(id) {
            return Err(unknown(id));
        }
        let store = self.store().await?;
        // An id no call has (or whose outcome expired) is no call to wait for.
        if let TaskPoll::Done(result) = self.poll(id).await? {
            return result;
        }
        let mut watch = store
            .watch_with_history(id)
            .await
            .map_err(|e| jetstream_error("watch the call's state", &e))?;
        // A key that does not exist yet is no error: the submitter may still be
        // writing it. The caller's deadline bounds the wait.
        while let Some(entry) = watch.next().await {
            let entry = entry.map_err(|e| jetstream_error("watch the call's state", &e))?;
            if let TaskPoll::Done(result) = decode(id, &entry.value) {
                return result;
            }
        }
        Err(unknown(id))
    }
}

fn unknown(id: &str) -> ToolError {
    ToolError::not_found_because(
        id,
        "no durable call has this id, or its outcome is past retention",
    )
}

/// A record as what a poll says.
fn decode(id: &str, bytes: &[u8]) -> TaskPoll {
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
