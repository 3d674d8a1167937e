//! Find and admit: a name from outside resolved once into a [`Found`] call, and what
//! that call needs of its caller checked before it runs.

use std::time::Duration;

use serde_json::{Map, Value};

use super::catalog::Catalog;
use crate::error::ToolError;
use crate::options::CallOptions;
use crate::registry::{Registry, Resolved};
use crate::tool::service::ActDefinition;
use crate::tool::{Annotations, ToolDefinition};

/// How a surface names what it calls.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Lookup {
    /// Names may be functions: `{service}_{method}` stands for one act of a service,
    /// and a service as a whole is not callable (MCP, LLM messages). Otherwise names
    /// are tools' names and aliases, a service's act named apart (HTTP, NATS).
    functions: bool,
    /// Only tools offered to remote callers (`api`) are found.
    remote: bool,
}

impl Lookup {
    /// A remote caller naming tools (HTTP, NATS).
    pub(crate) const TOOL: Self = Self {
        functions: false,
        remote: true,
    };
    /// A remote caller naming functions (MCP).
    pub(crate) const FUNCTION: Self = Self {
        functions: true,
        remote: true,
    };
    /// The program's own model naming functions of every tool the program exported
    /// (LLM tool-call messages).
    pub(crate) const LOCAL_FUNCTION: Self = Self {
        functions: true,
        remote: false,
    };
}

/// A call found by its name: the tool with the registry that holds it and its
/// readiness, and the act a function name (or a surface, later) chose. The
/// execution core runs it as it is, without looking the name up again.
pub(crate) struct Found {
    resolved: Resolved,
    act: Option<usize>,
}

/// Resolves `name` once, as `lookup` says, for a caller with `viewer` options (when
/// the registry has layers, the tool must be visible to that caller).
///
/// Unknown names, tools not offered remotely and tools a layer hides from the caller
/// are all `NOT_FOUND`, alike.
pub(crate) fn find(
    registry: &Registry,
    name: &str,
    lookup: Lookup,
    viewer: Option<&CallOptions>,
) -> Result<Found, ToolError> {
    let found = if lookup.functions {
        find_function(registry, name, lookup)
    } else {
        registry.resolve(name).map(|resolved| Found {
            resolved,
            act: None,
        })
    };
    let Some(found) = found else {
        // The program's own callers learn where an unregistered service was declared;
        // a remote caller learns nothing of the program's source.
        return Err(if lookup.remote {
            ToolError::not_found(name)
        } else {
            crate::tool::service::not_found(name)
        });
    };
    let def = found.resolved.tool.definition();
    if (lookup.remote && !def.api) || !shown_to(registry, viewer)(def) {
        return Err(ToolError::not_found(name));
    }
    Ok(found)
}

/// A function by its name: one of the catalogue's (a tool, or one act of a service),
/// else a tool's alias. To a remote caller, a service named as a whole is no
/// function.
fn find_function(registry: &Registry, name: &str, lookup: Lookup) -> Option<Found> {
    let catalog = Catalog::of(registry);
    let (tool, act) = match catalog.function(name) {
        Some(function) if lookup.remote && !function.api => return None,
        Some(function) => (function.tool.as_str(), function.act),
        None => (name, None),
    };
    let resolved = registry.resolve(tool)?;
    let def = resolved.tool.definition();
    // The catalogue's entry may be older than the registry (a tool replaced since):
    // an act must still exist, and a service is reached only through one.
    match act {
        Some(index) if index >= def.acts.len() => None,
        // The program's own callers may still name a service with its `act`.
        None if lookup.remote && !def.acts.is_empty() => None,
        _ => Some(Found { resolved, act }),
    }
}

/// The call a tracked task runs: its tool (by canonical name) with the act it was
/// started with chosen, while the tool is still there.
pub(crate) fn find_tracked(registry: &Registry, tool: &str, act: Option<&str>) -> Option<Found> {
    let resolved = registry.resolve(tool)?;
    let act = act.and_then(|act| {
        resolved
            .tool
            .definition()
            .acts
            .iter()
            .position(|a| a.name == act)
    });
    Some(Found { resolved, act })
}

/// Whether a poller with `options` may see a tracked call of `tool`: a call whose
/// tool a layer hides from the poller is, to it, a call that does not exist (one
/// whose tool is gone stays readable by its caller).
pub(crate) fn tracked_shown(
    registry: &Registry,
    tool: &str,
    options: Option<&CallOptions>,
) -> bool {
    if !registry.has_layers() {
        return true;
    }
    registry
        .get(tool)
        .is_none_or(|found| shown_to(registry, options)(found.definition()))
}

/// What the layers of `registry` let the caller of `options` see: a tool they hide
/// is, to that caller, a tool that does not exist. Without layers, or without a
/// caller to judge (a surface that leaves it to the execution core), everything.
pub(crate) fn shown_to<'a>(
    registry: &Registry,
    options: Option<&'a CallOptions>,
) -> impl Fn(&ToolDefinition) -> bool + 'a {
    let layers = options.and(registry.layers());
    move |def| match (&layers, options) {
        (Some(layers), Some(options)) => {
            crate::layer::visible(layers, def, &crate::layer::viewer_of(options))
        }
        _ => true,
    }
}

/// What a call needs of its caller that the caller must have said it can give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Needs {
    /// Client capabilities it did not declare (MCP `needs_client`), by name.
    Capabilities(Vec<String>),
    /// The tool runs only as a task, and the caller takes none.
    Tasks,
}

impl Found {
    /// The tool's canonical name (aliases resolved).
    pub(crate) fn name(&self) -> &str {
        self.resolved.tool.name()
    }

    /// The tool's definition.
    pub(crate) fn definition(&self) -> &ToolDefinition {
        self.resolved.tool.definition()
    }

    /// The act the call runs, when one is chosen.
    pub(crate) fn act(&self) -> Option<&ActDefinition> {
        self.act.and_then(|index| self.definition().acts.get(index))
    }

    /// Chooses the act (by its index in the definition's acts).
    pub(crate) fn choose_act(&mut self, index: usize) {
        self.act = Some(index);
    }

    /// The parameters' schema: the act's, or the tool's.
    pub(crate) fn params(&self) -> &Value {
        self.act()
            .map_or(&self.definition().params, |act| &act.params)
    }

    /// The result's schema: the act's, or the tool's.
    pub(crate) fn result(&self) -> Option<&Value> {
        match self.act() {
            Some(act) => act.result.as_ref(),
            None => self.definition().result.as_ref(),
        }
    }

    /// Whether the call streams its items: the act's word, or the tool's.
    pub(crate) fn streams(&self) -> bool {
        self.act()
            .map_or(self.definition().stream, |act| act.stream)
    }

    /// The hints the call is listed with: the act's own, else the tool's (as a
    /// `{service}_{method}` function is listed).
    pub(crate) fn annotations(&self) -> &Annotations {
        match self.act() {
            Some(act) if !act.annotations.is_empty() => &act.annotations,
            _ => &self.definition().annotations,
        }
    }

    /// Whether a person should confirm the call before it runs.
    pub(crate) fn needs_confirmation(&self) -> bool {
        self.annotations().needs_confirmation == Some(true)
    }

    /// The soft deadline after which the call moves to the background.
    pub(crate) fn soft_deadline(&self) -> Option<Duration> {
        self.resolved.tool.soft_deadline()
    }

    /// Whether the call can run only as a tracked task.
    pub(crate) fn background_only(&self) -> bool {
        self.definition().background_only
    }

    /// Whether the tool may be tracked: it has a soft deadline or runs only as a
    /// task.
    pub(crate) fn may_be_tracked(&self) -> bool {
        self.background_only() || self.soft_deadline().is_some()
    }

    /// Whether the call runs to its end on the calling thread: a sync tool, no act,
    /// no setup still running.
    pub(crate) fn runs_inline(&self) -> bool {
        self.resolved.tool.runs_inline() && self.act.is_none() && self.resolved.ready.is_none()
    }

    /// Admits the call for a caller that declared `declared` (client capabilities,
    /// read only when the tool needs some) and does or does not take tasks: what the
    /// call needs and the caller lacks, else nothing.
    pub(crate) fn admit(
        &self,
        declared: impl FnOnce() -> Value,
        takes_tasks: bool,
    ) -> Result<(), Needs> {
        let def = self.definition();
        if !def.needs_client.is_empty() {
            let declared = declared();
            let missing: Vec<String> = def
                .needs_client
                .iter()
                .filter(|name| declared.get(name.as_str()).is_none_or(Value::is_null))
                .cloned()
                .collect();
            if !missing.is_empty() {
                return Err(Needs::Capabilities(missing));
            }
        }
        if def.background_only && !takes_tasks {
            return Err(Needs::Tasks);
        }
        Ok(())
    }

    /// Writes the chosen act's canonical name into `args` as `act`, so that the
    /// service runs exactly what was found and admitted.
    pub(crate) fn name_act(&self, args: &mut Map<String, Value>) {
        if let Some(act) = self.act() {
            args.insert("act".to_owned(), Value::from(act.name.clone()));
        }
    }

    /// The resolved tool, for the execution core.
    pub(crate) fn into_resolved(self) -> Resolved {
        self.resolved
    }
}
