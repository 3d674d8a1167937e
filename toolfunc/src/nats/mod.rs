//! A registry served over NATS by any number of workers, and the client that calls
//! them by name (feature `nats`).
#![doc = include_str!("../docs/nats.md")]

mod client;
mod durable;
mod share;
mod spans;
mod trust;
mod wire;
mod worker;

/// The NATS client crate this module is built on, for connecting a worker with
/// options of your own (`async_nats::ConnectOptions`: credentials, TLS).
pub use async_nats;
pub use client::{Client, ClientBuilder};
pub use durable::DurableSettings;
pub use trust::DEFAULT_MAX_HEADER;
pub use worker::{DEFAULT_DEADLINE, DEFAULT_PROBE_EVERY, Worker, WorkerBuilder};

/// The W3C `traceparent` of a call that came over NATS, in its
/// [`Ctx`](crate::Ctx) (`ctx.get::<TraceParent>()`), as it came.
///
/// [`TraceContext`](crate::TraceContext) holds the whole trace context (with
/// `tracestate` and `baggage`, checked), from every surface, and is the one the
/// clients send on.
#[deprecated(note = "read `toolfunc::TraceContext` from the context: every surface fills it")]
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceParent(pub String);
