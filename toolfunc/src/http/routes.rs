//! The routing facts of the HTTP surface, read by the request path and by the
//! OpenAPI document alike: the path's segments under the prefix, the methods a
//! tool's path answers (GET only for what is read-only), which REST verbs take an
//! id in the path, the task poller's path, and what makes a body a program's.

use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::Response;

use super::answer::error_response;
use super::api::Api;
use super::wire::{self, REQ_ID, RPC_ACT, RPC_FN, RPC_RES_ID};
use crate::error::ToolError;

/// The headers a page on another site cannot send without the browser asking
/// first (a CORS preflight, granted only to the origins an API names): a body sent
/// with one of them comes from a program or such a page, not from a cross-site form.
const PROGRAM_HEADERS: [&str; 6] = [
    RPC_FN,
    RPC_ACT,
    RPC_RES_ID,
    REQ_ID,
    "rpc-client-id",
    "x-client-id",
];

/// The methods a path answers besides `OPTIONS` (which every path answers, with
/// them in `Allow`). `HEAD` runs nothing, and no path answers it.
#[derive(Debug, Clone, Copy, Default)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one flag per HTTP method, read by name"
)]
pub(super) struct Methods {
    get: bool,
    post: bool,
    put: bool,
    patch: bool,
    delete: bool,
}

impl Methods {
    /// Discovery and the built-in pages.
    pub(super) const GET: Self = Self {
        get: true,
        post: false,
        put: false,
        patch: false,
        delete: false,
    };

    /// Getting a prompt.
    pub(super) const POST: Self = Self {
        get: false,
        post: true,
        put: false,
        patch: false,
        delete: false,
    };

    /// `rpcTask`: a poll is a GET, a cancel a POST.
    pub(super) const GET_POST: Self = Self {
        get: true,
        post: true,
        put: false,
        patch: false,
        delete: false,
    };

    /// What a tool answers, on `<res>/<id>` when `on_id`: POST (a body names any
    /// act); GET when something it runs is read-only, or the API lets GET write.
    /// A REST resource answers each verb on its own path ([`verb_on_id`]), and
    /// the two forms the JavaScript clients send a `put` (or `patch`) that takes
    /// an id: the 0.1.1 client's `PUT <res>` with the id in the body, and the 1.x
    /// client's `POST <res>/<id>` with the act `put`. On `<res>/<id>` POST runs
    /// nothing else, and DELETE is answered only where `delete` is.
    pub(super) fn of(api: &Api, def: &crate::tool::ToolDefinition, on_id: bool) -> Self {
        let get = api.writes_over_get
            || read_only(def, None)
            || def.acts.iter().any(|act| read_only(def, Some(act)));
        if def.action.as_deref() != Some("res") {
            return Self { get, ..Self::POST };
        }
        let at = |verb: &str| verb_on_id(def, verb);
        // A verb of `<res>/<id>` is taken on `<res>` too; one of `<res>` only there.
        let written = |verb: &str| at(verb).is_some_and(|id| id || !on_id);
        Self {
            get,
            post: !on_id || at("put") == Some(true) || at("patch") == Some(true),
            put: written("put"),
            patch: written("patch"),
            delete: at("delete") == Some(on_id),
        }
    }

    fn allows(self, method: &Method) -> bool {
        match *method {
            Method::GET => self.get,
            Method::POST => self.post,
            Method::PUT => self.put,
            Method::PATCH => self.patch,
            Method::DELETE => self.delete,
            _ => false,
        }
    }

    /// The value of `Allow`: `"GET, POST, OPTIONS"`.
    pub(super) fn allow(self) -> String {
        let mut allow = String::new();
        for (on, name) in [
            (self.get, "GET"),
            (self.post, "POST"),
            (self.put, "PUT"),
            (self.patch, "PATCH"),
            (self.delete, "DELETE"),
            (true, "OPTIONS"),
        ] {
            if on {
                if !allow.is_empty() {
                    allow.push_str(", ");
                }
                allow.push_str(name);
            }
        }
        allow
    }
}

/// The method, before the content type, the body or the act: `OPTIONS` is answered
/// here (204 with `Allow`; nothing runs, and no cross-origin access is granted), a
/// method the path does not answer is 405 with `Allow`, and with
/// [`Api::json_only`] a body that does not say it is JSON is 415. `refused` is the
/// auth hook's word, asked before `OPTIONS` and 405 so that a caller it turns away
/// learns nothing of what a path answers.
pub(super) fn check_method(
    api: &Api,
    parts: &axum::http::request::Parts,
    methods: Methods,
    tool: Option<&str>,
    refused: impl FnOnce() -> Option<Response>,
) -> Option<Response> {
    let method = &parts.method;
    if *method == Method::OPTIONS {
        return Some(refused().unwrap_or_else(|| {
            let mut response = Response::new(Body::empty());
            *response.status_mut() = StatusCode::NO_CONTENT;
            if let Ok(value) = HeaderValue::from_str(&methods.allow()) {
                response.headers_mut().insert(header::ALLOW, value);
            }
            response
        }));
    }
    if !methods.allows(method) {
        return Some(refused().unwrap_or_else(|| {
            let allow = methods.allow();
            let message = if *method == Method::HEAD {
                format!("HEAD runs nothing; this path answers {allow}")
            } else {
                format!("{method} is not answered here; this path answers {allow}")
            };
            method_not_allowed(tool, &allow, message)
        }));
    }
    let has_body = !(method == Method::GET || method == Method::DELETE);
    if has_body && api.json_only && !sent_by_program(&parts.headers) {
        return Some(error_response(
            None,
            &ToolError::custom(
                "UNSUPPORTED_MEDIA_TYPE",
                415,
                "send the arguments as JSON with `Content-Type: application/json`",
            ),
        ));
    }
    None
}

/// Whether a request that carries a body was sent by a program: a JSON content
/// type, or a header a cross-site page cannot send without asking first.
fn sent_by_program(headers: &HeaderMap) -> bool {
    let json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::trim)
        .is_some_and(|v| {
            // Media types are case-insensitive; compared without allocating.
            let suffix = v.len().checked_sub(5).and_then(|i| v.get(i..));
            v.eq_ignore_ascii_case("application/json")
                || (v
                    .get(..12)
                    .is_some_and(|t| t.eq_ignore_ascii_case("application/"))
                    && suffix.is_some_and(|t| t.eq_ignore_ascii_case("+json")))
        });
    json || PROGRAM_HEADERS.iter().any(|h| headers.contains_key(*h))
}

/// The path after the prefix, split on `/`, empty segments dropped, each
/// percent-decoded (`+` stays `+`).
pub(super) fn segments(path: &str, prefix: &str) -> Result<Vec<String>, ToolError> {
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

/// The HTTP method a REST verb is written with.
pub(super) fn rest_method(verb: &str) -> &'static str {
    match verb {
        "get" | "list" => "GET",
        "put" => "PUT",
        "patch" => "PATCH",
        "delete" => "DELETE",
        _ => "POST",
    }
}

/// Where a REST resource serves its verb `verb` (`get`, `list`, `put`, `patch`,
/// `delete`): on `<res>/<id>` (`true`) for `get` and a verb that takes an `id`,
/// else on `<res>`; `None` when it has no such act. What the OpenAPI document says
/// too.
pub(super) fn verb_on_id(def: &crate::tool::ToolDefinition, verb: &str) -> Option<bool> {
    let act = def.acts.iter().find(|act| act.name == verb)?;
    Some(verb == "get" || (verb != "list" && wire::property(&act.params, "id").is_some()))
}

/// Whether GET may run the tool or act: REST `get` and `list`, and whatever its
/// annotations say is read-only.
pub(super) fn read_only(
    def: &crate::tool::ToolDefinition,
    act: Option<&crate::tool::service::ActDefinition>,
) -> bool {
    let marked = |a: &crate::tool::Annotations| a.read_only == Some(true);
    match act {
        Some(act) => {
            act.name == "get"
                || act.name == "list"
                || marked(&act.annotations)
                || marked(&def.annotations)
        }
        None => marked(&def.annotations),
    }
}

/// 405 `METHOD_NOT_ALLOWED`, with the methods that are answered in `Allow`.
pub(super) fn method_not_allowed(tool: Option<&str>, allow: &str, message: String) -> Response {
    let mut response = error_response(tool, &ToolError::custom("METHOD_NOT_ALLOWED", 405, message));
    if let Ok(value) = HeaderValue::from_str(allow) {
        response.headers_mut().insert(header::ALLOW, value);
    }
    response
}

/// The built-in tool that polls and cancels background calls: `GET
/// <prefix>/rpcTask/<id>`, `POST <prefix>/rpcTask/<id>` with the act `$cancel`
/// (the id may come in `rpc-res-id`). A tool of the same name is served instead.
pub(super) const TASKS: &str = "rpcTask";

/// The path segment of the prompts.
pub(super) const PROMPTS: &str = "_prompts";
/// The path segment of the resources.
pub(super) const RESOURCES: &str = "_resources";
/// The segment after [`RESOURCES`] that reads one.
pub(super) const READ: &str = "read";
