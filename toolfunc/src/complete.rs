//! Completions: the values a client may offer its user for a prompt's argument or a
//! resource template's parameter, as the user types (MCP `completion/complete`).
//!
//! A [`Completer`] is attached to one argument of a prompt
//! ([`PromptBuilder::complete`](crate::prompt::PromptBuilder::complete),
//! [`#[prompt(complete(arg = function))]`](macro@crate::prompt)) or one parameter of a resource template
//! ([`ResourceBuilder::complete`](crate::resource::ResourceBuilder::complete),
//! [`#[resource(complete(param = function))]`](macro@crate::resource)). It is given what the user typed so
//! far and the arguments already filled in, and answers with candidate values.
//!
//! ```
//! use toolfunc::complete::{Completion, CompletionRequest};
//!
//! fn languages(request: &CompletionRequest) -> Completion {
//!     Completion::matching(["python", "rust", "ruby"], &request.value)
//! }
//!
//! let request = CompletionRequest::new("language", "ru");
//! assert_eq!(languages(&request).values, ["rust", "ruby"]);
//! ```

use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

use crate::error::ToolError;

/// The most values one completion carries (MCP's limit); more are cut, and
/// [`Completion::has_more`] says so.
pub const MAX_VALUES: usize = 100;

/// What a client asks completions for.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct CompletionRequest {
    /// The argument (or template parameter) being completed.
    pub argument: String,
    /// What the user typed of it so far.
    pub value: String,
    /// The arguments already filled in, by name.
    #[serde(default)]
    pub arguments: BTreeMap<String, String>,
}

impl CompletionRequest {
    /// A request for `argument`, typed so far as `value`.
    pub fn new(argument: impl Into<String>, value: impl Into<String>) -> Self {
        Self {
            argument: argument.into(),
            value: value.into(),
            arguments: BTreeMap::new(),
        }
    }

    /// With an argument already filled in.
    #[must_use]
    pub fn with_argument(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.arguments.insert(name.into(), value.into());
        self
    }
}

/// What a completion is asked for: a prompt's argument or a resource template's
/// variable.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CompletionRef {
    /// An argument of the prompt of this name.
    Prompt(String),
    /// A variable of the resource template written so (or of the resource at this
    /// URI).
    Resource(String),
}

/// The candidates a completer offers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Completion {
    /// The values, best first (at most [`MAX_VALUES`] are sent).
    pub values: Vec<String>,
    /// How many values there are in all, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
    /// Whether there are more values than these.
    #[serde(default)]
    pub has_more: bool,
}

impl Completion {
    /// These values.
    pub fn new<S: Into<String>>(values: impl IntoIterator<Item = S>) -> Self {
        Self {
            values: values.into_iter().map(Into::into).collect(),
            total: None,
            has_more: false,
        }
    }

    /// The values of `candidates` that start with `prefix` (case-insensitively), in
    /// their order.
    pub fn matching<S: AsRef<str>>(candidates: impl IntoIterator<Item = S>, prefix: &str) -> Self {
        let prefix = prefix.to_lowercase();
        Self::new(
            candidates
                .into_iter()
                .filter(|c| c.as_ref().to_lowercase().starts_with(&prefix))
                .map(|c| c.as_ref().to_owned()),
        )
    }

    /// At most [`MAX_VALUES`] values; `has_more` and `total` tell of the rest.
    pub(crate) fn bounded(mut self) -> Self {
        if self.values.len() > MAX_VALUES {
            let all = self.values.len() as u64;
            self.values.truncate(MAX_VALUES);
            self.has_more = true;
            self.total = Some(self.total.unwrap_or(all).max(all));
        }
        self
    }
}

impl<S: Into<String>> From<Vec<S>> for Completion {
    fn from(values: Vec<S>) -> Self {
        Self::new(values)
    }
}

/// A completer as `#[prompt(complete(..))]` and `#[resource(complete(..))]` submit
/// it: the argument's name and a plain function.
#[doc(hidden)]
pub type CompleterSpec = (&'static str, fn(&CompletionRequest) -> Completion);

type CompleteFn =
    dyn Fn(CompletionRequest) -> BoxFuture<'static, Result<Completion, ToolError>> + Send + Sync;

/// Completes one argument: a function of a [`CompletionRequest`], sync or async.
#[derive(Clone)]
pub struct Completer(Arc<CompleteFn>);

impl Completer {
    /// A completer that answers at once.
    ///
    /// ```
    /// use toolfunc::complete::{Completer, Completion, CompletionRequest};
    ///
    /// let completer = Completer::new(|r: &CompletionRequest| {
    ///     Completion::matching(["red", "green"], &r.value)
    /// });
    /// # let _ = completer;
    /// ```
    pub fn new<F, C>(f: F) -> Self
    where
        F: Fn(&CompletionRequest) -> C + Send + Sync + 'static,
        C: Into<Completion>,
    {
        Self(Arc::new(move |request| {
            let completion = f(&request).into();
            Box::pin(std::future::ready(Ok(completion)))
        }))
    }

    /// A completer that looks its values up asynchronously.
    pub fn new_async<F, Fut>(f: F) -> Self
    where
        F: Fn(CompletionRequest) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<Completion, ToolError>> + Send + 'static,
    {
        Self(Arc::new(move |request| Box::pin(f(request))))
    }

    /// The completion of `request`, at most [`MAX_VALUES`] values.
    pub async fn complete(&self, request: CompletionRequest) -> Result<Completion, ToolError> {
        (self.0)(request).await.map(Completion::bounded)
    }
}

impl fmt::Debug for Completer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Completer").finish_non_exhaustive()
    }
}

/// The completers of a prompt's arguments or a template's parameters, by name.
#[derive(Clone, Debug, Default)]
pub(crate) struct Completers(Vec<(String, Completer)>);

impl Completers {
    /// The completers a macro wrote, by argument name.
    pub(crate) fn of(specs: &[CompleterSpec]) -> Self {
        let mut completers = Self::default();
        for (name, f) in specs {
            completers.insert((*name).to_owned(), Completer::new(*f));
        }
        completers
    }

    pub(crate) fn insert(&mut self, name: String, completer: Completer) {
        self.0.retain(|(n, _)| *n != name);
        self.0.push((name, completer));
    }

    pub(crate) fn get(&self, name: &str) -> Option<&Completer> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, c)| c)
    }

    pub(crate) fn names(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(n, _)| n.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn completions_past_the_limit_are_cut_and_said_to_have_more() {
        let completer = Completer::new(|_: &CompletionRequest| {
            Completion::new((0..150).map(|n| n.to_string()))
        });
        let out = completer
            .complete(CompletionRequest::new("n", ""))
            .await
            .unwrap();
        assert_eq!(out.values.len(), MAX_VALUES);
        assert!(out.has_more);
        assert_eq!(out.total, Some(150));
    }
}
