//! The MCP server (feature `mcp`): any [`Registry`](crate::registry::Registry) served to Model Context Protocol
//! clients over stdio or streamable HTTP, on the official SDK ([`rmcp`]).
#![doc = include_str!("../docs/mcp.md")]

mod ask;
mod call;
mod caller;
mod direct;
mod gate;
mod handler;
mod origins;
mod prompts_resources;
mod refusal;
mod report;
mod resting;
mod rounds;
mod search;
mod search_mode;
mod serve;
mod server;
mod sessions;
mod shape;
mod stdio;
pub mod tasks;
mod tool_list;
mod tracked;
mod wire;

pub use crate::listen::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_DRAIN_LIMIT, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
};
pub use caller::ClientInfo;
pub use rounds::RoundLimits;
pub use search_mode::{CALL_TOOL, SEARCH_TOOLS};
pub use serve::{NoDelay, router, serve};
pub use server::{
    DEFAULT_MAX_INITIALIZE_BYTES, DEFAULT_MAX_INITIALIZE_BYTES_PER_CALLER, DEFAULT_MAX_LINE_LENGTH,
    DEFAULT_MAX_SESSIONS, DEFAULT_MAX_SUBSCRIPTIONS, DEFAULT_PAGE_SIZE,
    DEFAULT_SESSION_IDLE_LIFETIME, DEFAULT_SESSION_PARK_AFTER, DEFAULT_SESSIONS_RESERVE_PERCENT,
    DEFAULT_UNINITIALIZED_SESSION_LIFETIME, PATH, Server, serve_stdio,
};

/// The bounds of a search from outside (HTTP discovery's `?q=`, MCP's
/// `search_tools`): the same for both.
pub use crate::remote::search::{
    DEFAULT_MAX_SEARCH_QUERY, DEFAULT_MAX_SEARCH_RESULTS, DEFAULT_SEARCH_RESULTS,
};
/// The web framework [`Server::router`] builds on, to serve and merge its router.
pub use axum;
/// The SDK this module builds on, for transports and settings beyond the ones here.
pub use rmcp;
