//! The HTTP server: discovery, calls, acts, REST verbs and NDJSON streams, on axum.

use std::convert::Infallible;
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use axum::routing::any;
use futures::StreamExt;
use serde_json::{Map, Value};

use super::wire::{self, NDJSON, REQ_ID, RPC_ACT, RPC_FN, RPC_RES_ID, RPC_TIMEOUT};
use crate::{CallOptions, Registry, ToolError, ToolRef};

/// The default request body limit: 1 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 1024 * 1024;

/// What an auth hook sees of a request, before anything runs.
#[derive(Debug)]
#[non_exhaustive]
pub struct AuthRequest<'a> {
    /// The HTTP method.
    pub method: &'a Method,
    /// The request headers (`authorization`, cookies, ...).
    pub headers: &'a HeaderMap,
    /// The tool's name (after alias resolution); `None` for discovery.
    pub tool: Option<&'a str>,
    /// The act a service call runs (`"$hello"`, `"get"`), when there is one.
    pub act: Option<&'a str>,
}

type AuthFn = dyn Fn(&AuthRequest<'_>) -> Result<(), ToolError> + Send + Sync;

/// One registry served under one prefix: discovery at `GET <prefix>`, calls at
/// `<METHOD> <prefix>/<tool>[/<id>]`.
///
/// ```no_run
/// use toolfunc::{Registry, ToolError};
/// use toolfunc::http::Api;
///
/// let api = Api::new(Registry::global().clone())
///     .prefix("/rpc")
///     .body_limit(64 * 1024)
///     .with_auth(|req| {
///         match req.headers.get("authorization") {
///             Some(v) if v == "Bearer secret" => Ok(()),
///             _ => Err(ToolError::custom("UNAUTHORIZED", 401, "a bearer token is required")),
///         }
///     });
/// // Mount it in an existing app.
/// let app: axum::Router = axum::Router::new().merge(api.router());
/// # let _ = app;
/// ```
#[derive(Clone)]
pub struct Api {
    registry: Registry,
    prefix: String,
    body_limit: usize,
    auth: Option<Arc<AuthFn>>,
}

impl fmt::Debug for Api {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Api")
            .field("prefix", &self.prefix)
            .field("body_limit", &self.body_limit)
            .field("auth", &self.auth.is_some())
            .finish_non_exhaustive()
    }
}

impl Api {
    /// Serves `registry` under `/api`, with a 1 MiB body limit and no auth hook.
    pub fn new(registry: Registry) -> Self {
        Self {
            registry,
            prefix: "/api".to_owned(),
            body_limit: DEFAULT_BODY_LIMIT,
            auth: None,
        }
    }

    /// The path prefix (`"/api"` by default; `""` or `"/"` serves at the root).
    #[must_use]
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = normalize(&prefix.into());
        self
    }

    /// The largest request body accepted, in bytes; a larger one gets 413.
    #[must_use]
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// A hook that sees every request (discovery included) with the tool name and
    /// act, before anything runs. Returning an error refuses the request with that
    /// error's status: `ToolError::custom("UNAUTHORIZED", 401, ..)` or
    /// `ToolError::custom("FORBIDDEN", 403, ..)`.
    #[must_use]
    pub fn with_auth(
        mut self,
        hook: impl Fn(&AuthRequest<'_>) -> Result<(), ToolError> + Send + Sync + 'static,
    ) -> Self {
        self.auth = Some(Arc::new(hook));
        self
    }

    /// The prefix this API is served under (normalised: `"/api"`, or `""` for the root).
    pub fn path(&self) -> &str {
        &self.prefix
    }

    /// The axum router: `<prefix>`, `<prefix>/` and `<prefix>/*`.
    pub fn router(self) -> axum::Router {
        let prefix = self.prefix.clone();
        let state = Arc::new(self);
        let root = if prefix.is_empty() { "/" } else { &prefix };
        let mut router = axum::Router::new().route(root, any(handle));
        if !prefix.is_empty() {
            router = router.route(&format!("{prefix}/"), any(handle));
        }
        router
            .route(&format!("{prefix}/{{*rest}}"), any(handle))
            .with_state(state)
    }
}

fn normalize(prefix: &str) -> String {
    let trimmed = prefix.trim_matches('/');
    if trimmed.is_empty() {
        String::new()
    } else {
        format!("/{trimmed}")
    }
}

/// The router serving `registry` under `/api` (see [`Api`] to choose the prefix,
/// the body limit and an auth hook).
pub fn router(registry: Registry) -> axum::Router {
    Api::new(registry).router()
}

/// Several [`Api`]s on one server, each under its own prefix with its own registry.
///
/// ```
/// use toolfunc::Registry;
/// use toolfunc::http::{Api, Server};
///
/// let server = Server::new()
///     .mount(Api::new(Registry::new()).prefix("/api"))
///     .unwrap()
///     .mount(Api::new(Registry::new()).prefix("/admin"))
///     .unwrap();
/// // The same prefix twice is refused.
/// let err = server.mount(Api::new(Registry::new()).prefix("/api/")).unwrap_err();
/// assert_eq!(err.code(), "CONFLICT");
/// ```
#[derive(Debug, Default, Clone)]
pub struct Server {
    apis: Vec<Api>,
}

impl Server {
    /// A server with nothing mounted.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds an API; a prefix that is already mounted is `CONFLICT`.
    pub fn mount(mut self, api: Api) -> Result<Self, ToolError> {
        if self.apis.iter().any(|a| a.prefix == api.prefix) {
            return Err(ToolError::conflict(format!(
                "the prefix `{}` is already mounted",
                if api.prefix.is_empty() {
                    "/"
                } else {
                    &api.prefix
                }
            )));
        }
        self.apis.push(api);
        Ok(self)
    }

    /// One router for every mounted API.
    pub fn router(self) -> axum::Router {
        self.apis
            .into_iter()
            .fold(axum::Router::new(), |router, api| {
                router.merge(api.router())
            })
    }

    /// Serves on `listener` until the process ends.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        axum::serve(listener, self.router()).await
    }
}

/// Serves `registry` under `/api` on `addr`.
///
/// ```no_run
/// # async fn run() -> std::io::Result<()> {
/// toolfunc::http::serve("127.0.0.1:3000", toolfunc::Registry::global().clone()).await
/// # }
/// ```
pub async fn serve(
    addr: impl tokio::net::ToSocketAddrs,
    registry: Registry,
) -> std::io::Result<()> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    axum::serve(listener, router(registry)).await
}

/// A parsed call, ready to run.
struct Call {
    tool: ToolRef,
    act: Option<String>,
    params: Value,
}

async fn handle(State(api): State<Arc<Api>>, request: Request) -> Response {
    let req_id = request.headers().get(REQ_ID).cloned();
    let mut response = respond(&api, request).await;
    if let Some(id) = req_id {
        response.headers_mut().insert(REQ_ID, id);
    }
    response
}

async fn respond(api: &Api, request: Request) -> Response {
    let method = request.method().clone();
    if method == Method::OPTIONS || method == Method::HEAD {
        // Nothing runs for these.
        let status = if method == Method::OPTIONS {
            StatusCode::NO_CONTENT
        } else {
            StatusCode::METHOD_NOT_ALLOWED
        };
        return Response::builder()
            .status(status)
            .header(header::ALLOW, "GET, POST, PUT, PATCH, DELETE, OPTIONS")
            .body(Body::empty())
            .unwrap_or_default();
    }
    let (parts, body) = request.into_parts();
    let segments = match segments(parts.uri.path(), &api.prefix) {
        Ok(segments) => segments,
        Err(err) => return error_response(None, &err),
    };
    let header_str = |name: &str| {
        parts
            .headers
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let tool = header_str(RPC_FN).or_else(|| segments.first().cloned());
    let Some(tool) = tool else {
        if method == Method::GET {
            return discovery(api, &parts.headers, &method);
        }
        return json_response(
            StatusCode::NOT_FOUND,
            &serde_json::json!({"error": "Not Found"}),
        );
    };
    let call = match parse_call(api, &parts, body, &tool, &segments, &header_str).await {
        Ok(call) => call,
        Err(err) => {
            // A refusal wins over every other answer: a caller the hook turns away
            // learns nothing about which tools exist or what they accept.
            let act = header_str(RPC_ACT);
            return authorize(api, &method, &parts.headers, Some(&tool), act.as_deref())
                .unwrap_or_else(|| error_response(Some(&tool), &err));
        }
    };
    if let Some(refused) = authorize(
        api,
        &method,
        &parts.headers,
        Some(call.tool.name()),
        call.act.as_deref(),
    ) {
        return refused;
    }
    // Options only when the request sets some: a plain call skips the scoped runner.
    let timeout = header_str(RPC_TIMEOUT).and_then(|t| t.parse::<u64>().ok());
    let caller = wire::CLIENT_IDS.iter().find_map(|h| header_str(h));
    let options = (timeout.is_some() || caller.is_some()).then(|| {
        let mut options = CallOptions::new();
        if let Some(ms) = timeout {
            options = options.timeout(Duration::from_millis(ms));
        }
        if let Some(caller) = caller {
            options = options.caller(caller);
        }
        options
    });
    run(api, call, options).await
}

/// The auth hook's refusal of a request, if it refuses it.
fn authorize(
    api: &Api,
    method: &Method,
    headers: &HeaderMap,
    tool: Option<&str>,
    act: Option<&str>,
) -> Option<Response> {
    let auth = api.auth.as_ref()?;
    let request = AuthRequest {
        method,
        headers,
        tool,
        act,
    };
    auth(&request).err().map(|err| error_response(tool, &err))
}

fn discovery(api: &Api, headers: &HeaderMap, method: &Method) -> Response {
    if let Some(refused) = authorize(api, method, headers, None, None) {
        return refused;
    }
    json_response(StatusCode::OK, &wire::discovery(&api.registry))
}

/// The path after the prefix, split on `/`, empty segments dropped, each
/// percent-decoded (`+` stays `+`).
fn segments(path: &str, prefix: &str) -> Result<Vec<String>, ToolError> {
    let rest = path.strip_prefix(prefix).unwrap_or(path);
    rest.split('/')
        .filter(|s| !s.is_empty())
        .map(|s| {
            percent_encoding::percent_decode_str(s)
                .decode_utf8()
                .map(std::borrow::Cow::into_owned)
                .map_err(|_| ToolError::arguments("", "the URL path is not valid UTF-8"))
        })
        .collect()
}

/// Reads the parameters, resolves the tool, and settles `act` and `id`.
async fn parse_call(
    api: &Api,
    parts: &axum::http::request::Parts,
    body: Body,
    tool: &str,
    segments: &[String],
    header_str: &impl Fn(&str) -> Option<String>,
) -> Result<Call, ToolError> {
    let method = &parts.method;
    let takes_query = *method == Method::GET || *method == Method::DELETE;
    let (mut params, extras) = if takes_query {
        query_params(parts.uri.query().unwrap_or(""))?
    } else {
        (body_params(api, &parts.headers, body).await?, Vec::new())
    };
    let found = api
        .registry
        .get(tool)
        .filter(|t| t.is_api())
        .ok_or_else(|| ToolError::not_found(tool))?;
    let def = found.definition();
    let is_service = !def.methods.is_empty();
    let id_text = header_str(RPC_RES_ID).or_else(|| segments.get(1).cloned());
    let extra = |key: &str| {
        extras
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.clone())
    };
    let mut act = if is_service {
        header_str(RPC_ACT)
            .or_else(|| params.get("act").and_then(Value::as_str).map(str::to_owned))
            .or_else(|| extra("act"))
    } else {
        None
    };
    if act.is_none() && def.action.as_deref() == Some("res") {
        let has_id = id_text.is_some()
            || params.get("id").is_some_and(|v| !v.is_null())
            || extra("id").is_some();
        let verb = method.as_str().to_ascii_lowercase();
        act = Some(if verb == "get" && !has_id {
            "list".to_owned()
        } else {
            verb
        });
    }
    // The schema the arguments are cast against: the act's, or the tool's.
    let schema = act
        .as_deref()
        .and_then(|a| {
            def.acts
                .iter()
                .find(|d| d.name == a || d.name.strip_prefix('$') == Some(a))
        })
        .map_or(&def.params, |d| &d.params);
    let map = params
        .as_object_mut()
        .ok_or_else(|| ToolError::arguments("", "the parameters must be a JSON object"))?;
    if let Some(id) = id_text {
        let value = wire::cast(&id, wire::property(schema, "id"));
        map.insert("id".to_owned(), value);
    } else if let Some(id) = map.get("id").filter(|v| v.is_string() || v.is_number())
        && let Some(prop) = wire::property(schema, "id")
    {
        // Ids travel as text or numbers alike: `"2"` and `2` reach the type the
        // method declares.
        let text = id.as_str().map_or_else(|| id.to_string(), str::to_owned);
        let value = wire::cast(&text, Some(prop));
        map.insert("id".to_owned(), value);
    }
    for (key, text) in extras {
        if !map.contains_key(&key) {
            let value = wire::cast(&text, wire::property(schema, &key));
            map.insert(key, value);
        }
    }
    if let Some(act) = &act {
        map.insert("act".to_owned(), Value::from(act.clone()));
    }
    Ok(Call {
        tool: found,
        act,
        params,
    })
}

/// `?p=<JSON>` (form-decoded: `+` is a space), plus any other query parameters,
/// which are cast against the schema once the tool is known.
fn query_params(query: &str) -> Result<(Value, Vec<(String, String)>), ToolError> {
    let mut params = None;
    let mut extras = Vec::new();
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if key == "p" {
            params = Some(parse_object(value.as_bytes(), "/p")?);
        } else {
            extras.push((key.into_owned(), value.into_owned()));
        }
    }
    Ok((params.unwrap_or_else(|| Value::Object(Map::new())), extras))
}

/// The JSON body (any content type), at most `body_limit` bytes; empty means `{}`.
async fn body_params(api: &Api, headers: &HeaderMap, body: Body) -> Result<Value, ToolError> {
    let too_large = || {
        ToolError::custom(
            "PAYLOAD_TOO_LARGE",
            413,
            format!(
                "the request body is larger than the limit of {} bytes",
                api.body_limit
            ),
        )
    };
    let declared = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|n| n > api.body_limit as u64) {
        return Err(too_large());
    }
    let limited = http_body_util::Limited::new(body, api.body_limit);
    let bytes = match http_body_util::BodyExt::collect(limited).await {
        Ok(collected) => collected.to_bytes(),
        Err(err) if err.is::<http_body_util::LengthLimitError>() => return Err(too_large()),
        Err(err) => {
            return Err(ToolError::arguments(
                "",
                format!("the request body could not be read: {err}"),
            ));
        }
    };
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Value::Object(Map::new()));
    }
    parse_object(&bytes, "")
}

fn parse_object(bytes: &[u8], path: &str) -> Result<Value, ToolError> {
    let value: Value = serde_json::from_slice(bytes)
        .map_err(|e| ToolError::arguments(path, format!("malformed JSON: {e}")))?;
    if value.is_object() {
        Ok(value)
    } else {
        Err(ToolError::arguments(
            path,
            "the parameters must be a JSON object of named arguments",
        ))
    }
}

/// Whether the call asks for a stream: the tool (or act) streams and, when it
/// declares a `stream` parameter, the call sets it.
fn wants_stream(call: &Call) -> bool {
    let def = call.tool.definition();
    let (streams, params) = match call
        .act
        .as_deref()
        .and_then(|a| def.acts.iter().find(|d| d.name == a || d.method() == a))
    {
        Some(act) => (act.stream, &act.params),
        None => (def.stream, &def.params),
    };
    streams
        && (wire::property(params, "stream").is_none() || wire::truthy(call.params.get("stream")))
}

async fn run(api: &Api, call: Call, options: Option<CallOptions>) -> Response {
    let name = call.tool.name().to_owned();
    if !wants_stream(&call) {
        let result = match options {
            Some(options) => api.registry.with(options).run(&name, call.params).await,
            None => api.registry.run(&name, call.params).await,
        };
        return match result {
            Ok(value) => json_response(StatusCode::OK, &value),
            Err(err) => error_response(Some(&name), &err),
        };
    }
    let mut items = match options {
        Some(options) => api.registry.with(options).run_stream(&name, call.params),
        None => api.registry.run_stream(&name, call.params),
    };
    // An error before the first item is an ordinary error response.
    let first = match items.next().await {
        Some(Err(err)) => return error_response(Some(&name), &err),
        first => first,
    };
    let lines = futures::stream::iter(first)
        .chain(items)
        .scan(false, move |failed, item| {
            if *failed {
                return futures::future::ready(None);
            }
            let line = match item {
                Ok(value) => value,
                Err(err) => {
                    *failed = true;
                    wire::error_body(Some(&name), &err)
                }
            };
            let mut bytes = serde_json::to_vec(&line).unwrap_or_default();
            bytes.push(b'\n');
            futures::future::ready(Some(Ok::<_, Infallible>(Bytes::from(bytes))))
        });
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, NDJSON)
        .header(header::CACHE_CONTROL, "no-cache")
        .body(Body::from_stream(lines))
        .unwrap_or_default()
}

fn json_response(status: StatusCode, value: &Value) -> Response {
    let body = serde_json::to_vec(value).unwrap_or_else(|_| b"null".to_vec());
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

fn error_response(tool: Option<&str>, err: &ToolError) -> Response {
    let status = StatusCode::from_u16(err.status()).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    json_response(status, &wire::error_body(tool, err))
}
