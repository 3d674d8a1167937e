//! `ToolDefinition`: a tool's serialisable metadata, and its `Annotations`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::service::ActDefinition;
use crate::schema::Schema;

/// The serialisable metadata of a tool: what discovery, LLM exports and remote
/// clients see.
///
/// Fields left unset are omitted from the JSON. `params` is always a JSON Schema whose
/// root is `"type": "object"`.
///
/// ```
/// let def: toolfunc::ToolDefinition = serde_json::from_value(serde_json::json!({
///     "name": "echo",
///     "description": "Echo the input.",
///     "params": {"type": "object", "properties": {"text": {"type": "string"}}}
/// })).unwrap();
/// assert_eq!(def.name, "echo");
/// assert!(def.alias.is_empty());
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
#[allow(
    clippy::struct_excessive_bools,
    reason = "independent facts of the definition, each its own field on the wire"
)]
pub struct ToolDefinition {
    /// The unique name the tool is run by.
    pub name: String,
    /// A short human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// The full description (from the doc comment or the `description` key).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// A concise description, advertised in place of `description` by
    /// [`Registry::definitions`](crate::Registry::definitions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<String>,
    /// JSON Schema of the arguments object; it reads as a [`Value`]. A tool built
    /// with [`params_schema_with`](crate::ToolBuilder::params_schema_with)
    /// makes it the first time it is read.
    #[serde(default)]
    pub params: Schema,
    /// JSON Schema of the result; absent for tools that return nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    /// Other names the tool can be run by.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "one_or_many")]
    pub alias: Vec<String>,
    /// Free-form grouping labels.
    #[serde(default, skip_serializing_if = "Vec::is_empty", with = "one_or_many")]
    pub tags: Vec<String>,
    /// Whether the tool streams its result (`run_stream` yields its items one by one;
    /// `run` collects them into an array).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stream: bool,
    /// The tool's own timeout, in milliseconds: a soft deadline when `background`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Whether the tool's `timeout` is a soft deadline: a remote call still running
    /// past it moves to the background (HTTP answers `202`, and the caller polls);
    /// in process the call runs on. Bounded by the ledger's maximum run time.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background: bool,
    /// Whether every remote call of this `background` tool is tracked, however soon
    /// it ends: over MCP it always answers with a task, and a client that cannot
    /// take tasks is refused (`-32021`). Over HTTP it is a `background` tool.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub background_only: bool,
    /// What the tool needs its caller to be able to answer (`"sampling"`,
    /// `"elicitation"`, `"roots"`): an MCP client that did not declare one of these
    /// capabilities is refused before the tool runs (`-32021`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub needs_client: Vec<String>,
    /// The OAuth scopes a caller from outside needs, all of them, to see the tool
    /// and call it (an act's own scopes add to these). Checked against the
    /// [`Identity`](crate::identity::Identity) an authenticator verified; a surface
    /// without an authenticator (stdio, a trusted network) and the program's own
    /// calls are not checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// Hints about the tool's behaviour, carried to every export.
    #[serde(default, skip_serializing_if = "Annotations::is_empty")]
    pub annotations: Annotations,
    /// `"res"` for a REST resource (a service with REST verb methods); absent
    /// otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The acts of a service (`"$hello"`, REST verbs such as `"get"`); empty for a
    /// plain tool.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub methods: Vec<String>,
    /// The definition of each act of a service, in the order of `methods`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub acts: Vec<ActDefinition>,
    /// Whether the tool is offered to remote callers (HTTP, MCP). A tool with
    /// `api = false` runs only in process: remote discovery leaves it out and remote
    /// calls get `NOT_FOUND`.
    #[serde(rename = "isApi", default = "yes", skip_serializing_if = "is_true")]
    pub api: bool,
}

/// `true`: the default of a definition's `isApi` (tools, prompts, resources).
pub(crate) fn yes() -> bool {
    true
}

/// Whether `isApi` is left out of a definition written out (it is `true`).
#[allow(clippy::trivially_copy_pass_by_ref)] // serde's `skip_serializing_if` passes a reference
pub(crate) fn is_true(value: &bool) -> bool {
    *value
}

/// Hints about what a tool does, for clients deciding how to call it (an LLM host
/// asking for confirmation, a scheduler retrying). Hints, not guarantees: toolfunc
/// carries them and enforces none. Unset hints are left out of every export.
///
/// ```
/// let hints = toolfunc::Annotations::new().read_only(true).open_world(false);
/// assert_eq!(hints.read_only, Some(true));
/// assert_eq!(
///     serde_json::to_value(&hints).unwrap(),
///     serde_json::json!({"readOnly": true, "openWorld": false})
/// );
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct Annotations {
    /// The tool changes nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only: Option<bool>,
    /// The tool may destroy or overwrite data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive: Option<bool>,
    /// Calling it again with the same arguments has no further effect.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent: Option<bool>,
    /// The tool reaches outside entities (the web, other systems).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world: Option<bool>,
    /// Its output may carry untrusted content (treat it as data, not instructions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub untrusted_output: Option<bool>,
    /// A person should confirm each call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_confirmation: Option<bool>,
}

/// One builder method per hint: `hint(true)` sets `hint` to `Some(true)`.
macro_rules! hint_setters {
    ($($(#[$doc:meta])* $hint:ident,)*) => {$(
        $(#[$doc])*
        #[must_use]
        pub const fn $hint(mut self, value: bool) -> Self {
            self.$hint = Some(value);
            self
        }
    )*};
}

impl Annotations {
    /// No hints, as a constant: the macros write
    /// `Annotations::NONE.read_only(true)` in a `static`.
    pub const NONE: Self = Self {
        read_only: None,
        destructive: None,
        idempotent: None,
        open_world: None,
        untrusted_output: None,
        needs_confirmation: None,
    };

    /// No hints.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether no hint is set.
    pub fn is_empty(&self) -> bool {
        *self == Self::default()
    }

    hint_setters! {
        /// Sets the read-only hint.
        read_only,
        /// Sets the destructive hint.
        destructive,
        /// Sets the idempotent hint.
        idempotent,
        /// Sets the open-world hint.
        open_world,
        /// Sets the untrusted-output hint.
        untrusted_output,
        /// Sets the needs-confirmation hint.
        needs_confirmation,
    }
}

impl ToolDefinition {
    /// The act `sent` names (its canonical name, or its method without `$`), with
    /// its index among [`acts`](Self::acts).
    pub(crate) fn act_named(&self, sent: &str) -> Option<(usize, &ActDefinition)> {
        let index = super::service::act_index(self.acts.iter().map(|a| a.name.as_str()), sent)?;
        Some((index, &self.acts[index]))
    }

    /// The definition as advertised to a caller: an authored `summary` replaces the
    /// full `description` (which stays on the tool for direct lookup).
    #[must_use]
    pub fn advertised(&self) -> Self {
        let mut def = self.clone();
        if let Some(summary) = def.summary.take() {
            def.description = Some(summary);
        }
        def
    }
}

/// `alias` and `tags` are a string or a list of strings in the definitions of the
/// reference RPC library; accept both, always write a list.
mod one_or_many {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany {
        One(String),
        Many(Vec<String>),
    }

    pub(super) fn serialize<S: Serializer>(v: &[String], s: S) -> Result<S::Ok, S::Error> {
        v.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
        Ok(match OneOrMany::deserialize(d)? {
            OneOrMany::One(s) => vec![s],
            OneOrMany::Many(v) => v,
        })
    }
}
