//! HTTP RPC and REST (feature `http`): serve a [`Registry`](crate::Registry) on
//! axum, call a remote one with [`Client`].
//!
//! The wire format is that of the JavaScript `@isdk/tool-rpc` packages, so their
//! clients call a toolfunc server and toolfunc's client calls their servers:
//!
//! | request | runs |
//! | --- | --- |
//! | `GET /api` | discovery: `{name: definition}` of every tool not marked `api = false` |
//! | `GET /api/openapi.json` | the OpenAPI 3.1 document of the same tools ([`Api::openapi_document`]) |
//! | `GET /api/docs` | a page to try every tool from a browser, when [`Api::docs`] is on |
//! | `POST /api/add` with `{"a":1,"b":2}` | `add` (any method but GET/DELETE reads the JSON body; an alias works too) |
//! | `GET /api/add?p={"a":1,"b":2}` | the same, with the arguments in `p` (GET for read-only tools, and DELETE) |
//! | `POST /api/greeter` with `{"act":"$hello","name":"Ann"}` | the service method `hello` (or with the `rpc-act: $hello` header) |
//! | `GET /api/users` / `GET /api/users/1` | a REST resource's `list` / `get` with `id` `"1"` |
//! | `POST /api/users` with `{"val":{..}}` | `post` |
//! | `PUT /api/users/1` with `{"val":{..}}` | `put` (`PATCH` → `patch`) |
//! | `DELETE /api/users/1` | `delete` |
//!
//! * **Headers**: `rpc-fn` names the tool, `rpc-act` the act, `rpc-res-id` the id
//!   (each wins over the path and the body); `rpc-timeout` (ms) bounds the call;
//!   `rpc-client-id`/`x-client-id` becomes [`Ctx::caller`](crate::Ctx::caller);
//!   `req-id` is echoed on the response.
//! * **Casting**: a path id and plain query parameters (`?a=1&b=2`) are cast to the
//!   type the parameter's schema gives (`"42"` → `42`).
//! * **Success**: `200` with the JSON result (`null` for none).
//! * **Errors**: the error's HTTP status, and a body both JavaScript clients read,
//!   plus the stable code: `{"name":"users","code":404,"errorCode":"USER_NOT_FOUND",
//!   "data":{"what":"99"},"error":"Could not find 99."}`. Malformed JSON, a body that
//!   is not an object, and wrong argument types are `400` (`ARGUMENTS`, with the JSON
//!   Pointer in `data.path`); unknown and `api = false` tools alike are `404`; an
//!   unknown act is `404` (`UNKNOWN_ACT`); a body over the limit (1 MiB by default)
//!   is `413`; an `rpc-fn` header naming another tool than the path is `400`.
//! * **Streams**: a streaming tool answers a call that asks for a stream (with
//!   `"stream": true` when the tool declares a `stream` parameter, always
//!   otherwise) with `200`, `Content-Type: application/x-ndjson` and one JSON item
//!   per line, as it is produced; a slow reader slows the producer. An error after
//!   the first item ends the body with one error line shaped like an error body
//!   (`{"error": .., "errorCode": .., "code": ..}`). A client that disconnects
//!   cancels the call (its token fires, its cleanups run), streaming or not.
//! * **Safety** (the defaults; each has a setting on [`Api`] or [`Server`]):
//!   - only `GET`, `POST`, `PUT`, `PATCH`, `DELETE` reach tools (`OPTIONS` and
//!     `HEAD` run nothing; `CONNECT`, `TRACE` and made-up methods are 405), and only
//!     the REST verbs stand for acts;
//!   - `Host` must be a loopback name ([`LOOPBACK_HOSTS`], against DNS rebinding)
//!     and an `Origin`, when sent, the server's own (`HOST_NOT_ALLOWED`,
//!     `ORIGIN_NOT_ALLOWED`, 403);
//!   - a body must be JSON by its content type, or come with an `rpc-*`/`req-id`
//!     header (415 `UNSUPPORTED_MEDIA_TYPE`): a cross-site form cannot call a tool;
//!   - `GET` runs only REST `get`/`list` and tools or acts annotated `read_only`
//!     (405 with `Allow: POST` otherwise), since any page can make a browser GET;
//!   - `act` reaches only declared methods, and the auth hook
//!     ([`Api::auth`]) is asked with the canonical tool and act that will run
//!     (`"$promote"` however the client spelled it), before the body is read when
//!     the act is known without it; discovery carries no code;
//!   - a streaming tool collected into one answer stops at a cap (413
//!     `RESULT_TOO_LARGE`, [`Api::collect_limit`]), and yields between items, so
//!     its deadline, a disconnect and other calls all get their turn;
//!   - [`Server`] caps open connections ([`DEFAULT_MAX_CONNECTIONS`]) and closes
//!     those that do not send a request head in time ([`DEFAULT_HEADER_TIMEOUT`])
//!     or go silent with nothing running ([`DEFAULT_IDLE_TIMEOUT`]).
//!
//! * **HTTPS**: with the `rustls` feature, [`Client`] speaks `https://` (rustls, the
//!   webpki roots; [`Client::connect_with`] takes a reqwest client with other roots).
//!   The server speaks plain HTTP: put TLS in front of it (a proxy, or your own
//!   acceptor serving [`Api::router`]).
//!
//! ```no_run
//! # async fn run() -> std::io::Result<()> {
//! // Every #[tool] and Default #[tool_service] of the program, under /api.
//! toolfunc::http::serve("127.0.0.1:3000", toolfunc::Registry::global()).await
//! # }
//! ```

mod api;
mod client;
mod docs;
mod listen;
mod openapi;
mod server;
mod wire;

/// The axum version the server is built on (for mounting [`Api::router`]).
pub use axum;
/// The reqwest version the client is built on (for [`Client::connect_with`]).
pub use reqwest;

pub use api::{Api, AuthRequest, DEFAULT_BODY_LIMIT, LOOPBACK_HOSTS, router};
pub use axum::http::HeaderMap;
pub use client::Client;
pub use listen::{DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT, DEFAULT_MAX_CONNECTIONS};
pub use server::{Server, serve};
