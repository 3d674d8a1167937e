//! One request's way through the HTTP surface: its site and credential checked, its
//! path routed (a tool, a built-in page, prompts and resources, the task poller,
//! discovery), its call found and admitted, its arguments read from the path, the
//! query and the body, and its answer run (a value, an NDJSON stream, or a
//! background task).

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;
use futures::StreamExt;
use serde_json::{Map, Value};

use super::answer::{error_response, json_response, ndjson_response, refusal};
use super::api::{Api, AuthRequest};
use super::body::{body_params, parse_object};
use super::prompts_resources;
use super::routes::{
    Methods, TASKS, check_method, method_not_allowed, read_only, rest_method, segments, verb_on_id,
};
use super::wire::{self, NDJSON, REQ_ID, RPC_ACT, RPC_FN, RPC_RES_ID, RPC_TIMEOUT};
use crate::auth::Authenticator;
use crate::auth::web;
use crate::error::ToolError;
use crate::identity::Identity;
use crate::options::{CallOptions, Surface};
use crate::propagate;
use crate::remote::ledger::{TaskPoll, Track};
use crate::remote::{self, Found, Lookup, Plan, Refusal, RemoteCall};
use crate::tool::service::REST_VERBS;
use crate::trace::TraceContext;

/// What the request asks of the call besides its arguments: a timeout, the
/// caller's id, the API's collect limit; the surface, and the headers when a layer
/// may read them. A malformed header is its error, answered once the call is found
/// (or refused) with the options read without it: who the caller is, and so what it
/// may see, does not depend on a header it may spoil.
fn call_options(
    api: &Api,
    headers: &HeaderMap,
    header_str: &impl Fn(&str) -> Option<String>,
) -> (CallOptions, Option<ToolError>) {
    let raw_header = |name: &str| {
        headers
            .get(name)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
    };
    // Read as sent: an empty value is as malformed as a word.
    let sent = raw_header(RPC_TIMEOUT);
    let (timeout, malformed) = match sent {
        None => (None, None),
        Some(t) => match wire::millis(&t) {
            Some(ms) => (Some(ms), None),
            None => (
                None,
                Some(ToolError::custom(
                    "INVALID_HEADER",
                    400,
                    format!(
                        "`{RPC_TIMEOUT}` must be a whole number of milliseconds up to {}, \
                         not `{t}`",
                        wire::RPC_TIMEOUT_MAX
                    ),
                )),
            ),
        },
    };
    let mut options = CallOptions::new().surface(Surface::Http);
    // `0` is no timeout, as the JavaScript servers read it (`header || tool || 30 s`).
    if let Some(ms) = timeout.filter(|ms| *ms > 0) {
        options = options.timeout(Duration::from_millis(ms));
    }
    if let Some(caller) = wire::CLIENT_IDS.iter().find_map(|h| header_str(h)) {
        options = options.caller(caller);
    }
    if let Some(limit) = api.collect_limit {
        options = options.collect_limit(limit);
    }
    if api.registry.has_layers() {
        options = options.insert(headers.clone());
    }
    (options, malformed)
}

pub(super) async fn respond(api: &Api, request: Request) -> Response {
    let (mut parts, body) = request.into_parts();
    if let Err(err) = api.check_site(&parts.headers) {
        return error_response(None, &err);
    }
    if let Some(authenticator) = &api.authenticator {
        match authenticate(api, authenticator.as_ref(), &parts).await {
            Ok(identity) => {
                parts.extensions.insert(identity);
            }
            // The try-it page is static and asks its visitor for the credential.
            Err(_) if is_docs_page(api, &parts) => return super::docs::response(),
            Err(refused) => return refused,
        }
    }
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
    let auth = |tool: Option<&str>, act: Option<&str>| hook_refusal(api, &parts, tool, act);
    // A bad header is answered once the auth hook had its say.
    let (mut options, malformed) = call_options(api, &parts.headers, &header_str);
    if let Some(identity) = parts.extensions.get::<Identity>() {
        options = options.identity(identity.clone());
    }
    if let Some(incoming) = parts.extensions.get::<TraceContext>() {
        options = options.insert(incoming.clone());
    }
    let named = header_str(RPC_FN);
    let Some(name) = named.clone().or_else(|| segments.first().cloned()) else {
        return discover(api, &parts, &options, &auth);
    };
    // The name is found once: a tool of that name is served before the built-in
    // pages and the task poller of the same name.
    let call = RemoteCall::new(&name, Lookup::TOOL).caller(&options);
    let found = match remote::precheck(&api.registry, &call) {
        Ok(found) => found,
        Err(refused) => {
            let err = refused.into_error();
            if named.is_none()
                && let Some(answer) = page(api, &parts, &segments, &options, &auth)
            {
                return answer;
            }
            if named.is_none() && prompts_resources::is_kind(&segments) {
                let caller = (options, malformed);
                return prompts_resources::answer(api, &parts, &segments, body, caller, &auth)
                    .await;
            }
            if name == TASKS {
                return tasks(api, &parts, &segments, body, &header_str, &auth).await;
            }
            // A caller the hook turns away learns nothing about which tools exist.
            return auth(None, None).unwrap_or_else(|| refusal(api, &parts, Some(&name), &err));
        }
    };
    name_route(api, &parts.method, &found);
    let methods = Methods::of(api, found.definition(), segments.len() > 1);
    let refused = || auth(Some(found.name()), None);
    if let Some(answer) = check_method(api, &parts, methods, Some(found.name()), refused) {
        return answer;
    }
    if named.is_some()
        && let Some(path_name) = segments.first()
        && !names(&found, path_name)
    {
        return auth(None, None).unwrap_or_else(|| {
            error_response(
                Some(found.name()),
                &ToolError::arguments(
                    "",
                    format!("the `rpc-fn` header names `{name}` but the path names `{path_name}`"),
                ),
            )
        });
    }
    let request = Parsed {
        api,
        parts: &parts,
        segments: &segments,
        found,
        methods,
    };
    let call = match request.call(body, &header_str, &auth).await {
        Ok(call) => call,
        Err(refused) => return *refused,
    };
    // A bad header, else the act's scopes (now settled) with the tool's.
    if let Some(err) = malformed {
        return refusal(api, &parts, Some(call.found.name()), &err);
    }
    match admit(&call, &options) {
        Ok(plan) => run(api, (call, plan), options, header_str(REQ_ID)).await,
        Err(err) => refusal(api, &parts, Some(call.found.name()), &err),
    }
}

/// Admits a call read in full on the remote floor: its act's scopes, and how it
/// answers (a stream when the caller asks for one, a task past a soft deadline).
fn admit(call: &Prepared, options: &CallOptions) -> Result<Plan, ToolError> {
    let admitted = RemoteCall::new(call.found.name(), Lookup::TOOL)
        .caller(options)
        .args(&call.params)
        .stream(wants_stream(&call.found, &call.params))
        .tracks();
    remote::admit_judged(&call.found, &admitted).map_err(Refusal::into_error)
}

/// Names the request's span for the tool it calls: `http.route` is the API's
/// prefix and the tool's name, the span `{method} {route}`.
fn name_route(api: &Api, method: &Method, found: &Found) {
    let span = tracing::Span::current();
    if !span.is_disabled() {
        let route = format!("{}/{}", api.prefix.trim_end_matches('/'), found.name());
        propagate::name(&span, format!("{method} {route}"));
        span.record("http.route", route);
    }
}

/// Discovery: what the API offers this caller, by name.
fn discover(
    api: &Api,
    parts: &axum::http::request::Parts,
    options: &CallOptions,
    auth: &impl Fn(Option<&str>, Option<&str>) -> Option<Response>,
) -> Response {
    if let Some(answer) = check_method(api, parts, Methods::GET, None, || auth(None, None)) {
        return answer;
    }
    if let Some(refused) = auth(None, None) {
        return refused;
    }
    let sight = remote::Sight::of(&api.registry, Some(options));
    match search_of(api, parts.uri.query().unwrap_or_default()) {
        Err(err) => error_response(None, &err),
        Ok(Some((query, limit))) => {
            let found = remote::search(&api.registry, &query, limit, &sight);
            let mut response = Response::new(Body::from(wire::ranked_discovery(&found)));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
        Ok(None) => {
            let offered = remote::Catalog::of(&api.registry);
            // Shown whole (no layers, no scopes judged): made once per registry
            // change, like the catalogue.
            let whole = !api.registry.has_layers()
                && (options.identity.is_none() || offered.scopes().is_empty());
            let body = if whole {
                api.registry
                    .derived(WholeDiscovery, || {
                        Ok(Bytes::from(wire::discovery(&offered, &sight)))
                    })
                    .unwrap_or_default()
            } else {
                Bytes::from(wire::discovery(&offered, &sight))
            };
            let mut response = Response::new(Body::from(body));
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            response
        }
    }
}

/// The key discovery shown whole is kept under in its registry.
#[derive(PartialEq)]
struct WholeDiscovery;

/// The search a discovery request asks for (`?q=…&limit=…`), checked against the
/// API's bounds: `None` for plain discovery, which lists every tool (a `limit`
/// without `q` is checked, and bounds nothing). Other query parameters are left
/// alone.
fn search_of(api: &Api, query: &str) -> Result<Option<(String, usize)>, ToolError> {
    let (mut q, mut limit) = (None, None);
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        let slot = match &*key {
            "q" => &mut q,
            "limit" => &mut limit,
            _ => continue,
        };
        if slot.replace(value).is_some() {
            return Err(ToolError::arguments(
                format!("/{key}"),
                format!("`{key}` is given more than once"),
            ));
        }
    }
    let limit = api.search.limit(
        limit.is_some(),
        limit.and_then(|text| text.parse::<u64>().ok()),
    )?;
    let Some(q) = q else {
        return Ok(None);
    };
    api.search.query("q", &q)?;
    Ok(Some((q.into_owned(), limit)))
}

/// The answer of a built-in page a path names by its one segment (with no tool of
/// that name, and no `rpc-fn`): the OpenAPI document, and the try-it page when it
/// is on. Both answer GET alone.
fn page(
    api: &Api,
    parts: &axum::http::request::Parts,
    segments: &[String],
    options: &CallOptions,
    auth: &impl Fn(Option<&str>, Option<&str>) -> Option<Response>,
) -> Option<Response> {
    let [only] = segments else {
        return None;
    };
    if only == super::openapi::FILE {
        let answer = check_method(api, parts, Methods::GET, None, || auth(None, None))
            .or_else(|| auth(None, None))
            .unwrap_or_else(|| super::openapi::response(&api.openapi_view(), options));
        return Some(answer);
    }
    // The try-it page, when it is on: static, with no data, so served to anyone
    // this API's host and origin checks let through (a visitor opens it and gives
    // the credential the auth hook wants; everything it shows comes through the
    // hook).
    if api.docs && only == super::docs::FILE {
        let answer = check_method(api, parts, Methods::GET, None, || None)
            .unwrap_or_else(super::docs::response);
        return Some(answer);
    }
    None
}

/// Whether `name` (from the path) names the tool `found` is: by its name or one of
/// its aliases, with no second lookup.
fn names(found: &Found, name: &str) -> bool {
    found.name() == name || found.definition().alias.iter().any(|alias| alias == name)
}

/// The identity the request's bearer token proves, or the `401` (with its
/// challenge) or `503` that refuses it.
async fn authenticate(
    api: &Api,
    authenticator: &dyn Authenticator,
    parts: &axum::http::request::Parts,
) -> Result<Identity, Response> {
    let resource = || {
        web::resource(
            api.resource.as_deref(),
            authenticator,
            &parts.headers,
            &api.prefix,
        )
    };
    web::check(authenticator, parts, resource, |err| {
        error_response(None, err)
    })
    .await
}

/// Whether the request is for the try-it page (and no tool of that name).
fn is_docs_page(api: &Api, parts: &axum::http::request::Parts) -> bool {
    api.docs
        && parts.method == Method::GET
        && !parts.headers.contains_key(RPC_FN)
        && segments(parts.uri.path(), &api.prefix)
            .is_ok_and(|s| s.len() == 1 && s[0] == super::docs::FILE)
        && !remote::Catalog::of(&api.registry)
            .tools()
            .any(|tool| tool.name == super::docs::FILE)
}

/// The auth hook's refusal of a request, if it refuses it.
fn hook_refusal(
    api: &Api,
    parts: &axum::http::request::Parts,
    tool: Option<&str>,
    act: Option<&str>,
) -> Option<Response> {
    let auth = api.auth.as_ref()?;
    let request = AuthRequest {
        method: &parts.method,
        headers: &parts.headers,
        path: parts.uri.path(),
        tool,
        act,
        identity: parts.extensions.get::<Identity>(),
    };
    auth(&request).err().map(|err| error_response(tool, &err))
}

/// A request whose tool is known: what remains is the act, the arguments and the
/// auth hook's word.
struct Parsed<'a> {
    api: &'a Api,
    parts: &'a axum::http::request::Parts,
    segments: &'a [String],
    found: Found,
    /// What the tool answers (for `Allow`).
    methods: Methods,
}

impl Parsed<'_> {
    /// Settles the act (canonical: `"$promote"`, `"get"`), asks the auth hook with
    /// the tool and act that will run, then reads the arguments.
    ///
    /// An unknown act is refused before the hook: it sees only acts that exist. The
    /// body is read before the hook only when the act can be nowhere else (a
    /// service called without `rpc-act`).
    async fn call(
        self,
        body: Body,
        header_str: &impl Fn(&str) -> Option<String>,
        auth: &impl Fn(Option<&str>, Option<&str>) -> Option<Response>,
    ) -> Result<Prepared, Box<Response>> {
        let Self {
            api,
            parts,
            segments,
            mut found,
            methods,
        } = self;
        let method = &parts.method;
        let def = found.definition();
        let name = found.name().to_owned();
        let is_service = !def.methods.is_empty();
        // Refused with the hook's word first, else with `err`.
        let fail = |act: Option<&str>, err: ToolError| {
            Box::new(auth(Some(&name), act).unwrap_or_else(|| error_response(Some(&name), &err)))
        };
        let takes_query = *method == Method::GET || *method == Method::DELETE;
        let act_header = if is_service {
            header_str(RPC_ACT)
        } else {
            None
        };
        let mut body = Some(body);
        let (mut params, extras) = if takes_query {
            query_params(parts.uri.query().unwrap_or("")).map_err(|e| fail(None, e))?
        } else if is_service && act_header.is_none() {
            let body = body.take().unwrap_or_default();
            let params = body_params(api, &parts.headers, body)
                .await
                .map_err(|e| fail(None, e))?;
            (params, Vec::new())
        } else {
            // Read once the hook has let the call through.
            (Value::Null, Vec::new())
        };
        let extra = |key: &str| {
            extras
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.clone())
        };
        let id_text = header_str(RPC_RES_ID).or_else(|| segments.get(1).cloned());
        let act = if is_service {
            let has_id = id_text.is_some()
                || params.get("id").is_some_and(|v| !v.is_null())
                || extra("id").is_some();
            let sent = match act_header {
                Some(act) => Some(act),
                None => match params.get("act") {
                    None | Some(Value::Null) => extra("act"),
                    Some(Value::String(act)) => Some(act.clone()),
                    Some(_) => {
                        return Err(fail(
                            None,
                            ToolError::arguments(
                                "/act",
                                "expected a string naming one of the service's methods",
                            ),
                        ));
                    }
                },
            };
            let on_id = segments.len() > 1;
            Some(settle_act(def, (method, on_id), sent, has_id, methods)?)
        } else {
            None
        };
        let act = act.map(|index| (index, &def.acts[index]));
        if let Some(refused) = auth(Some(&name), act.map(|(_, a)| a.name.as_str())) {
            return Err(Box::new(refused));
        }
        if *method == Method::GET && !api.writes_over_get && !read_only(def, act.map(|(_, a)| a)) {
            let what = act.map_or_else(
                || format!("`{name}`"),
                |(_, a)| format!("`{}` of `{name}`", a.name),
            );
            // What this act answers (the path may answer GET for other acts).
            return Err(Box::new(method_not_allowed(
                Some(&name),
                "POST",
                format!("{what} is not marked read-only, so GET cannot run it; send a POST"),
            )));
        }
        if params.is_null() {
            let body = body.take().unwrap_or_default();
            params = body_params(api, &parts.headers, body)
                .await
                .map_err(|e| Box::new(error_response(Some(&name), &e)))?;
        }
        let Some(map) = params.as_object_mut() else {
            let err = ToolError::arguments("", "the parameters must be a JSON object");
            return Err(Box::new(error_response(Some(&name), &err)));
        };
        if let Some((index, _)) = act {
            found.choose_act(index);
        }
        // Cast against the act's schema, or the tool's.
        fill(map, found.params(), id_text, extras);
        // The canonical act: dispatch runs exactly what the hook allowed.
        found.name_act(map);
        Ok(Prepared { found, params })
    }
}

/// Writes the id (from the path or `rpc-res-id`, else the body's, cast to the type
/// the schema gives) and the plain query values into the arguments.
fn fill(
    map: &mut Map<String, Value>,
    schema: &Value,
    id_text: Option<String>,
    extras: Vec<(String, String)>,
) {
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
}

/// The act a service call runs, by its canonical name: the one `sent` names (with
/// or without its `$`), or for a REST resource called without one, the verb (GET
/// without an id lists). Refused: a service called with no act (400, naming its
/// acts), a verb the resource has no method for (405 with the `Allow` it has), an
/// act it does not have (404 `UNKNOWN_ACT`).
fn settle_act(
    def: &crate::tool::ToolDefinition,
    (method, on_id): (&Method, bool),
    sent: Option<String>,
    has_id: bool,
    methods: Methods,
) -> Result<usize, Box<Response>> {
    let name = def.name.as_str();
    let resource = def.action.as_deref() == Some("res");
    let Some(sent) = sent else {
        if resource {
            // The method filter lets only REST verbs reach here; POST on
            // `<res>/<id>` must name its act.
            let verb = match method.as_str() {
                "GET" if !has_id => "list".to_owned(),
                "POST" if on_id => String::new(),
                verb => verb.to_ascii_lowercase(),
            };
            return def.acts.iter().position(|d| d.name == verb).ok_or_else(|| {
                let allow = methods.allow();
                let message = if verb.is_empty() {
                    format!(
                        "POST on `{name}/<id>` runs `put` or `patch` only, named with `act` \
                         or `rpc-act`; this path answers {allow}"
                    )
                } else {
                    format!(
                        "`{name}` has no `{verb}` method; it answers {allow}, or name an \
                         act with `act` or `rpc-act`"
                    )
                };
                Box::new(method_not_allowed(Some(name), &allow, message))
            });
        }
        let acts: Vec<&str> = def.acts.iter().map(|d| d.name.as_str()).collect();
        return Err(Box::new(error_response(
            Some(name),
            &ToolError::arguments(
                "/act",
                format!(
                    "`{name}` is a service: name the method to run with `act` (or the \
                     `rpc-act` header), one of {}",
                    acts.join(", ")
                ),
            ),
        )));
    };
    let index = def
        .act_named(&sent)
        .map(|(index, _)| index)
        .ok_or_else(|| {
            Box::new(error_response(
                Some(name),
                &ToolError::UnknownAct {
                    tool: def.name.clone(),
                    act: sent,
                },
            ))
        })?;
    if resource && let Some(why) = misfit(def, &def.acts[index].name, method, on_id) {
        return Err(Box::new(error_response(
            Some(name),
            &ToolError::arguments("/act", why),
        )));
    }
    Ok(index)
}

/// Why a REST resource's act `act` may not run by `method` on this path (on
/// `<res>/<id>` when `on_id`), if it may not: a verb runs by its own method on
/// its own path (or the clients' forms of a `put` or `patch`), and `POST <res>`
/// runs `post` and the `$` acts.
fn misfit(
    def: &crate::tool::ToolDefinition,
    act: &str,
    method: &Method,
    on_id: bool,
) -> Option<String> {
    let name = &def.name;
    let fits = match method.as_str() {
        "GET" => return None,
        "POST" if on_id => matches!(act, "put" | "patch"),
        "POST" => act == "post" || !REST_VERBS.contains(&act),
        verb => act.eq_ignore_ascii_case(verb),
    };
    (!fits).then(|| {
        let form = match verb_on_id(def, act) {
            _ if act == "post" || !REST_VERBS.contains(&act) => format!("POST <prefix>/{name}"),
            Some(true) => format!("{} <prefix>/{name}/<id>", rest_method(act)),
            _ => format!("{} <prefix>/{name}", rest_method(act)),
        };
        format!("{method} here does not run `{act}`; `{act}` is {form}")
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

/// Whether the call asks for a stream: the tool (or act) streams and, when it
/// declares a `stream` parameter, the call sets it.
fn wants_stream(found: &Found, params: &Value) -> bool {
    found.streams()
        && (wire::property(found.params(), "stream").is_none()
            || wire::truthy(params.get("stream")))
}

/// Runs an admitted call as its plan says.
async fn run(
    api: &Api,
    (call, plan): (Prepared, Plan),
    options: CallOptions,
    req_id: Option<String>,
) -> Response {
    let Prepared { found, params } = call;
    let name = found.name().to_owned();
    let mut items = match plan {
        Plan::Tracked { soft, streamed } => {
            return run_in_background(api, (found, params), options, soft, streamed, req_id).await;
        }
        Plan::Value => {
            return match found.run(&api.registry.with(options), params).await {
                Ok(value) => json_response(StatusCode::OK, &value),
                Err(err) => error_response(Some(&name), &err),
            };
        }
        Plan::Stream => found.stream(&api.registry.with(options), params),
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

/// `GET /metrics`: the API's metrics as Prometheus text, to a request the API
/// would take (host, origin, bearer token, auth hook).
pub(super) async fn metrics_text(State(api): State<Arc<Api>>, request: Request) -> Response {
    let (mut parts, _body) = request.into_parts();
    if let Err(err) = api.check_site(&parts.headers) {
        return error_response(None, &err);
    }
    if let Some(authenticator) = &api.authenticator {
        match authenticate(&api, authenticator.as_ref(), &parts).await {
            Ok(identity) => {
                // The metrics name every tool and count every caller: a scope of
                // their own, not any token.
                if !api.metrics_scope.is_empty()
                    && !identity.has_scopes(&[api.metrics_scope.as_str()])
                {
                    let err = remote::insufficient_scope(std::slice::from_ref(&api.metrics_scope));
                    return refusal(&api, &parts, None, &err);
                }
                parts.extensions.insert(identity);
            }
            Err(refused) => return refused,
        }
    }
    if let Some(refused) = hook_refusal(&api, &parts, None, None) {
        return refused;
    }
    let Some(metrics) = &api.metrics else {
        return error_response(
            None,
            &ToolError::NotFound {
                name: super::api::METRICS_PATH.to_owned(),
                hint: None,
            },
        );
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, crate::layer::PROMETHEUS_CONTENT_TYPE)
        .header(header::CACHE_CONTROL, "no-store")
        .body(Body::from(metrics.prometheus()))
        .unwrap_or_default()
}

/// How long a client waits between polls, in milliseconds (`rpc-retry-after`).
const RETRY_AFTER_MS: &str = "1000";

/// Runs a `background` tool: its answer if it comes within the soft deadline (or a
/// shorter `rpc-timeout`), else `202` and the id to poll under. The call runs on in
/// the API's ledger, bounded by the ledger's maximum run time.
async fn run_in_background(
    api: &Api,
    (found, params): (Found, Value),
    options: CallOptions,
    soft: Duration,
    streamed: bool,
    req_id: Option<String>,
) -> Response {
    let name = found.name().to_owned();
    // The call is its caller's: its `req-id` names it for that caller alone.
    let ledger = api.ledger.for_caller(options.owner());
    let mut track = Track::new().options(options);
    if streamed {
        track = track.streamed();
    }
    if let Some(id) = req_id {
        track = track.id(id);
    }
    let id = match found.track(&ledger, params, track) {
        Ok(id) => id,
        Err(err) => return error_response(Some(&name), &err),
    };
    if let Ok(result) = tokio::time::timeout(soft, ledger.wait(&id)).await {
        ledger.remove(&id);
        return match result {
            Ok(items) if streamed => ndjson_response(&items),
            Ok(value) => json_response(StatusCode::OK, &value),
            Err(err) => error_response(Some(&name), &err),
        };
    }
    let mut response = json_response(
        StatusCode::ACCEPTED,
        &serde_json::json!({"status": 102, "code": 102, "message": "Task moved to background"}),
    );
    let headers = response.headers_mut();
    headers.insert(
        wire::RPC_RETRY_AFTER,
        HeaderValue::from_static(RETRY_AFTER_MS),
    );
    if let Ok(value) = HeaderValue::from_str(&id) {
        headers.insert(REQ_ID, value);
    }
    response
}

/// A poll (`get`) or a cancel (`$cancel`) of a background call. The id names the
/// poller's own call of that id (else one started for no caller): only its caller
/// may read or cancel it, and only while the layers let that caller see its tool;
/// to anyone else it is an unknown id, whoever else uses it.
async fn tasks(
    api: &Api,
    parts: &axum::http::request::Parts,
    segments: &[String],
    body: Body,
    header_str: &impl Fn(&str) -> Option<String>,
    auth: &impl Fn(Option<&str>, Option<&str>) -> Option<Response>,
) -> Response {
    let refused = || auth(Some(TASKS), None);
    if let Some(answer) = check_method(api, parts, Methods::GET_POST, Some(TASKS), refused) {
        return answer;
    }
    let method = &parts.method;
    let act = match header_str(RPC_ACT) {
        Some(act) => Some(act),
        None if *method == Method::POST => match body_params(api, &parts.headers, body).await {
            Ok(params) => params.get("act").and_then(Value::as_str).map(str::to_owned),
            Err(err) => return error_response(Some(TASKS), &err),
        },
        None => None,
    };
    let act = match (method, act.as_deref()) {
        (&Method::GET, None | Some("get")) | (&Method::POST, Some("get")) => "get",
        (&Method::POST, Some("$cancel" | "cancel")) => "$cancel",
        _ => {
            return auth(Some(TASKS), None).unwrap_or_else(|| {
                error_response(
                    Some(TASKS),
                    &ToolError::arguments(
                        "/act",
                        "`rpcTask` polls with `GET <prefix>/rpcTask/<id>` and cancels with \
                         `POST <prefix>/rpcTask/<id>` and the act `$cancel`",
                    ),
                )
            });
        }
    };
    if let Some(refused) = auth(Some(TASKS), Some(act)) {
        return refused;
    }
    // Header wins over the path, as for every id.
    let Some(id) = header_str(RPC_RES_ID).or_else(|| segments.get(1).cloned()) else {
        return error_response(
            Some(TASKS),
            &ToolError::arguments(
                "/id",
                "name the task: `<prefix>/rpcTask/<id>` or the `rpc-res-id` header",
            ),
        );
    };
    // A poll carries no call: a malformed header changes nothing here.
    let (mut poller, _) = call_options(api, &parts.headers, header_str);
    // The poller is who its credential says, as the caller was: not the client id
    // it states.
    if let Some(identity) = parts.extensions.get::<Identity>() {
        poller = poller.identity(identity.clone());
    }
    let ledger = api.ledger.for_caller(poller.owner());
    let readable = ledger
        .tool_of(&id)
        .is_some_and(|tool| remote::tracked_shown(&api.registry, &tool, Some(&poller)));
    if !readable {
        return error_response(
            Some(TASKS),
            &ToolError::not_found_because(
                &id,
                "no tracked call has this id: it is unknown, or its result expired or was read",
            ),
        );
    }
    if act == "$cancel" {
        return match ledger.cancel(&id) {
            Ok(()) => json_response(StatusCode::OK, &serde_json::json!({"success": true})),
            Err(err) => error_response(Some(TASKS), &err),
        };
    }
    let streamed = ledger.status(&id).is_some_and(|info| info.streamed);
    match ledger.poll(&id) {
        Ok(TaskPoll::Working(_)) => json_response(
            StatusCode::ACCEPTED,
            &serde_json::json!({"status": 102, "code": 102, "message": "Keep Polling"}),
        ),
        Ok(TaskPoll::Done(Ok(items))) if streamed => ndjson_response(&items),
        Ok(TaskPoll::Done(Ok(value))) => json_response(StatusCode::OK, &value),
        Ok(TaskPoll::Done(Err(err))) | Err(err) => error_response(Some(TASKS), &err),
    }
}

/// A parsed call, found and ready to run.
struct Prepared {
    found: Found,
    params: Value,
}
