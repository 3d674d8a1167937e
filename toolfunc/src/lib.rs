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
//! | serve tools to MCP clients | [`mcp`] (feature `mcp`): [`mcp::McpServer`] over stdio or streamable HTTP |
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
mod call;
mod connect;
pub mod content;
mod error;
mod exec;
#[cfg(feature = "http")]
pub mod http;
pub mod ledger;
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
pub mod schema;
mod tool;
pub mod transport;

/// The README's examples, compiled and run as doc tests (they include the HTTP, MCP
/// and NATS layers).
#[cfg(all(doctest, feature = "http", feature = "mcp", feature = "nats"))]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;

pub use call::{ToolCall, ToolResult};
pub use connect::connect;
pub use content::Content;
pub use error::ToolError;
pub use exec::ctx::Ctx;
pub use exec::runner::Runner;
pub use exec::stream;
pub use exec::stream::ToolStream;
pub use exec::task::CallHandle;
pub use log::{LogLevel, LogMessage};
pub use options::{Binding, CallOptions, CollectLimit, Progress};
pub use registry::{
    CallStatus, RegisterOptions, Registry, RegistryEvent, Subscription, SubscriptionError,
    UnregisterOptions, UnregisterScope,
};
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
/// | `stream` | flag | the return type is a named stream type (`impl Stream<Item = T>` needs no flag) |
/// | `args` | flag | the single (non-context) parameter is the whole arguments object; its type derives `Deserialize` + `JsonSchema` |
/// | `deny_unknown_fields` | flag | unknown argument names are an `ARGUMENTS` error (default: ignored) |
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
pub mod __private {
    pub use ::futures::future::BoxFuture;
    pub use ::inventory;
    pub use ::schemars;
    pub use ::serde;
    pub use ::serde_json::{self, Value};

    pub use crate::error::convert;
    pub use crate::schema::{field_order, parse_args, result_schema_of, schema_of};
    pub use crate::tool::service::{
        HookHandler, MethodHandler, MethodSpec, ServiceEntry, ServiceSpec, ToolService,
    };
    pub use crate::tool::{Hints, ItemStream, SpecHandler, ToolSpec, to_output};
    pub use ::futures::future::LocalBoxFuture;
    pub use ::futures::stream::BoxStream;
    pub use ::std::sync::Arc;

    /// The arguments object of a client call: `args` serialised, with `act`.
    pub fn client_args<T: ClientArg + ?Sized>(args: &T, act: &str) -> Result<Value, ToolError> {
        let mut value = ::serde_json::to_value(args).map_err(|e| {
            ToolError::arguments(
                "",
                ::std::format!("the arguments cannot be serialised: {e}"),
            )
        })?;
        match &mut value {
            Value::Object(map) => {
                map.insert("act".into(), Value::String(act.into()));
            }
            _ => {
                return Err(ToolError::arguments(
                    "",
                    "the arguments must serialise to a JSON object",
                ));
            }
        }
        Ok(value)
    }

    /// A parameter type of a `#[tool_service]` method, as its typed client sends it.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be sent by a #[tool_service] client",
        label = "the typed client needs `serde::Serialize` on this type",
        note = "derive `Serialize` for it, or turn the client off with #[tool_service(client = false)]"
    )]
    pub trait ClientArg: ::serde::Serialize {}
    impl<T: ::serde::Serialize + ?Sized> ClientArg for T {}

    /// Checks, at the parameter's type, that the client can send it.
    pub const fn assert_client_arg<T: ClientArg + ?Sized>() {}

    /// Chosen for client parameters that are `Serialize`.
    pub trait ViaClientArg<T> {
        fn serialize_arg<S: ::serde::Serializer>(
            &self,
            value: &T,
            serializer: S,
        ) -> Result<S::Ok, S::Error>;
    }

    impl<T: ::serde::Serialize> ViaClientArg<T> for &Checked<T> {
        fn serialize_arg<S: ::serde::Serializer>(
            &self,
            value: &T,
            serializer: S,
        ) -> Result<S::Ok, S::Error> {
            ::serde::Serialize::serialize(value, serializer)
        }
    }

    /// Chosen for the others (a compile error is reported already).
    pub trait FallbackClientArg<T> {
        fn serialize_arg<S: ::serde::Serializer>(
            &self,
            value: &T,
            serializer: S,
        ) -> Result<S::Ok, S::Error>;
    }

    impl<T> FallbackClientArg<T> for Checked<T> {
        fn serialize_arg<S: ::serde::Serializer>(&self, _: &T, _: S) -> Result<S::Ok, S::Error> {
            ::core::unreachable!("reported at compile time by assert_client_arg")
        }
    }

    /// The result type of a typed client method.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be returned by a #[tool_service] client",
        label = "the typed client needs `serde::Deserialize` on this type",
        note = "derive `Deserialize` for it, or turn the client off with #[tool_service(client = false)]"
    )]
    pub trait ClientOutput: ::serde::de::DeserializeOwned {}
    impl<T: ::serde::de::DeserializeOwned> ClientOutput for T {}

    /// A client call's result as `T` (`OUTPUT` when it does not fit).
    pub fn client_output<T: ClientOutput>(value: Value) -> Result<T, ToolError> {
        ::serde_json::from_value(value).map_err(|e| ToolError::Output {
            message: ::std::format!("the result does not match the method's type: {e}"),
        })
    }

    /// A client stream's items as `T`.
    pub fn client_stream<T: ClientOutput + Send + 'static>(
        items: BoxStream<'static, Result<Value, ToolError>>,
    ) -> BoxStream<'static, Result<T, ToolError>> {
        ::std::boxed::Box::pin(StreamExt::map(items, |item| {
            item.and_then(client_output::<T>)
        }))
    }

    /// A client stream that fails at once.
    pub fn client_failed_stream<T: Send + 'static>(
        err: ToolError,
    ) -> BoxStream<'static, Result<T, ToolError>> {
        ::std::boxed::Box::pin(::futures::stream::once(::core::future::ready(Err(err))))
    }

    /// Registers a `#[tool_service]` type in the global registry only when it is
    /// `Default` (autoref specialisation on the concrete type).
    pub struct DefaultProbe<S>(::core::marker::PhantomData<S>);

    impl<S> DefaultProbe<S> {
        #[allow(clippy::new_without_default)]
        pub const fn new() -> Self {
            Self(::core::marker::PhantomData)
        }
    }

    /// Chosen for `Default` services.
    pub trait ViaDefault {
        fn service_tool(&self) -> Option<Result<crate::ToolFunc, ToolError>>;
    }

    impl<S: ToolService + Default> ViaDefault for &DefaultProbe<S> {
        fn service_tool(&self) -> Option<Result<crate::ToolFunc, ToolError>> {
            Some(crate::ToolFunc::from_service(S::default()))
        }
    }

    /// Chosen for the others.
    pub trait NoDefault {
        fn service_tool(&self) -> Option<Result<crate::ToolFunc, ToolError>>;
    }

    impl<S> NoDefault for DefaultProbe<S> {
        fn service_tool(&self) -> Option<Result<crate::ToolFunc, ToolError>> {
            None
        }
    }
    pub use ::futures::stream::{Stream, StreamExt};

    /// Boxes a tool's item stream.
    pub fn box_stream<S>(stream: S) -> ItemStream
    where
        S: Stream<Item = Result<Value, ToolError>> + Send + 'static,
    {
        ::std::boxed::Box::pin(stream)
    }
    pub use crate::{Ctx, ToolError};
    pub use ::core::option::Option::{self, None, Some};
    pub use ::core::result::Result::{self, Err, Ok};

    /// A handler future that can move between threads: every async tool's, unless it
    /// is `local`.
    #[diagnostic::on_unimplemented(
        message = "the future of this async tool is not `Send`",
        label = "it holds something that is not `Send` across an `.await`",
        note = "drop the `Rc`, `RefCell` or other `!Send` value before the `.await`, or mark the tool `#[tool(local)]` to run it on toolfunc's local executor"
    )]
    pub trait SendFuture: ::core::future::Future + Send {}
    impl<F: ::core::future::Future + Send + ?Sized> SendFuture for F {}

    /// Boxes a handler future. (A compile error here means the tool's future is not
    /// `Send`; rustc prints the bound's line, so it carries the way out.)
    pub fn box_future<F>(future: F) -> BoxFuture<'static, F::Output>
    where
        F: SendFuture + 'static, // not `Send`? drop the `Rc`/`RefCell` before `.await`, or use `#[tool(local)]`
    {
        ::std::boxed::Box::pin(future)
    }

    /// A `#[tool(local)]` handler's call: `make` builds the (not `Send`) future on
    /// the local executor.
    pub fn run_local(
        ctx: Ctx,
        args: Value,
        make: fn(
            Ctx,
            Value,
        ) -> ::futures::future::LocalBoxFuture<'static, Result<Value, ToolError>>,
    ) -> BoxFuture<'static, Result<Value, ToolError>> {
        crate::local::run(ctx, args, ::std::boxed::Box::new(make))
    }

    /// Boxes a `#[tool(local)]` handler's future (which need not be `Send`).
    pub fn box_local<F>(future: F) -> ::futures::future::LocalBoxFuture<'static, F::Output>
    where
        F: ::core::future::Future + 'static,
    {
        ::std::boxed::Box::pin(future)
    }

    /// A parameter type of a `#[tool]` function.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be a parameter of a #[tool] function",
        label = "this type must implement `serde::Deserialize` and `schemars::JsonSchema`",
        note = "derive both: #[derive(serde::Deserialize, schemars::JsonSchema)]"
    )]
    pub trait ToolParam {}
    impl<T: ::serde::de::DeserializeOwned + ::schemars::JsonSchema> ToolParam for T {}

    /// Checks, at the parameter's type, that it can be a tool parameter.
    pub const fn assert_param<T: ToolParam + ?Sized>() {}

    /// The output type of a `#[tool]` function.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be the result of a #[tool] function",
        label = "this type must implement `serde::Serialize` and `schemars::JsonSchema`",
        note = "derive both: #[derive(serde::Serialize, schemars::JsonSchema)]"
    )]
    pub trait ToolOutput: ::serde::Serialize + ::schemars::JsonSchema {}
    impl<T: ::serde::Serialize + ::schemars::JsonSchema + ?Sized> ToolOutput for T {}

    /// Checks, at the return type (a stream's item type), that it can be a result.
    pub const fn assert_output<T: ToolOutput + ?Sized>() {}

    /// Autoref dispatch over the user's parameter and result types. A type that lacks
    /// the traits takes the `Fallback*` impl, which never runs: `assert_param` and
    /// `assert_output` in the same expansion already report it under the user's type,
    /// so one mistake gives one error instead of one per use.
    pub struct Checked<T>(::core::marker::PhantomData<fn() -> T>);

    impl<T> Checked<T> {
        #[allow(clippy::new_without_default)]
        pub const fn new() -> Self {
            Self(::core::marker::PhantomData)
        }
    }

    /// Chosen for parameters types that are `Deserialize` and `JsonSchema`.
    pub trait ViaParams<T> {
        fn parse_args(&self, args: Value) -> Result<T, ToolError>;
        fn params_schema(&self) -> Value;
        fn param_order(&self, schema: &Value) -> ::std::vec::Vec<::std::string::String>;
    }

    impl<T: ::serde::de::DeserializeOwned + ::schemars::JsonSchema> ViaParams<T> for &Checked<T> {
        fn parse_args(&self, args: Value) -> Result<T, ToolError> {
            parse_args::<T>(args)
        }
        fn params_schema(&self) -> Value {
            schema_of::<T>()
        }
        fn param_order(&self, schema: &Value) -> ::std::vec::Vec<::std::string::String> {
            field_order::<T>(schema)
        }
    }

    /// Chosen for the others (a compile error is reported already).
    pub trait FallbackParams<T> {
        fn parse_args(&self, args: Value) -> Result<T, ToolError>;
        fn params_schema(&self) -> Value;
        fn param_order(&self, schema: &Value) -> ::std::vec::Vec<::std::string::String>;
    }

    impl<T> FallbackParams<T> for Checked<T> {
        fn parse_args(&self, _: Value) -> Result<T, ToolError> {
            ::core::unreachable!("reported at compile time by assert_param")
        }
        fn params_schema(&self) -> Value {
            ::core::unreachable!("reported at compile time by assert_param")
        }
        fn param_order(&self, _: &Value) -> ::std::vec::Vec<::std::string::String> {
            ::core::unreachable!("reported at compile time by assert_param")
        }
    }

    /// Chosen for result types that are `Serialize` and `JsonSchema`.
    pub trait ViaOutput<T> {
        fn output(&self, value: T) -> Result<Value, ToolError>;
        fn result_schema(&self) -> Value;
    }

    impl<T: ToolOutput> ViaOutput<T> for &Checked<T> {
        fn output(&self, value: T) -> Result<Value, ToolError> {
            to_output(&value)
        }
        fn result_schema(&self) -> Value {
            result_schema_of::<T>()
        }
    }

    /// Chosen for the others (a compile error is reported already).
    pub trait FallbackOutput<T> {
        fn output(&self, value: T) -> Result<Value, ToolError>;
        fn result_schema(&self) -> Value;
    }

    impl<T> FallbackOutput<T> for Checked<T> {
        fn output(&self, _: T) -> Result<Value, ToolError> {
            ::core::unreachable!("reported at compile time by assert_output")
        }
        fn result_schema(&self) -> Value {
            ::core::unreachable!("reported at compile time by assert_output")
        }
    }

    /// A parameter taken as the call context.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` is taken as the call context because it is named `Ctx`",
        label = "#[tool] injects `toolfunc::Ctx` into parameters named `Ctx` or `&Ctx`",
        note = "import `toolfunc::Ctx`, or rename your own type"
    )]
    pub trait IsCtx {}
    impl IsCtx for Ctx {}
    impl IsCtx for &Ctx {}

    /// Checks, at the parameter's type, that a `Ctx` parameter is toolfunc's.
    pub const fn assert_ctx<T: IsCtx + ?Sized>() {}

    /// The error type of a `#[tool]` function returning `Result<T, E>`.
    #[diagnostic::on_unimplemented(
        message = "`{Self}` cannot be the error of a #[tool] function",
        label = "this type must implement `std::fmt::Display` (or be a `ToolError`)",
        note = "implement `Display` or `std::error::Error`, or return `ToolError`"
    )]
    pub trait ToolFailure {}
    impl<E: ::core::fmt::Display + ?Sized> ToolFailure for E {}

    /// Checks, at the error type, that it can become a `ToolError`.
    pub const fn assert_error<E: ToolFailure + ?Sized>() {}
}
