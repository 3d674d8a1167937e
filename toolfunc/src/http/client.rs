//! The HTTP client: loads a server's discovery into a local registry whose tools
//! call the server.

use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use futures::stream::BoxStream;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::{Method, Url};
use serde_json::{Map, Value};
use tracing::Instrument;
use tracing::field::Empty;

use super::wire::{self, NDJSON, REQ_ID, RPC_ACT, RPC_FN, RPC_RES_ID, request_id};
use crate::content::Resource;
use crate::error::ToolError;
use crate::exec::runner::Runner;
use crate::exec::stream::ToolStream;
use crate::options::CallOptions;
use crate::prompt::{PromptDefinition, PromptResult};
use crate::propagate;
use crate::registry::Registry;
use crate::resource::ResourceDefinition;
use crate::tool::service::REST_VERBS;
use crate::tool::{Answer, ItemStream};
use crate::tool::{ToolDefinition, ToolFunc, ToolRef};
use crate::trace::TraceContext;
use crate::transport::Transport;

/// What `encodeURIComponent` leaves alone; everything else is percent-encoded
/// (spaces as `%20`, never `+`).
const COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// A remote tool server (toolfunc's or a JavaScript `@isdk/tool-rpc` one) as a
/// registry: every remote tool runs by name, like a local one.
///
/// The client holds a [`Registry`] ([`registry`](Self::registry)) with one tool per
/// remote tool: [`run`](Self::run), [`run_stream`](Self::run_stream),
/// [`with`](Self::with) and aliases work as for local tools, and a `&Client`
/// converts into that registry, to serve the remote tools again
/// (`http::Api::new(&client)`) or to isolate a child of them. Service acts and REST
/// verbs are written in their wire form: `{"act": "$hello", "name": "Ann"}`,
/// `{"act": "get", "id": "1"}`, `{"act": "post", "val": {..}}`. Errors come back as
/// the [`ToolError`] the server raised (same `code()`). A timeout or a cancelled
/// call aborts its HTTP request.
///
/// ```no_run
/// # async fn run() -> Result<(), toolfunc::ToolError> {
/// use serde_json::json;
/// let client = toolfunc::http::Client::connect("http://127.0.0.1:3000/api").await?;
/// assert_eq!(client.run("add", json!({"a": 1, "b": 2})).await?, json!(3.0));
/// let alice = client.run("users", json!({"act": "get", "id": "1"})).await?;
/// assert!(client.has("add"));
///
/// // The remote tools, served again under /api on another port.
/// let api = toolfunc::http::Api::new(&client);
/// # let _ = (alice, api); Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Client {
    registry: Registry,
    remote: Arc<Remote>,
}

#[derive(Debug)]
struct Remote {
    base: Url,
    http: reqwest::Client,
    /// The remote definitions, for REST verb mapping.
    registry: Registry,
}

impl Client {
    /// Loads the discovery of the API at `url` (e.g. `http://host:3000/api`).
    pub async fn connect(url: &str) -> Result<Self, ToolError> {
        Self::connect_with(url, reqwest::Client::new()).await
    }

    /// Like [`connect`](Self::connect), with a configured `reqwest::Client` (default
    /// headers such as `authorization`, proxies, timeouts).
    pub async fn connect_with(url: &str, http: reqwest::Client) -> Result<Self, ToolError> {
        let base = Url::parse(url.trim_end_matches('/')).map_err(|e| ToolError::BadUrl {
            url: url.to_owned(),
            reason: format!("it is not a URL: {e}"),
        })?;
        let registry = Registry::new();
        let remote = Arc::new(Remote {
            base,
            http,
            registry: registry.clone(),
        });
        // Discovery: `GET <api>`, no trailing slash (older servers match it exactly).
        let response = remote
            .send(
                remote
                    .http
                    .get(remote.base.clone())
                    .header(REQ_ID, request_id()),
            )
            .await?;
        let listing = remote.json(response, "").await?;
        let Value::Object(entries) = listing else {
            return Err(ToolError::Output {
                path: None,
                message: "the discovery response is not an object of tool definitions".into(),
            });
        };
        for (name, entry) in &entries {
            let Some(def) = wire::definition_from_wire(name, entry) else {
                tracing::warn!(tool = %name, "skipping a discovery entry that is not a tool definition");
                continue;
            };
            registry.register(remote_tool(&remote, def)?)?;
        }
        Ok(Self { registry, remote })
    }

    /// The registry of remote tools.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The API's URL.
    pub fn url(&self) -> &str {
        self.remote.base.as_str()
    }

    /// Runs the remote tool `name` (a name or an alias) with an arguments object, as
    /// [`Registry::run`] does.
    pub async fn run(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        self.registry.run(name, args).await
    }

    /// Runs the remote tool `name` and yields its items as the server sends them
    /// (a tool that does not stream yields its one result), as
    /// [`Registry::run_stream`] does.
    pub fn run_stream(&self, name: &str, args: Value) -> ToolStream {
        self.registry.run_stream(name, args)
    }

    /// A [`Runner`] over the remote tools whose calls all carry `options` (a
    /// timeout, a cancellation token, a caller), as [`Registry::with`] makes.
    pub fn with(&self, options: CallOptions) -> Runner {
        self.registry.with(options)
    }

    /// The remote tool `name`, by name or alias.
    pub fn get(&self, name: &str) -> Option<ToolRef> {
        self.registry.get(name)
    }

    /// Whether the server offers a tool by `name` (a name or an alias).
    pub fn has(&self, name: &str) -> bool {
        self.registry.has(name)
    }

    /// The names of the remote tools, sorted.
    pub fn names(&self) -> Vec<String> {
        self.registry.names()
    }

    /// The definitions of the remote tools, sorted by name, as
    /// [`Registry::definitions`] gives them.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.registry.definitions()
    }

    /// The prompts the server offers this client, by name (`GET <api>/_prompts`).
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), toolfunc::ToolError> {
    /// use serde_json::json;
    /// let client = toolfunc::http::Client::connect("http://127.0.0.1:3000/api").await?;
    /// for prompt in client.prompts().await? {
    ///     println!("{}: {:?}", prompt.name, prompt.description);
    /// }
    /// let review = client.prompt("review", json!({"code": "fn main() {}"})).await?;
    /// println!("{} messages", review.messages.len());
    /// # Ok(()) }
    /// ```
    pub async fn prompts(&self) -> Result<Vec<PromptDefinition>, ToolError> {
        let listing = self.remote.get_kind(&[PROMPTS], None).await?;
        listed(listing, "prompts")
    }

    /// Gets the server's prompt `name` with `args` (an object of its arguments, or
    /// `null`): `POST <api>/_prompts/<name>`. Errors are the server's (`NOT_FOUND`,
    /// `ARGUMENTS`, `INSUFFICIENT_SCOPE`, ...).
    pub async fn prompt(&self, name: &str, args: Value) -> Result<PromptResult, ToolError> {
        let args = match args {
            Value::Null => Value::Object(Map::new()),
            args @ Value::Object(_) => args,
            _ => {
                return Err(ToolError::arguments(
                    "",
                    "a prompt's arguments are an object of named arguments",
                ));
            }
        };
        let remote = &self.remote;
        let url = remote.url_of(&[PROMPTS, name]);
        let span = request_span(&url);
        propagate::name(&span, "POST".to_owned());
        span.record("http.request.method", "POST");
        let request = remote
            .http
            .post(url)
            .header(REQ_ID, request_id())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(args.to_string());
        let answer = async {
            let response = remote.send(with_trace(request, &span)).await?;
            remote.json(response, name).await
        }
        .instrument(span.clone())
        .await?;
        PromptResult::from_value(answer)
    }

    /// The resources and the resource templates the server offers this client
    /// (`GET <api>/_resources`): each definition has its `uri` or its
    /// `uri_template`.
    ///
    /// ```no_run
    /// # async fn run() -> Result<(), toolfunc::ToolError> {
    /// let client = toolfunc::http::Client::connect("http://127.0.0.1:3000/api").await?;
    /// for resource in client.resources().await? {
    ///     println!("{} ({})", resource.address(), resource.name);
    /// }
    /// let contents = client.read("demo://readme").await?;
    /// println!("{:?}", contents[0].text);
    /// # Ok(()) }
    /// ```
    pub async fn resources(&self) -> Result<Vec<ResourceDefinition>, ToolError> {
        let listing = self.remote.get_kind(&[RESOURCES], None).await?;
        let mut resources = listed(listing.clone(), "resources")?;
        resources.extend(listed::<ResourceDefinition>(listing, "resourceTemplates")?);
        Ok(resources)
    }

    /// Reads the server's resource at `uri` (`GET <api>/_resources/read?uri=`): its
    /// contents, or the server's error (`NOT_FOUND` when nothing it offers this
    /// client is at that URI).
    pub async fn read(&self, uri: &str) -> Result<Vec<Resource>, ToolError> {
        let answer = self
            .remote
            .get_kind(&[RESOURCES, "read"], Some(uri))
            .await?;
        let contents = answer.get("contents").cloned().unwrap_or(Value::Null);
        serde_json::from_value(contents).map_err(|err| ToolError::Output {
            path: Some("/contents".into()),
            message: format!("the server's read is not a list of contents: {err}"),
        })
    }
}

/// The path segment of the prompts on a toolfunc server.
const PROMPTS: &str = "_prompts";
/// The path segment of the resources on a toolfunc server.
const RESOURCES: &str = "_resources";

/// The list under `key` of a listing the server answered.
fn listed<T: serde::de::DeserializeOwned>(
    mut listing: Value,
    key: &str,
) -> Result<Vec<T>, ToolError> {
    let list = listing.get_mut(key).map_or(Value::Null, Value::take);
    serde_json::from_value(list).map_err(|err| ToolError::Output {
        path: Some(format!("/{key}")),
        message: format!("the server's `{key}` is not a list of definitions: {err}"),
    })
}

/// `request` with the trace context of `span` (the W3C headers, when
/// OpenTelemetry records spans).
fn with_trace(request: reqwest::RequestBuilder, span: &tracing::Span) -> reqwest::RequestBuilder {
    let trace = propagate::outgoing(span, None);
    trace
        .iter()
        .flat_map(TraceContext::entries)
        .fold(request, |request, (field, value)| {
            request.header(field, value)
        })
}

/// The registry of the client's remote tools (a handle to the same registry).
impl From<&Client> for Registry {
    fn from(client: &Client) -> Self {
        client.registry.clone()
    }
}

/// The registry of the client's remote tools.
impl From<Client> for Registry {
    fn from(client: Client) -> Self {
        client.registry
    }
}

impl Transport for Client {
    fn run(
        &self,
        name: &str,
        args: Value,
    ) -> futures::future::BoxFuture<'static, Result<Value, ToolError>> {
        Transport::run(&self.registry, name, args)
    }

    fn run_stream(&self, name: &str, args: Value) -> BoxStream<'static, Result<Value, ToolError>> {
        Transport::run_stream(&self.registry, name, args)
    }
}

/// A local tool standing for a remote one.
fn remote_tool(remote: &Arc<Remote>, def: ToolDefinition) -> Result<ToolFunc, ToolError> {
    let name = def.name.clone();
    let streams = def.stream;
    let builder = ToolFunc::from_definition(def);
    let remote = Arc::clone(remote);
    let builder = if streams {
        // Streamed only when the caller asks for a stream: otherwise the server
        // answers one value, as it would any client (the JavaScript servers' stream
        // tools give a value of their own then, not the items collected).
        builder.stream_or_value_handler(move |ctx, args| {
            let remote = Arc::clone(&remote);
            let name = name.clone();
            sendable(async move {
                let span = request_span(&remote.base);
                let trace = propagate::outgoing(&span, Some(&ctx));
                let trace = trace.as_ref();
                if ctx.is_stream() {
                    let opened = remote.open_stream(&name, args, trace).instrument(span);
                    Ok(Answer::Items(opened.await?))
                } else {
                    let called = remote.call(&name, args, trace).instrument(span);
                    Ok(Answer::Value(called.await?))
                }
            })
        })
    } else {
        builder.handler(move |ctx, args| {
            let remote = Arc::clone(&remote);
            let name = name.clone();
            sendable(async move {
                // Made on the call's first poll, inside the call's own span.
                let span = request_span(&remote.base);
                let trace = propagate::outgoing(&span, Some(&ctx));
                remote
                    .call(&name, args, trace.as_ref())
                    .instrument(span)
                    .await
            })
        })
    };
    // The server checks the arguments; a second check here could only disagree.
    builder.unchecked().build()
}

/// `value` (a future or a stream) as the registry's handlers and streams hold it:
/// `Send`. On `wasm32-unknown-unknown` reqwest's futures hold JavaScript values and
/// are not; that target has one thread, so they are wrapped, and anywhere else
/// nothing changes.
#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
fn sendable<T: Send>(value: T) -> T {
    value
}

/// `value` (a future or a stream) as the registry's handlers and streams hold it:
/// `Send`, which the one thread of `wasm32-unknown-unknown` makes true.
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
fn sendable<T>(value: T) -> send_wrapper::SendWrapper<T> {
    send_wrapper::SendWrapper::new(value)
}

/// Waits `wait` before the next poll of a background call: on tokio's timer, or
/// on `wasm32-unknown-unknown` the page's (`setTimeout`).
async fn pause(wait: Duration) {
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    tokio::time::sleep(wait).await;
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    gloo_timers::future::sleep(wait).await;
}

/// The span of a request to `base`, named and filled as OpenTelemetry's
/// conventions for an HTTP client say (the method is recorded once known).
fn request_span(base: &Url) -> tracing::Span {
    tracing::info_span!(
        "http_client",
        otel.name = Empty,
        otel.kind = "client",
        otel.status_code = Empty,
        http.request.method = Empty,
        http.response.status_code = Empty,
        server.address = base.host_str(),
        server.port = base.port_or_known_default(),
        error.type = Empty,
    )
}

fn unreachable(url: &Url, err: &reqwest::Error) -> ToolError {
    if err.is_timeout() {
        return ToolError::Timeout { after_ms: None };
    }
    // reqwest's own message is generic ("error sending request"): the causes
    // (refused, a certificate the client does not trust) are in its sources.
    let mut message = format!("{url}: {err}");
    let mut source = std::error::Error::source(&err);
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    ToolError::custom("UNREACHABLE", 503, message)
}

impl Remote {
    /// The URL of `segments` under the API.
    fn url_of(&self, segments: &[&str]) -> Url {
        let mut url = self.base.clone();
        if let Ok(mut path) = url.path_segments_mut() {
            path.pop_if_empty().extend(segments);
        }
        url
    }

    /// `GET` of the prompts' or resources' path `segments` (with `?uri=` for a
    /// read), its answer as JSON.
    async fn get_kind(&self, segments: &[&str], uri: Option<&str>) -> Result<Value, ToolError> {
        let mut url = self.url_of(segments);
        if let Some(uri) = uri {
            url.query_pairs_mut().append_pair("uri", uri);
        }
        let span = request_span(&url);
        propagate::name(&span, "GET".to_owned());
        span.record("http.request.method", "GET");
        let request = self.http.get(url).header(REQ_ID, request_id());
        async {
            let response = self.send(with_trace(request, &span)).await?;
            self.json(response, segments.last().copied().unwrap_or_default())
                .await
        }
        .instrument(span.clone())
        .await
    }

    /// Sends a request; its answer's status (or its failure) goes on the current
    /// span, the call's [`request_span`].
    async fn send(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, ToolError> {
        let sent = request
            .send()
            .await
            .map_err(|e| unreachable(&self.base, &e));
        let span = tracing::Span::current();
        if !span.is_disabled() {
            match &sent {
                Ok(response) => {
                    let status = response.status();
                    span.record("http.response.status_code", status.as_u16());
                    if !status.is_success() {
                        span.record("error.type", status.as_str());
                    }
                    if status.is_client_error() || status.is_server_error() {
                        span.record("otel.status_code", "ERROR");
                    }
                }
                Err(err) => {
                    span.record("error.type", err.code());
                    span.record("otel.status_code", "ERROR");
                }
            }
        }
        sent
    }

    /// A success body as JSON (empty means `null`; text that is not JSON is a
    /// string), an error body as the `ToolError` it stands for.
    async fn json(&self, response: reqwest::Response, tool: &str) -> Result<Value, ToolError> {
        let status = response.status().as_u16();
        let bytes = response
            .bytes()
            .await
            .map_err(|e| unreachable(&self.base, &e))?;
        if !(200..300).contains(&status) {
            return Err(wire::error_from_body(status, &bytes, tool));
        }
        if bytes.iter().all(u8::is_ascii_whitespace) {
            return Ok(Value::Null);
        }
        Ok(serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::from(String::from_utf8_lossy(&bytes).into_owned())))
    }

    async fn call(
        &self,
        name: &str,
        args: Value,
        trace: Option<&TraceContext>,
    ) -> Result<Value, ToolError> {
        let response = self.send(self.request(name, args, trace)?).await?;
        if response.status() != reqwest::StatusCode::ACCEPTED {
            return self.json(response, name).await;
        }
        // Moved to the background: poll under the id the server answered with.
        let id = header_text(&response, REQ_ID);
        let wait = retry_after(&response);
        let bytes = response
            .bytes()
            .await
            .map_err(|e| unreachable(&self.base, &e))?;
        let processing = serde_json::from_slice::<Value>(&bytes)
            .is_ok_and(|body| body.get("status") == Some(&Value::from(102)));
        match (processing, id) {
            (true, Some(id)) => self.follow(name, &id, wait).await,
            _ if bytes.iter().all(u8::is_ascii_whitespace) => Ok(Value::Null),
            _ => Ok(serde_json::from_slice(&bytes)
                .unwrap_or_else(|_| Value::from(String::from_utf8_lossy(&bytes).into_owned()))),
        }
    }

    /// Polls a background call until it answers (`GET <base>/rpcTask/<id>`, as
    /// both JavaScript client generations do), waiting what `rpc-retry-after` says.
    /// Dropping the future cancels the remote call.
    async fn follow(&self, name: &str, id: &str, wait: Duration) -> Result<Value, ToolError> {
        let response = self.follow_to_end(id, wait).await?;
        self.json(response, name).await
    }

    /// The answer of the poll that found the background call `id` done.
    async fn follow_to_end(
        &self,
        id: &str,
        mut wait: Duration,
    ) -> Result<reqwest::Response, ToolError> {
        let mut url = self.base.clone();
        if let Ok(mut segments) = url.path_segments_mut() {
            segments.pop_if_empty().push(TASKS).push(id);
        }
        let mut cancel = CancelOnDrop {
            http: self.http.clone(),
            url: url.clone(),
            id: id.to_owned(),
            armed: true,
        };
        loop {
            pause(wait).await;
            let poll = self
                .http
                .get(url.clone())
                .header(RPC_FN, TASKS)
                .header(RPC_ACT, "get")
                .header(RPC_RES_ID, id)
                .header(REQ_ID, format!("poll-{}", request_id()));
            let response = self.send(poll).await?;
            if response.status() == reqwest::StatusCode::ACCEPTED {
                wait = retry_after(&response);
                continue;
            }
            cancel.armed = false;
            return Ok(response);
        }
    }

    async fn open_stream(
        &self,
        name: &str,
        args: Value,
        trace: Option<&TraceContext>,
    ) -> Result<ItemStream, ToolError> {
        let mut args = args;
        // A tool with a `stream` parameter streams only when asked to.
        if let Some(map) = args.as_object_mut() {
            map.insert("stream".into(), Value::Bool(true));
        }
        let response = self
            .send(
                self.request(name, args, trace)?
                    .header(reqwest::header::ACCEPT, NDJSON),
            )
            .await?;
        let mut response = response;
        if response.status() == reqwest::StatusCode::ACCEPTED {
            // Moved to the background: its items come with the poll that finds it
            // done.
            let id = header_text(&response, REQ_ID);
            let wait = retry_after(&response);
            let bytes = response
                .bytes()
                .await
                .map_err(|e| unreachable(&self.base, &e))?;
            let processing = serde_json::from_slice::<Value>(&bytes)
                .is_ok_and(|body| body.get("status") == Some(&Value::from(102)));
            let Some(id) = id.filter(|_| processing) else {
                return Err(ToolError::failed(format!(
                    "{name}: the server answered 202 without a background call to follow"
                )));
            };
            response = self.follow_to_end(&id, wait).await?;
        }
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            let bytes = response.bytes().await.unwrap_or_default();
            return Err(wire::error_from_body(status, &bytes, name));
        }
        let is_json = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.starts_with("application/json"));
        if is_json {
            // One JSON value (a server that gathered the items): its items.
            let value = self.json(response, name).await?;
            let items = match value {
                Value::Array(items) => items,
                other => vec![other],
            };
            return Ok(Box::pin(futures::stream::iter(items.into_iter().map(Ok))));
        }
        Ok(ndjson(
            sendable(response.bytes_stream()),
            name.to_owned(),
            self.base.clone(),
        ))
    }

    /// The request for a call, in the shapes both server generations accept, with
    /// the W3C trace context of the caller's span.
    fn request(
        &self,
        name: &str,
        args: Value,
        trace: Option<&TraceContext>,
    ) -> Result<reqwest::RequestBuilder, ToolError> {
        let mut args = match args {
            Value::Object(map) => map,
            Value::Null => Map::new(),
            _ => {
                return Err(ToolError::arguments(
                    "",
                    "expected an object of named arguments",
                ));
            }
        };
        let act = args.get("act").and_then(Value::as_str).map(str::to_owned);
        let is_resource = self
            .registry
            .get(name)
            .is_some_and(|t| t.definition().action.as_deref() == Some("res"));
        let verb = act
            .as_deref()
            .filter(|a| is_resource && REST_VERBS.contains(a));
        let mut url = self.base.clone();
        let push = |url: &mut Url, segment: &str| {
            if let Ok(mut segments) = url.path_segments_mut() {
                segments.pop_if_empty().push(segment);
            }
        };
        push(&mut url, name);
        let id_segment = |args: &mut Map<String, Value>| match args.get("id") {
            Some(Value::String(id)) => Some(id.clone()),
            Some(Value::Null) | None => None,
            Some(other) => Some(other.to_string()),
        };
        let (method, body) = match verb {
            Some(verb @ ("list" | "get" | "delete")) => {
                args.remove("act");
                if verb != "list"
                    && let Some(id) = id_segment(&mut args)
                {
                    args.remove("id");
                    push(&mut url, &id);
                }
                if !args.is_empty() {
                    let json = Value::Object(args).to_string();
                    url.set_query(Some(&format!(
                        "p={}",
                        utf8_percent_encode(&json, COMPONENT)
                    )));
                }
                let method = if verb == "delete" {
                    Method::DELETE
                } else {
                    Method::GET
                };
                (method, None)
            }
            Some(verb) => {
                args.remove("act");
                let method = match verb {
                    "put" => Method::PUT,
                    "patch" => Method::PATCH,
                    _ => Method::POST,
                };
                if verb != "post"
                    && let Some(id) = id_segment(&mut args)
                {
                    push(&mut url, &id);
                }
                (method, Some(args))
            }
            None => (Method::POST, Some(args)),
        };
        let span = tracing::Span::current();
        if !span.is_disabled() {
            propagate::name(&span, method.as_str().to_owned());
            span.record("http.request.method", method.as_str());
        }
        let mut request = self.http.request(method, url).header(REQ_ID, request_id());
        for (field, value) in trace.into_iter().flat_map(TraceContext::entries) {
            request = request.header(field, value);
        }
        if let Some(act) = &act {
            request = request.header(RPC_ACT, act);
        }
        if let Some(body) = body {
            if let Some(Value::String(id)) = body.get("id")
                && verb.is_some()
            {
                request = request.header(RPC_RES_ID, id);
            }
            let bytes =
                serde_json::to_vec(&Value::Object(body)).map_err(|e| ToolError::Output {
                    path: None,
                    message: e.to_string(),
                })?;
            request = request
                .header(reqwest::header::CONTENT_TYPE, "application/json")
                .body(bytes);
        }
        Ok(request)
    }
}

/// The built-in tool that polls and cancels background calls.
const TASKS: &str = "rpcTask";

/// How long to wait before the next poll: `rpc-retry-after` (ms), 1 s without
/// one, and never less than 10 ms or more than a minute.
fn retry_after(response: &reqwest::Response) -> Duration {
    let ms = header_text(response, wire::RPC_RETRY_AFTER)
        .and_then(|v| v.parse::<u64>().ok())
        .unwrap_or(1000);
    Duration::from_millis(ms.clamp(10, 60_000))
}

fn header_text(response: &reqwest::Response, name: &str) -> Option<String> {
    response
        .headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned)
}

/// Cancels a background call whose poller went away (fire and forget, as the
/// JavaScript client does).
struct CancelOnDrop {
    http: reqwest::Client,
    url: Url,
    id: String,
    armed: bool,
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        let request = self
            .http
            .post(self.url.clone())
            .header(RPC_FN, TASKS)
            .header(RPC_ACT, "$cancel")
            .header(RPC_RES_ID, self.id.as_str())
            .header(REQ_ID, format!("poll-{}", request_id()));
        crate::detach::detach(sendable(async move {
            let _ = request.send().await;
        }));
    }
}

/// NDJSON lines as items; a final line with `error` and `errorCode` (how a
/// toolfunc server reports a failure mid-stream) becomes that error and ends it.
fn ndjson(
    bytes: impl futures::Stream<Item = reqwest::Result<bytes::Bytes>> + Send + 'static,
    tool: String,
    base: Url,
) -> ItemStream {
    struct Lines<S> {
        bytes: S,
        buffer: Vec<u8>,
        done: bool,
    }
    let state = Lines {
        bytes: Box::pin(bytes),
        buffer: Vec::new(),
        done: false,
    };
    futures::stream::unfold(state, move |mut state| {
        let tool = tool.clone();
        let base = base.clone();
        async move {
            loop {
                if let Some(end) = state.buffer.iter().position(|b| *b == b'\n') {
                    let line: Vec<u8> = state.buffer.drain(..=end).collect();
                    if let Some(item) = parse_line(&line, &tool) {
                        if item.is_err() {
                            state.done = true;
                            state.buffer.clear();
                        }
                        return Some((item, state));
                    }
                    continue;
                }
                if state.done {
                    // The rest, without a final newline.
                    let line = std::mem::take(&mut state.buffer);
                    return parse_line(&line, &tool).map(|item| (item, state));
                }
                match state.bytes.next().await {
                    Some(Ok(chunk)) => state.buffer.extend_from_slice(&chunk),
                    Some(Err(err)) => {
                        state.done = true;
                        state.buffer.clear();
                        return Some((Err(unreachable(&base, &err)), state));
                    }
                    None => state.done = true,
                }
            }
        }
    })
    .boxed()
}

fn parse_line(line: &[u8], tool: &str) -> Option<Result<Value, ToolError>> {
    if line.iter().all(u8::is_ascii_whitespace) {
        return None;
    }
    Some(match serde_json::from_slice::<Value>(line) {
        Ok(value)
            if value.get("errorCode").is_some_and(Value::is_string)
                && value.get("error").is_some_and(Value::is_string) =>
        {
            let status = value
                .get("code")
                .and_then(Value::as_u64)
                .and_then(|c| u16::try_from(c).ok())
                .unwrap_or(500);
            Err(wire::error_from_body(status, line, tool))
        }
        Ok(value) => Ok(value),
        Err(err) => Err(ToolError::Output {
            path: None,
            message: format!("a streamed line is not JSON: {err}"),
        }),
    })
}
