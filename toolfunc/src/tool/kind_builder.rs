//! What a prompt's and a resource's builders share: the function's metadata (name,
//! title, description, tags, scopes, `api`), the completers of its arguments, and
//! its handler, made into the [`ToolBuilder`] of the function behind it once the
//! kind says its parameters.

use std::future::Future;
use std::sync::Arc;

use serde::Serialize;
use serde_json::Value;

use crate::complete::{Completer, Completers};
use crate::error::ToolError;
use crate::exec::ctx::Ctx;
use crate::tool::builder::ToolBuilder;
use crate::tool::func::{ToolFunc, to_output};

/// Sets the handler of the function's [`ToolBuilder`].
type Handler = Box<dyn FnOnce(ToolBuilder) -> ToolBuilder + Send>;

/// The shared part of `PromptBuilder` and `ResourceBuilder`.
pub(crate) struct KindBuilder {
    pub(crate) name: String,
    title: Option<String>,
    description: Option<String>,
    tags: Vec<String>,
    scopes: Vec<String>,
    api: bool,
    pub(crate) completers: Completers,
    handler: Option<Handler>,
}

impl KindBuilder {
    /// A function named `name`, offered to remote callers, with nothing else set.
    pub(crate) fn new(name: String) -> Self {
        Self {
            name,
            title: None,
            description: None,
            tags: Vec::new(),
            scopes: Vec::new(),
            api: true,
            completers: Completers::default(),
            handler: None,
        }
    }

    pub(crate) fn title(&mut self, title: String) {
        self.title = Some(title);
    }

    pub(crate) fn description(&mut self, description: String) {
        self.description = Some(description);
    }

    pub(crate) fn tag(&mut self, tag: String) {
        self.tags.push(tag);
    }

    pub(crate) fn scopes(&mut self, scopes: Vec<String>) {
        self.scopes = scopes;
    }

    pub(crate) fn api(&mut self, api: bool) {
        self.api = api;
    }

    pub(crate) fn complete(&mut self, argument: String, completer: Completer) {
        self.completers.insert(argument, completer);
    }

    /// Runs the function with an async function of its arguments object.
    pub(crate) fn handler<F, Fut, R>(&mut self, f: F)
    where
        F: Fn(Ctx, Value) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
        R: Serialize,
    {
        let f = Arc::new(f);
        self.handler = Some(Box::new(move |builder: ToolBuilder| {
            builder.handler(move |ctx, args| {
                let out = f(ctx, args);
                async move { to_output(&out.await?) }
            })
        }));
    }

    /// Runs the function with a sync function of its arguments object.
    pub(crate) fn handler_sync<F, R>(&mut self, f: F)
    where
        F: Fn(&Ctx, Value) -> Result<R, ToolError> + Send + Sync + 'static,
        R: Serialize,
    {
        self.handler = Some(Box::new(move |builder: ToolBuilder| {
            builder.handler_sync(move |ctx, args| to_output(&f(ctx, args)?))
        }));
    }

    /// The function's tool, taking `params` (a JSON Schema object) in `order`, and
    /// the completers of its arguments. `DEFINITION` (naming `kind`) without a
    /// handler.
    pub(crate) fn build(
        self,
        kind: &str,
        params: Value,
        order: Vec<String>,
    ) -> Result<(ToolFunc, Completers), ToolError> {
        let Some(handler) = self.handler else {
            return Err(ToolError::Definition {
                name: self.name,
                message: format!("a {kind} needs a handler"),
            });
        };
        let mut builder = ToolFunc::builder(self.name)
            .params_own(params)
            .param_order(order)
            .scopes(self.scopes)
            .api(self.api);
        if let Some(title) = self.title {
            builder = builder.title(title);
        }
        if let Some(description) = self.description {
            builder = builder.description(description);
        }
        for tag in self.tags {
            builder = builder.tag(tag);
        }
        Ok((handler(builder).build()?, self.completers))
    }
}

/// The builder methods a prompt's and a resource's builders share, each handing its
/// value to the builder's `parts` ([`KindBuilder`]): written once for both. The
/// literals say, in their docs, what the kind is for, what its caller does with it,
/// what its completed arguments are called, and what its handlers do.
macro_rules! kind_builder_methods {
    (
        for: $for:literal,
        caller: $caller:literal,
        complete: $complete:literal,
        handler: $handler:literal,
        handler_sync: $handler_sync:literal $(,)?
    ) => {
        /// A short human-readable title.
        pub fn title(mut self, title: impl Into<String>) -> Self {
            self.parts.title(title.into());
            self
        }

        #[doc = $for]
        pub fn description(mut self, description: impl Into<String>) -> Self {
            self.parts.description(description.into());
            self
        }

        /// Adds a grouping label.
        pub fn tag(mut self, tag: impl Into<String>) -> Self {
            self.parts.tag(tag.into());
            self
        }

        #[doc = $caller]
        pub fn scopes<S: Into<String>>(mut self, scopes: impl IntoIterator<Item = S>) -> Self {
            self.parts
                .scopes(scopes.into_iter().map(Into::into).collect());
            self
        }

        /// Whether remote callers are offered it (default `true`).
        pub fn api(mut self, api: bool) -> Self {
            self.parts.api(api);
            self
        }

        #[doc = $complete]
        pub fn complete(mut self, argument: impl Into<String>, completer: Completer) -> Self {
            self.parts.complete(argument.into(), completer);
            self
        }

        #[doc = $handler]
        pub fn handler<F, Fut, R>(mut self, f: F) -> Self
        where
            F: Fn(Ctx, Value) -> Fut + Send + Sync + 'static,
            Fut: Future<Output = Result<R, ToolError>> + Send + 'static,
            R: Serialize,
        {
            self.parts.handler(f);
            self
        }

        #[doc = $handler_sync]
        pub fn handler_sync<F, R>(mut self, f: F) -> Self
        where
            F: Fn(&Ctx, Value) -> Result<R, ToolError> + Send + Sync + 'static,
            R: Serialize,
        {
            self.parts.handler_sync(f);
            self
        }
    };
}
pub(crate) use kind_builder_methods;
