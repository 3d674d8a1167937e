//! The OpenAPI 3.1 document of an [`Api`], served at `GET <prefix>/openapi.json`.
//!
//! It is built from the definitions in the registry (tools are known only at run
//! time) and kept until any registry changes, so serving it costs one lookup and a
//! copy of a reference-counted buffer.
//!
//! What it says, operation by operation, is what [`respond`](super::respond) accepts:
//!
//! * a plain tool is `POST <prefix>/<tool>` with its arguments as the JSON body, and
//!   also `GET <prefix>/<tool>?p=<JSON>` when it is read-only (or the API lets GET
//!   write);
//! * a service with `$` acts is one `POST <prefix>/<service>` whose body is a
//!   `oneOf` of one schema per act, each with `act` as a required `const` (the
//!   `discriminator`). OpenAPI has one operation per path and method, and the act
//!   travels in the body, so the acts cannot be operations of their own: each is
//!   listed under `x-toolfunc-acts` with its own `operationId`, request and
//!   response schemas;
//! * a REST resource maps its verbs: `GET <prefix>/<res>` (`list`),
//!   `GET <prefix>/<res>/{id}` (`get`), `POST <prefix>/<res>` (`post`, and its `$`
//!   acts as above), `PUT`/`PATCH`/`DELETE <prefix>/<res>/{id}` (or without `{id}`
//!   when the method takes no `id`);
//! * the two forms the JavaScript clients send a resource's `put` (or `patch`)
//!   in are operations too, marked `deprecated` and `x-toolfunc-compat`:
//!   `PUT <res>` with the id in the body (the 0.1.1 client) and `POST <res>/{id}`
//!   naming the act (the 1.x client, in `act` or `rpc-act`);
//! * each path lists exactly the methods the server answers there, and any other
//!   answers 405 with them in `Allow` (so does `OPTIONS`, with 204); an act that
//!   does not fit the method and path (`PUT` naming `post`) is 400 at `/act`;
//! * tool schemas become `components/schemas` entries (`add.Params`,
//!   `users.get.Result`); their `$defs` are lifted beside them, namespaced by tool
//!   (`users.NewUser`), and every `$ref` is rewritten to match;
//! * what the server does beyond a tool's schema is written into it: an integer's
//!   `format` (`uint64`) gets the bounds of its Rust type, a number in a result may
//!   be `null` (a non-finite one is sent so), an act that the HTTP method names may
//!   be left out or `null`, and with [`Api::json_only`] a body is required (a
//!   body-less POST is refused with 415).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use axum::body::{Body, Bytes};
use axum::http::{StatusCode, header};
use axum::response::Response;
use percent_encoding::{AsciiSet, CONTROLS, utf8_percent_encode};
use serde_json::{Map, Value, json};

use super::api::Api;
use super::prompts_resources::{PROMPTS, READ, RESOURCES};
use super::wire::{NDJSON, REQ_ID, RPC_TIMEOUT, RPC_TIMEOUT_MAX};
use crate::auth::Authenticator;
use crate::options::CallOptions;
use crate::prompt::PromptFunc;
use crate::registry::Registry;
use crate::remote::{self, Catalog, Lookup};
use crate::resource::ResourceFunc;
use crate::schema::rewrite::{
    bound_integer, def_name, each_schema, lift_definitions, number_or_null, rebase_refs,
};
use crate::tool::ToolDefinition;
use crate::tool::service::{ActDefinition, needed_scopes};

/// The last path segment the document is served at: `GET <prefix>/openapi.json`.
pub(super) const FILE: &str = "openapi.json";

/// The OpenAPI version the document is written in.
const VERSION: &str = "3.1.1";

/// Where tool schemas sit in the document, as a `$ref` base.
const SCHEMAS: &str = "#/components/schemas";

/// The name of the security scheme written for an auth hook nobody described.
const AUTH: &str = "auth";

/// The name of the security scheme of the API's authenticator.
const OAUTH: &str = "oauth2";

/// The document settings of one [`Api`] and the document last made for it.
#[derive(Debug, Default)]
pub(super) struct Settings {
    title: Option<String>,
    version: Option<String>,
    security: Option<(String, Value)>,
    cache: Cache,
    seen: Seen,
}

impl Clone for Settings {
    /// A copy starts with no document: the copy may be configured differently.
    fn clone(&self) -> Self {
        Self {
            title: self.title.clone(),
            version: self.version.clone(),
            security: self.security.clone(),
            cache: Cache::default(),
            seen: Seen::default(),
        }
    }
}

/// The most documents kept for callers who see different parts of the API (by
/// their scopes, or what layers show them); past it they are all dropped and made
/// again as asked.
const MAX_SEEN: usize = 64;

/// The documents made for callers who do not see the whole API, each under what
/// decides it: which tools, acts, prompts and resources the caller is shown. Two
/// callers shown the same get the same document, made once.
#[derive(Debug, Default)]
struct Seen(Mutex<SeenDocs>);

#[derive(Debug, Default)]
struct SeenDocs {
    /// The registry generation and the view's settings the documents were made at.
    made_at: Option<(u64, String, Flags, Option<Value>)>,
    docs: HashMap<Vec<u64>, Bytes>,
}

/// What a caller is shown, one bit per decision, in the catalogue's order: each
/// tool, each act of a tool shown, each prompt and each resource.
fn shown(view: &View<'_>, sight: &remote::Sight<'_>) -> Vec<u64> {
    let mut bits = Vec::new();
    let mut count = 0usize;
    let mut push = |bit: bool| {
        if count.is_multiple_of(64) {
            bits.push(0u64);
        }
        if bit && let Some(last) = bits.last_mut() {
            *last |= 1 << (count % 64);
        }
        count += 1;
    };
    for def in Catalog::of(view.registry).tools() {
        let shows = sight.shows(def);
        push(shows);
        if shows {
            for act in &def.acts {
                push(sight.permits(&act.scopes));
            }
        }
    }
    let (fixed, templates) = view.registry.resources();
    let prompts = view.registry.prompts();
    let defs = prompts.iter().map(|p| p.tool().definition()).chain(
        fixed
            .iter()
            .chain(&templates)
            .map(|r| r.tool().definition()),
    );
    for def in defs {
        push(def.api && sight.shows(def));
    }
    // The count closes the key, so two sets of different sizes never meet.
    bits.push(count as u64);
    bits
}

impl View<'_> {
    /// The document for a caller with `sight`, made once per distinct set of what
    /// callers are shown (and registry change).
    fn seen(&self, sight: &remote::Sight<'_>) -> Bytes {
        let key = shown(self, sight);
        let made_at = (
            crate::registry::generation(),
            self.prefix.to_owned(),
            flags(self),
            self.oauth.clone(),
        );
        {
            let mut seen = self
                .settings
                .seen
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if seen.made_at.as_ref() != Some(&made_at) {
                seen.docs.clear();
                seen.made_at = Some(made_at.clone());
            }
            if let Some(bytes) = seen.docs.get(&key) {
                return bytes.clone();
            }
        }
        let bytes = Bytes::from(serde_json::to_vec(&document(self, sight)).unwrap_or_default());
        let mut seen = self
            .settings
            .seen
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if seen.made_at.as_ref() == Some(&made_at) {
            if seen.docs.len() >= MAX_SEEN {
                seen.docs.clear();
            }
            seen.docs.insert(key, bytes.clone());
        }
        bytes
    }
}

/// What the document is made from, besides the settings.
pub(super) struct View<'a> {
    pub(super) registry: &'a Registry,
    pub(super) prefix: &'a str,
    pub(super) auth: bool,
    /// The OAuth 2.0 security scheme of the API's authenticator, when it has one.
    pub(super) oauth: Option<Value>,
    pub(super) json_only: bool,
    pub(super) writes_over_get: bool,
    pub(super) body_limit: usize,
    /// The bounds of discovery's search.
    pub(super) max_search_results: usize,
    pub(super) max_search_query: usize,
    pub(super) settings: &'a Settings,
}

#[derive(Debug, Default)]
struct Cache(RwLock<Option<Arc<Made>>>);

/// A document, with what it was made from.
#[derive(Debug)]
struct Made {
    generation: u64,
    prefix: String,
    flags: Flags,
    oauth: Option<Value>,
    value: Value,
    bytes: Bytes,
}

impl Made {
    fn fits(&self, view: &View<'_>, generation: u64) -> bool {
        self.generation == generation
            && self.prefix == view.prefix
            && self.flags == flags(view)
            && self.oauth == view.oauth
    }
}

/// The settings of a view the document says something of.
type Flags = (bool, bool, bool, usize, usize, usize);

fn flags(view: &View<'_>) -> Flags {
    (
        view.auth,
        view.json_only,
        view.writes_over_get,
        view.body_limit,
        view.max_search_results,
        view.max_search_query,
    )
}

impl View<'_> {
    /// The document, made at most once per registry change.
    fn made(&self) -> Arc<Made> {
        let cache = &self.settings.cache.0;
        let generation = crate::registry::generation();
        if let Some(made) = &*cache.read().unwrap_or_else(PoisonError::into_inner)
            && made.fits(self, generation)
        {
            return Arc::clone(made);
        }
        let value = document(self, &remote::Sight::of(self.registry, None));
        let bytes = Bytes::from(serde_json::to_vec(&value).unwrap_or_default());
        let made = Arc::new(Made {
            generation,
            prefix: self.prefix.to_owned(),
            flags: flags(self),
            oauth: self.oauth.clone(),
            value,
            bytes,
        });
        *cache.write().unwrap_or_else(PoisonError::into_inner) = Some(Arc::clone(&made));
        made
    }
}

/// The security scheme of an API whose `authenticator` verifies bearer tokens with
/// `scopes`: OAuth 2.0's authorization-code flow when the authenticator knows its
/// authorization server's endpoints, else a bearer token from the servers it names.
pub(super) fn oauth_scheme(authenticator: &dyn Authenticator, scopes: &[String]) -> Value {
    let servers = authenticator.authorization_servers();
    let from = if servers.is_empty() {
        String::new()
    } else {
        format!(" issued by {}", servers.join(", "))
    };
    let description = format!(
        "An `Authorization: Bearer` token{from}. Each operation lists the scopes it \
         needs; a token without them is refused with 403 `insufficient_scope`."
    );
    match authenticator.endpoints() {
        Some(endpoints) => {
            let scopes: Map<String, Value> = scopes
                .iter()
                .map(|scope| (scope.clone(), Value::from("")))
                .collect();
            json!({
                "type": "oauth2",
                "description": description,
                "flows": {"authorizationCode": {
                    "authorizationUrl": endpoints.authorization,
                    "tokenUrl": endpoints.token,
                    "scopes": scopes,
                }},
            })
        }
        None => json!({"type": "http", "scheme": "bearer", "description": description}),
    }
}

/// The answer to `GET <prefix>/openapi.json` for the caller with `options`: the
/// kept document, or, when layers or scopes decide what a caller sees, the one
/// made for what this caller is shown (a tool or act it may not see is not
/// described to it either), kept for the next caller shown the same.
pub(super) fn response(view: &View<'_>, options: &CallOptions) -> Response {
    let scoped = options.identity.is_some()
        && (!Catalog::of(view.registry).scopes().is_empty() || remote::any_scoped(view.registry));
    let bytes = if view.registry.has_layers() || scoped {
        view.seen(&remote::Sight::of(view.registry, Some(options)))
    } else {
        view.made().bytes.clone()
    };
    Response::builder()
        .status(StatusCode::OK)
        .header(header::CONTENT_TYPE, "application/json")
        .body(Body::from(bytes))
        .unwrap_or_default()
}

impl Api {
    /// The OpenAPI 3.1 document of this API, as served at `GET <prefix>/openapi.json`:
    /// one operation per tool, service act and REST verb that discovery lists (tools
    /// with `api = false` are left out), with the routes and methods the server
    /// accepts, the tools' own JSON Schemas under `components/schemas`, the error
    /// body and every status an operation can answer, NDJSON for streams, and a
    /// security scheme when an auth hook is set. It is made once and kept until any
    /// registry changes.
    ///
    /// A service's `$` acts share one `POST <prefix>/<service>` operation (the act is
    /// chosen by the `act` field of the body, which OpenAPI cannot key operations
    /// on): its body is a `oneOf` with `act` as the `discriminator`, and
    /// `x-toolfunc-acts` lists each act with its own `operationId`, request and
    /// response schemas.
    ///
    /// ```
    /// use toolfunc::{Registry, ToolFunc};
    /// use toolfunc::http::Api;
    ///
    /// let registry = Registry::new();
    /// registry.register(
    ///     ToolFunc::builder("echo")
    ///         .handler_sync(|_ctx, args| Ok(args))
    ///         .build()
    ///         .unwrap(),
    /// )
    /// .unwrap();
    /// let doc = Api::new(registry).openapi_document();
    /// assert_eq!(doc["openapi"], "3.1.1");
    /// assert_eq!(doc["paths"]["/api/echo"]["post"]["operationId"], "echo");
    /// ```
    pub fn openapi_document(&self) -> Value {
        self.openapi_view().made().value.clone()
    }

    /// The `info` of the OpenAPI document: the API's title and version (default
    /// `"toolfunc"` and this crate's version).
    #[must_use]
    pub fn openapi_info(mut self, title: impl Into<String>, version: impl Into<String>) -> Self {
        self.openapi.title = Some(title.into());
        self.openapi.version = Some(version.into());
        self.openapi.cache = Cache::default();
        self
    }

    /// Describes what the auth hook ([`Api::auth`]) checks, as an OpenAPI
    /// Security Scheme Object named `name`, which every operation then requires:
    /// `json!({"type": "apiKey", "in": "header", "name": "x-api-key"})`. Without
    /// it, an API with a hook says `{"type": "http", "scheme": "bearer"}` under the
    /// name `auth`. It has no effect without a hook: the hook is what checks.
    #[must_use]
    pub fn openapi_security(mut self, name: impl Into<String>, scheme: Value) -> Self {
        self.openapi.security = Some((name.into(), scheme));
        self.openapi.cache = Cache::default();
        self
    }
}

/// The characters of a tool name escaped in a path segment.
const SEGMENT: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'/')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'`')
    .add(b'{')
    .add(b'}');

/// The document of the tools and acts the caller of `sight` sees.
fn document(view: &View<'_>, sight: &remote::Sight<'_>) -> Value {
    let mut doc = Doc::new(view);
    // A tool of the same name as a built-in page is served in its place.
    let served = |name: &str| remote::find(view.registry, name, Lookup::TOOL, None).is_ok();
    let offered = Catalog::of(view.registry);
    let mut background = false;
    for def in offered.tools().filter_map(|def| sight.view(def)) {
        background |= def.background;
        doc.tool(&def);
    }
    doc.builtins(!served(FILE));
    if background && !served(super::routes::TASKS) {
        doc.tasks();
    }
    let prompts = remote::prompts_seen(view.registry, sight);
    if !prompts.is_empty() && !served(PROMPTS) {
        doc.prompts(&prompts);
    }
    let (fixed, templates) = remote::resources_seen(view.registry, sight);
    if !(served(RESOURCES) || fixed.is_empty() && templates.is_empty()) {
        doc.resources(&fixed);
    }
    doc.finish()
}

/// Where one act's request is documented: its schema and where it goes.
struct Branch {
    act: String,
    /// The scopes a call of the act needs (its tool's and its own).
    scopes: Vec<String>,
    operation_id: String,
    summary: Option<String>,
    request: Value,
    ok: Outcome,
}

/// The 200 answer of an operation: a JSON body, NDJSON lines, or either.
#[derive(Default, Clone)]
struct Outcome {
    json: Option<Value>,
    ndjson: Option<Value>,
}

/// What an operation can be refused for, besides what every call can.
#[derive(Clone, Copy, Default)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent facts about one operation, each adding its own statuses"
)]
struct Risks {
    /// Reads a body (413 past the limit, 415 when not JSON).
    body: bool,
    /// Streams (413 when collected past the cap).
    stream: bool,
    /// A GET that may name an act GET cannot run (405).
    get_act: bool,
    /// May move to the background past its soft deadline (202).
    background: bool,
}

struct Doc<'v> {
    view: &'v View<'v>,
    schemas: Map<String, Value>,
    names: HashSet<String>,
    operation_ids: HashSet<String>,
    paths: Map<String, Value>,
    /// The schemas of the current tool, to refer to one twice rather than copy it
    /// (the `User` that `get`, `put` and `list` all return).
    same: Vec<(Value, String)>,
}

impl<'v> Doc<'v> {
    fn new(view: &'v View<'v>) -> Self {
        let mut schemas = Map::new();
        schemas.insert("Error".into(), error_schema());
        schemas.insert("Discovery".into(), discovery_schema());
        let names = schemas.keys().cloned().collect();
        Self {
            view,
            schemas,
            names,
            operation_ids: HashSet::new(),
            paths: Map::new(),
            same: Vec::new(),
        }
    }

    fn unique_id(&mut self, id: String) -> String {
        unique(&mut self.operation_ids, id)
    }

    fn path(&self, name: &str, id: bool) -> String {
        let mut path = format!(
            "{}/{}",
            self.view.prefix,
            utf8_percent_encode(name, SEGMENT)
        );
        if id {
            path.push_str("/{id}");
        }
        path
    }

    fn put(&mut self, path: String, method: &str, operation: Value) {
        let item = self
            .paths
            .entry(path)
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(item) = item {
            item.insert(method.to_owned(), operation);
        }
    }

    /// A schema of a tool as a component, its `$defs` lifted beside it; returns the
    /// reference to it and, when `adapt` drops `id`, the schema of `id`.
    fn component(
        &mut self,
        ns: &str,
        local: &str,
        raw: &Value,
        adapt: Adapt<'_>,
    ) -> (Value, Option<Value>, bool) {
        let root = unique(&mut self.names, format!("{ns}.{local}"));
        let mut schema = raw.clone();
        each_schema(&mut schema, &mut bound_integer);
        let lifted = lift_definitions(&mut schema);
        // Shared by tool when the same definition recurs (a `User` in every act);
        // apart when two differ under one name.
        let tentative: HashMap<String, String> = lifted
            .iter()
            .map(|(key, _)| (key.clone(), format!("{ns}.{}", clean(def_name(key)))))
            .collect();
        let rewritten = |mapping: &HashMap<String, String>| {
            lifted
                .iter()
                .map(|(key, def)| {
                    let mut def = def.clone();
                    rebase_refs(&mut def, SCHEMAS, &root, mapping);
                    (mapping[key].clone(), def)
                })
                .collect::<Vec<_>>()
        };
        let mut defs = rewritten(&tentative);
        let distinct: HashSet<&String> = tentative.values().collect();
        let fits = distinct.len() == tentative.len()
            && defs.iter().all(|(name, def)| {
                self.schemas.get(name).is_none_or(|have| have == def)
                    && (self.schemas.contains_key(name) || !self.names.contains(name))
            });
        let mapping = if fits {
            tentative
        } else {
            let mapping: HashMap<String, String> = lifted
                .iter()
                .map(|(key, _)| {
                    let name = format!("{root}.{}", clean(def_name(key)));
                    (key.clone(), unique(&mut self.names, name))
                })
                .collect();
            defs = rewritten(&mapping);
            mapping
        };
        rebase_refs(&mut schema, SCHEMAS, &root, &mapping);
        for (name, def) in defs {
            self.names.insert(name.clone());
            if !self.same.iter().any(|(_, n)| *n == name) {
                self.same.push((def.clone(), name.clone()));
            }
            self.schemas.insert(name, def);
        }
        let id = apply(&mut schema, adapt);
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .is_some_and(|r| !r.is_empty());
        if let Some((_, existing)) = self.same.iter().find(|(s, _)| *s == schema) {
            self.names.remove(&root);
            return (reference(existing), id, required);
        }
        self.same.push((schema.clone(), root.clone()));
        self.schemas.insert(root.clone(), schema);
        (reference(&root), id, required)
    }

    /// The 200 answer of a tool or act.
    fn outcome(
        &mut self,
        ns: &str,
        local: &str,
        result: Option<&Value>,
        streams: Streams,
    ) -> Outcome {
        let item = match result {
            Some(result) => {
                // A number that is not finite is sent as `null` (JSON has no NaN).
                let mut result = result.clone();
                each_schema(&mut result, &mut number_or_null);
                self.component(ns, local, &result, Adapt::default()).0
            }
            None => json!({}),
        };
        let mut outcome = Outcome::default();
        if streams.json() {
            outcome.json = Some(if streams.streams {
                json!({"type": "array", "items": item})
            } else {
                item.clone()
            });
        }
        if streams.streams {
            outcome.ndjson = Some(json!({"anyOf": [item, reference("Error")]}));
        }
        outcome
    }

    fn tool(&mut self, def: &ToolDefinition) {
        self.same.clear();
        let ns = clean(&def.name);
        if def.acts.is_empty() {
            self.plain(def, &ns);
        } else if def.action.as_deref() == Some("res") {
            self.resource(def, &ns);
        } else {
            self.service(def, &ns);
        }
    }

    fn plain(&mut self, def: &ToolDefinition, ns: &str) {
        let streams = Streams::of(def.stream, &def.params);
        let (params, _, required) = self.component(ns, "Params", &def.params, Adapt::default());
        let ok = self.outcome(ns, "Result", def.result.as_ref(), streams);
        let risks = Risks {
            body: true,
            stream: streams.streams,
            get_act: false,
            background: def.background,
        };
        let mut post = self.operation(def, None, &def.name.clone(), risks, &ok);
        post["requestBody"] = self.request_body(&params, required);
        let path = self.path(&def.name, false);
        self.put(path.clone(), "post", post);
        if self.view.writes_over_get || super::routes::read_only(def, None) {
            let risks = Risks {
                body: false,
                ..risks
            };
            let mut get = self.operation(def, None, &format!("{}.query", def.name), risks, &ok);
            push_param(&mut get, query_p(&params, required, &def.params));
            self.put(path, "get", get);
        }
    }

    /// A `$` act as one branch of a service's POST (and GET): its params with `act`.
    fn branch(
        &mut self,
        def: &ToolDefinition,
        ns: &str,
        act: &ActDefinition,
        verb: bool,
    ) -> Branch {
        let method = clean(act.method());
        let adapt = Adapt {
            act: Some((&act.name, !verb)),
            drop_id: false,
        };
        let local = if verb { "Params" } else { "Call" };
        let (request, _, _) = self.component(ns, &format!("{method}.{local}"), &act.params, adapt);
        let ok = self.outcome(
            ns,
            &format!("{method}.Result"),
            act.result.as_ref(),
            Streams::of(act.stream, &act.params),
        );
        Branch {
            act: act.name.clone(),
            scopes: needed_scopes(def, Some(act)),
            operation_id: self.unique_id(format!("{}.{}", def.name, act.method())),
            summary: summary(act.title.as_deref(), act.description.as_deref()),
            request,
            ok,
        }
    }

    /// One operation for several acts chosen by the body's `act`.
    fn choice(
        &mut self,
        def: &ToolDefinition,
        id: &str,
        branches: &[Branch],
        risks: Risks,
    ) -> (Value, Value) {
        let mut json_any = Vec::new();
        let mut ndjson_any = Vec::new();
        for branch in branches {
            if let Some(s) = &branch.ok.json
                && !json_any.contains(s)
            {
                json_any.push(s.clone());
            }
            if let Some(s) = &branch.ok.ndjson
                && !ndjson_any.contains(s)
            {
                ndjson_any.push(s.clone());
            }
        }
        let one = |mut list: Vec<Value>| match list.len() {
            0 => None,
            1 => list.pop(),
            _ => Some(json!({"anyOf": list})),
        };
        let ok = Outcome {
            json: one(json_any),
            ndjson: one(ndjson_any),
        };
        let streams = branches.iter().any(|b| b.ok.ndjson.is_some());
        let risks = Risks {
            stream: risks.stream || streams,
            ..risks
        };
        let mut operation = self.operation(def, None, id, risks, &ok);
        let acts: Vec<Value> = branches
            .iter()
            .map(|b| {
                let mut entry = json!({
                    "act": b.act,
                    "operationId": b.operation_id,
                    "request": b.request,
                });
                if let Some(summary) = &b.summary {
                    entry["summary"] = Value::from(summary.clone());
                }
                if let Some(s) = &b.ok.json {
                    entry["response"] = s.clone();
                }
                if let Some(s) = &b.ok.ndjson {
                    entry["ndjson"] = s.clone();
                }
                if self.view.oauth.is_some() && b.scopes != def.scopes {
                    // The act needs scopes of its own, on top of the operation's.
                    entry["security"] = self.security(&b.scopes);
                }
                entry
            })
            .collect();
        operation["x-toolfunc-acts"] = Value::Array(acts);
        if let [only] = branches
            && let Some(summary) = &only.summary
        {
            operation["summary"] = Value::from(summary.clone());
        }
        let body = if let [only] = branches {
            only.request.clone()
        } else {
            let mapping: Map<String, Value> = branches
                .iter()
                .filter_map(|b| {
                    let target = b.request["$ref"].as_str()?;
                    Some((b.act.clone(), Value::from(target)))
                })
                .collect();
            json!({
                "oneOf": branches.iter().map(|b| b.request.clone()).collect::<Vec<_>>(),
                "discriminator": {"propertyName": "act", "mapping": mapping},
            })
        };
        (operation, body)
    }

    fn service(&mut self, def: &ToolDefinition, ns: &str) {
        let branches: Vec<Branch> = def
            .acts
            .iter()
            .map(|act| self.branch(def, ns, act, false))
            .collect();
        let risks = Risks {
            body: true,
            ..Risks::default()
        };
        let (mut post, body) = self.choice(def, &def.name, &branches, risks);
        post["requestBody"] = self.request_body(&body, true);
        let path = self.path(&def.name, false);
        self.put(path.clone(), "post", post);
        let gettable: Vec<Branch> = def
            .acts
            .iter()
            .zip(branches)
            .filter(|(act, _)| {
                self.view.writes_over_get || super::routes::read_only(def, Some(act))
            })
            .map(|(_, b)| b)
            .collect();
        if gettable.is_empty() {
            return;
        }
        let risks = Risks {
            body: false,
            stream: false,
            get_act: !self.view.writes_over_get,
            background: false,
        };
        let (mut get, p) = self.choice(def, &format!("{}.query", def.name), &gettable, risks);
        push_param(&mut get, p_param(&p, true));
        self.put(path, "get", get);
    }

    fn resource(&mut self, def: &ToolDefinition, ns: &str) {
        let mut posts = Vec::new();
        for act in &def.acts {
            let verb = act.name.as_str();
            if verb == "post" || !act.is_verb() {
                posts.push(self.branch(def, ns, act, verb == "post"));
                continue;
            }
            let takes_id = super::wire::property(&act.params, "id").is_some();
            let on_id = verb == "get" || (verb != "list" && takes_id);
            let adapt = Adapt {
                act: None,
                drop_id: on_id,
            };
            let method = clean(verb);
            let (params, id, required) =
                self.component(ns, &format!("{method}.Params"), &act.params, adapt);
            let streams = Streams::of(act.stream, &act.params);
            let ok = self.outcome(
                ns,
                &format!("{method}.Result"),
                act.result.as_ref(),
                streams,
            );
            let query = verb == "get" || verb == "list" || verb == "delete";
            let risks = Risks {
                body: !query,
                stream: streams.streams,
                get_act: false,
                background: false,
            };
            let operation_id = format!("{}.{verb}", def.name);
            let mut operation = self.operation(def, Some(act), &operation_id, risks, &ok);
            operation["x-toolfunc-act"] = Value::from(verb);
            if on_id {
                push_id(&mut operation, id);
            }
            if query {
                let remaining = if on_id {
                    strip_id(&act.params)
                } else {
                    act.params.clone()
                };
                push_param(&mut operation, query_p(&params, required, &remaining));
            } else {
                operation["requestBody"] = self.request_body(&params, required);
            }
            let path = self.path(&def.name, on_id);
            let method = if query && verb != "delete" {
                "get"
            } else {
                verb
            };
            self.put(path, method, operation);
            if on_id && matches!(verb, "put" | "patch") {
                self.client_forms(def, ns, act, &ok);
            }
        }
        if posts.is_empty() {
            return;
        }
        let risks = Risks {
            body: true,
            ..Risks::default()
        };
        let id = if let [only] = posts.as_slice()
            && only.act == "post"
        {
            format!("{}.post", def.name)
        } else {
            def.name.clone()
        };
        let (mut post, body) = self.choice(def, &id, &posts, risks);
        let required = posts.iter().any(|b| b.act != "post");
        post["requestBody"] = self.request_body(&body, required);
        let path = self.path(&def.name, false);
        self.put(path, "post", post);
    }

    /// The forms the JavaScript clients send a resource's `put` (or `patch`) in,
    /// besides `PUT <res>/{id}`, which the server answers too: the 0.1.1 client's
    /// `PUT <res>` with the id in the body, and the 1.x client's `POST <res>/{id}`
    /// with the act named (in the body, or in `rpc-act`). Each is its own
    /// operation, marked `deprecated` and `x-toolfunc-compat`: a new client uses the
    /// canonical one.
    fn client_forms(&mut self, def: &ToolDefinition, ns: &str, act: &ActDefinition, ok: &Outcome) {
        let verb = act.name.as_str();
        let method = clean(verb);
        let risks = Risks {
            body: true,
            stream: Streams::of(act.stream, &act.params).streams,
            get_act: false,
            background: false,
        };
        let forms = [
            (
                "idInBody",
                false,
                "PUT",
                "the 0.1.1 JavaScript client's form: the id in the body",
            ),
            (
                "byPost",
                true,
                "POST",
                "the 1.x JavaScript client's form: POST to the item, the act named in \
                 `act` (or the `rpc-act` header)",
            ),
        ];
        for (form, on_id, http_method, what) in forms {
            let adapt = Adapt {
                act: on_id.then_some((verb, true)),
                drop_id: on_id,
            };
            let (params, id, required) =
                self.component(ns, &format!("{method}.{form}.Params"), &act.params, adapt);
            let operation_id = format!("{}.{verb}.{form}", def.name);
            let mut operation = self.operation(def, Some(act), &operation_id, risks, ok);
            operation["x-toolfunc-act"] = Value::from(verb);
            operation["x-toolfunc-compat"] = Value::from(what);
            operation["deprecated"] = Value::Bool(true);
            if on_id {
                push_id(&mut operation, id);
            }
            operation["requestBody"] = self.request_body(&params, required || on_id);
            let path = self.path(&def.name, on_id);
            self.put(path, &http_method.to_ascii_lowercase(), operation);
        }
    }

    /// An operation of a tool (or of one act of it), without its request.
    fn operation(
        &mut self,
        def: &ToolDefinition,
        act: Option<&ActDefinition>,
        id: &str,
        risks: Risks,
        ok: &Outcome,
    ) -> Value {
        let operation_id = self.unique_id(id.to_owned());
        let (title, description) = match act {
            Some(act) => (act.title.as_deref(), act.description.as_deref()),
            None => (def.title.as_deref(), def.description.as_deref()),
        };
        let mut operation = Map::new();
        operation.insert("operationId".into(), Value::from(operation_id));
        if let Some(summary) = summary(title, description) {
            operation.insert("summary".into(), Value::from(summary));
        }
        let mut text = description.unwrap_or_default().to_owned();
        if act.is_none() && !def.alias.is_empty() {
            let also: Vec<String> = def.alias.iter().map(|a| self.path(a, false)).collect();
            if !text.is_empty() {
                text.push_str("\n\n");
            }
            let _ = write!(text, "Also served at {}.", also.join(", "));
        }
        if !text.is_empty() {
            operation.insert("description".into(), Value::from(text));
        }
        if !def.tags.is_empty() {
            operation.insert("tags".into(), json!(def.tags));
        }
        operation.insert(
            "parameters".into(),
            json!([
                {"$ref": "#/components/parameters/rpcTimeout"},
                {"$ref": "#/components/parameters/reqId"},
            ]),
        );
        operation.insert("responses".into(), self.responses(ok, risks, true));
        if self.view.oauth.is_some() {
            let scopes = needed_scopes(def, act);
            operation.insert("security".into(), self.security(&scopes));
        }
        Value::Object(operation)
    }

    /// An operation's security: a token with `scopes`, and the auth hook's word
    /// when there is a hook.
    fn security(&self, scopes: &[String]) -> Value {
        let mut requirement = Map::new();
        requirement.insert(OAUTH.to_owned(), json!(scopes));
        if self.view.auth {
            let name = self
                .view
                .settings
                .security
                .as_ref()
                .map_or(AUTH, |(name, _)| name.as_str());
            requirement.insert(name.to_owned(), json!([]));
        }
        json!([requirement])
    }

    fn responses(&self, ok: &Outcome, risks: Risks, call: bool) -> Value {
        let mut content = Map::new();
        if let Some(schema) = &ok.json {
            content.insert("application/json".into(), json!({"schema": schema}));
        }
        if let Some(schema) = &ok.ndjson {
            content.insert(NDJSON.into(), json!({"schema": schema}));
        }
        let mut responses = Map::new();
        let description = if ok.ndjson.is_some() {
            "The result: JSON, or with a stream one JSON item per line (an error after \
             the first item ends the body with one error line)."
        } else {
            "The result (`null` for none)."
        };
        responses.insert(
            "200".into(),
            json!({"description": description, "content": content}),
        );
        if risks.background {
            responses.insert(
                "202".into(),
                json!({
                    "description": "Still running at the tool's soft deadline: the call goes \
                                    on in the background. Poll `GET <prefix>/rpcTask/{id}` \
                                    with the `req-id` of this answer after `rpc-retry-after` ms.",
                    "headers": {
                        "req-id": {"description": "The id to poll.", "schema": {"type": "string"}},
                        "rpc-retry-after": {
                            "description": "Milliseconds to wait before polling.",
                            "schema": {"type": "integer", "minimum": 0}
                        }
                    },
                    "content": {"application/json": {"schema": reference("Processing")}},
                }),
            );
        }
        let mut refer = |status: &str, name: &str| {
            responses.insert(
                status.into(),
                json!({"$ref": format!("#/components/responses/{name}")}),
            );
        };
        if call {
            refer("400", "BadRequest");
        }
        if self.view.auth || self.view.oauth.is_some() {
            refer("401", "Unauthorized");
        }
        refer("403", "Forbidden");
        if call {
            refer("404", "NotFound");
            if risks.get_act {
                refer("405", "MethodNotAllowed");
            }
            refer("408", "Timeout");
            if risks.body || risks.stream {
                refer("413", "TooLarge");
            }
            if risks.body && self.view.json_only {
                refer("415", "UnsupportedMediaType");
            }
            refer("500", "InternalError");
            refer("default", "OtherError");
        }
        Value::Object(responses)
    }

    /// Discovery and this document.
    fn builtins(&mut self, openapi: bool) {
        let root = if self.view.prefix.is_empty() {
            "/".to_owned()
        } else {
            self.view.prefix.to_owned()
        };
        let discovery = Outcome {
            json: Some(reference("Discovery")),
            ndjson: None,
        };
        let id = self.unique_id("discovery".into());
        let mut responses = self.responses(&discovery, Risks::default(), false);
        responses["400"] = json!({"$ref": "#/components/responses/BadRequest"});
        let results = self.view.max_search_results;
        self.put(
            root,
            "get",
            json!({
                "operationId": id,
                "summary": "Discovery: the definition of every tool, by name.",
                "description": "With `q`, a search: the tools that best match its words \
                                (the tool it names first), best first, in the same shape.",
                "parameters": [
                    {
                        "name": "q", "in": "query", "required": false,
                        "description": "Words to search the tools' names, titles, \
                                        descriptions, tags and parameters for.",
                        "schema": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": self.view.max_search_query,
                            "pattern": "\\S",
                        },
                    },
                    {
                        "name": "limit", "in": "query", "required": false,
                        "description": "How many tools a search answers at most; \
                                        without `q`, discovery lists every tool.",
                        "schema": {
                            "type": "integer",
                            "minimum": 1,
                            "maximum": results,
                            "default": remote::search::DEFAULT_SEARCH_RESULTS.min(results),
                        },
                    },
                ],
                "responses": responses,
            }),
        );
        if openapi {
            let this = Outcome {
                json: Some(json!({"type": "object"})),
                ndjson: None,
            };
            let id = self.unique_id("openapi".into());
            let responses = self.responses(&this, Risks::default(), false);
            let path = format!("{}/{FILE}", self.view.prefix);
            self.put(
                path,
                "get",
                json!({
                    "operationId": id,
                    "summary": "This document.",
                    "responses": responses,
                }),
            );
        }
    }

    /// `_prompts`: the list, and one operation per prompt getting it with its
    /// arguments (the JSON Schema of its function's parameters).
    fn prompts(&mut self, prompts: &[Arc<PromptFunc>]) {
        self.schemas.insert(
            "Prompts".into(),
            json!({
                "type": "object",
                "description": "The prompts offered here, by name.",
                "required": ["prompts"],
                "properties": {"prompts": {"type": "array", "items": {
                    "type": "object",
                    "required": ["name"],
                    "properties": {
                        "name": {"type": "string"},
                        "title": {"type": "string"},
                        "description": {"type": "string"},
                        "arguments": {"type": "array", "items": {
                            "type": "object",
                            "required": ["name", "required"],
                            "properties": {
                                "name": {"type": "string"},
                                "title": {"type": "string"},
                                "description": {"type": "string"},
                                "required": {"type": "boolean"},
                            },
                        }},
                        "tags": {"type": "array", "items": {"type": "string"}},
                        "scopes": {"type": "array", "items": {"type": "string"}},
                    },
                }}},
            }),
        );
        self.schemas.insert(
            "PromptResult".into(),
            json!({
                "type": "object",
                "description": "A prompt's messages (each one content block, in MCP's shape).",
                "required": ["messages"],
                "properties": {
                    "description": {"type": "string"},
                    "messages": {"type": "array", "items": {
                        "type": "object",
                        "required": ["role", "content"],
                        "properties": {
                            "role": {"enum": ["user", "assistant"]},
                            "content": {
                                "type": "object",
                                "required": ["type"],
                                "properties": {"type": {"enum": [
                                    "text", "image", "audio", "resource_link", "resource"
                                ]}},
                            },
                        },
                    }},
                },
            }),
        );
        let listed = Outcome {
            json: Some(reference("Prompts")),
            ndjson: None,
        };
        let id = self.unique_id("prompts.list".into());
        let responses = self.responses(&listed, Risks::default(), false);
        self.put(
            format!("{}/{PROMPTS}", self.view.prefix),
            "get",
            json!({
                "operationId": id,
                "summary": "The prompts offered here, by name.",
                "responses": responses,
            }),
        );
        let got = Outcome {
            json: Some(reference("PromptResult")),
            ndjson: None,
        };
        for prompt in prompts {
            let def = prompt.tool().definition();
            self.same.clear();
            let ns = format!("prompt.{}", clean(prompt.name()));
            let (params, _, required) =
                self.component(&ns, "Params", &def.params, Adapt::default());
            let risks = Risks {
                body: true,
                ..Risks::default()
            };
            let id = format!("prompts.get.{}", prompt.name());
            let mut post = self.operation(def, None, &id, risks, &got);
            post["requestBody"] = self.request_body(&params, required);
            let path = format!(
                "{}/{PROMPTS}/{}",
                self.view.prefix,
                utf8_percent_encode(prompt.name(), SEGMENT)
            );
            self.put(path, "post", post);
        }
    }

    /// `_resources`: the list of resources and templates, and the read of a URI.
    fn resources(&mut self, fixed: &[Arc<ResourceFunc>]) {
        let listed_item = |uri: &str| {
            json!({
                "type": "object",
                "required": ["name", uri],
                "properties": {
                    uri: {"type": "string"},
                    "name": {"type": "string"},
                    "title": {"type": "string"},
                    "description": {"type": "string"},
                    "mimeType": {"type": "string"},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "scopes": {"type": "array", "items": {"type": "string"}},
                },
            })
        };
        self.schemas.insert(
            "Resources".into(),
            json!({
                "type": "object",
                "description": "The fixed resources (by URI) and the URI templates offered here.",
                "required": ["resources", "resourceTemplates"],
                "properties": {
                    "resources": {"type": "array", "items": listed_item("uri")},
                    "resourceTemplates": {"type": "array", "items": listed_item("uriTemplate")},
                },
            }),
        );
        self.schemas.insert(
            "ResourceContents".into(),
            json!({
                "type": "object",
                "description": "What a read answers: text, or a base64 `blob`, per URI.",
                "required": ["contents"],
                "properties": {"contents": {"type": "array", "items": {
                    "type": "object",
                    "required": ["uri"],
                    "properties": {
                        "uri": {"type": "string"},
                        "mimeType": {"type": "string"},
                        "text": {"type": "string"},
                        "blob": {"type": "string"},
                    },
                }}},
            }),
        );
        let listed = Outcome {
            json: Some(reference("Resources")),
            ndjson: None,
        };
        let id = self.unique_id("resources.list".into());
        let responses = self.responses(&listed, Risks::default(), false);
        self.put(
            format!("{}/{RESOURCES}", self.view.prefix),
            "get",
            json!({
                "operationId": id,
                "summary": "The resources and resource templates offered here.",
                "responses": responses,
            }),
        );
        let read = Outcome {
            json: Some(reference("ResourceContents")),
            ndjson: None,
        };
        let id = self.unique_id("resources.read".into());
        let mut responses = self.responses(&read, Risks::default(), true);
        responses["413"] = json!({"$ref": "#/components/responses/TooLarge"});
        let examples: Vec<&str> = fixed.iter().map(|r| r.address()).collect();
        // Characters: a URI is bounded in bytes, and a character is at most four.
        let max_chars = remote::MAX_URI_BYTES / 4;
        self.put(
            format!("{}/{RESOURCES}/{READ}", self.view.prefix),
            "get",
            json!({
                "operationId": id,
                "summary": "Read a resource: a fixed resource's URI, or one a template makes.",
                "parameters": [
                    {
                        "name": "uri", "in": "query", "required": true,
                        "description": "The URI to read.",
                        "schema": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": max_chars,
                            "examples": examples,
                        },
                    },
                    {"$ref": "#/components/parameters/rpcTimeout"},
                    {"$ref": "#/components/parameters/reqId"},
                ],
                "responses": responses,
            }),
        );
    }

    /// `rpcTask`: the poll and the cancel of background calls.
    fn tasks(&mut self) {
        use super::routes::TASKS;
        self.schemas.insert(
            "Processing".into(),
            json!({
                "type": "object",
                "description": "A call still running in the background.",
                "properties": {
                    "status": {"const": 102},
                    "code": {"const": 102},
                    "message": {"type": "string"}
                },
                "required": ["status", "message"]
            }),
        );
        let path = format!("{}/{TASKS}/{{id}}", self.view.prefix);
        let id_param = json!({
            "name": "id", "in": "path", "required": true,
            "description": "The `req-id` the call was answered `202` with.",
            "schema": {"type": "string"}
        });
        let any = Outcome {
            json: Some(json!({})),
            ndjson: None,
        };
        let mut poll_responses = self.responses(&any, Risks::default(), false);
        poll_responses["200"]["description"] = Value::from("The call's result, once it finished.");
        poll_responses["202"] = json!({
            "description": "Still running: poll again.",
            "content": {"application/json": {"schema": reference("Processing")}}
        });
        for (status, name) in [
            ("404", "NotFound"),
            ("408", "Timeout"),
            ("500", "InternalError"),
            ("default", "OtherError"),
        ] {
            poll_responses[status] = json!({"$ref": format!("#/components/responses/{name}")});
        }
        let poll_id = self.unique_id("rpcTask.get".into());
        self.put(
            path.clone(),
            "get",
            json!({
                "operationId": poll_id,
                "summary": "Poll a background call: its result once it finished.",
                "parameters": [id_param],
                "responses": poll_responses,
            }),
        );
        let cancel_id = self.unique_id("rpcTask.cancel".into());
        let mut cancel_responses = self.responses(
            &Outcome {
                json: Some(json!({"type": "object", "properties": {"success": {"const": true}}, "required": ["success"]})),
                ndjson: None,
            },
            Risks::default(),
            false,
        );
        for (status, name) in [
            ("400", "BadRequest"),
            ("404", "NotFound"),
            ("415", "UnsupportedMediaType"),
        ] {
            cancel_responses[status] = json!({"$ref": format!("#/components/responses/{name}")});
        }
        self.put(
            path,
            "post",
            json!({
                "operationId": cancel_id,
                "summary": "Cancel a background call (a finished one stays as it was).",
                "parameters": [id_param],
                "requestBody": {
                    "required": true,
                    "content": {"application/json": {"schema": {
                        "type": "object",
                        "properties": {"act": {"const": "$cancel"}},
                        "required": ["act"]
                    }}}
                },
                "responses": cancel_responses,
            }),
        );
    }

    fn finish(self) -> Value {
        let view = self.view;
        let settings = view.settings;
        let prefix = if view.prefix.is_empty() {
            "/"
        } else {
            view.prefix
        };
        let description = format!(
            "Tools served under `{prefix}`: `POST {p}/<tool>` with the arguments as a JSON \
             object (and `GET {p}/<tool>?p=<JSON>` for read-only tools), REST verbs on \
             `{p}/<resource>[/{{id}}]`. A service's `$` acts share its `POST` operation: the \
             body's `act` (a `const` in each `oneOf` branch) chooses the act, and \
             `x-toolfunc-acts` gives each act its own `operationId`, request and response \
             schemas; the `rpc-act` header may carry the act instead. Errors are \
             `{{name, code, errorCode, data, error}}` with the HTTP status in `code`.",
            p = view.prefix,
        );
        let responses = error_responses(view.body_limit);
        let mut components = json!({
            "schemas": self.schemas,
            "responses": responses,
            "parameters": {
                "rpcTimeout": {
                    "name": RPC_TIMEOUT, "in": "header", "required": false,
                    "description": "Bounds the call, in milliseconds (408 `TIMEOUT` past it); \
                        `0` sets no bound, as the JavaScript servers read it. Anything but a \
                        whole number that fits 64 bits is 400 `INVALID_HEADER`.",
                    "schema": {"type": "integer", "minimum": 0, "maximum": RPC_TIMEOUT_MAX},
                },
                "reqId": {
                    "name": REQ_ID, "in": "header", "required": false,
                    "description": "A request id, echoed on the response.",
                    "schema": {"type": "string"},
                },
            },
        });
        let mut doc = json!({
            "openapi": VERSION,
            "info": {
                "title": settings.title.as_deref().unwrap_or("toolfunc"),
                "version": settings.version.as_deref().unwrap_or(env!("CARGO_PKG_VERSION")),
                "description": description,
            },
            "paths": self.paths,
        });
        // One requirement: a token the authenticator verifies and the hook's word.
        let mut schemes = Map::new();
        let mut requirement = Map::new();
        if let Some(scheme) = &view.oauth {
            schemes.insert(OAUTH.to_owned(), scheme.clone());
            requirement.insert(OAUTH.to_owned(), json!([]));
        }
        if view.auth {
            let (name, scheme) = settings.security.clone().unwrap_or_else(|| {
                (
                    AUTH.to_owned(),
                    json!({
                        "type": "http",
                        "scheme": "bearer",
                        "description": "Checked by the API's auth hook, which sees every \
                                        request (discovery included) with the tool and act \
                                        that will run; what it accepts is the hook's own.",
                    }),
                )
            });
            schemes.insert(name.clone(), scheme);
            requirement.insert(name, json!([]));
        }
        if !schemes.is_empty() {
            components["securitySchemes"] = Value::Object(schemes);
            doc["security"] = json!([requirement]);
        }
        doc["components"] = components;
        doc
    }
}

/// Whether a tool or act streams, and whether the call chooses (`stream`).
#[derive(Clone, Copy)]
struct Streams {
    streams: bool,
    chooses: bool,
}

impl Streams {
    fn of(streams: bool, params: &Value) -> Self {
        Self {
            streams,
            chooses: super::wire::property(params, "stream").is_some(),
        }
    }

    /// Whether a JSON body can answer: not a stream, or one the caller may decline.
    fn json(self) -> bool {
        !self.streams || self.chooses
    }
}

/// What a request schema is made of, from a params schema.
#[derive(Clone, Copy, Default)]
struct Adapt<'a> {
    /// An `act` property with this `const`, required or not.
    act: Option<(&'a str, bool)>,
    /// Leaves `id` out (it comes from the path).
    drop_id: bool,
}

/// Applies `adapt` to a (rewritten) params schema; returns the schema of `id` when
/// it was dropped.
fn apply(schema: &mut Value, adapt: Adapt<'_>) -> Option<Value> {
    if adapt.act.is_none() && !adapt.drop_id {
        return None;
    }
    if *schema == Value::Bool(true) {
        *schema = json!({});
    }
    let map = schema.as_object_mut()?;
    let mut id = None;
    if adapt.drop_id {
        if let Some(Value::Object(properties)) = map.get_mut("properties") {
            id = properties.remove("id");
        }
        if let Some(Value::Array(required)) = map.get_mut("required") {
            required.retain(|r| r != "id");
            if required.is_empty() {
                map.remove("required");
            }
        }
    }
    if let Some((act, required)) = adapt.act {
        let properties = map
            .entry("properties")
            .or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(properties) = properties {
            // Where the act may be left out (the HTTP method names it), `null`
            // leaves it out too.
            let schema = if required {
                json!({"const": act, "description": "The act to run."})
            } else {
                json!({
                    "enum": [act, null],
                    "description": "The act to run (the method's when left out or `null`).",
                })
            };
            properties.insert("act".into(), schema);
        }
        if required {
            let list = map
                .entry("required")
                .or_insert_with(|| Value::Array(Vec::new()));
            if let Value::Array(list) = list {
                list.insert(0, Value::from("act"));
            }
        }
    }
    id
}

/// A params schema without `id` (to know what is left for `p`).
fn strip_id(params: &Value) -> Value {
    let mut params = params.clone();
    apply(
        &mut params,
        Adapt {
            act: None,
            drop_id: true,
        },
    );
    params
}

impl Doc<'_> {
    /// The JSON body of an operation. With [`Api::json_only`] it is required even
    /// when every argument is optional: a body-less request (which would mean `{}`)
    /// says no content type, and is refused with 415 unless it carries an
    /// `rpc-*`/`req-id` header.
    fn request_body(&self, schema: &Value, required: bool) -> Value {
        json!({
            "required": required || self.view.json_only,
            "content": {"application/json": {"schema": schema}},
        })
    }
}

/// The `id` path parameter of a REST resource's operation, of the type its
/// method declares (`string` when it declares none).
fn push_id(operation: &mut Value, schema: Option<Value>) {
    let schema = schema.unwrap_or_else(|| json!({"type": "string"}));
    push_param(
        operation,
        json!({
            "name": "id", "in": "path", "required": true, "schema": schema,
            "description": "The resource id (cast to the type the method declares).",
        }),
    );
}

/// The `p` query parameter of a GET or DELETE, when there are arguments to send.
fn query_p(schema: &Value, required: bool, params: &Value) -> Option<Value> {
    let empty = params
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(Map::is_empty)
        && params.get("additionalProperties") == Some(&Value::Bool(false));
    let none = params
        .get("properties")
        .and_then(Value::as_object)
        .is_none_or(Map::is_empty);
    if empty || none {
        return None;
    }
    Some(p_param(schema, required))
}

fn p_param(schema: &Value, required: bool) -> Value {
    json!({
        "name": "p", "in": "query", "required": required,
        "description": "The arguments as JSON text (form-encoded).",
        "content": {"application/json": {"schema": schema}},
    })
}

fn push_param(operation: &mut Value, param: impl Into<Option<Value>>) {
    if let (Some(param), Some(Value::Array(list))) = (param.into(), operation.get_mut("parameters"))
    {
        list.insert(0, param);
    }
}

fn summary(title: Option<&str>, description: Option<&str>) -> Option<String> {
    title
        .or_else(|| description.and_then(|d| d.lines().next()))
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("{SCHEMAS}/{name}")})
}

/// `name`, or `name_2`, `name_3`... whichever is not taken yet (then taken).
fn unique(taken: &mut HashSet<String>, name: String) -> String {
    if taken.insert(name.clone()) {
        return name;
    }
    let mut n = 2;
    loop {
        let candidate = format!("{name}_{n}");
        if taken.insert(candidate.clone()) {
            return candidate;
        }
        n += 1;
    }
}

/// A component name from any text: `[A-Za-z0-9._-]` kept, the rest `_`.
fn clean(text: &str) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if cleaned.is_empty() {
        "_".to_owned()
    } else {
        cleaned
    }
}

/// The error answers operations refer to, by name.
fn error_responses(limit: usize) -> Map<String, Value> {
    let mut responses = Map::new();
    for (name, text) in [
        (
            "BadRequest",
            "Malformed JSON, parameters that are not an object or do not match the \
             schema (`ARGUMENTS`, with the JSON Pointer in `data.path`), a service call \
             naming no act, a discovery search with an empty or over-long `q` or a \
             `limit` out of bounds (`ARGUMENTS`, `data.path` `/q` or `/limit`)."
                .to_owned(),
        ),
        (
            "Unauthorized",
            "Refused by the API's auth hook (it chooses the status and code).".to_owned(),
        ),
        (
            "Forbidden",
            "A `Host` or `Origin` this API does not serve (`HOST_NOT_ALLOWED`, \
             `ORIGIN_NOT_ALLOWED`), or refused by the auth hook."
                .to_owned(),
        ),
        (
            "NotFound",
            "No such tool here (`NOT_FOUND`), an act the service does not have \
             (`UNKNOWN_ACT`), or the tool's own not-found error."
                .to_owned(),
        ),
        (
            "MethodNotAllowed",
            "GET naming an act that is not read-only (`METHOD_NOT_ALLOWED`, \
             `Allow: POST`). A method a path does not list is refused the same \
             way, with the path's methods in `Allow`."
                .to_owned(),
        ),
        (
            "Timeout",
            "The call ran past its timeout, the tool's or the `rpc-timeout` header's \
             (`TIMEOUT`)."
                .to_owned(),
        ),
        (
            "TooLarge",
            format!(
                "A request body over {limit} bytes (`PAYLOAD_TOO_LARGE`), or a stream \
                 collected into one answer past the API's cap (`RESULT_TOO_LARGE`)."
            ),
        ),
        (
            "UnsupportedMediaType",
            "A body sent without `Content-Type: application/json` \
             (`UNSUPPORTED_MEDIA_TYPE`)."
                .to_owned(),
        ),
        (
            "InternalError",
            "The tool failed (`FAILED`) or panicked (`PANICKED`).".to_owned(),
        ),
        (
            "OtherError",
            "Any other status a tool's own error carries.".to_owned(),
        ),
    ] {
        responses.insert(
            name.into(),
            json!({
                "description": text,
                "content": {"application/json": {"schema": reference("Error")}},
            }),
        );
    }
    responses
}

fn error_schema() -> Value {
    json!({
        "type": "object",
        "description": "An error: the shape both generations of the JavaScript client read, \
                        plus the stable code.",
        "required": ["code", "errorCode", "error"],
        "properties": {
            "name": {"type": "string", "description": "The tool that answered."},
            "code": {"type": "integer", "description": "The HTTP status."},
            "errorCode": {
                "type": "string",
                "description": "The stable error code (`NOT_FOUND`, `ARGUMENTS`, a tool's own).",
            },
            "data": {"description": "Structured details (`what`, `path`, ...)."},
            "error": {"type": "string", "description": "The message."},
        },
    })
}

fn discovery_schema() -> Value {
    json!({
        "type": "object",
        "description": "Every tool offered here, keyed by name.",
        "additionalProperties": {
            "type": "object",
            "required": ["name", "isApi"],
            "properties": {
                "name": {"type": "string"},
                "description": {"type": "string"},
                "params": {"description": "The JSON Schema of the arguments."},
                "result": {"description": "The JSON Schema of the result."},
                "methods": {"type": "array", "items": {"type": "string"}},
                "action": {"type": "string"},
                "stream": {"type": "boolean"},
                "isApi": {"const": true},
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_component_names() {
        assert_eq!(clean("my tool/$x"), "my_tool__x");
        let mut taken = HashSet::from(["a".to_owned()]);
        assert_eq!(unique(&mut taken, "a".into()), "a_2");
        assert_eq!(unique(&mut taken, "a".into()), "a_3");
    }

    #[test]
    fn callers_shown_the_same_share_one_document() {
        use crate::identity::Identity;
        use crate::tool::ToolFunc;

        let registry = Registry::new();
        for (name, scopes) in [("open", vec![]), ("purge", vec!["admin"])] {
            let tool = ToolFunc::builder(name)
                .scopes(scopes)
                .handler_sync(|_ctx, args| Ok(args))
                .build()
                .expect("a tool");
            registry.register(tool).expect("registered");
        }
        let api = Api::new(registry);
        let view = api.openapi_view();
        let as_who = |who: Identity| CallOptions::new().identity(who);
        let body = |response: Response| {
            let bytes =
                futures::executor::block_on(http_body_util::BodyExt::collect(response.into_body()))
                    .expect("a body")
                    .to_bytes();
            serde_json::from_slice::<Value>(&bytes).expect("JSON")
        };
        // Two subjects with no scope, and one with a scope no tool declares: one
        // document.
        for who in [
            Identity::new("ann"),
            Identity::new("bob"),
            Identity::new("cy").with_scopes(["files:read"]),
        ] {
            let doc = body(response(&view, &as_who(who)));
            assert!(doc["paths"].get("/api/open").is_some());
            assert!(doc["paths"].get("/api/purge").is_none());
        }
        let kept = |api: &Api| {
            api.openapi
                .seen
                .0
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .docs
                .len()
        };
        assert_eq!(kept(&api), 1);
        // A caller shown more gets a document of its own.
        let root = Identity::new("root").with_scopes(["admin", "files:read"]);
        let doc = body(response(&view, &as_who(root)));
        assert!(doc["paths"].get("/api/purge").is_some());
        assert_eq!(kept(&api), 2);
    }
}
