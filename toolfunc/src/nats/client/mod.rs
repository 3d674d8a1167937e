//! The client: loads a service's definitions from any worker into a local
//! registry whose tools call the workers.

mod builder;
mod catalog;
mod remote;

use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::Message;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;

use catalog::{follow, reload};
use remote::{Pending, Remote, route, unreachable};

use super::durable::outcome;
use super::durable::store::valid_key;
use super::spans::{failed, submit_span};
use super::wire::{self, Abort, CALL_ID};
use crate::error::ToolError;
use crate::exec::runner::Runner;
use crate::id::random_hex;
use crate::options::CallOptions;
use crate::propagate;
use crate::registry::Registry;
use crate::tool::{ToolDefinition, ToolRef};
use crate::trace::TraceContext;
use crate::transport::Transport;

pub use builder::ClientBuilder;

// Connecting; the settings are set in `builder.rs`.
impl ClientBuilder {
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
        Ok(outcome::decode(id, &answer.payload))
    }

    /// Asks the durable workers at `subject` about the call `id` (`{"id": ..}`):
    /// `NOT_FOUND` at once for an id no call can have.
    async fn about_durable(&self, subject: String, id: &str) -> Result<Message, ToolError> {
        if !valid_key(id) {
            return Err(outcome::unknown(id));
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
