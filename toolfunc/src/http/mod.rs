//! HTTP RPC and REST (feature `http`): serve a [`Registry`](crate::Registry) on
//! axum (feature `http-server` alone, for a program that only serves: no reqwest),
//! call a remote one with [`Client`] (feature `http-client` alone, for a program
//! that only calls, and in the browser as WebAssembly).
#![doc = include_str!("../docs/http.md")]

#[cfg(feature = "http-server")]
mod answer;
#[cfg(feature = "http-server")]
mod api;
#[cfg(feature = "http-server")]
mod body;
#[cfg(feature = "http-client")]
mod client;
#[cfg(feature = "http-server")]
mod cors;
#[cfg(feature = "http-server")]
mod doc_settings;
#[cfg(feature = "http-server")]
mod docs;
#[cfg(feature = "http-server")]
mod openapi;
#[cfg(feature = "http-server")]
mod prompts_resources;
#[cfg(feature = "http-server")]
mod respond;
#[cfg(feature = "http-server")]
mod routes;
#[cfg(feature = "http-server")]
mod server;
mod wire;

/// The axum version the server is built on (for mounting [`Api::router`]).
#[cfg(feature = "http-server")]
pub use axum;
/// The reqwest version the client is built on (for [`Client::connect_with`]).
#[cfg(feature = "http-client")]
pub use reqwest;

#[cfg(feature = "http-server")]
pub use crate::listen::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_DRAIN_LIMIT, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
};
/// The bounds of a search from outside (HTTP discovery's `?q=`, MCP's
/// `search_tools`): the same for both.
#[cfg(feature = "http-server")]
pub use crate::remote::search::{
    DEFAULT_MAX_SEARCH_QUERY, DEFAULT_MAX_SEARCH_RESULTS, DEFAULT_SEARCH_RESULTS,
};
#[cfg(feature = "http-server")]
pub use api::{
    Api, AuthRequest, DEFAULT_BODY_LIMIT, DEFAULT_METRICS_SCOPE, LOOPBACK_HOSTS, METRICS_PATH,
};
#[cfg(feature = "http-server")]
pub use axum::http::HeaderMap;
#[cfg(feature = "http-client")]
pub use client::Client;
#[cfg(feature = "http-server")]
pub use server::{Server, router, serve};
