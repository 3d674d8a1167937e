//! Running stored calls on a worker: taking them from the shared consumer as
//! room allows, claiming each in the bucket, running it in its span, keeping the
//! claim alive, writing its outcome; hearing owners' cancels, and answering for
//! calls JetStream gave up redelivering.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::jetstream::{self, AckKind, consumer, kv, stream};
use futures::StreamExt;
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use super::seal::Seal;
use super::store::{
    IDENTITY, OWNER, Read, SEAL_KEY, SUBMITTED, identity_from_header, millis, now_ms, read,
    valid_key, write_rev,
};
use crate::error::ToolError;
use crate::identity::Identity;
use crate::nats::share::{Place, Shares};
use crate::nats::spans::{failed, process_span};
use crate::nats::wire::{self, CALL_ID, CALLER, lock};
use crate::options::CallOptions;
use crate::propagate;
use crate::registry::Registry;
use crate::remote::{self, Lookup, RemoteCall};
use crate::trace::TraceContext;

/// Takes calls from the consumer, as many as there is room to run, and runs them.
pub(super) async fn take_calls(mut consumer: consumer::PullConsumer, concurrency: usize, job: Job) {
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

/// Cancels the calls this worker runs that a `cancelled` message names, when the
/// cancels bucket says their owner asked (the message alone proves nothing).
pub(super) async fn hear_cancels(job: Job, mut heard: async_nats::Subscriber) {
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

/// Answers for calls JetStream stopped redelivering: a `WORKER_LOST` outcome
/// (unless a worker still holds the call, which then writes its own), and the
/// call out of the queue.
pub(super) async fn give_up(
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

#[derive(Clone)]
pub(super) struct Job {
    pub(super) registry: Registry,
    pub(super) store: kv::Store,
    pub(super) worker: String,
    pub(super) ack_wait: Duration,
    pub(super) max_deliver: i64,
    pub(super) skip: usize,
    /// The calls this worker runs now, by id: a second delivery of one is left
    /// to the first.
    pub(super) running: Arc<Mutex<HashSet<String>>>,
    /// How many calls each owner runs on this worker now, each at most its
    /// share.
    pub(super) owners: Shares,
    /// The cancels owners asked for, by call id.
    pub(super) cancels: kv::Store,
    /// How to cancel each call this worker runs now, by id.
    pub(super) tokens: Arc<Mutex<HashMap<String, CancellationToken>>>,
    /// The fleet's key, when the workers share one.
    pub(super) fleet: Option<ring::hmac::Key>,
    /// The longest a call runs.
    pub(super) max_run_time: Duration,
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
        let found = remote::precheck(&self.registry, &RemoteCall::new(&tool, Lookup::TOOL))
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
                match found.settle(options.identity.as_ref(), Some(&args)) {
                    Ok(()) => self.run_traced((found, args), options, &message, &id).await,
                    Err(refused) => Err(refused.into_error()),
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
