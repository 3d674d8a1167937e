//! The worker: serves a registry as a NATS service, one queue-grouped endpoint per
//! tool, so every worker of the service shares the calls.

mod answer;
mod builder;
mod calls;
mod endpoints;
mod shared;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::service::ServiceExt;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use builder::MAX_IN_FLIGHT;
use endpoints::{serve_control, serve_discovery, sync, watch};
use shared::{Shared, nats_error};

use super::share::Shares;
use super::trust::{self, Trust};
use super::wire::{self, lock};
use crate::error::ToolError;
use crate::registry::Registry;

pub use builder::{DEFAULT_DEADLINE, DEFAULT_PROBE_EVERY, WorkerBuilder};

// Starting; the settings are set in `builder.rs`.
impl WorkerBuilder {
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
        let trust = Arc::new(Trust::new(
            self.authenticator.clone(),
            self.inbox_prefix,
            (self.max_header, self.inbox_per_subject),
        ));
        let shared = Arc::new(Shared {
            trust: Arc::clone(&trust),
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
                    trust,
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
            inbox_prefix: trust::DEFAULT_INBOX.to_owned(),
            max_header: trust::DEFAULT_MAX_HEADER,
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
        self.shared.trust.dropped()
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
