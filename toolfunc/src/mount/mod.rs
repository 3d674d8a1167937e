//! Tools from anywhere: the tools of an MCP server or of an HTTP service described
//! by OpenAPI, mounted into a [`Registry`] as ordinary tools.
//!
//! A mounted tool is listed and called like one written in Rust, on every surface
//! (HTTP, MCP, NATS, [`llm`](crate::llm) exports and `run_tool_calls`, search),
//! under the registry's scopes, layers, metrics and traces. Its call goes to the
//! source; the call's span is the parent of the source request's, and W3C trace
//! context goes with it.
//!
//! | source | feature | what is mounted |
//! | --- | --- | --- |
//! | `mcp+stdio:COMMAND ARG...`: an MCP server started as a child process (the rest split as a shell would, without a shell; its stderr is this process's) | `mcp-client` | its tools, prompts and resources |
//! | `mcp+http://…`, `mcp+https://…`: an MCP server's streamable HTTP endpoint, sessionless (2026-07-28) where it offers that, else in a session | `mcp-client` | its tools, prompts and resources |
//! | `openapi+http://…/openapi.json`, `openapi+https://…`, `openapi+file:PATH`: an OpenAPI 3.0 or 3.1 document (JSON or YAML) | `openapi-client` | its operations, by `operationId` |
//!
//! Each tool enters the registry as `{namespace}_{tool}` ([`Mount::separator`]
//! sets the `_`; an empty namespace keeps the source's names), with the characters
//! MCP does not take in a name replaced by `_`; an MCP source's prompts are named
//! the same way, its resources keep their URIs. [`Mount`] selects, renames and
//! guards them; [`Registry::mount`] takes a source as it is.
//!
//! **MCP sources** answer with MCP's own result (`{"content": [..],
//! "structuredContent": ..}`, a [`Content`](crate::Content) on every surface); a
//! result the server marks `isError` is a `FAILED` error with its text. The mount
//! follows the server's `list_changed` notifications (or lists again every
//! [`Mount::refresh_every`]); a child that exits is started again, waiting 250 ms
//! and doubling to 30 s while starts fail, and its tools answer `UNAVAILABLE`
//! (503) meanwhile. [`Mounted::close`] ends the child.
//!
//! **OpenAPI operations** take their path, query, header and cookie parameters by
//! name (each property's `x-toolfunc-in` says where it goes) and the request body
//! as `body`, in one arguments object checked against a schema made at its first
//! read (the document's `$ref`s copied into `$defs`, OpenAPI 3.0's `nullable` and
//! boolean bounds turned into JSON Schema's). The call goes to the document's
//! `servers[0].url` (resolved against the document's own URL) or
//! [`Mount::base_url`]; a JSON answer is the result, other text a string, a 4xx an
//! `UPSTREAM` error with the source's status and its body in the data, a 5xx the
//! same as 502.
//!
//! **Credentials.** A mount's own ([`Mount::bearer`], [`Mount::header`], an OAuth
//! client-credentials grant with [`Mount::client_credentials`]) are the only ones
//! sent to its source: a token an inbound caller presented to this server is
//! never passed on. A source that cannot be reached when mounted fails the mount
//! with `UNAVAILABLE`, naming it.
//!
//! ```no_run
//! # async fn run() -> Result<(), toolfunc::ToolError> {
//! use toolfunc::Registry;
//! use toolfunc::mount::Mount;
//!
//! let registry = Registry::new();
//! // Every tool of a Python MCP server, as `py_<tool>`.
//! let py = registry.mount("py", "mcp+stdio:python3 server.py").await?;
//! // Two operations of a service, as `pets_<operationId>`, for callers with a scope.
//! let pets = Mount::new("pets", "openapi+http://127.0.0.1:8080/openapi.json")
//!     .include(["listPets", "getPet"])
//!     .scopes(["pets:read"])
//!     .bearer("a-token-of-this-mount")
//!     .into_registry(&registry)
//!     .await?;
//! println!("{:?} {:?}", py.names(), pets.names());
//! # Ok(()) }
//! ```

mod credentials;
#[cfg(feature = "mcp-client")]
mod mcp;
#[cfg(feature = "mcp-client")]
mod mcp_http;
#[cfg(feature = "openapi-client")]
mod openapi;
#[cfg(feature = "openapi-client")]
mod openapi_schema;
mod source;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::error::ToolError;
#[cfg(feature = "mcp-client")]
use crate::prompt::PromptBuilder;
use crate::registry::Registry;
use crate::registry::options::{RegisterOptions, UnregisterOptions};
#[cfg(feature = "mcp-client")]
use crate::resource::ResourceBuilder;
use crate::tool::{ToolBuilder, ToolFunc};

pub use credentials::ClientCredentials;
pub use source::Source;

/// The longest tool name MCP takes.
pub const MAX_NAME_LEN: usize = 128;

/// How long a source may take to answer its first listing, unless
/// [`Mount::connect_timeout`] says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_secs(30);

/// The longest answer of a source a mounted call reads, unless
/// [`Mount::max_response_bytes`] says otherwise: 16 MiB.
pub const DEFAULT_MAX_RESPONSE_BYTES: usize = 16 * 1024 * 1024;

/// A source and how its tools enter a registry: which, under what names, for which
/// callers, with which credentials.
///
/// ```
/// use toolfunc::mount::Mount;
///
/// let mount = Mount::new("gh", "mcp+stdio:github-mcp --read-only")
///     .separator(".")
///     .exclude(["delete_repo"])
///     .rename("search_code", "code_search")
///     .scopes(["github"]);
/// assert_eq!(mount.name_for("code_search"), Some("gh.code_search".into()));
/// ```
#[derive(Clone)]
#[must_use]
pub struct Mount {
    pub(crate) namespace: String,
    pub(crate) source: String,
    pub(crate) separator: String,
    pub(crate) include: Vec<String>,
    pub(crate) exclude: Vec<String>,
    pub(crate) include_tags: Vec<String>,
    pub(crate) exclude_tags: Vec<String>,
    pub(crate) rename: BTreeMap<String, String>,
    pub(crate) scopes: Vec<String>,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) base_url: Option<String>,
    pub(crate) connect_timeout: Duration,
    pub(crate) call_timeout: Option<Duration>,
    pub(crate) refresh_every: Option<Duration>,
    pub(crate) kinds: bool,
    pub(crate) credentials: Option<ClientCredentials>,
    pub(crate) max_response_bytes: usize,
}

impl std::fmt::Debug for Mount {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Header values are credentials: only their names are shown.
        let headers: Vec<&str> = self.headers.iter().map(|(name, _)| name.as_str()).collect();
        f.debug_struct("Mount")
            .field("namespace", &self.namespace)
            .field("source", &self.source)
            .field("separator", &self.separator)
            .field("include", &self.include)
            .field("exclude", &self.exclude)
            .field("include_tags", &self.include_tags)
            .field("exclude_tags", &self.exclude_tags)
            .field("rename", &self.rename)
            .field("scopes", &self.scopes)
            .field("headers", &headers)
            .field("base_url", &self.base_url)
            .field("connect_timeout", &self.connect_timeout)
            .field("call_timeout", &self.call_timeout)
            .field("refresh_every", &self.refresh_every)
            .field("prompts_and_resources", &self.kinds)
            .field("credentials", &self.credentials)
            .field("max_response_bytes", &self.max_response_bytes)
            .finish()
    }
}

impl Mount {
    /// The tools of `source` (a URL of the forms in the [module docs](self)) under
    /// `namespace`.
    pub fn new(namespace: impl Into<String>, source: impl Into<String>) -> Self {
        Self {
            namespace: namespace.into(),
            source: source.into(),
            separator: "_".into(),
            include: Vec::new(),
            exclude: Vec::new(),
            include_tags: Vec::new(),
            exclude_tags: Vec::new(),
            rename: BTreeMap::new(),
            scopes: Vec::new(),
            headers: Vec::new(),
            base_url: None,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            call_timeout: None,
            refresh_every: None,
            kinds: true,
            credentials: None,
            max_response_bytes: DEFAULT_MAX_RESPONSE_BYTES,
        }
    }

    /// What joins the namespace and a tool's name (`_` unless set).
    pub fn separator(mut self, separator: impl Into<String>) -> Self {
        self.separator = separator.into();
        self
    }

    /// Mounts only the tools (and an MCP source's prompts) of these source names
    /// (all unless set).
    pub fn include<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.include.extend(names.into_iter().map(Into::into));
        self
    }

    /// Leaves out the tools of these source names.
    pub fn exclude<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.exclude.extend(names.into_iter().map(Into::into));
        self
    }

    /// Mounts only the tools with one of these tags (an OpenAPI operation's `tags`).
    pub fn include_tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.include_tags.extend(tags.into_iter().map(Into::into));
        self
    }

    /// Leaves out the tools with one of these tags.
    pub fn exclude_tags<S: Into<String>>(mut self, tags: impl IntoIterator<Item = S>) -> Self {
        self.exclude_tags.extend(tags.into_iter().map(Into::into));
        self
    }

    /// Mounts the source's tool `from` as `to` (then namespaced).
    pub fn rename(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.rename.insert(from.into(), to.into());
        self
    }

    /// Scopes a caller needs, besides the tool's own, to see and call each mounted
    /// tool (see [`ToolBuilder::scopes`]).
    pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
        self.scopes.extend(scopes.into_iter().map(Into::into));
        self
    }

    /// Sends `authorization: Bearer {token}` with every request to the source
    /// (HTTP sources; for `mcp+stdio:` it is the child's business).
    pub fn bearer(self, token: impl AsRef<str>) -> Self {
        let value = format!("Bearer {}", token.as_ref());
        self.header("authorization", value)
    }

    /// Asks an authorization server for the mount's own token (an OAuth 2.0
    /// client-credentials grant) and sends it as a bearer token with every
    /// request to the source (HTTP sources); a new one is asked for before it
    /// expires, and after the source refuses it.
    pub fn client_credentials(mut self, grant: ClientCredentials) -> Self {
        self.credentials = Some(grant);
        self
    }

    /// Sends a header with every request to the source (HTTP sources).
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The URL an OpenAPI source's operations are called at, instead of the
    /// document's `servers[0].url`.
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.base_url = Some(url.into());
        self
    }

    /// How long the source may take to answer its first listing
    /// ([`DEFAULT_CONNECT_TIMEOUT`] unless set).
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// A deadline for each call of a mounted tool (its caller's, or none, unless
    /// set).
    pub fn call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = Some(timeout);
        self
    }

    /// The longest answer of the source a call reads
    /// ([`DEFAULT_MAX_RESPONSE_BYTES`] unless set): a longer one fails the call
    /// (`UPSTREAM`, 502) before it is held. For MCP over HTTP it bounds each JSON
    /// answer and each event of a stream.
    pub fn max_response_bytes(mut self, bytes: usize) -> Self {
        self.max_response_bytes = bytes;
        self
    }

    /// Lists an MCP source's tools again this often, for servers that send no
    /// `notifications/tools/list_changed`.
    pub fn refresh_every(mut self, every: Duration) -> Self {
        self.refresh_every = Some(every);
        self
    }

    /// Whether an MCP source's prompts and resources are mounted too (`true` unless
    /// set). Prompts are named as tools are; resources keep their URIs.
    pub fn prompts_and_resources(mut self, yes: bool) -> Self {
        self.kinds = yes;
        self
    }

    /// The name a source's tool `name` takes in the registry, or `None` when the
    /// mount leaves it out (by name; tags are known only to the source).
    pub fn name_for(&self, name: &str) -> Option<String> {
        if (!self.include.is_empty() && !self.include.iter().any(|n| n == name))
            || self.exclude.iter().any(|n| n == name)
        {
            return None;
        }
        let local = self.rename.get(name).map_or(name, String::as_str);
        let full = if self.namespace.is_empty() {
            local.to_owned()
        } else {
            format!("{}{}{local}", self.namespace, self.separator)
        };
        let name: String = full
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        (!name.is_empty() && name.len() <= MAX_NAME_LEN).then_some(name)
    }

    fn takes_tags(&self, tags: &[String]) -> bool {
        (self.include_tags.is_empty() || tags.iter().any(|t| self.include_tags.contains(t)))
            && !tags.iter().any(|t| self.exclude_tags.contains(t))
    }

    /// Opens the source and registers its tools in `registry`. Fails with
    /// `BAD_URL` for a source this build cannot open, `UNAVAILABLE` when the
    /// source cannot be reached or read within the connect timeout, and
    /// `CONFLICT` when a mounted name is taken in the registry (nothing of the
    /// mount stays registered then).
    pub async fn into_registry(self, registry: &Registry) -> Result<Mounted, ToolError> {
        let source = Source::parse(&self.source)?;
        let mount = Arc::new(self);
        let state = Arc::new(MountState {
            mount: Arc::clone(&mount),
            registry: registry.clone(),
            names: Mutex::new(Vec::new()),
            prompts: Mutex::new(Vec::new()),
            resources: Mutex::new(Vec::new()),
        });
        let Ok(opened) =
            tokio::time::timeout(mount.connect_timeout, open_source(&source, &state)).await
        else {
            // What the source had placed before time ran out goes with it.
            state.remove_all();
            return Err(unavailable(format!(
                "mount `{}`: {} did not answer within {:?}",
                mount.namespace, mount.source, mount.connect_timeout
            )));
        };
        let opened = opened?;
        Ok(Mounted {
            state,
            keep: opened,
        })
    }
}

impl Registry {
    /// Mounts every tool of `source` as `{namespace}_{tool}`: [`Mount`] with its
    /// defaults. See the [`mount`](crate::mount) module.
    pub async fn mount(
        &self,
        namespace: impl Into<String>,
        source: impl Into<String>,
    ) -> Result<Mounted, ToolError> {
        Mount::new(namespace, source).into_registry(self).await
    }
}

/// A tool a source offers, before the mount names it.
pub(crate) struct Offer {
    /// Its name at the source.
    pub(crate) name: String,
    /// Its tags (OpenAPI's), for [`Mount::include_tags`].
    pub(crate) tags: Vec<String>,
    /// Makes its builder (metadata and handler) under the registry's name.
    pub(crate) build: Box<dyn FnOnce(String) -> ToolBuilder + Send>,
}

/// Makes a mounted prompt's builder under its registry name.
#[cfg(feature = "mcp-client")]
pub(crate) type PromptOffer = Box<dyn FnOnce(String) -> PromptBuilder + Send>;

/// A mount's place in its registry: the names it holds there.
pub(crate) struct MountState {
    pub(crate) mount: Arc<Mount>,
    registry: Registry,
    names: Mutex<Vec<String>>,
    /// The names of the prompts it holds there.
    prompts: Mutex<Vec<String>>,
    /// The addresses (URIs and templates) of the resources it holds there.
    resources: Mutex<Vec<String>>,
}

impl MountState {
    /// Registers `offers` as the mount's tools, in place of those it held: new names
    /// are added, names it no longer offers go. `first`: a name taken by another
    /// tool is a `CONFLICT` and nothing is registered; later, such a tool is left
    /// out with a warning.
    pub(crate) fn place(&self, offers: Vec<Offer>, first: bool) -> Result<(), ToolError> {
        let mount = &self.mount;
        let mut tools: Vec<ToolFunc> = Vec::with_capacity(offers.len());
        for offer in offers {
            if !mount.takes_tags(&offer.tags) {
                continue;
            }
            let Some(name) = mount.name_for(&offer.name) else {
                if mount
                    .include
                    .iter()
                    .chain(&mount.exclude)
                    .all(|n| *n != offer.name)
                {
                    tracing::warn!(mount = %mount.namespace, tool = %offer.name, "left out: its mounted name is empty or longer than {MAX_NAME_LEN}");
                }
                continue;
            };
            let mut builder = (offer.build)(name.clone()).scopes(mount.scopes.iter().cloned());
            if let Some(timeout) = mount.call_timeout {
                builder = builder.timeout(timeout);
            }
            match builder.build() {
                Ok(tool) => tools.push(tool),
                Err(err) => {
                    tracing::warn!(mount = %mount.namespace, tool = %name, error = %err, "left out: not a tool toolfunc can hold");
                }
            }
        }
        let mut held = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        let taken = |name: &str| !held.iter().any(|n| n == name) && self.registry.has(name);
        if first && let Some(tool) = tools.iter().find(|tool| taken(tool.name())) {
            return Err(ToolError::conflict(format!(
                "mount `{}`: `{}` is already a tool of this registry",
                mount.namespace,
                tool.name()
            )));
        }
        let mut placed = Vec::with_capacity(tools.len());
        for tool in tools {
            let name = tool.name().to_owned();
            if taken(&name) {
                tracing::warn!(mount = %mount.namespace, tool = %name, "left out: the name is another tool's");
                continue;
            }
            let options = RegisterOptions::new().allow_override(true);
            match self.registry.register_with(tool, options) {
                Ok(_) => placed.push(name),
                Err(err) if first => {
                    for name in &placed {
                        self.registry.unregister_with(name, forced());
                    }
                    return Err(err);
                }
                Err(err) => {
                    tracing::warn!(mount = %mount.namespace, tool = %name, error = %err, "left out");
                }
            }
        }
        for gone in held.iter().filter(|n| !placed.contains(n)) {
            self.registry.unregister_with(gone, forced());
        }
        *held = placed;
        Ok(())
    }

    fn names(&self) -> Vec<String> {
        self.names
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Registers `prompts` (each a source name and the builder it makes under a
    /// registry name) in place of those the mount held; one whose name is another
    /// prompt's is left out with a warning.
    #[cfg(feature = "mcp-client")]
    pub(crate) fn place_prompts(&self, prompts: Vec<(String, PromptOffer)>) {
        let mut held = self.prompts.lock().unwrap_or_else(PoisonError::into_inner);
        for name in held.drain(..) {
            self.registry.unregister_prompt(&name);
        }
        for (source_name, make) in prompts {
            let Some(name) = self.mount.name_for(&source_name) else {
                continue;
            };
            let built = make(name.clone())
                .scopes(self.mount.scopes.iter().cloned())
                .build();
            match built.and_then(|prompt| self.registry.register_prompt(prompt)) {
                Ok(()) => held.push(name),
                Err(err) => {
                    tracing::warn!(mount = %self.mount.namespace, prompt = %name, error = %err, "left out");
                }
            }
        }
    }

    /// Registers `resources` in place of those the mount held; one at an address
    /// another resource holds is left out with a warning.
    #[cfg(feature = "mcp-client")]
    pub(crate) fn place_resources(&self, resources: Vec<ResourceBuilder>) {
        let mut held = self
            .resources
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for address in held.drain(..) {
            self.registry.unregister_resource(&address);
        }
        for make in resources {
            let built = make.scopes(self.mount.scopes.iter().cloned()).build();
            match built {
                Ok(resource) => {
                    let address = resource.address().to_owned();
                    match self.registry.register_resource(resource) {
                        Ok(()) => held.push(address),
                        Err(err) => {
                            tracing::warn!(mount = %self.mount.namespace, resource = %address, error = %err, "left out");
                        }
                    }
                }
                Err(err) => {
                    tracing::warn!(mount = %self.mount.namespace, error = %err, "a resource left out");
                }
            }
        }
    }

    fn remove_all(&self) {
        let mut held = self.names.lock().unwrap_or_else(PoisonError::into_inner);
        for name in held.drain(..) {
            self.registry.unregister_with(&name, forced());
        }
        for name in self
            .prompts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            self.registry.unregister_prompt(&name);
        }
        for address in self
            .resources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
        {
            self.registry.unregister_resource(&address);
        }
    }

    /// The names of the prompts and the addresses of the resources it holds.
    fn kinds(&self) -> (Vec<String>, Vec<String>) {
        let prompts = self
            .prompts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        let resources = self
            .resources
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        (prompts, resources)
    }
}

/// What keeps a source open: its connection, a child process, a task that keeps
/// the tools in step. Dropped (or [`closed`](Opened::close)) when the mount ends.
pub(crate) trait Opened: Send + Sync {
    /// Ends the connection (a child process: its stdin closed, then ended).
    fn close(&self) -> futures::future::BoxFuture<'_, ()>;
}

/// A mounted source: the names its tools hold in the registry. Dropping it leaves
/// the tools registered and the source open; [`close`](Self::close) takes them
/// out and ends the source.
pub struct Mounted {
    state: Arc<MountState>,
    keep: Box<dyn Opened>,
}

impl std::fmt::Debug for Mounted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mounted")
            .field("namespace", &self.state.mount.namespace)
            .field("source", &self.state.mount.source)
            .field("names", &self.names())
            .finish_non_exhaustive()
    }
}

impl Mounted {
    /// The names the mounted tools hold in the registry now, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names = self.state.names();
        names.sort();
        names
    }

    /// The names of the mounted prompts, and the URIs (and templates) of the
    /// mounted resources, sorted.
    pub fn prompts_and_resources(&self) -> (Vec<String>, Vec<String>) {
        let (mut prompts, mut resources) = self.state.kinds();
        prompts.sort();
        resources.sort();
        (prompts, resources)
    }

    /// The mount's namespace.
    pub fn namespace(&self) -> &str {
        &self.state.mount.namespace
    }

    /// Takes the mounted tools out of the registry and ends the source (an MCP
    /// child process exits).
    pub async fn close(self) {
        // The source first: nothing it says after this places tools again.
        self.keep.close().await;
        self.state.remove_all();
    }
}

/// The HTTP client of a mount's requests: its headers (credentials) on each, marked
/// sensitive so that no log shows them.
pub(crate) fn http_client(mount: &Mount) -> Result<reqwest::Client, ToolError> {
    use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
    let bad = |name: &str, err: &dyn std::fmt::Display| ToolError::BadUrl {
        url: mount.source.clone(),
        reason: format!("the header `{name}` cannot be sent: {err}"),
    };
    let mut headers = HeaderMap::new();
    for (name, value) in &mount.headers {
        let header = HeaderName::try_from(name.as_str()).map_err(|e| bad(name, &e))?;
        let mut value = HeaderValue::try_from(value.as_str()).map_err(|e| bad(name, &e))?;
        value.set_sensitive(true);
        headers.insert(header, value);
    }
    reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .map_err(|e| unavailable(format!("mount `{}`: {e}", mount.namespace)))
}

/// The mount's token source, when it has a client-credentials grant.
pub(crate) fn tokens(mount: &Mount, http: &reqwest::Client) -> Option<Arc<credentials::Tokens>> {
    mount
        .credentials
        .clone()
        .map(|grant| credentials::Tokens::new(grant, http.clone()))
}

/// A reqwest error with its causes (its own message, "error sending request",
/// says little).
pub(crate) fn cause(err: &reqwest::Error) -> String {
    let mut message = err.to_string();
    let mut source = std::error::Error::source(err);
    while let Some(inner) = source {
        message.push_str(": ");
        message.push_str(&inner.to_string());
        source = inner.source();
    }
    message
}

/// A mounted tool goes whatever its registration count (each new listing
/// registers it again in place).
fn forced() -> UnregisterOptions {
    UnregisterOptions::new().force()
}

/// `UNAVAILABLE` (503): a source that cannot be reached or read now.
pub(crate) fn unavailable(message: impl Into<String>) -> ToolError {
    ToolError::custom("UNAVAILABLE", 503, message)
}

/// Opens the source and places its tools.
async fn open_source(
    source: &Source,
    state: &Arc<MountState>,
) -> Result<Box<dyn Opened>, ToolError> {
    let _ = state;
    match source {
        #[cfg(feature = "mcp-client")]
        Source::McpStdio { .. } | Source::McpHttp(_) => mcp::open(source, state).await,
        #[cfg(feature = "openapi-client")]
        Source::OpenApiUrl(_) | Source::OpenApiFile(_) => openapi::open(source, state).await,
        #[allow(unreachable_patterns)]
        _ => Err(ToolError::BadUrl {
            url: state.mount.source.clone(),
            reason:
                "this source needs the `mcp-client` (MCP) or `openapi-client` (OpenAPI) feature"
                    .into(),
        }),
    }
}
