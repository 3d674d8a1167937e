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

mod job;
pub(super) mod outcome;
mod requests;
mod seal;
pub(super) mod settings;
pub(super) mod store;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

use async_nats::jetstream::{self, consumer};

use job::{Job, give_up, hear_cancels, take_calls};
use requests::{Durable, answering};
use seal::fleet_key;
use store::{
    CONSUMER, cancels_name, check_server_version, jetstream_error, open, open_named, stream_name,
    task_subject,
};

use super::share::Shares;
use super::trust::Trust;
use super::wire;
use crate::error::ToolError;
use crate::registry::Registry;

pub use settings::DurableSettings;

/// Takes durable calls from the shared consumer and runs them until the task is
/// aborted: only as many as it has room to run (so none waits unacknowledged in a
/// buffer); answers submits and outcome reads; and answers for calls JetStream
/// gave up redelivering.
pub(crate) async fn serve(
    client: async_nats::Client,
    registry: Registry,
    (prefix, worker): (String, String),
    settings: DurableSettings,
    trust: Arc<Trust>,
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
        trust,
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
        let _answering = answering(&durable, [submits, reads, cancels_asked]);
        let _cancelled = wire::Abort(tokio::spawn(hear_cancels(job.clone(), cancelled)));
        take_calls(consumer, concurrency, job).await;
    }))
}
