//! Prompts got, resources read and arguments completed, in process: each prompt's
//! or resource's function runs as a call (its context, deadline, cancellation,
//! call middleware and events), written once for [`Registry`] and [`Runner`].

use serde_json::Value;

use super::runner::{Calls, Runner};
use crate::complete::{Completion, CompletionRef, CompletionRequest};
use crate::content::Resource;
use crate::error::ToolError;
use crate::prompt::{PromptFunc, PromptResult};
use crate::registry::{Registry, Resolved};
use crate::resource::ResourceFunc;

impl Calls<'_> {
    /// Runs `prompt`'s function with `args` (strings read as JSON where the
    /// argument is not a string) and reads its messages; `shown` when the layers
    /// already let the caller see it.
    pub(crate) async fn get_prompt(
        self,
        prompt: &PromptFunc,
        args: Value,
        shown: bool,
    ) -> Result<PromptResult, ToolError> {
        let args = if args.is_null() {
            Value::Object(serde_json::Map::new())
        } else {
            prompt.arguments(args)
        };
        let found = Resolved {
            tool: prompt.tool().clone(),
            owner: self.registry.clone(),
            ready: None,
        };
        PromptResult::from_value(self.run_found(found, None, args, shown).await?)
    }

    /// Runs `resource`'s function for a read of `uri`, and its contents; `shown`
    /// when the layers already let the caller see it.
    pub(crate) async fn read_resource(
        self,
        resource: &ResourceFunc,
        uri: &str,
        shown: bool,
    ) -> Result<Vec<Resource>, ToolError> {
        let Some(args) = resource.arguments(uri) else {
            return Err(not_a_resource(uri));
        };
        let found = Resolved {
            tool: resource.tool().clone(),
            owner: self.registry.clone(),
            ready: None,
        };
        let value = self.run_found(found, None, args, shown).await?;
        resource.contents(uri, value)
    }

    async fn complete(
        self,
        reference: &CompletionRef,
        request: CompletionRequest,
    ) -> Result<Completion, ToolError> {
        let completer = match reference {
            CompletionRef::Prompt(name) => {
                let prompt = self
                    .registry
                    .get_prompt(name)
                    .ok_or_else(|| not_a_prompt(name))?;
                if !prompt
                    .definition()
                    .arguments
                    .iter()
                    .any(|a| a.name == request.argument)
                {
                    return Err(ToolError::arguments(
                        "/argument/name",
                        format!("the prompt `{name}` has no argument `{}`", request.argument),
                    ));
                }
                prompt.completer(&request.argument).cloned()
            }
            CompletionRef::Resource(address) => {
                let resource = self
                    .registry
                    .resources()
                    .1
                    .into_iter()
                    .find(|t| t.address() == address)
                    .or_else(|| self.registry.get_resource(address))
                    .ok_or_else(|| not_a_resource(address))?;
                resource.completer(&request.argument).cloned()
            }
        };
        // An argument without a completer has no suggestions.
        match completer {
            Some(completer) => completer.complete(request).await,
            None => Ok(Completion::default()),
        }
    }
}

/// `NOT_FOUND` for a prompt name.
pub(crate) fn not_a_prompt(name: &str) -> ToolError {
    ToolError::not_found_because(name, "no prompt has this name")
}

/// `NOT_FOUND` for a resource URI.
pub(crate) fn not_a_resource(uri: &str) -> ToolError {
    ToolError::not_found_because(uri, "no resource is at this URI")
}

/// The methods of a type with a `calls()` giving its [`Calls`].
macro_rules! kind_methods {
    () => {
        /// Gets the prompt `name` with `args` (an object of its arguments, or
        /// `null`): its function runs as a call does (its context, deadline and
        /// call middleware, which sees [`Kind::Prompt`](crate::Kind::Prompt)).
        /// `NOT_FOUND` when no prompt has that name, `ARGUMENTS` when the
        /// arguments do not fit, `OUTPUT` when the function's answer is not
        /// messages.
        pub async fn prompt(&self, name: &str, args: Value) -> Result<PromptResult, ToolError> {
            let calls = self.calls();
            let prompt = calls
                .registry
                .get_prompt(name)
                .ok_or_else(|| not_a_prompt(name))?;
            calls.get_prompt(&prompt, args, false).await
        }

        /// Reads the resource at `uri`: a fixed resource there, or the first
        /// template that makes it (its variables are the function's arguments).
        /// `NOT_FOUND` when none does.
        pub async fn read(&self, uri: &str) -> Result<Vec<Resource>, ToolError> {
            let calls = self.calls();
            let resource = calls
                .registry
                .get_resource(uri)
                .ok_or_else(|| not_a_resource(uri))?;
            calls.read_resource(&resource, uri, false).await
        }

        /// Completes an argument of a prompt or a variable of a resource template
        /// with its completer (no values when it has none). `NOT_FOUND` for an
        /// unknown prompt or template, `ARGUMENTS` for a prompt argument it does
        /// not have.
        pub async fn complete(
            &self,
            reference: &CompletionRef,
            request: CompletionRequest,
        ) -> Result<Completion, ToolError> {
            self.calls().complete(reference, request).await
        }
    };
}

impl Registry {
    kind_methods!();
}

impl Runner {
    kind_methods!();

    /// Gets `prompt` (already found, and admitted by whoever found it) with `args`,
    /// as [`prompt`](Runner::prompt) does with a name.
    #[cfg(feature = "http-server")]
    pub(crate) async fn get_found_prompt(
        &self,
        prompt: &PromptFunc,
        args: Value,
    ) -> Result<PromptResult, ToolError> {
        self.calls().get_prompt(prompt, args, true).await
    }

    /// Reads `uri` from `resource` (already found, and admitted by whoever found
    /// it), as [`read`](Runner::read) does.
    #[cfg(feature = "http-server")]
    pub(crate) async fn read_found(
        &self,
        resource: &ResourceFunc,
        uri: &str,
    ) -> Result<Vec<Resource>, ToolError> {
        self.calls().read_resource(resource, uri, true).await
    }
}
