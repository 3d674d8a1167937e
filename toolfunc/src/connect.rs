//! `connect`: a [`Transport`] chosen by a URL's scheme: the global registry, an
//! HTTP API, the workers of a NATS service. Above every transport it can open.

use std::sync::Arc;

use crate::error::ToolError;
use crate::registry::Registry;
use crate::transport::Transport;

/// Opens a transport chosen by the URL's scheme:
///
/// * `local:` (or `local://global`): [`Registry::global`] in this process;
/// * `http://host:port/api` (feature `http`): the API at that URL, through
///   `toolfunc::http::Client` (its discovery is loaded first);
/// * `nats://host:4222/<prefix>` (feature `nats`): the workers of a NATS service,
///   through `toolfunc::nats::Client` (the prefix is `toolfunc` without a path);
/// * `mcp+stdio:COMMAND ARG...`, `mcp+http(s)://…` (feature `mcp-client`): an MCP
///   server's tools, by their own names;
/// * `openapi+http(s)://…`, `openapi+file:PATH` (feature `openapi-client`): an
///   OpenAPI document's operations, by `operationId` (see `toolfunc::mount`).
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let local = toolfunc::connect("local:").await.unwrap();
/// let err = local.run("no_such_tool", serde_json::json!({})).await.unwrap_err();
/// assert_eq!(err.code(), "NOT_FOUND");
/// let err = toolfunc::connect("ftp://x").await.err().unwrap();
/// assert!(matches!(err, toolfunc::ToolError::BadUrl { .. }));
/// assert_eq!((err.code(), err.status()), ("BAD_URL", 400));
/// # });
/// ```
pub async fn connect(url: &str) -> Result<Arc<dyn Transport>, ToolError> {
    let scheme = url.split_once(':').map_or("", |(scheme, _)| scheme);
    match scheme.to_ascii_lowercase().as_str() {
        "local" => match url
            .split_once(':')
            .map(|(_, rest)| rest.trim_start_matches('/'))
        {
            Some("" | "global") => Ok(Arc::new(Registry::global().clone())),
            _ => Err(bad_url(
                url,
                "`local:` names the global registry: `local:` or `local://global`",
            )),
        },
        #[cfg(feature = "http-client")]
        "http" | "https" => Ok(Arc::new(crate::http::Client::connect(url).await?)),
        #[cfg(not(feature = "http-client"))]
        "http" | "https" => Err(bad_url(
            url,
            "HTTP transports need the `http-client` (or `http`) feature",
        )),
        #[cfg(feature = "nats")]
        "nats" | "tls" => Ok(Arc::new(crate::nats::Client::connect(url).await?)),
        #[cfg(not(feature = "nats"))]
        "nats" | "tls" => Err(bad_url(url, "NATS transports need the `nats` feature")),
        #[cfg(any(feature = "mcp-client", feature = "openapi-client"))]
        scheme if scheme.starts_with("mcp+") || scheme.starts_with("openapi+") => {
            let registry = Registry::new();
            // The tools hold their source open; the handle is not needed to keep it.
            let _mounted = crate::mount::Mount::new("", url)
                .into_registry(&registry)
                .await?;
            Ok(Arc::new(registry))
        }
        _ => Err(bad_url(
            url,
            "the scheme is not one of local, http, https, nats, tls, mcp+stdio, mcp+http(s), openapi+http(s), openapi+file",
        )),
    }
}

fn bad_url(url: &str, why: &str) -> ToolError {
    ToolError::BadUrl {
        url: url.to_owned(),
        reason: why.to_owned(),
    }
}
