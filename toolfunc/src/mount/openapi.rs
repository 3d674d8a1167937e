//! An OpenAPI 3.0 or 3.1 document's operations as tools: each takes its path,
//! query, header and cookie parameters by name and its request body as `body`, in
//! one arguments object, and calls the operation at the document's server.
//!
//! The document (JSON, or YAML through `yaml_serde`) is read into a
//! `serde_json::Value`: the tools need its paths, parameters, request bodies and
//! servers, and its schemas as JSON Schema, which a `Value` keeps as they are for
//! both versions (typed OpenAPI models read one version each and would be turned
//! back into JSON for every schema).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;

use futures::future::BoxFuture;
use percent_encoding::{AsciiSet, NON_ALPHANUMERIC, utf8_percent_encode};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};
use reqwest::{Method, Url};
use serde_json::{Map, Value, json};
use tracing::Instrument;
use tracing::field::Empty;

use super::credentials::Tokens;
use super::openapi_schema::Defs;
use super::source::Source;
use super::{MountState, Offer, Opened, cause, unavailable};
use crate::error::ToolError;
use crate::exec::ctx::Ctx;
use crate::propagate;
use crate::tool::{Annotations, ToolFunc};
use crate::trace::TraceContext;

/// The keyword on each parameter's schema that says where it goes.
pub(crate) const IN_KEYWORD: &str = "x-toolfunc-in";

/// What a path segment's value keeps unencoded (RFC 3986's unreserved).
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "options", "head", "patch", "trace",
];

/// Opens the document, reads its operations and places them.
pub(super) async fn open(
    source: &Source,
    state: &Arc<MountState>,
) -> Result<Box<dyn Opened>, ToolError> {
    let mount = &state.mount;
    let http = super::http_client(mount)?;
    let (text, document_url) = match source {
        Source::OpenApiUrl(url) => {
            let url = Url::parse(url).map_err(|e| ToolError::BadUrl {
                url: mount.source.clone(),
                reason: format!("it is not a URL: {e}"),
            })?;
            let response = http.get(url.clone()).send().await.map_err(|e| {
                unavailable(format!("mount `{}`: {url}: {}", mount.namespace, cause(&e)))
            })?;
            let status = response.status();
            if !status.is_success() {
                return Err(unavailable(format!(
                    "mount `{}`: {url} answered {status}",
                    mount.namespace
                )));
            }
            let bytes = bounded(response, MAX_DOCUMENT_BYTES)
                .await
                .map_err(|why| unavailable(format!("mount `{}`: {url}: {why}", mount.namespace)))?;
            (String::from_utf8_lossy(&bytes).into_owned(), Some(url))
        }
        Source::OpenApiFile(path) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| unavailable(format!("mount `{}`: {path}: {e}", mount.namespace)))?;
            (text, None)
        }
        _ => unreachable!("open is called for OpenAPI sources only"),
    };
    let document = read_document(&text)
        .map_err(|why| unavailable(format!("mount `{}`: {why}", mount.namespace)))?;
    let base = base_url(&document, document_url.as_ref(), mount.base_url.as_deref())
        .map_err(|reason| unavailable(format!("mount `{}`: {reason}", mount.namespace)))?;
    let document = Arc::new(document);
    let tokens = super::tokens(mount, &http);
    let api = Arc::new(Api {
        base,
        http,
        tokens,
        max_response: mount.max_response_bytes,
    });
    let operations = operations(&document)
        .map_err(|reason| unavailable(format!("mount `{}`: {reason}", mount.namespace)))?;
    let offers = operations
        .into_iter()
        .map(|operation| offer(&api, &document, operation))
        .collect();
    state.place(offers, true)?;
    Ok(Box::new(Closed))
}

/// A document's text as JSON: JSON, else YAML (a superset of JSON that most
/// documents are written in).
fn read_document(text: &str) -> Result<Value, String> {
    match serde_json::from_str(text) {
        Ok(document) => Ok(document),
        Err(json) if text.trim_start().starts_with(['{', '[']) => {
            Err(format!("the OpenAPI document is not JSON: {json}"))
        }
        Err(_) => yaml_serde::from_str(text)
            .map_err(|yaml| format!("the OpenAPI document is neither JSON nor YAML: {yaml}")),
    }
}

/// An OpenAPI source holds no connection of its own.
struct Closed;

impl Opened for Closed {
    fn close(&self) -> BoxFuture<'_, ()> {
        Box::pin(async {})
    }
}

/// The largest OpenAPI document a mount reads (10,000 operations take ~5 MB).
const MAX_DOCUMENT_BYTES: usize = 64 * 1024 * 1024;

/// A body of at most `limit` bytes, read as it comes; longer ones are refused
/// before they are held.
async fn bounded(response: reqwest::Response, limit: usize) -> Result<Vec<u8>, String> {
    use futures::StreamExt as _;
    let too_long =
        || format!("the answer is longer than {limit} bytes (Mount::max_response_bytes)");
    if response.content_length().is_some_and(|n| n > limit as u64) {
        return Err(too_long());
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|e| cause(&e))?;
        if body.len() + chunk.len() > limit {
            return Err(too_long());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Where the operations are called: the mount's base URL, else the document's
/// `servers[0].url` (its variables at their defaults) resolved against the
/// document's own URL, else the document's URL's origin.
fn base_url(
    document: &Value,
    document_url: Option<&Url>,
    given: Option<&str>,
) -> Result<Url, String> {
    let named = match given {
        Some(url) => Some(url.to_owned()),
        None => document.pointer("/servers/0").and_then(|server| {
            let mut url = server.get("url")?.as_str()?.to_owned();
            if let Some(Value::Object(variables)) = server.get("variables") {
                for (name, variable) in variables {
                    if let Some(default) = variable.get("default").and_then(Value::as_str) {
                        url = url.replace(&format!("{{{name}}}"), default);
                    }
                }
            }
            Some(url)
        }),
    };
    let url = match (named, document_url) {
        (Some(url), Some(document)) => document.join(&url).map_err(|e| format!("the server URL `{url}`: {e}"))?,
        (Some(url), None) => Url::parse(&url).map_err(|e| {
            format!("the server URL `{url}` is not absolute ({e}): a document read from a file names its server in full, or the mount gives base_url")
        })?,
        (None, Some(document)) => document.join("/").map_err(|e| e.to_string())?,
        (None, None) => {
            return Err("the document names no server: a document read from a file names one, or the mount gives base_url".into());
        }
    };
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(format!(
            "the server URL's scheme `{other}` is not http or https"
        )),
    }
}

/// The HTTP service the operations call.
#[derive(Debug)]
struct Api {
    base: Url,
    http: reqwest::Client,
    /// The mount's own tokens, when it has a client-credentials grant.
    tokens: Option<Arc<Tokens>>,
    /// The longest answer a call reads.
    max_response: usize,
}

/// Where a parameter goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    Path,
    Query,
    Header,
    Cookie,
}

impl Place {
    fn name(self) -> &'static str {
        match self {
            Self::Path => "path",
            Self::Query => "query",
            Self::Header => "header",
            Self::Cookie => "cookie",
        }
    }
}

/// One parameter of an operation.
#[derive(Debug, Clone)]
struct Param {
    /// Its name in the arguments object.
    key: String,
    /// Its name on the wire.
    name: String,
    place: Place,
    required: bool,
    /// Query arrays and objects: one pair per item (`form`, exploded, the default).
    explode: bool,
    /// A query object as `name[key]=value`.
    deep: bool,
    description: Option<String>,
    schema: Value,
}

/// An operation's request body.
#[derive(Debug, Clone)]
struct Body {
    content_type: String,
    required: bool,
    description: Option<String>,
    schema: Value,
}

/// One operation of the document.
#[derive(Debug)]
struct Operation {
    name: String,
    method: Method,
    path: String,
    summary: Option<String>,
    description: Option<String>,
    tags: Vec<String>,
    deprecated: bool,
    params: Vec<Param>,
    body: Option<Body>,
}

/// The document's operations, in the order of its paths. Fails when the document
/// is not OpenAPI 3.
fn operations(document: &Value) -> Result<Vec<Operation>, String> {
    let version = document
        .get("openapi")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if !version.starts_with("3.") {
        return Err(match document.get("swagger") {
            Some(_) => "a Swagger 2.0 document: OpenAPI 3.0 or 3.1 is read".into(),
            None => "not an OpenAPI 3 document (no `openapi: 3.x` field)".into(),
        });
    }
    let Some(Value::Object(paths)) = document.get("paths") else {
        return Ok(Vec::new());
    };
    let mut taken: BTreeMap<String, usize> = BTreeMap::new();
    let mut operations = Vec::new();
    for (path, item) in paths {
        let item = resolve(document, item);
        let shared = item.get("parameters");
        for method in METHODS {
            let Some(operation) = item.get(method) else {
                continue;
            };
            let name = operation
                .get("operationId")
                .and_then(Value::as_str)
                .filter(|id| !id.is_empty())
                .map_or_else(|| name_of(method, path), str::to_owned);
            // Two operations of one name (ids are unique in a valid document, made
            // names may not be): the later ones numbered.
            let count = taken.entry(name.clone()).or_insert(0);
            *count += 1;
            let name = if *count == 1 {
                name
            } else {
                format!("{name}_{count}")
            };
            let text = |key: &str| {
                operation
                    .get(key)
                    .and_then(Value::as_str)
                    .map(str::to_owned)
            };
            operations.push(Operation {
                name,
                method: Method::from_bytes(method.to_ascii_uppercase().as_bytes())
                    .unwrap_or(Method::GET),
                path: path.clone(),
                summary: text("summary"),
                description: text("description"),
                tags: operation
                    .get("tags")
                    .and_then(Value::as_array)
                    .map(|tags| {
                        tags.iter()
                            .filter_map(Value::as_str)
                            .map(str::to_owned)
                            .collect()
                    })
                    .unwrap_or_default(),
                deprecated: operation.get("deprecated") == Some(&Value::Bool(true)),
                params: params(document, shared, operation.get("parameters")),
                body: body(document, operation.get("requestBody")),
            });
        }
    }
    Ok(operations)
}

/// A stable name for an operation without an `operationId`: its method and path,
/// `GET /pets/{petId}` as `get_pets_petId`.
fn name_of(method: &str, path: &str) -> String {
    let mut name = method.to_owned();
    for segment in path.split('/').filter(|s| !s.is_empty()) {
        name.push('_');
        name.extend(segment.chars().filter(|c| !matches!(c, '{' | '}')));
    }
    name
}

/// The value `value` names: itself, or what its local `$ref` points at (a chain of
/// them followed a few steps).
fn resolve<'a>(document: &'a Value, mut value: &'a Value) -> &'a Value {
    for _ in 0..8 {
        match value.get("$ref").and_then(Value::as_str) {
            Some(pointer) => match pointer.strip_prefix('#').and_then(|p| document.pointer(p)) {
                Some(target) => value = target,
                None => return value,
            },
            None => return value,
        }
    }
    value
}

/// The parameters of an operation: the path item's, overridden by the
/// operation's of the same name and place.
fn params(document: &Value, shared: Option<&Value>, own: Option<&Value>) -> Vec<Param> {
    let mut params: Vec<Param> = Vec::new();
    for list in [shared, own].into_iter().flatten() {
        for param in list.as_array().into_iter().flatten() {
            let param = resolve(document, param);
            let (Some(name), Some(place)) = (
                param.get("name").and_then(Value::as_str),
                param.get("in").and_then(Value::as_str),
            ) else {
                continue;
            };
            let place = match place {
                "path" => Place::Path,
                "query" => Place::Query,
                "header" => Place::Header,
                "cookie" => Place::Cookie,
                _ => continue,
            };
            let style = param.get("style").and_then(Value::as_str).unwrap_or("form");
            let schema = param
                .get("schema")
                .cloned()
                .or_else(|| {
                    // `content` instead of `schema`: its one media type's schema.
                    param
                        .get("content")?
                        .as_object()?
                        .values()
                        .next()?
                        .get("schema")
                        .cloned()
                })
                .unwrap_or_else(|| json!({}));
            let param = Param {
                key: name.to_owned(),
                name: name.to_owned(),
                place,
                required: place == Place::Path || param.get("required") == Some(&Value::Bool(true)),
                explode: param
                    .get("explode")
                    .and_then(Value::as_bool)
                    .unwrap_or(style == "form"),
                deep: style == "deepObject",
                description: param
                    .get("description")
                    .and_then(Value::as_str)
                    .map(str::to_owned),
                schema,
            };
            params.retain(|p| !(p.name == param.name && p.place == param.place));
            params.push(param);
        }
    }
    // Two parameters of one name in different places, or one named `body`: the
    // later ones take their place's name after theirs.
    let mut keys: Vec<String> = vec!["body".into()];
    for param in &mut params {
        if keys.contains(&param.key) {
            param.key = format!("{}_{}", param.name, param.place.name());
        }
        keys.push(param.key.clone());
    }
    params
}

/// An operation's request body: its JSON media type if it has one, else form
/// data, else its first.
fn body(document: &Value, body: Option<&Value>) -> Option<Body> {
    let body = resolve(document, body?);
    let content = body.get("content")?.as_object()?;
    let (content_type, media) = content
        .iter()
        .find(|(kind, _)| is_json(kind))
        .or_else(|| {
            content
                .iter()
                .find(|(kind, _)| kind.starts_with("application/x-www-form-urlencoded"))
        })
        .or_else(|| content.iter().next())?;
    Some(Body {
        content_type: content_type.clone(),
        required: body.get("required") == Some(&Value::Bool(true)),
        description: body
            .get("description")
            .and_then(Value::as_str)
            .map(str::to_owned),
        schema: media.get("schema").cloned().unwrap_or_else(|| json!({})),
    })
}

fn is_json(content_type: &str) -> bool {
    let kind = content_type.split(';').next().unwrap_or_default().trim();
    kind == "application/json" || kind.ends_with("+json") || kind == "*/*"
}

/// The tool of one operation.
fn offer(api: &Arc<Api>, document: &Arc<Value>, operation: Operation) -> Offer {
    let api = Arc::clone(api);
    let document = Arc::clone(document);
    Offer {
        name: operation.name.clone(),
        tags: operation.tags.clone(),
        build: Box::new(move |name| {
            let operation = Arc::new(operation);
            let mut annotations = Annotations::default().open_world(true);
            annotations = match operation.method {
                Method::GET | Method::HEAD | Method::OPTIONS => annotations.read_only(true),
                Method::DELETE => annotations.destructive(true).idempotent(true),
                Method::PUT => annotations.idempotent(true),
                _ => annotations,
            };
            let mut builder = ToolFunc::builder(name).annotations(annotations);
            let description = match (&operation.summary, &operation.description) {
                (Some(summary), Some(description)) => {
                    builder = builder.title(summary.clone());
                    Some(description.clone())
                }
                (summary, description) => description.clone().or_else(|| summary.clone()),
            };
            let mut description =
                description.unwrap_or_else(|| format!("{} {}", operation.method, operation.path));
            if operation.deprecated {
                description.push_str(" (deprecated)");
            }
            for tag in &operation.tags {
                builder = builder.tag(tag.clone());
            }
            let schema_of = Arc::clone(&operation);
            builder
                .description(description)
                .params_schema_with(move || params_schema(&document, &schema_of))
                .handler(move |ctx, args| {
                    let api = Arc::clone(&api);
                    let operation = Arc::clone(&operation);
                    async move { call(&api, &operation, args, &ctx).await }
                })
        }),
    }
}

/// The arguments schema of an operation: each parameter by its key (its place in
/// `x-toolfunc-in`), the body as `body`; the schemas the document's `$ref`s name in
/// `$defs`.
fn params_schema(document: &Value, operation: &Operation) -> Value {
    let legacy = document
        .get("openapi")
        .and_then(Value::as_str)
        .is_some_and(|v| v.starts_with("3.0"));
    let mut defs = Defs::default();
    let mut properties = Map::new();
    let mut required = Vec::new();
    for param in &operation.params {
        let mut schema = defs.take(document, &param.schema, legacy);
        if let Value::Object(object) = &mut schema {
            if let Some(description) = &param.description
                && !object.contains_key("description")
            {
                object.insert("description".into(), json!(description));
            }
            object.insert(IN_KEYWORD.into(), json!(param.place.name()));
        }
        if param.required {
            required.push(json!(param.key));
        }
        properties.insert(param.key.clone(), schema);
    }
    if let Some(body) = &operation.body {
        let mut schema = defs.take(document, &body.schema, legacy);
        if let Value::Object(object) = &mut schema {
            let said = body
                .description
                .clone()
                .unwrap_or_else(|| "The request body".into());
            if !object.contains_key("description") {
                object.insert(
                    "description".into(),
                    json!(format!("{said} ({})", body.content_type)),
                );
            }
            object.insert(IN_KEYWORD.into(), json!("body"));
        }
        if body.required {
            required.push(json!("body"));
        }
        properties.insert("body".into(), schema);
    }
    let mut schema = json!({"type": "object", "properties": properties});
    if !required.is_empty() {
        schema["required"] = Value::Array(required);
    }
    if !defs.made.is_empty() {
        schema["$defs"] = Value::Object(defs.made);
    }
    schema
}

/// Calls the operation with the arguments a caller gave.
async fn call(
    api: &Api,
    operation: &Operation,
    args: Value,
    ctx: &Ctx,
) -> Result<Value, ToolError> {
    let Value::Object(mut args) = args else {
        return Err(ToolError::Arguments {
            path: String::new(),
            message: "the arguments are not an object".into(),
        });
    };
    let path = path_of(operation, &args)?;
    let mut url = api.base.clone();
    let joined = format!(
        "{}/{}",
        url.path().trim_end_matches('/'),
        path.trim_start_matches('/')
    );
    url.set_path(&joined);
    let (headers, cookies) = place_params(operation, &args, &mut url)?;
    let span = tracing::info_span!(
        "http_client",
        otel.name = Empty,
        otel.kind = "client",
        otel.status_code = Empty,
        http.request.method = operation.method.as_str(),
        http.response.status_code = Empty,
        url.full = url.as_str(),
        server.address = url.host_str(),
        server.port = url.port_or_known_default(),
        error.type = Empty,
    );
    propagate::name(&span, operation.method.as_str().to_owned());
    let trace = propagate::outgoing(&span, Some(ctx));
    let mut request = api
        .http
        .request(operation.method.clone(), url.clone())
        .headers(headers);
    for (field, value) in trace.iter().flat_map(TraceContext::entries) {
        request = request.header(field, value);
    }
    if !cookies.is_empty() {
        request = request.header(reqwest::header::COOKIE, cookies);
    }
    if let Some(tokens) = &api.tokens {
        request = request.bearer_auth(tokens.token().await?);
    }
    if let (Some(body), Some(value)) = (&operation.body, args.remove("body")) {
        request = with_body(request, body, value)?;
    }
    let answer = send(request, operation.method.clone(), url, api.max_response)
        .instrument(span)
        .await;
    if let (Err(err), Some(tokens)) = (&answer, &api.tokens)
        && err.status() == 401
    {
        tokens.forget().await;
    }
    answer
}

/// The operation's path with its path parameters in place.
fn path_of(operation: &Operation, args: &Map<String, Value>) -> Result<String, ToolError> {
    let mut path = String::with_capacity(operation.path.len());
    let mut rest = operation.path.as_str();
    while let Some(open) = rest.find('{') {
        path.push_str(&rest[..open]);
        let Some(close) = rest[open..].find('}') else {
            break;
        };
        let name = &rest[open + 1..open + close];
        let value = operation
            .params
            .iter()
            .find(|p| p.place == Place::Path && p.name == name)
            .and_then(|p| args.get(&p.key))
            .ok_or_else(|| ToolError::Arguments {
                path: format!("/{name}"),
                message: "the path parameter is missing".into(),
            })?;
        path.extend(utf8_percent_encode(&scalar(value), SEGMENT));
        rest = &rest[open + close + 1..];
    }
    path.push_str(rest);
    Ok(path)
}

/// The query, header and cookie parameters: the query written into `url`, the
/// headers and the `Cookie` value returned.
fn place_params(
    operation: &Operation,
    args: &Map<String, Value>,
    url: &mut Url,
) -> Result<(HeaderMap, String), ToolError> {
    let mut cookies = String::new();
    let mut headers = HeaderMap::new();
    {
        let mut query = url.query_pairs_mut();
        for param in &operation.params {
            let Some(value) = args.get(&param.key) else {
                continue;
            };
            match param.place {
                Place::Path => {}
                Place::Query => match value {
                    Value::Array(items) if param.explode => {
                        for item in items {
                            query.append_pair(&param.name, &scalar(item));
                        }
                    }
                    Value::Object(fields) if param.deep => {
                        for (field, item) in fields {
                            query.append_pair(&format!("{}[{field}]", param.name), &scalar(item));
                        }
                    }
                    Value::Object(fields) if param.explode => {
                        for (field, item) in fields {
                            query.append_pair(field, &scalar(item));
                        }
                    }
                    Value::Null => {}
                    other => {
                        query.append_pair(&param.name, &joined_value(other));
                    }
                },
                Place::Header => {
                    let name = HeaderName::try_from(param.name.as_str());
                    let value = HeaderValue::try_from(joined_value(value));
                    match (name, value) {
                        (Ok(name), Ok(value)) => {
                            headers.insert(name, value);
                        }
                        _ => {
                            return Err(ToolError::Arguments {
                                path: format!("/{}", param.key),
                                message: "not a value a header can carry".into(),
                            });
                        }
                    }
                }
                Place::Cookie => {
                    if !cookies.is_empty() {
                        cookies.push_str("; ");
                    }
                    let _ = write!(
                        cookies,
                        "{}={}",
                        param.name,
                        utf8_percent_encode(&joined_value(value), SEGMENT)
                    );
                }
            }
        }
    }
    if url.query() == Some("") {
        url.set_query(None);
    }
    Ok((headers, cookies))
}

/// The request with its body: JSON, form fields, or the text of another type.
fn with_body(
    request: reqwest::RequestBuilder,
    body: &Body,
    value: Value,
) -> Result<reqwest::RequestBuilder, ToolError> {
    Ok(if is_json(&body.content_type) {
        let bytes = serde_json::to_vec(&value).map_err(|e| ToolError::Arguments {
            path: "/body".into(),
            message: e.to_string(),
        })?;
        request
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(bytes)
    } else if body
        .content_type
        .starts_with("application/x-www-form-urlencoded")
    {
        let pairs: Vec<(String, String)> = match &value {
            Value::Object(fields) => fields.iter().map(|(k, v)| (k.clone(), scalar(v))).collect(),
            _ => {
                return Err(ToolError::Arguments {
                    path: "/body".into(),
                    message: "a form body is an object of its fields".into(),
                });
            }
        };
        request.form(&pairs)
    } else {
        let text = match value {
            Value::String(text) => text,
            other => other.to_string(),
        };
        request
            .header(reqwest::header::CONTENT_TYPE, body.content_type.as_str())
            .body(text)
    })
}

/// Sends the request; the answer's JSON (or text) on success, its status and body
/// as an error otherwise.
async fn send(
    request: reqwest::RequestBuilder,
    method: Method,
    url: Url,
    limit: usize,
) -> Result<Value, ToolError> {
    let response = request.send().await.map_err(|e| {
        if e.is_timeout() {
            return ToolError::Timeout { after_ms: None };
        }
        let span = tracing::Span::current();
        span.record("error.type", "UNAVAILABLE");
        unavailable(format!("{method} {url}: {}", cause(&e)))
    })?;
    let status = response.status();
    let span = tracing::Span::current();
    span.record("http.response.status_code", status.as_u16());
    let json = response
        .headers()
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(is_json);
    let bytes = bounded(response, limit).await.map_err(|why| {
        ToolError::custom("UPSTREAM", 502, format!("{method} {}: {why}", url.path()))
    })?;
    let body = if bytes.is_empty() {
        Value::Null
    } else if json {
        serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into_owned()))
    } else {
        Value::String(String::from_utf8_lossy(&bytes).into_owned())
    };
    if status.is_success() {
        return Ok(body);
    }
    span.record("error.type", status.as_str());
    span.record("otel.status_code", "ERROR");
    // A source's 4xx is the caller's to see as it is; its 5xx is a bad gateway.
    let answer = if status.is_client_error() {
        status.as_u16()
    } else {
        502
    };
    let said = match &body {
        Value::Null => String::new(),
        Value::String(text) => format!(": {}", excerpt(text)),
        other => format!(": {}", excerpt(&other.to_string())),
    };
    Err(ToolError::custom(
        "UPSTREAM",
        answer,
        format!("{method} {} answered {status}{said}", url.path()),
    )
    .with_data(json!({"status": status.as_u16(), "body": body})))
}

/// A value as one parameter's text: a string as it is, anything else as JSON.
fn scalar(value: &Value) -> String {
    match value {
        Value::String(text) => text.clone(),
        other => other.to_string(),
    }
}

/// A value as one parameter's text where arrays are comma-joined (`simple` and
/// unexploded `form`) and objects are `key,value` pairs.
fn joined_value(value: &Value) -> String {
    match value {
        Value::Array(items) => items.iter().map(scalar).collect::<Vec<_>>().join(","),
        Value::Object(fields) => fields
            .iter()
            .flat_map(|(k, v)| [k.clone(), scalar(v)])
            .collect::<Vec<_>>()
            .join(","),
        other => scalar(other),
    }
}

/// The first 200 characters of a text.
fn excerpt(text: &str) -> String {
    match text.char_indices().nth(200) {
        Some((at, _)) => format!("{}…", &text[..at]),
        None => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refs_and_legacy_keywords_become_json_schema() {
        let document = json!({
            "openapi": "3.0.3",
            "components": {"schemas": {
                "Pet": {"type": "object", "properties": {"owner": {"$ref": "#/components/schemas/Owner"}, "tag": {"type": "string", "nullable": true}}},
                "Owner": {"type": "object", "properties": {"pets": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}, "age": {"type": "integer", "minimum": 0, "exclusiveMinimum": true}}}
            }},
            "paths": {"/pets/{id}": {
                "parameters": [{"name": "id", "in": "path", "schema": {"type": "string"}}],
                "put": {"operationId": "putPet", "parameters": [{"name": "body", "in": "query", "schema": {"type": "integer"}}],
                        "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}}},
                "get": {}
            }}
        });
        let operations = operations(&document).unwrap();
        let names: Vec<&str> = operations.iter().map(|o| o.name.as_str()).collect();
        assert_eq!(names, ["get_pets_id", "putPet"]);
        let schema = params_schema(&document, &operations[1]);
        assert_eq!(schema["properties"]["id"][IN_KEYWORD], "path");
        assert_eq!(schema["properties"]["body_query"][IN_KEYWORD], "query");
        assert_eq!(schema["properties"]["body"]["$ref"], "#/$defs/Pet");
        assert_eq!(schema["required"], json!(["id", "body"]));
        assert_eq!(
            schema["$defs"]["Pet"]["properties"]["tag"]["type"],
            json!(["string", "null"])
        );
        assert_eq!(
            schema["$defs"]["Owner"]["properties"]["pets"]["items"]["$ref"],
            "#/$defs/Pet"
        );
        assert_eq!(
            schema["$defs"]["Owner"]["properties"]["age"],
            json!({"type": "integer", "exclusiveMinimum": 0})
        );
        // The schema compiles and checks what it says.
        let validator = jsonschema::validator_for(&schema).unwrap();
        assert!(
            validator.is_valid(&json!({"id": "1", "body": {"tag": null, "owner": {"age": 3}}}))
        );
        assert!(!validator.is_valid(&json!({"id": "1", "body": {"owner": {"age": 0}}})));
    }

    #[test]
    fn a_yaml_document_reads_as_its_json() {
        let yaml = "openapi: 3.0.0\npaths:\n  /a:\n    get:\n      operationId: getA\n";
        let document = read_document(yaml).unwrap();
        assert_eq!(document["paths"]["/a"]["get"]["operationId"], "getA");
        assert!(read_document("{not json").unwrap_err().contains("not JSON"));
        assert!(read_document(": : :").is_err());
    }

    #[test]
    fn a_swagger_document_is_named() {
        let err = operations(&json!({"swagger": "2.0"})).unwrap_err();
        assert!(err.contains("Swagger 2.0"), "{err}");
    }

    #[test]
    fn the_server_url_is_resolved_against_the_document() {
        let doc_url = Url::parse("http://127.0.0.1:9/v2/openapi.json").unwrap();
        let document = json!({"servers": [{"url": "/{version}", "variables": {"version": {"default": "v3"}}}]});
        assert_eq!(
            base_url(&document, Some(&doc_url), None).unwrap().as_str(),
            "http://127.0.0.1:9/v3"
        );
        assert_eq!(
            base_url(&json!({}), Some(&doc_url), None).unwrap().as_str(),
            "http://127.0.0.1:9/"
        );
        assert!(base_url(&json!({"servers": [{"url": "/v1"}]}), None, None).is_err());
        assert_eq!(
            base_url(&json!({}), None, Some("http://h:1/api"))
                .unwrap()
                .as_str(),
            "http://h:1/api"
        );
    }
}
