//! Tool functions for Rust: plain functions that carry JSON-Schema metadata, sit in a
//! global registry from startup, and run by name.
//!
//! ```rust,standalone_crate
//! use serde_json::json;
//! use toolfunc::{tool, Registry};
//!
//! /// Adds two numbers.
//! #[tool(alias = "plus", tags = ["math"])]
//! fn add(/** The left operand. */ a: f64, /** The right operand. */ b: f64) -> f64 {
//!     a + b
//! }
//!
//! // No registration call: `#[tool]` functions are collected at startup.
//! let out = Registry::global().run_sync("plus", json!({"a": 1, "b": 2})).unwrap();
//! assert_eq!(out, json!(3.0));
//!
//! // The function stays an ordinary Rust function.
//! assert_eq!(add(1.0, 2.0), 3.0);
//!
//! // Its definition carries the JSON Schema of its parameters.
//! let def = Registry::global().get("add").unwrap().definition().clone();
//! assert_eq!(def.params["properties"]["a"]["description"], "The left operand.");
//! ```
//!
//! # A tour
//!
//! | you want to | use |
//! | --- | --- |
//! | turn a function into a tool | [`#[tool]`](macro@tool): doc comments become descriptions, parameter types the JSON Schema |
//! | turn a type's methods into the acts of one tool | [`#[tool_service]`](macro@tool_service), with a typed client generated beside it |
//! | offer prompts and resources beside tools | [`#[prompt]`](macro@prompt) and [`#[resource]`](macro@resource) (modules [`mod@prompt`], [`mod@resource`]): functions got by name and read by URI, with completers for their arguments ([`complete`]) |
//! | build a tool at run time | [`ToolFunc::builder`], over typed arguments or raw JSON checked against a schema ([`schema`]; feature `validate`) |
//! | find and run tools by name | [`Registry`]: [`Registry::global`], [`Registry::run`], [`Registry::run_stream`], [`Registry::spawn`], children with [`Registry::isolate`] |
//! | give calls a caller, a timeout, cancellation, limits | [`CallOptions`] through [`Registry::with`]; inside a tool, [`Ctx`] |
//! | run correlated calls with isolated errors | [`ToolCall`] / [`ToolResult`] and [`Registry::execute`] |
//! | stream results and hook a stream's life | [`ToolStream`], [`Answer`], [`stream::callbacks`] |
//! | start a call now and read its result later, by id | [`ledger`], and `#[tool(background)]` |
//! | authorise, limit, log or rewrite every call, from every surface | [`layer`]: call middleware |
//! | count each tool's calls, errors and durations for operators | [`layer::Metrics`]: Prometheus text (at `/metrics` with [`http::Api::metrics`]), OpenTelemetry with the feature `otel` |
//! | offer tools to an LLM, run its tool calls | [`llm`]: exports for OpenAI, Anthropic, Gemini and MCP; provider messages in and out |
//! | serve tools over HTTP, call remote ones | [`http`] (feature `http`): [`http::Api`], [`http::Server`], [`http::Client`] (alone with `http-client`, in the browser too) |
//! | serve tools to MCP clients | [`mcp`] (feature `mcp`): [`mcp::Server`] over stdio or streamable HTTP |
//! | spread calls over workers | [`nats`] (feature `nats`): [`nats::Worker`], [`nats::Client`] |
//! | put the tools of MCP servers and OpenAPI services beside your own | [`mount`] (features `mcp-client`, `openapi-client`): [`Registry::mount`] |
//! | run local or remote tools the same way | [`Transport`], [`connect`] |
//! | follow one trace across processes | spans on `tracing`, W3C [`TraceContext`] on every surface; `otel` (feature `otel`) exports them |
//!
//! Every failure is a [`ToolError`] with a stable [`code`](ToolError::code), an HTTP
//! [`status`](ToolError::status), a message and optional JSON data; it crosses every
//! wire and comes back as the same variant.
//!
//! # Where the depth is
//!
//! * The attribute keys of both macros: [`#[tool]`](macro@tool) and
//!   [`#[tool_service]`](macro@tool_service).
//! * The runtime (registries, context, cancellation, streaming, long-running calls,
//!   errors): [`Registry`]; argument checking: [`schema`]; call middleware: [`layer`].
//! * The wire of each surface: [`http`], [`mcp`] and [`nats`]; LLM dialects: [`llm`].
//! * The defaults that guard a server, and what a deployment adds: [Security and
//!   limits](#security-and-limits), below.
//! * What a call costs, against a floor measured in the same run:
//!   [`benches/README.md`](https://github.com/toolfunc/toolfunc/blob/main/benches/README.md)
//!   in the repository.
#![cfg_attr(
    all(feature = "http-server", feature = "mcp", feature = "nats"),
    doc = include_str!("docs/security.md")
)]
// Libraries report through return values and `tracing`, never by printing.
#![warn(clippy::print_stdout, clippy::print_stderr, clippy::dbg_macro)]
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod ask;
pub mod auth;
mod call;
pub mod complete;
mod connect;
pub mod content;
mod detach;
mod error;
mod exec;
#[cfg(any(feature = "http-client", feature = "http-server"))]
pub mod http;
mod id;
mod identity;
pub mod layer;
#[cfg(any(feature = "http-server", feature = "mcp"))]
mod listen;
pub mod llm;
mod local;
mod log;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(any(feature = "mcp-client", feature = "openapi-client"))]
pub mod mount;
#[cfg(feature = "nats")]
pub mod nats;
mod options;
#[cfg(feature = "otel")]
pub mod otel;
mod panic;
pub mod prompt;
#[cfg(any(
    feature = "http-client",
    feature = "http-server",
    feature = "mcp",
    feature = "mcp-client",
    feature = "nats"
))]
mod propagate;
mod quota;
mod registry;
mod remote;
pub mod resource;
pub mod schema;
mod time;
mod tool;
mod trace;
pub mod transport;

/// The README's examples, compiled and run as doc tests (they include the HTTP, MCP
/// and NATS layers).
#[cfg(all(doctest, feature = "http-server", feature = "mcp", feature = "nats"))]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

pub use call::{Args, ToolCall, ToolResult};
pub use connect::connect;
pub use content::Content;
pub use error::ToolError;
pub use exec::ctx::Ctx;
pub use exec::runner::Runner;
pub use exec::stream;
pub use exec::stream::{Answer, ToolStream};
pub use exec::task::CallHandle;
pub use identity::Identity;
pub use log::{LogLevel, LogMessage};
pub use options::{Binding, CallOptions, CollectLimit, Progress, Surface};
pub use registry::{
    CallStatus, RegisterOptions, Registry, RegistryEvent, SearchHit, Subscription,
    SubscriptionError, UnregisterOptions, UnregisterScope,
};
pub use remote::ledger;
/// Cancellation tokens, as [`CallOptions::cancel_on`] and [`Ctx::cancellation_token`] use them.
pub use tokio_util::sync::CancellationToken;
pub use tool::service;
pub use tool::service::{ActDefinition, ToolService};
pub use tool::{Annotations, Kind, ToolBuilder, ToolDefinition, ToolFunc, ToolRef};
pub use trace::TraceContext;
pub use transport::Transport;

#[doc = include_str!("docs/tool.md")]
#[cfg(feature = "macros")]
pub use toolfunc_macros::tool;

#[doc = include_str!("docs/tool_service.md")]
#[cfg(feature = "macros")]
pub use toolfunc_macros::tool_service;

#[doc = include_str!("docs/prompt.md")]
#[cfg(feature = "macros")]
pub use toolfunc_macros::prompt;

#[doc = include_str!("docs/resource.md")]
#[cfg(feature = "macros")]
pub use toolfunc_macros::resource;

/// Items used by the code that `#[tool]` generates. Not public API: no semver
/// guarantees; do not use directly.
#[doc(hidden)]
pub mod __private;
