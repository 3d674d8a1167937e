//! What workers answer callers: durable submits (stored in the stream), outcome
//! reads and cancels, each for the call's owner only.

use std::sync::Arc;

use async_nats::HeaderMap;
use async_nats::jetstream::{self, kv};
use futures::StreamExt;
use serde_json::{Value, json};

use super::outcome::unknown;
use super::seal::{fleet_sign, fleet_verify};
use super::store::{
    IDENTITY, OWNER, SEAL_KEY, SUBMITTED, identity_header, jetstream_error, now_ms, task_subject,
    valid_key,
};
use crate::error::ToolError;
use crate::id::random_hex;
use crate::identity::Identity;
use crate::nats::trust::Trust;
use crate::nats::wire::{self, CALL_ID, CALLER};
use crate::registry::Registry;
use crate::remote::{self, Lookup, Refusal, RemoteCall};
use crate::trace::TraceContext;

/// What a worker's durable side shares: the bucket, the stream, the checks.
#[derive(Clone)]
pub(super) struct Durable {
    pub(super) client: async_nats::Client,
    pub(super) js: jetstream::Context,
    pub(super) store: kv::Store,
    /// The cancels owners asked for, by call id.
    pub(super) cancels: kv::Store,
    pub(super) prefix: String,
    pub(super) trust: Arc<Trust>,
    /// The tools served, for the scopes a submitted call needs.
    pub(super) registry: Registry,
    /// The fleet's key, when the workers share one.
    pub(super) fleet: Option<ring::hmac::Key>,
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

/// What a subject of the durable API asks.
#[derive(Clone, Copy)]
enum Asked {
    /// A call to queue.
    Submit,
    /// A call's record.
    Read,
    /// A call's cancellation.
    Cancel,
}

/// Answers the durable API's submits, reads and cancels (`subscribers`, in that
/// order), each subject in a task of its own, aborted when dropped.
pub(super) fn answering(
    durable: &Durable,
    subscribers: [async_nats::Subscriber; 3],
) -> [wire::Abort; 3] {
    let [submits, reads, cancels] = subscribers;
    [
        (Asked::Submit, submits),
        (Asked::Read, reads),
        (Asked::Cancel, cancels),
    ]
    .map(|(asked, requests)| {
        wire::Abort(tokio::spawn(answer_all(durable.clone(), asked, requests)))
    })
}

/// Answers every request of one subject of the durable API, each in a task of its
/// own, to its caller's reply subject only.
async fn answer_all(durable: Durable, asked: Asked, mut requests: async_nats::Subscriber) {
    while let Some(message) = requests.next().await {
        let durable = durable.clone();
        tokio::spawn(async move {
            let Some(reply) = durable.trust.reply(&message).map(str::to_owned) else {
                return;
            };
            // The caller, screened and verified once for whatever it asks; a reply
            // subject that is not its own inbox gets no answer.
            let headers = message.headers.as_ref();
            let identity = match durable.trust.screen(headers) {
                Ok(()) => durable.trust.identity(headers).await,
                Err(err) => Err(err),
            };
            if let Ok(identity) = &identity
                && !durable.trust.fits(&reply, identity.as_ref())
            {
                return;
            }
            let answer = match (identity, asked) {
                (Err(err), _) => Err(err),
                (Ok(who), Asked::Submit) => durable.submit(&message, who).await,
                (Ok(who), Asked::Read) => durable.read(&message, who.as_ref()).await,
                (Ok(who), Asked::Cancel) => durable.cancel(&message, who.as_ref()).await,
            };
            match answer {
                Ok(answer) => answer_value(&durable.client, &reply, &answer).await,
                Err(err) => answer_error(&durable.client, &reply, &err).await,
            }
        });
    }
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

impl Durable {
    /// Stores a submitted call: its record (`queued`) first, so no id is taken
    /// twice, then the call itself; answers `{"id", "status": "queued"}`.
    async fn submit(
        &self,
        message: &async_nats::Message,
        identity: Option<Identity>,
    ) -> Result<Value, ToolError> {
        let headers = message.headers.as_ref();
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
        if identity.is_some() {
            let options = wire::caller_options(headers, identity.clone());
            let call = RemoteCall::new(tool, Lookup::TOOL)
                .caller(&options)
                .args(&args);
            match remote::precheck(&self.registry, &call) {
                Ok(_) | Err(Refusal::NotFound(_)) => {}
                Err(refused) => return Err(refused.into_error()),
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
    async fn cancel(
        &self,
        message: &async_nats::Message,
        identity: Option<&Identity>,
    ) -> Result<Value, ToolError> {
        let record = self.read(message, identity).await?;
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
    async fn read(
        &self,
        message: &async_nats::Message,
        identity: Option<&Identity>,
    ) -> Result<Value, ToolError> {
        let headers = message.headers.as_ref();
        let reader = identity
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
