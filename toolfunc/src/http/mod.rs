//! HTTP RPC and REST (feature `http`): serve a [`Registry`](crate::Registry) on
//! axum, call a remote one with [`Client`].
#![doc = include_str!("../docs/http.md")]

mod api;
mod client;
mod docs;
mod kinds;
mod openapi;
mod server;
mod wire;

/// The axum version the server is built on (for mounting [`Api::router`]).
pub use axum;
/// The reqwest version the client is built on (for [`Client::connect_with`]).
pub use reqwest;

pub use crate::listen::{
    DEFAULT_BODY_TIMEOUT, DEFAULT_DRAIN_LIMIT, DEFAULT_HEADER_TIMEOUT, DEFAULT_IDLE_TIMEOUT,
    DEFAULT_MAX_CONNECTIONS,
};
pub use api::{
    Api, AuthRequest, DEFAULT_BODY_LIMIT, DEFAULT_MAX_SEARCH_QUERY, DEFAULT_MAX_SEARCH_RESULTS,
    DEFAULT_METRICS_SCOPE, DEFAULT_SEARCH_RESULTS, LOOPBACK_HOSTS, METRICS_PATH, router,
};
pub use axum::http::HeaderMap;
pub use client::Client;
pub use server::{Server, serve};
