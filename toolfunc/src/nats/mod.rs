//! A registry served over NATS by any number of workers, and the client that calls
//! them by name (feature `nats`).
//!
//! Every worker of a service (same name and subject prefix) joins one queue group,
//! so NATS hands each call to one of them: start more workers to share the load,
//! with no address list anywhere. Workers are a NATS service
//! ([`async_nats::service`]): `$SRV.PING`, `$SRV.INFO` and `$SRV.STATS` find them
//! and count their calls per tool.
//!
//! # Subjects
//!
//! With the prefix `toolfunc` (the default):
//!
//! | subject | who listens | what it does |
//! | --- | --- | --- |
//! | `toolfunc.call.<tool>` | one worker (queue group) | runs `<tool>`; the payload is its arguments object |
//! | `toolfunc.tools` | one worker (queue group) | answers the definitions, keyed by name |
//! | `toolfunc.events` | clients | a worker's catalog changed: `{"worker": id, "tools": {..}}` |
//! | `toolfunc.ctl` | every worker | control messages (cancel, credit) for a call by id, when its worker is not known yet |
//! | `toolfunc.ctl.<worker>` | that worker | control messages (credit, cancel) for its calls |
//! | `toolfunc.task.<tool>` | stream `TOOLFUNC_TASKS`, consumer `workers` | durable calls ([`WorkerBuilder::durable`]) |
//! | `$KV.toolfunc_results.<id>` | bucket `toolfunc_results` | a durable call's state and outcome |
//!
//! # Headers
//!
//! | header | on | meaning |
//! | --- | --- | --- |
//! | `Tf-Call-Id` | call, control | the call's id (new for every attempt), which control messages name |
//! | `Tf-Caller` | call | the caller's id (not verified: NATS permissions are the boundary) |
//! | `Tf-Timeout` | call | milliseconds the caller still gives the call: the worker's deadline |
//! | `traceparent` | call | W3C trace context, passed on as [`TraceParent`] |
//! | `Tf-Heartbeat` | call | asks for a `heartbeat` message every this many ms while the call runs |
//! | `Tf-Stream` | call | asks for the items one message each, at most this many ahead of the consumer |
//! | `Tf-Kind` | answer | `heartbeat`, `item` or `end`; a plain result has none |
//! | `Tf-Control` | heartbeat, item | the worker's control subject, for credits and cancels |
//! | `Tf-Credit` | control | the consumer took this many more items (`0`: a keep-alive; a stream waiting for credit stops after three heartbeats without one, or 60 s when no heartbeat was asked for) |
//! | `Tf-Cancel` | control | cancel the call (the value is the reason) |
//! | `Nats-Service-Error`, `Nats-Service-Error-Code` | answer | an error: message and HTTP status |
//! | `Tf-Error-Code`, `Tf-Error` | answer | the error's stable code, and the whole error as JSON (past 16 KiB without `data`) |
//! | `Tf-Submitted`, `Nats-Msg-Id` | durable call | when it was submitted (ms since the epoch); its id, for JetStream's de-duplication |
//!
//! A call from any NATS client is one request: `nats req toolfunc.call.add
//! '{"a":1,"b":2}'` answers `3.0`. Without `Tf-Stream`, a streaming tool answers
//! its items collected in one array.
//!
//! # Faults
//!
//! Calls are at most once. The client asks for heartbeats; three missed in a row
//! and the worker is taken for lost: an idempotent call (`annotations(idempotent)`)
//! is sent to another worker within its deadline, any other call fails with
//! `WORKER_LOST`. A caller that gives up (drops the call, or its deadline passes)
//! sends a cancel the worker acts on, as an HTTP disconnect does. Durable calls
//! ([`Client::submit`]) are stored in JetStream before they are acknowledged and
//! redelivered to another worker when theirs dies: at least once.
//!
//! ```no_run
//! # async fn run() -> Result<(), toolfunc::ToolError> {
//! use serde_json::json;
//! use toolfunc::{Registry, ToolFunc};
//!
//! let registry = Registry::new();
//! registry.register(
//!     ToolFunc::builder("echo").handler_sync(|_ctx, args| Ok(args)).build()?,
//! )?;
//! let nats = async_nats::connect("127.0.0.1:4222").await.expect("a NATS server");
//! let _worker = toolfunc::nats::Worker::builder(registry).start(nats).await?;
//!
//! let client = toolfunc::nats::Client::connect("nats://127.0.0.1:4222").await?;
//! assert_eq!(client.run("echo", json!({"x": 1})).await?, json!({"x": 1}));
//! # Ok(()) }
//! ```

mod client;
mod durable;
mod wire;
mod worker;

/// The NATS client crate this module is built on, for connecting a worker with
/// options of your own (`async_nats::ConnectOptions`: credentials, TLS).
pub use async_nats;
pub use client::{Client, ClientBuilder};
pub use durable::DurableSettings;
pub use worker::{Worker, WorkerBuilder};

/// The W3C trace context (`traceparent`) of a call that came over NATS, in its
/// [`Ctx`](crate::Ctx) (`ctx.get::<TraceParent>()`); a NATS client forwards the
/// one in its call's context.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent(pub String);
