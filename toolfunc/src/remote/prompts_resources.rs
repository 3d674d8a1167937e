//! Prompts and resources from outside: what a caller is offered and what it may get
//! or read, judged by the same rule as a tool (offered remotely, shown by the
//! layers, the scopes its identity holds) for every surface.
//!
//! A prompt or a resource the caller may not see is, to it, one that does not exist
//! (`NOT_FOUND` alike); one it sees but lacks scopes for is refused with
//! `INSUFFICIENT_SCOPE`, as a tool is. A URI from outside is bounded in length
//! before any template looks at it.

use std::sync::Arc;

#[cfg(feature = "http-server")]
use serde_json::Value;

use super::find::{Sight, insufficient_scope};
use crate::content::Resource;
use crate::error::ToolError;
use crate::exec::prompts_resources::{not_a_prompt, not_a_resource};
use crate::options::CallOptions;
use crate::prompt::PromptFunc;
#[cfg(feature = "http-server")]
use crate::prompt::PromptResult;
use crate::registry::Registry;
use crate::resource::ResourceFunc;
use crate::tool::ToolDefinition;

/// The longest URI a caller from outside may ask to read (bytes).
pub(crate) const MAX_URI_BYTES: usize = 4096;

/// The prompts a caller with `viewer` options is offered, by name.
pub(crate) fn prompts(registry: &Registry, viewer: Option<&CallOptions>) -> Vec<Arc<PromptFunc>> {
    prompts_seen(registry, &Sight::of(registry, viewer))
}

/// The prompts a caller with `sight` is offered, by name.
pub(crate) fn prompts_seen(registry: &Registry, sight: &Sight<'_>) -> Vec<Arc<PromptFunc>> {
    let mut prompts = registry.prompts();
    prompts.retain(|p| sight.lists(p.tool().definition()));
    prompts
}

/// The fixed resources (by URI) and the templates a caller with `viewer` options
/// is offered.
pub(crate) fn resources(
    registry: &Registry,
    viewer: Option<&CallOptions>,
) -> (Vec<Arc<ResourceFunc>>, Vec<Arc<ResourceFunc>>) {
    resources_seen(registry, &Sight::of(registry, viewer))
}

/// The fixed resources (by URI) and the templates a caller with `sight` is
/// offered.
pub(crate) fn resources_seen(
    registry: &Registry,
    sight: &Sight<'_>,
) -> (Vec<Arc<ResourceFunc>>, Vec<Arc<ResourceFunc>>) {
    let (mut fixed, mut templates) = registry.resources();
    fixed.retain(|r| sight.lists(r.tool().definition()));
    templates.retain(|r| sight.lists(r.tool().definition()));
    (fixed, templates)
}

/// Whether some prompt or resource served remotely needs scopes: then what a
/// caller is offered depends on its identity. Kept in the registry's derived
/// views until it changes: a surface asks on every request.
pub(crate) fn any_scoped(registry: &Registry) -> bool {
    #[derive(PartialEq)]
    struct AnyScoped;
    registry
        .derived(AnyScoped, || {
            let (fixed, templates) = registry.resources();
            Ok(registry
                .prompts()
                .iter()
                .map(|p| p.tool().definition())
                .chain(
                    fixed
                        .iter()
                        .chain(&templates)
                        .map(|r| r.tool().definition()),
                )
                .any(|def| def.api && !def.scopes.is_empty()))
        })
        .unwrap_or(true)
}

/// The prompt `name`, for a caller with `viewer` options: `NOT_FOUND` when it is
/// not offered to that caller, `INSUFFICIENT_SCOPE` when its identity lacks a scope.
pub(crate) fn admit_prompt(
    registry: &Registry,
    name: &str,
    viewer: Option<&CallOptions>,
) -> Result<Arc<PromptFunc>, ToolError> {
    let prompt = registry
        .get_prompt(name)
        .ok_or_else(|| not_a_prompt(name))?;
    admit_function(registry, prompt.tool().definition(), viewer, || {
        not_a_prompt(name)
    })?;
    Ok(prompt)
}

/// The resource that reads `uri`, for a caller with `viewer` options: `NOT_FOUND`
/// when none is offered to that caller (or the URI is longer than
/// [`MAX_URI_BYTES`]), `INSUFFICIENT_SCOPE` when its identity lacks a scope.
pub(crate) fn admit_resource(
    registry: &Registry,
    uri: &str,
    viewer: Option<&CallOptions>,
) -> Result<Arc<ResourceFunc>, ToolError> {
    if uri.len() > MAX_URI_BYTES {
        return Err(ToolError::arguments(
            "/uri",
            format!("a URI is at most {MAX_URI_BYTES} bytes"),
        ));
    }
    let resource = registry
        .get_resource(uri)
        .ok_or_else(|| not_a_resource(uri))?;
    admit_function(registry, resource.tool().definition(), viewer, || {
        not_a_resource(uri)
    })?;
    Ok(resource)
}

/// The resource template written `address` (or the resource that reads that URI),
/// for a completion asked by a caller with `viewer` options, judged as
/// [`admit_resource`] judges a read.
#[cfg(feature = "mcp")]
pub(crate) fn admit_template(
    registry: &Registry,
    address: &str,
    viewer: Option<&CallOptions>,
) -> Result<Arc<ResourceFunc>, ToolError> {
    let template = registry
        .resources()
        .1
        .into_iter()
        .find(|t| t.address() == address);
    match template {
        Some(template) => {
            admit_function(registry, template.tool().definition(), viewer, || {
                not_a_resource(address)
            })?;
            Ok(template)
        }
        None => admit_resource(registry, address, viewer),
    }
}

/// Gets the prompt `name` with `args` for a caller from outside with `options`:
/// found and admitted as [`admit_prompt`] says, then run as a call of that caller
/// (its identity, deadline, layers).
#[cfg(feature = "http-server")]
pub(crate) async fn get_prompt(
    registry: &Registry,
    name: &str,
    args: Value,
    options: CallOptions,
) -> Result<PromptResult, ToolError> {
    let prompt = admit_prompt(registry, name, Some(&options))?;
    registry.with(options).get_found_prompt(&prompt, args).await
}

/// Reads `uri` for a caller from outside with `options`: found and admitted as
/// [`admit_resource`] says, run as a call of that caller, and its contents bounded
/// to `max_bytes` ([`bounded_contents`]).
#[cfg(feature = "http-server")]
pub(crate) async fn read(
    registry: &Registry,
    uri: &str,
    options: CallOptions,
    max_bytes: usize,
) -> Result<Vec<Resource>, ToolError> {
    let resource = admit_resource(registry, uri, Some(&options))?;
    let contents = registry.with(options).read_found(&resource, uri).await?;
    bounded_contents(contents, max_bytes)
}

/// Whether the caller of `viewer` may get or read the function `def`: `unknown()`
/// when it is not offered to it, `INSUFFICIENT_SCOPE` when it lacks a scope.
fn admit_function(
    registry: &Registry,
    def: &ToolDefinition,
    viewer: Option<&CallOptions>,
    unknown: impl FnOnce() -> ToolError,
) -> Result<(), ToolError> {
    let sight = Sight::of(registry, viewer);
    if !sight.offers(def) {
        return Err(unknown());
    }
    if !sight.permits(&def.scopes) {
        return Err(insufficient_scope(&def.scopes));
    }
    Ok(())
}

/// The contents of a read, refused with `TOO_LARGE` (413) when their JSON is more
/// than `max_bytes`: what one read may make the server hold and send.
pub(crate) fn bounded_contents(
    contents: Vec<Resource>,
    max_bytes: usize,
) -> Result<Vec<Resource>, ToolError> {
    let size: usize = contents
        .iter()
        .map(|c| {
            c.uri.len()
                + c.text.as_ref().map_or(0, String::len)
                + c.blob.as_ref().map_or(0, String::len)
                + c.mime_type.as_ref().map_or(0, String::len)
        })
        .sum();
    if size > max_bytes {
        return Err(ToolError::custom(
            "TOO_LARGE",
            413,
            format!(
                "the resource's contents are {size} bytes, more than the {max_bytes} a read may send"
            ),
        ));
    }
    Ok(contents)
}
