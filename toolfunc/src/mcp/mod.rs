//! The MCP server (feature `mcp`): any [`Registry`](crate::registry::Registry) served to Model Context Protocol
//! clients over stdio or streamable HTTP, on the official SDK ([`rmcp`]).
//!
//! - `tools/list` lists every tool remote callers may see (`api = false` tools stay
//!   hidden), service methods as `{service}_{method}`, in name order, with `title`,
//!   `annotations` and the schemas as the tools wrote them (JSON Schema 2020-12:
//!   `$schema`, `$defs` and `$ref` are kept, nothing is inlined). `outputSchema` is
//!   the result's schema: any schema for 2026-07-28 clients, object schemas only for
//!   older ones. The list is made once per registry change and kept (the SDK asks
//!   for one tool on every sessionless HTTP request), and comes in pages of
//!   [`Server::page_size`] tools (default [`DEFAULT_PAGE_SIZE`]) with opaque
//!   cursors; a cursor this server did not give is `-32602`. A tool MCP cannot take
//!   (a name outside `[A-Za-z0-9_.-]{1,128}`) is left out with a `tracing` warning
//!   naming it.
//! - `tools/call` runs the tool. Argument and handler errors come back as a result
//!   with `isError: true`, the message as text, and `{code, data}` under the result's
//!   `_meta["io.github.toolfunc/error"]`; an unknown tool is a JSON-RPC error (`-32602`).
//!   Results are text content, plus `structuredContent` when the value is an object
//!   (for 2026-07-28 clients: any value of a tool that has an output schema). A
//!   [`Content`](crate::Content) result is its blocks. A streaming tool's items are
//!   collected into an array.
//! - `notifications/cancelled` cancels the call's token ([`Ctx::cancellation_token`]).
//! - [`Ctx::progress`] becomes `notifications/progress` echoing the client's
//!   `progressToken`; a streaming tool also reports each item as it comes.
//! - [`Ctx::log`] and [`Ctx::log_data`] become `notifications/message` (the logger is
//!   the tool's name unless the tool named one), at the level the client asked for:
//!   a session's `logging/setLevel` (everything until it sets one), or a sessionless
//!   request's `_meta["io.modelcontextprotocol/logLevel"]` (nothing without it). Over
//!   HTTP sessions they travel on the session's GET stream, as the SDK routes them.
//! - A `background` tool called by a client that declares the tasks extension
//!   (SEP-2663) may answer with a task, read with `tasks/get`, answered with
//!   `tasks/update` and stopped with `tasks/cancel`, on the server's
//!   [`Ledger`](crate::ledger::Ledger) ([`Server::ledger`]); `tools/list` says which
//!   tools do under `_meta["io.github.toolfunc/taskSupport"]`. See [`tasks`].
//! - Registry changes (tools added or removed) send
//!   `notifications/tools/list_changed`: to sessions that began with `initialize`
//!   (over HTTP on their GET stream), and on every open `subscriptions/listen` stream
//!   that asked for `toolsListChanged`. A listen that asks only for what toolfunc
//!   does not serve (prompts, resources) is acknowledged with an empty filter and
//!   stays open, silent, until the client ends it.
//!
//! Hostile input is bounded. Over stdio every line is checked against JSON-RPC 2.0
//! before the SDK sees it: each malformed request is answered (`-32700` for what is
//! not JSON, `-32600` for what is no valid request, `-32602` for positional params,
//! with the request's id, or `null` when it has no valid one), batches are refused
//! request by request (MCP has none), stray notifications and responses are
//! dropped, and a line longer than [`Server::max_line_length`] is refused
//! without being read into memory. Over HTTP, [`Server::max_sessions`] caps the
//! open sessions (a refused `initialize` gets `503` with a JSON-RPC error),
//! sessions that never send `notifications/initialized` end after
//! [`Server::uninitialized_session_lifetime`] and idle ones after
//! [`Server::session_idle_lifetime`]; requests from a browser page on a foreign
//! origin are refused with `403` ([`Server::allowed_origins`]). Every JSON-RPC
//! error carries an `id` member.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use toolfunc::{mcp::Server, Registry};
//!
//! // Over stdio, until the client closes the stream:
//! Server::new(Registry::global()).serve_stdio().await?;
//!
//! // Over streamable HTTP at `/mcp`, merged into any axum app, on connections
//! // with TCP_NODELAY (a plain `axum::serve` makes each answer wait some 40 ms):
//! let app = toolfunc::mcp::router(Registry::global());
//! let listener = tokio::net::TcpListener::bind("127.0.0.1:3000").await?;
//! toolfunc::mcp::serve(listener, app).await?;
//! # Ok(()) }
//! ```
//!
//! [`Ctx::cancellation_token`]: crate::Ctx::cancellation_token
//! [`Ctx::progress`]: crate::Ctx::progress
//! [`Ctx::log`]: crate::Ctx::log
//! [`Ctx::log_data`]: crate::Ctx::log_data

mod ask;
mod call;
mod catalog;
mod client;
mod handler;
mod http;
mod report;
mod rounds;
mod serve;
mod server;
mod shape;
mod stdio;
pub mod tasks;
mod tracked;

pub use client::ClientInfo;
pub use serve::{NoDelay, serve};
pub use server::{
    DEFAULT_MAX_LINE_LENGTH, DEFAULT_MAX_SESSIONS, DEFAULT_PAGE_SIZE,
    DEFAULT_SESSION_IDLE_LIFETIME, DEFAULT_UNINITIALIZED_SESSION_LIFETIME, PATH, Server, router,
    serve_stdio,
};

/// The web framework [`Server::router`] builds on, to serve and merge its router.
pub use axum;
/// The SDK this module builds on, for transports and settings beyond the ones here.
pub use rmcp;
