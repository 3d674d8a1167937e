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
//! | build a tool at run time | [`ToolFunc::builder`], over raw JSON checked against a schema ([`schema`]) or typed arguments |
//! | find and run tools by name | [`Registry`]: [`Registry::global`], [`Registry::run`], [`Registry::run_stream`], [`Registry::spawn`], children with [`Registry::isolate`] |
//! | give calls a caller, a timeout, cancellation, limits | [`CallOptions`] through [`Registry::with`]; inside a tool, [`Ctx`] |
//! | run correlated calls with isolated errors | [`ToolCall`] / [`ToolResult`] and [`Registry::execute`] |
//! | stream results and hook a stream's life | [`ToolStream`], [`stream::callbacks`] |
//! | offer tools to an LLM, run its tool calls | [`llm`]: exports for OpenAI, Anthropic, Gemini and MCP; provider messages in and out |
//! | serve tools over HTTP, call remote ones | [`http`] (feature `http`): [`http::Api`], [`http::Server`], [`http::Client`] |
//! | serve tools to MCP clients | [`mcp`] (feature `mcp`): [`mcp::Server`] over stdio or streamable HTTP |
//! | run local or remote tools the same way | [`Transport`], [`connect`] |
//!
//! Every failure is a [`ToolError`] with a stable [`code`](ToolError::code), an HTTP
//! [`status`](ToolError::status), a message and optional JSON data; it crosses every
//! wire and comes back as the same variant.
//!
//! The crate README has the attribute keys of both macros, the runtime in depth, the
//! wire tables of HTTP and MCP, the security defaults and the performance figures.

// Libraries report through return values and `tracing`, never by printing.
#![warn(clippy::print_stdout, clippy::print_stderr, clippy::dbg_macro)]
#![warn(missing_docs)]
#![forbid(unsafe_code)]

pub mod ask;
pub mod auth;
mod call;
mod connect;
pub mod content;
mod error;
mod exec;
#[cfg(feature = "http")]
pub mod http;
mod id;
mod identity;
pub mod layer;
pub mod llm;
mod local;
mod log;
#[cfg(feature = "mcp")]
pub mod mcp;
#[cfg(feature = "nats")]
pub mod nats;
mod options;
mod panic;
mod registry;
mod remote;
pub mod schema;
mod tool;
pub mod transport;

/// The README's examples, compiled and run as doc tests (they include the HTTP, MCP
/// and NATS layers).
#[cfg(all(doctest, feature = "http", feature = "mcp", feature = "nats"))]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

pub use call::{Args, ToolCall, ToolResult};
pub use connect::connect;
pub use content::Content;
pub use error::ToolError;
pub use identity::Identity;
pub use exec::ctx::Ctx;
pub use exec::runner::Runner;
pub use exec::stream;
pub use exec::stream::{Answer, ToolStream};
pub use exec::task::CallHandle;
pub use log::{LogLevel, LogMessage};
pub use options::{Binding, CallOptions, CollectLimit, Progress, Surface};
pub use registry::{
    CallStatus, RegisterOptions, Registry, RegistryEvent, Subscription, SubscriptionError,
    UnregisterOptions, UnregisterScope,
};
pub use remote::ledger;
/// Cancellation tokens, as [`CallOptions::cancel_on`] and [`Ctx::cancellation_token`] use them.
pub use tokio_util::sync::CancellationToken;
pub use tool::service;
pub use tool::service::{ActDefinition, ToolService};
pub use tool::{Annotations, ToolBuilder, ToolDefinition, ToolFunc, ToolRef};
pub use transport::Transport;

/// Turns a function into a tool in [`Registry::global()`], with no registration call.
///
/// The function stays an ordinary Rust function. The macro adds, beside it, a
/// parameters type (serde `Deserialize` + schemars `JsonSchema`), the tool's
/// definition, a handler, and a link-time registration.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolfunc::{tool, Ctx, Registry, ToolError};
///
/// /// Adds two numbers.
/// ///
/// /// The doc comment is the description; this paragraph is kept too.
/// #[tool(alias = "plus", tags = ["math"])]
/// fn add(
///     /// The left operand.
///     a: f64,
///     /// The right operand; 0 when omitted.
///     b: Option<f64>,
/// ) -> f64 {
///     a + b.unwrap_or(0.0)
/// }
///
/// /// Looks a user up.
/// #[tool(name = "user_get", summary = "Fetch one user.")]
/// async fn get_user(ctx: &Ctx, id: u64) -> Result<String, ToolError> {
///     if id == 0 {
///         return Err(ToolError::custom("USER_NOT_FOUND", 404, "no user 0"));
///     }
///     Ok(format!("user {id} (via {})", ctx.tool_name()))
/// }
///
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let registry = Registry::global();
/// assert_eq!(registry.run("plus", json!({"a": 1})).await.unwrap(), json!(1.0));
/// assert_eq!(registry.run("user_get", json!({"id": 7})).await.unwrap(), "user 7 (via user_get)");
/// assert_eq!(registry.run("user_get", json!({"id": 0})).await.unwrap_err().code(), "USER_NOT_FOUND");
/// # });
/// ```
///
/// # Keys
///
/// | key | value | effect |
/// | --- | --- | --- |
/// | `name` | string | the tool's name (default: the function's name) |
/// | `title` | string | a short human-readable title |
/// | `description` | string | the description (default: the doc comment) |
/// | `summary` | string | advertised in place of the description by [`Registry::definitions`] |
/// | `alias` | string or list | other names the tool runs by |
/// | `tags` | string or list | grouping labels |
/// | `timeout` | `"30s"`, `"250ms"`, `"2m"`, `"1h"`, or milliseconds | the tool's own timeout |
/// | `concurrency` | integer ≥ 1 | at most this many calls at once; the rest wait |
/// | `depends` | `(alias = "tool", ..)` | tools called by a local alias (`ctx.run("alias", ..)`), checked when the registry is built |
/// | `annotations` | `(read_only, destructive = false, ..)` | behaviour hints (see [`Annotations`]) |
/// | `stream` | flag | the return type is a named stream type, or a `Result` of one (`impl Stream<Item = T>` needs no flag); refused on `-> Answer` and on functions returning nothing |
/// | `args` | flag | the single (non-context) parameter is the whole arguments object; its type derives `Deserialize` + `JsonSchema` |
/// | `deny_unknown_fields` | flag | unknown argument names are an `ARGUMENTS` error (default: ignored) |
/// | `local` | flag | an `async fn` whose future is not `Send`: each call runs on the local executor thread, or in place under [`Registry::run_local`] |
/// | `background` | flag, or `"only"` | the `timeout` is a soft deadline past which a call moves to the background ([`ledger`]); `"only"`: always |
/// | `needs_client` | string or list | MCP client capabilities the tool needs (`"sampling"`, `"elicitation"`, `"roots"`) |
/// | `check_output` | flag | results are checked against the result schema (`OUTPUT` with the JSON path) |
/// | `api` | `false` | not offered to remote callers (HTTP, MCP); in-process calls still run it |
/// | `crate` | path | where to find this crate, when it is renamed or re-exported (default `::toolfunc`) |
///
/// # Parameters
///
/// * Each parameter is a named argument; its doc comment becomes its description in
///   the schema, and `#[serde(...)]`/`#[schemars(...)]` attributes on it apply to it
///   (`#[serde(default)]`, `#[serde(rename = "type")]`, `#[schemars(range(min = 1))]`).
/// * `Option<T>` parameters are optional (left out of `required`).
/// * A parameter of type `&Ctx` or `Ctx` receives the call's [`Ctx`]; it is not an
///   argument and is not in the schema.
/// * Parameters must own their data (`String`, not `&str`) and implement
///   `Deserialize` and `JsonSchema`.
///
/// # Return type
///
/// * `T` is the result (its schema is the tool's result schema); `()` or no return
///   type gives `null` and no result schema.
/// * `Result<T, E>` (or any alias named `Result`): `Err` becomes a [`ToolError`]. A
///   `ToolError` passes through unchanged; any other `std::error::Error` becomes
///   `FAILED` keeping it as the source; any other `Display` becomes `FAILED` with its
///   message.
/// * `impl Stream<Item = T>` (or `Result<impl Stream<Item = Result<T, E>>, E>`): a
///   streaming tool; `T` is the item schema.
/// * [`Answer`] (or `Result<Answer, E>`): a stream for a caller that asked for one
///   ([`Ctx::is_stream`]), one value for the others; no result schema. A type of
///   your own named `Answer` is a value when written by another path
///   (`self::Answer`).
/// * `async fn` tools run with [`Registry::run`]; [`Registry::run_sync`] refuses them
///   with `ASYNC_ONLY`.
///
/// # Unknown fields
///
/// Arguments that no parameter names are ignored, as serde does by default, so
/// callers that send extra keys keep working. `deny_unknown_fields` makes them an
/// error (and puts `"additionalProperties": false` in the schema).
///
/// # Mistakes caught at compile time
///
/// A `self` receiver, generic parameters, `unsafe fn`, pattern parameters
/// (`(a, b): (i32, i32)`), borrowed or `impl Trait` parameters, two context
/// parameters, a parameter or result type without the serde/schemars traits (reported
/// under that type), unknown or repeated keys, and `#[tool]` on anything but a
/// function.
#[cfg(feature = "macros")]
pub use toolfunc_macros::tool;

/// Turns an inherent impl block into a service: one tool whose methods are its
/// acts, selected with an `act` argument, and a typed client `{Type}Client`.
///
/// ```rust,standalone_crate
/// use std::sync::Mutex;
/// use serde_json::json;
/// use toolfunc::{tool_service, Registry, ToolError};
///
/// #[derive(Default)]
/// struct Counter { hits: Mutex<u64> }
///
/// /// Counts hits.
/// #[tool_service(name = "counter")]
/// impl Counter {
///     /// Adds `by` (default 1) and returns the total.
///     fn hit(&self, by: Option<u64>) -> u64 {
///         let mut hits = self.hits.lock().unwrap();
///         *hits += by.unwrap_or(1);
///         *hits
///     }
///
///     /// The total so far.
///     async fn total(&self) -> u64 {
///         *self.hits.lock().unwrap()
///     }
///
///     #[tool(skip)]
///     fn reset(&self) {
///         *self.hits.lock().unwrap() = 0;
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// // A `Default` service is in the global registry already.
/// let registry = Registry::global();
/// assert_eq!(registry.run("counter", json!({"act": "$hit", "by": 2})).await.unwrap(), 2);
/// // `act` may leave out the `$`.
/// assert_eq!(registry.run("counter", json!({"act": "hit"})).await.unwrap(), 3);
/// assert_eq!(registry.run("counter", json!({"act": "$nope"})).await.unwrap_err().code(), "UNKNOWN_ACT");
///
/// // The typed client calls the same methods through any transport.
/// let client = CounterClient::new(registry.clone());
/// assert_eq!(client.total().await.unwrap(), 3);
///
/// // Services with state of their own are registered by value.
/// let mine = Registry::new();
/// mine.register_service(Counter { hits: Mutex::new(10) }).unwrap();
/// assert_eq!(CounterClient::new(mine).hit(Some(5)).await.unwrap(), 15);
/// # });
/// ```
///
/// # Methods
///
/// * Every method becomes an act unless marked `#[tool(skip)]`. It takes `&self`
///   (or `self: Arc<Self>`, which streaming methods need so their stream can keep
///   the service alive); parameters, `&Ctx`, return types and doc comments work as
///   on [`#[tool]`](macro@tool) functions.
/// * A method named `get`, `list`, `post`, `put`, `delete` or `patch` is a REST
///   verb: its act is the bare verb, and the service becomes a REST resource
///   (`"action": "res"` in its definition), reached over HTTP by
///   `GET /prefix/name/<id>` and friends. Any other method's act is `$name`.
/// * `#[tool(...)]` on a method takes `name`, `title`, `description`, `summary`,
///   `timeout`, `annotations`, `args`, `deny_unknown_fields`, `stream` and `skip`.
/// * `#[tool(setup)]` and `#[tool(dispose)]` mark the service's lifecycle hooks (at
///   most one of each, sync or async, taking only the receiver and returning `()` or
///   a `Result<(), E>`): setup runs when the service is registered, before its first
///   call; dispose when it is removed. Neither is an act.
/// * REST verbs `get`, `put`, `delete` and `patch` take the resource id as a
///   parameter named `id` (or marked `#[serde(rename = "id")]`).
///
/// # Keys of `#[tool_service(...)]`
///
/// `name` (default: the type's name in snake_case), `title`, `description` (default:
/// the impl block's doc comment), `summary`, `alias`, `tags`, `timeout`,
/// `concurrency`, `annotations`, `api = false` (not offered to remote callers),
/// `client = false` (no typed client: for result types without `Deserialize`), and
/// `crate`.
///
/// # Registration
///
/// A service whose type implements `Default` registers itself in
/// [`Registry::global()`]. Any service is registered with its state by
/// [`Registry::register_service`], or turned into a tool by
/// [`ToolFunc::from_service`].
///
/// Trait impls, generic impls, and methods taking `self` by value or `&mut self`
/// are compile errors.
#[cfg(feature = "macros")]
pub use toolfunc_macros::tool_service;

/// Items used by the code that `#[tool]` generates. Not public API: no semver
/// guarantees; do not use directly.
#[doc(hidden)]
pub mod __private;
