//! Prompts and resources over HTTP, beside the tools and under the same prefix:
//!
//! - `GET <prefix>/_prompts`: the prompts this caller is offered, by name.
//! - `POST <prefix>/_prompts/<name>` with the arguments as a JSON object: the
//!   prompt's messages.
//! - `GET <prefix>/_resources`: the fixed resources (by URI) and the templates.
//! - `GET <prefix>/_resources/read?uri=<URI>`: a resource's contents.
//!
//! Each is found and admitted on the remote floor as a tool is (what a caller may
//! not see is `NOT_FOUND`, a scope it lacks `INSUFFICIENT_SCOPE` with its
//! challenge), and its function runs as a call of that caller. The auth hook sees
//! `tool` `_prompts` or `_resources`, and `act` the prompt's name or `read`. A tool
//! of either name is served in their place.

use std::sync::Arc;

use axum::body::Body;
use axum::http::Method;
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::{Value, json};

use super::answer::{error_response, json_response, refusal};
use super::api::Api;
use super::body::body_params;
use super::routes::{Methods, PROMPTS, READ, RESOURCES, check_method};
use crate::error::ToolError;
use crate::options::CallOptions;
use crate::propagate;
use crate::remote;
use crate::resource::ResourceFunc;

/// What a request of the prompts' or the resources' paths is.
enum Route<'a> {
    ListPrompts,
    GetPrompt(&'a str),
    ListResources,
    Read,
}

/// Whether `segments` name a path of prompts or resources (the first segment is
/// `_prompts` or `_resources`).
pub(super) fn is_kind(segments: &[String]) -> bool {
    segments
        .first()
        .is_some_and(|first| first == PROMPTS || first == RESOURCES)
}

/// A request of the prompts' or the resources' paths, with the caller's `options`
/// (its identity among them) and the auth hook's word.
pub(super) async fn answer(
    api: &Api,
    parts: &axum::http::request::Parts,
    segments: &[String],
    body: Body,
    (options, malformed): (CallOptions, Option<ToolError>),
    auth: &impl Fn(Option<&str>, Option<&str>) -> Option<Response>,
) -> Response {
    let route = match segments {
        [kind] if kind == PROMPTS => Route::ListPrompts,
        [kind, name] if kind == PROMPTS => Route::GetPrompt(name),
        [kind] if kind == RESOURCES => Route::ListResources,
        [kind, read] if kind == RESOURCES && read == READ => Route::Read,
        _ => {
            let path = segments.join("/");
            return auth(None, None).unwrap_or_else(|| {
                error_response(
                    None,
                    &ToolError::not_found_because(
                        &path,
                        "prompts are at `_prompts[/<name>]`, resources at `_resources` and \
                         `_resources/read?uri=<URI>`",
                    ),
                )
            });
        }
    };
    let (tool, act, methods, template) = match route {
        Route::ListPrompts => (PROMPTS, None, Methods::GET, "_prompts"),
        Route::GetPrompt(name) => (PROMPTS, Some(name), Methods::POST, "_prompts/{name}"),
        Route::ListResources => (RESOURCES, None, Methods::GET, "_resources"),
        Route::Read => (RESOURCES, Some(READ), Methods::GET, "_resources/read"),
    };
    let refused = || auth(Some(tool), act);
    if let Some(answer) = check_method(api, parts, methods, Some(tool), refused) {
        return answer;
    }
    if let Some(refused) = auth(Some(tool), act) {
        return refused;
    }
    name_route(api, &parts.method, template);
    let registry = &api.registry;
    match route {
        Route::ListPrompts => {
            let prompts: Vec<Value> = remote::prompts(registry, Some(&options))
                .iter()
                .map(|p| json!(p.definition()))
                .collect();
            json_response(StatusCode::OK, &json!({ "prompts": prompts }))
        }
        Route::ListResources => {
            let (fixed, templates) = remote::resources(registry, Some(&options));
            let shown = |list: Vec<Arc<ResourceFunc>>| -> Vec<Value> {
                list.iter().map(|r| json!(r.definition())).collect()
            };
            json_response(
                StatusCode::OK,
                &json!({ "resources": shown(fixed), "resourceTemplates": shown(templates) }),
            )
        }
        Route::GetPrompt(name) => {
            let args = body_params(api, &parts.headers, body).await;
            let got = match (malformed, args) {
                (Some(err), _) | (None, Err(err)) => Err(err),
                (None, Ok(args)) => remote::get_prompt(registry, name, args, options).await,
            };
            match got {
                Ok(result) => json_response(StatusCode::OK, &json!(result)),
                Err(err) => refusal(api, parts, Some(PROMPTS), &err),
            }
        }
        Route::Read => {
            let uri = match (malformed, uri_of(parts.uri.query().unwrap_or_default())) {
                (Some(err), _) | (None, Err(err)) => {
                    return error_response(Some(RESOURCES), &err);
                }
                (None, Ok(uri)) => uri,
            };
            let max = api.collect_limit.unwrap_or_default().bytes;
            match remote::read(registry, &uri, options, max).await {
                Ok(contents) => json_response(StatusCode::OK, &json!({ "contents": contents })),
                Err(err) => refusal(api, parts, Some(RESOURCES), &err),
            }
        }
    }
}

/// The one `uri` of a read's query.
fn uri_of(query: &str) -> Result<String, ToolError> {
    let mut uri = None;
    for (key, value) in form_urlencoded::parse(query.as_bytes()) {
        if key == "uri" && uri.replace(value).is_some() {
            return Err(ToolError::arguments(
                "/uri",
                "`uri` is given more than once",
            ));
        }
    }
    match uri {
        Some(uri) if !uri.is_empty() => Ok(uri.into_owned()),
        _ => Err(ToolError::arguments(
            "/uri",
            "name the resource to read: `_resources/read?uri=<URI>`",
        )),
    }
}

/// Names the request's span for its route: `{method} {prefix}/{template}`.
fn name_route(api: &Api, method: &Method, template: &str) {
    let span = tracing::Span::current();
    if !span.is_disabled() {
        let route = format!("{}/{template}", api.prefix.trim_end_matches('/'));
        propagate::name(&span, format!("{method} {route}"));
        span.record("http.route", route);
    }
}
