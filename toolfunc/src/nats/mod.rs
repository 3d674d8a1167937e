//! A registry served over NATS by any number of workers, and the client that calls
//! them by name (feature `nats`).
#![doc = include_str!("../docs/nats.md")]

mod client;
mod durable;
mod guard;
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
