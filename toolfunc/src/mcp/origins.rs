//! Which browser origins may call the streamable HTTP endpoint (the SDK checks the
//! `Origin` header against them).

use rmcp::transport::streamable_http_server::StreamableHttpServerConfig;

/// Which browser origins may call the endpoint.
#[derive(Clone, Debug)]
pub(super) enum Origins {
    /// Only these (the SDK's syntax: `scheme://host[:port|:*]`, or `null`).
    Only(Vec<String>),
    Any,
}

impl Origins {
    /// Loopback pages, on any port.
    pub(super) fn loopback() -> Self {
        let origins = ["localhost", "127.0.0.1", "[::1]"]
            .iter()
            .flat_map(|host| ["http", "https"].map(|scheme| format!("{scheme}://{host}:*")))
            .collect();
        Self::Only(origins)
    }

    /// `config` with these origins, unless it names its own.
    pub(super) fn apply(&self, config: StreamableHttpServerConfig) -> StreamableHttpServerConfig {
        if !config.allowed_origins.is_empty() {
            return config;
        }
        match self {
            Self::Only(origins) if origins.is_empty() => config.enforce_origin_validation(),
            Self::Only(origins) => config.with_allowed_origins(origins.iter().cloned()),
            Self::Any => config,
        }
    }
}
