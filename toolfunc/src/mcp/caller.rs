//! Who a request's client is ([`ClientInfo`]), the options and runners its calls
//! get, whether its request is sessionless, and where its calls' log messages go.

use std::sync::{Mutex, PoisonError};

use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::{Value, json};

use crate::log::LogLevel;
use crate::options::{CallOptions, Surface};
use crate::trace::TraceContext;

/// The MCP client a call came from, as its `initialize` (or, for sessionless
/// clients, its request) named it: in the context of every MCP call
/// (`ctx.get::<toolfunc::mcp::ClientInfo>()`) for tools and call middleware. Its
/// `name` is also the call's [`caller`](crate::Ctx::caller). Over streamable HTTP
/// the request's headers are in the context too, as an
/// [`axum::http::HeaderMap`], when the registry has layers.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct ClientInfo {
    /// The client's name (`clientInfo.name`).
    pub name: String,
    /// The client's version (`clientInfo.version`).
    pub version: String,
}

impl ClientInfo {
    /// The client of `context`, read in place (the SDK's `client_info` copies the
    /// whole `Implementation`, icons and all): the request's `_meta` entry, else,
    /// for a request that may lean on its session (not a 2026-07-28 one), the
    /// session's `initialize`.
    pub(super) fn of(context: &RequestContext<RoleServer>) -> Option<Self> {
        Self::read(context, |client| client.map(Self::owned))
    }

    fn owned((name, version): (&str, &str)) -> Self {
        Self {
            name: name.to_owned(),
            version: version.to_owned(),
        }
    }

    /// `with` the client's name and version, borrowed.
    pub(super) fn read<R>(
        context: &RequestContext<RoleServer>,
        with: impl FnOnce(Option<(&str, &str)>) -> R,
    ) -> R {
        let from_meta = context
            .meta
            .get(CLIENT_INFO_KEY)
            .and_then(|info| Some((info.get("name")?.as_str()?, info.get("version")?.as_str()?)));
        if from_meta.is_some() || sessionless(context) {
            return with(from_meta);
        }
        let session = context.peer.peer_info();
        with(
            session
                .as_deref()
                .map(|s| (s.client_info.name.as_str(), s.client_info.version.as_str())),
        )
    }

    fn is(&self, client: Option<(&str, &str)>) -> bool {
        client.is_some_and(|(name, version)| self.name == name && self.version == version)
    }
}

/// The W3C trace context in a request's `_meta` (SEP-414), if a well-formed one
/// came.
pub(super) fn trace_of(context: &RequestContext<RoleServer>) -> Option<TraceContext> {
    TraceContext::read(|name| context.meta.get(name).and_then(Value::as_str))
}

/// The options of every call from `client`: the surface, and the client as caller
/// and in the context.
pub(super) fn client_options(client: Option<ClientInfo>) -> CallOptions {
    let options = CallOptions::new().surface(Surface::Mcp);
    match client {
        Some(client) => options.caller(client.name.as_str()).insert(client),
        None => options,
    }
}

/// A runner kept with the client it was made for, remade when another client asks.
#[derive(Default)]
pub(super) struct KeptRunner(Mutex<Option<(Option<ClientInfo>, crate::exec::runner::Runner)>>);

impl Clone for KeptRunner {
    /// A copy starts empty: the copy of a server may change the settings its
    /// runners are made from.
    fn clone(&self) -> Self {
        Self::default()
    }
}

impl KeptRunner {
    /// The runner for `client`: the kept one if it was made for the same client
    /// (name and version), else one `make` makes from the client's info, kept.
    pub(super) fn get(
        &self,
        client: Option<(&str, &str)>,
        make: impl FnOnce(Option<ClientInfo>) -> crate::exec::runner::Runner,
    ) -> crate::exec::runner::Runner {
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((info, runner)) = kept.as_ref()
            && info
                .as_ref()
                .map_or(client.is_none(), |info| info.is(client))
        {
            return runner.clone();
        }
        let info = client.map(ClientInfo::owned);
        let runner = make(info.clone());
        *kept = Some((info, runner.clone()));
        runner
    }
}

/// Where a call's log messages go.
#[derive(Clone, Copy)]
pub(super) enum LogGate {
    /// Nowhere: a sessionless request that set no level.
    Off,
    /// At or above the level of the request's `_meta`.
    Request(LogLevel),
    /// At or above the session's level (`logging/setLevel`).
    Session,
}

/// Whether the request is a sessionless one (2026-07-28 and later), which has no
/// `initialize`, no `logging/setLevel` and output of any JSON type.
pub(super) fn sessionless(context: &RequestContext<RoleServer>) -> bool {
    context
        .protocol_version()
        .is_some_and(|version| !version.has_initialize())
}

/// Where the log messages of the call `context` asks for go; `sessionless` for a
/// sessionless request.
pub(super) fn log_gate(
    context: &RequestContext<RoleServer>,
    sessionless: bool,
) -> Result<LogGate, ErrorData> {
    Ok(match context.meta.get(LOG_LEVEL_KEY) {
        Some(level) => LogGate::Request(serde_json::from_value(level.clone()).map_err(|_| {
            ErrorData::invalid_params(
                format!("_meta[\"{LOG_LEVEL_KEY}\"] must be one of {LOG_LEVELS}"),
                Some(json!({"logLevel": level})),
            )
        })?),
        None if sessionless => LogGate::Off,
        None => LogGate::Session,
    })
}

/// The `_meta` key of a request's log level.
const LOG_LEVEL_KEY: &str = "io.modelcontextprotocol/logLevel";
/// The `_meta` key of a 2026-07-28 request's client.
const CLIENT_INFO_KEY: &str = "io.modelcontextprotocol/clientInfo";

/// The level names, for error messages.
const LOG_LEVELS: &str = "debug, info, notice, warning, error, critical, alert, emergency";
