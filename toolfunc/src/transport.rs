//! `Transport`: how a typed service client (or any caller) reaches tools — in
//! process through a [`Registry`], over HTTP through `http::Client`, or any other
//! way that carries a tool name and a JSON arguments object.

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use serde_json::Value;

use crate::{Registry, ToolError};

/// Carries calls to tools by name. Implemented by [`Registry`] (in process) and,
/// with the `http` and `nats` features, by `toolfunc::http::Client` and
/// `toolfunc::nats::Client`.
///
/// A call's arguments are the tool's arguments object; a service method is selected
/// with `act` in it, as in `{"act": "$hello", "name": "Ann"}`.
///
/// ```
/// use serde_json::json;
/// use toolfunc::{Registry, ToolFunc, Transport};
///
/// let registry = Registry::new();
/// registry.register(
///     ToolFunc::builder("echo").handler_sync(|_ctx, args| Ok(args)).build().unwrap(),
/// ).unwrap();
/// let transport: &dyn Transport = &registry;
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// assert_eq!(transport.call("echo", json!({"x": 1})).await.unwrap(), json!({"x": 1}));
/// # });
/// ```
pub trait Transport: Send + Sync {
    /// Runs the tool `name` and returns its result.
    fn call(&self, name: &str, args: Value) -> BoxFuture<'static, Result<Value, ToolError>>;

    /// Runs the tool `name` and yields its items one by one (a tool that does not
    /// stream yields its one result).
    fn call_stream(&self, name: &str, args: Value) -> BoxStream<'static, Result<Value, ToolError>>;
}

impl Transport for Registry {
    fn call(&self, name: &str, args: Value) -> BoxFuture<'static, Result<Value, ToolError>> {
        let registry = self.clone();
        let name = name.to_owned();
        Box::pin(async move { registry.run(&name, args).await })
    }

    fn call_stream(&self, name: &str, args: Value) -> BoxStream<'static, Result<Value, ToolError>> {
        self.run_stream(name, args).boxed()
    }
}

impl<T: Transport + ?Sized> Transport for std::sync::Arc<T> {
    fn call(&self, name: &str, args: Value) -> BoxFuture<'static, Result<Value, ToolError>> {
        (**self).call(name, args)
    }

    fn call_stream(&self, name: &str, args: Value) -> BoxStream<'static, Result<Value, ToolError>> {
        (**self).call_stream(name, args)
    }
}

/// Opens a transport chosen by the URL's scheme:
///
/// * `local:` (or `local://global`): [`Registry::global`] in this process;
/// * `http://host:port/api` (feature `http`): the API at that URL, through
///   `toolfunc::http::Client` (its discovery is loaded first);
/// * `nats://host:4222/<prefix>` (feature `nats`): the workers of a NATS service,
///   through `toolfunc::nats::Client` (the prefix is `toolfunc` without a path).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let local = toolfunc::transport::connect("local:").await.unwrap();
/// let err = local.call("no_such_tool", serde_json::json!({})).await.unwrap_err();
/// assert_eq!(err.code(), "NOT_FOUND");
/// assert_eq!(toolfunc::transport::connect("ftp://x").await.err().unwrap().code(), "BAD_URL");
/// # });
/// ```
pub async fn connect(url: &str) -> Result<std::sync::Arc<dyn Transport>, ToolError> {
    let scheme = url.split_once(':').map_or("", |(scheme, _)| scheme);
    match scheme.to_ascii_lowercase().as_str() {
        "local" => match url
            .split_once(':')
            .map(|(_, rest)| rest.trim_start_matches('/'))
        {
            Some("" | "global") => Ok(std::sync::Arc::new(Registry::global().clone())),
            _ => Err(bad_url(
                url,
                "`local:` names the global registry: `local:` or `local://global`",
            )),
        },
        #[cfg(feature = "http")]
        "http" | "https" => Ok(std::sync::Arc::new(
            crate::http::Client::connect(url).await?,
        )),
        #[cfg(not(feature = "http"))]
        "http" | "https" => Err(bad_url(url, "HTTP transports need the `http` feature")),
        #[cfg(feature = "nats")]
        "nats" | "tls" => Ok(std::sync::Arc::new(
            crate::nats::Client::connect(url).await?,
        )),
        #[cfg(not(feature = "nats"))]
        "nats" | "tls" => Err(bad_url(url, "NATS transports need the `nats` feature")),
        _ => Err(bad_url(
            url,
            "the scheme is not one of local, http, https, nats, tls",
        )),
    }
}

fn bad_url(url: &str, why: &str) -> ToolError {
    ToolError::custom("BAD_URL", 400, format!("cannot open `{url}`: {why}"))
}
