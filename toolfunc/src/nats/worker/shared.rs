//! What a worker's tasks share: the service and its endpoints, the running
//! calls and how each is controlled (cancelled, given credit), the slots.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::service;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::error::ToolError;
use crate::identity::Identity;
use crate::nats::share::Shares;
use crate::nats::trust::{self, Trust};
use crate::nats::wire::lock;
use crate::registry::Registry;

#[derive(Debug)]
pub(super) struct Shared {
    /// Who may ask what: the authenticator, the inbox prefix.
    pub(super) trust: Arc<Trust>,
    pub(super) client: async_nats::Client,
    pub(super) registry: Registry,
    pub(super) prefix: String,
    pub(super) id: String,
    /// This worker's control subject.
    pub(super) control: String,
    /// Running calls by call id: how to cancel them and feed their credits
    /// (several callers may pick one id; each controls only its own).
    pub(super) calls: Mutex<HashMap<String, Vec<Arc<Control>>>>,
    pub(super) in_flight: Arc<Semaphore>,
    pub(super) max_in_flight: usize,
    /// The deadline of a call that names none.
    pub(super) default_deadline: Duration,
    /// How often the inbox of a caller that asked for no heartbeats is probed.
    pub(super) probe_every: Option<Duration>,
    /// Calls running per caller (subject, label, or `""` for none), each at most
    /// its share.
    pub(super) shares: Shares,
    /// The endpoint task of each served tool.
    pub(super) endpoints: Mutex<HashMap<String, JoinHandle<()>>>,
    pub(super) service: Mutex<Option<service::Service>>,
}

#[derive(Debug)]
pub(super) struct Control {
    pub(super) cancel: CancellationToken,
    /// Items the consumer can still take.
    pub(super) credit: Semaphore,
    /// When the consumer last sent a control message (or the call began).
    pub(super) heard: Mutex<tokio::time::Instant>,
    /// The requester's secret (`Tf-Control-Key`), which its control messages show.
    pub(super) key: Option<String>,
    /// The verified subject of the requester: with one, only its control messages act.
    pub(super) subject: Option<String>,
}

impl Control {
    /// Whether a control message showing `key`, from `who`, is the requester's:
    /// a call with a verified subject obeys that subject only; any other, the
    /// message that shows its secret.
    pub(super) fn obeys(&self, key: Option<&str>, who: Option<&Identity>) -> bool {
        match &self.subject {
            Some(mine) => who.is_some_and(|who| who.key() == mine),
            None => self
                .key
                .as_deref()
                .zip(key)
                .is_some_and(|(mine, shown)| trust::same_secret(mine, shown)),
        }
    }
}

pub(super) fn nats_error(what: &str, err: &(dyn std::error::Error + '_)) -> ToolError {
    ToolError::custom("UNREACHABLE", 503, format!("NATS: cannot {what}: {err}"))
}

impl Shared {
    pub(super) async fn endpoint(
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
