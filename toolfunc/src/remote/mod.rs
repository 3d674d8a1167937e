//! A call from outside: how a name that arrives over a wire becomes a run.
//!
//! HTTP, MCP, NATS and the LLM tool-call messages differ only in how a call is
//! parsed and how its answer is encoded. Everything between is written here, once,
//! so that a rule about who may see or call what cannot disagree between surfaces:
//!
//! 1. **The surface parses** the request into a [`RemoteCall`]: the name, how the
//!    surface names things ([`Lookup`]: tools, or functions), the caller's
//!    [`CallOptions`](crate::options::CallOptions) and verified identity, the
//!    arguments when read, and what the caller takes (a stream, tasks, the client
//!    capabilities it declared).
//! 2. **[`admit()`]** (`admit.rs`) is the one entry: the name (or alias, or
//!    `{service}_{method}` where the surface speaks in functions) is resolved
//!    **once** (`find.rs`) into a [`Found`]: the tool, the registry that holds it
//!    and its readiness, the act a function name stands for. Unknown tools, tools
//!    not offered to remote callers (`api = false`) and tools a layer hides from
//!    this caller are all refused alike, so a caller learns nothing of what it may
//!    not see; then the scopes of the tool and its act, the client capabilities
//!    the tool needs and whether it runs only as a task are judged. What comes out
//!    is an [`Admitted`] call with its [`Plan`] (one value, a stream of items, or a
//!    tracked task), or one [`Refusal`], which each surface encodes once.
//!    [`precheck`] is the same judgement where a surface must decide before reading
//!    what runs the call (HTTP before the body, MCP's gate before the SDK, a
//!    durable submit before it is queued); [`Found::settle`] judges the act a
//!    surface settles on later.
//! 3. **Dispatch** (`dispatch.rs`): the admitted call is handed to the execution
//!    core ([`exec`](crate::exec)) or to the [`Ledger`](ledger::Ledger), which run
//!    it without looking its name up again.
//! 4. **The surface encodes** the answer: JSON or NDJSON over HTTP, a
//!    `CallToolResult` or a task over MCP, messages over NATS, a provider's
//!    tool-result message.
//!
//! **One catalogue** (`catalog.rs`) says what a registry offers remote callers: the
//! tools served remotely (`api` tools, in name order) and the functions they make
//! (each service act flattened into `{service}_{method}`, a tool winning over a
//! method of the same name). It is made once per registry generation and kept in
//! the registry under a typed key; HTTP discovery, the OpenAPI document, MCP
//! `tools/list` and the NATS endpoints all read it, and a
//! caller's view of it is filtered by the same visibility rule as `find`.
//! A search (`search.rs`, HTTP discovery's `?q=`) ranks with the registry's index
//! and keeps what the catalogue offers and the caller's sight shows.
//!
//! **Prompts and resources** (`prompts_resources.rs`) are offered, got and read under the same
//! rule: what a caller may not see does not exist for it, and a scope it lacks is
//! named in its refusal.
//!
//! The [`ledger`] (calls tracked by id, polled, cancelled, swept) lives on this
//! floor too: it is how a surface answers a call that outlives its request.

mod admit;
mod catalog;
mod dispatch;
mod find;
pub mod ledger;
#[cfg(any(feature = "http-server", feature = "mcp"))]
mod prompts_resources;
pub(crate) mod search;

#[cfg(feature = "mcp")]
pub(crate) use admit::Admitted;
#[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
pub(crate) use admit::Refusal;
#[cfg(feature = "http-server")]
pub(crate) use admit::admit_judged;
#[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
pub(crate) use admit::precheck;
pub(crate) use admit::{RemoteCall, admit};
#[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
pub(crate) use catalog::Catalog;
#[cfg(any(feature = "http-server", feature = "mcp"))]
pub(crate) use dispatch::Plan;
pub(crate) use find::{Found, Lookup, Sight};
#[cfg(any(feature = "http-server", feature = "mcp"))]
pub(crate) use find::{INSUFFICIENT_SCOPE, insufficient_scope, tracked_shown};
#[cfg(feature = "mcp")]
pub(crate) use find::{Needs, find_tracked};
#[cfg(any(feature = "http-server", feature = "mcp"))]
pub(crate) use prompts_resources::{MAX_URI_BYTES, any_scoped, prompts, resources};
#[cfg(feature = "mcp")]
pub(crate) use prompts_resources::{
    admit_prompt, admit_resource, admit_template, bounded_contents,
};
#[cfg(feature = "http-server")]
pub(crate) use prompts_resources::{get_prompt, prompts_seen, read, resources_seen};
#[cfg(any(feature = "http-server", feature = "mcp"))]
pub(crate) use search::search;
