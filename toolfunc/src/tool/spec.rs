//! `ToolSpec`: what `#[tool]` submits to the global registry (const data only).

use std::borrow::Cow;
use std::time::Duration;

use futures::future::BoxFuture;
use serde_json::Value;

use super::definition::Annotations;
use super::func::{Answer, Handler, ItemStream, ToolFunc};
use crate::error::ToolError;
use crate::exec::ctx::Ctx;
use crate::schema::Schema;

/// What `#[tool]` submits to the global registry: const data only, turned into a
/// [`ToolFunc`] through [`ToolBuilder`] when the global registry is first used.
#[doc(hidden)]
#[allow(
    clippy::struct_excessive_bools,
    reason = "one field per key of the attribute, as the macro wrote it"
)]
pub struct ToolSpec {
    pub name: &'static str,
    pub title: Option<&'static str>,
    pub description: Option<&'static str>,
    pub summary: Option<&'static str>,
    pub alias: &'static [&'static str],
    pub tags: &'static [&'static str],
    /// Parameter names in declaration order, from the parameters schema.
    pub param_order: fn(&Value) -> Vec<String>,
    pub params: fn() -> Value,
    pub result: Option<fn() -> Value>,
    pub handler: SpecHandler,
    pub timeout_ms: Option<u64>,
    /// `background`: the timeout is a soft deadline.
    pub background: bool,
    /// `background = "only"`: every remote call is tracked.
    pub background_only: bool,
    /// `check_output`: each result is checked against the result schema.
    pub check_output: bool,
    /// `needs_client`: what the caller must be able to answer.
    pub needs_client: &'static [&'static str],
    /// `scopes = [...]`: the OAuth scopes a caller from outside needs.
    pub scopes: &'static [&'static str],
    /// `(alias, tool name)` of each dependency.
    pub depends: &'static [(&'static str, &'static str)],
    pub concurrency: Option<usize>,
    /// `[read_only, destructive, idempotent, open_world, untrusted_output,
    /// needs_confirmation]`.
    pub annotations: Annotations,
    /// `false` for `api = false`: not offered to remote callers.
    pub api: bool,
    /// `file:line` of the function, for startup diagnostics.
    pub location: &'static str,
}

/// The handler of a [`ToolSpec`].
#[doc(hidden)]
pub enum SpecHandler {
    Sync(fn(&Ctx, Cow<'_, Value>) -> Result<Value, ToolError>),
    Async(fn(Ctx, Cow<'_, Value>) -> BoxFuture<'static, Result<Value, ToolError>>),
    Stream(fn(Ctx, Cow<'_, Value>) -> BoxFuture<'static, Result<ItemStream, ToolError>>),
    /// A tool that answers a stream or one value, as the caller asked.
    Either(fn(Ctx, Cow<'_, Value>) -> BoxFuture<'static, Result<Answer, ToolError>>),
}

inventory::collect!(ToolSpec);

impl ToolSpec {
    /// A spec with every optional key at its default: what `#[tool]` writes a
    /// spec from (`ToolSpec { timeout_ms: .., ..ToolSpec::new(..) }`), naming only
    /// the keys the attribute sets.
    #[must_use]
    pub const fn new(
        name: &'static str,
        description: Option<&'static str>,
        param_order: fn(&Value) -> Vec<String>,
        params: fn() -> Value,
        result: Option<fn() -> Value>,
        handler: SpecHandler,
        location: &'static str,
    ) -> Self {
        Self {
            name,
            title: None,
            description,
            summary: None,
            alias: &[],
            tags: &[],
            param_order,
            params,
            result,
            handler,
            timeout_ms: None,
            background: false,
            background_only: false,
            check_output: false,
            needs_client: &[],
            scopes: &[],
            depends: &[],
            concurrency: None,
            annotations: Annotations::NONE,
            api: true,
            location,
        }
    }

    pub(crate) fn build(&self) -> Result<ToolFunc, ToolError> {
        let mut builder = ToolFunc::builder(self.name);
        builder.title = self.title.map(str::to_owned);
        builder.description = self.description.map(str::to_owned);
        builder.summary = self.summary.map(str::to_owned);
        builder.alias = self.alias.iter().map(|s| (*s).to_owned()).collect();
        builder.tags = self.tags.iter().map(|s| (*s).to_owned()).collect();
        // Made at its first read (a listing, a search, a positional call), not
        // when the global registry is built: a program with thousands of tools
        // starts without making their schemas.
        let params = self.params;
        builder.params = Some(Schema::with(move || {
            super::builder::with_properties(params())
        }));
        builder.result = self.result.map(|f| f());
        builder.typed_order = Some(self.param_order);
        builder.handler = Some(match self.handler {
            SpecHandler::Sync(f) => Handler::Sync(super::SyncHandler::Fn(f)),
            SpecHandler::Async(f) => Handler::Async(Box::new(f)),
            SpecHandler::Stream(f) => Handler::Stream(Box::new(f)),
            SpecHandler::Either(f) => Handler::Either(Box::new(f)),
        });
        builder.timeout = self.timeout_ms.map(Duration::from_millis);
        builder.background = self.background;
        builder.background_only = self.background_only;
        builder.check_output = self.check_output;
        builder.needs_client = self.needs_client.iter().map(|s| (*s).to_owned()).collect();
        builder.scopes = self.scopes.iter().map(|s| (*s).to_owned()).collect();
        builder.concurrency = self.concurrency;
        builder.api = self.api;
        builder.annotations = self.annotations.clone();
        for (alias, name) in self.depends {
            builder = builder.depends_on(*alias, *name);
        }
        // The generated handler deserialises into the parameters struct: that is the check.
        builder.typed = true;
        builder.build()
    }
}
