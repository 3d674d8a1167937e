//! Find and admit: a name from outside resolved once into a [`Found`] call, and what
//! that call needs of its caller checked before it runs.

use std::borrow::Cow;
use std::time::Duration;

use serde_json::{Map, Value};

use super::catalog::Catalog;
use crate::error::ToolError;
use crate::exec::runner::Runner;
use crate::identity::Identity;
use crate::layer::{Viewer, viewer_of};
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
    #[cfg(any(feature = "http-server", feature = "nats"))]
    pub(crate) const TOOL: Self = Self {
        functions: false,
        remote: true,
    };
    /// A remote caller naming functions (MCP).
    #[cfg(feature = "mcp")]
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
    /// The chosen act's index (`u32`, so the flag below fits beside it: a found
    /// call moves through every surface's futures, and stays as small as it was).
    act: Option<u32>,
    /// Whether the registry's layers already let the caller see it (asked here,
    /// once): the execution core does not ask them again.
    shown: bool,
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
            shown: false,
        })
    };
    let Some(mut found) = found else {
        // The program's own callers learn where an unregistered service was declared;
        // a remote caller learns nothing of the program's source.
        return Err(if lookup.remote {
            ToolError::not_found(name)
        } else {
            crate::tool::service::not_found(name)
        });
    };
    let def = found.resolved.tool.definition();
    let sight = Sight::of(registry, viewer);
    let seen = if lookup.remote {
        sight.offers(def)
    } else {
        sight.layers_show(def)
    };
    if !seen {
        return Err(ToolError::not_found(name));
    }
    // The layers judged the caller of `viewer` here; the execution core does not
    // ask them again.
    found.shown = viewer.is_some();
    // Its scopes are judged by `admit`, with the act the call settles on.
    Ok(found)
}

/// A function by its name: one of the catalogue's (a tool, or one act of a service),
/// else a tool's alias. To a remote caller, a service named as a whole is no
/// function.
fn find_function(registry: &Registry, name: &str, lookup: Lookup) -> Option<Found> {
    let catalog = Catalog::of(registry);
    let (tool, act) = match catalog.function(name) {
        Some(function) if lookup.remote && !function.api => return None,
        Some(function) => (
            function.tool.as_str(),
            function.act.and_then(|index| u32::try_from(index).ok()),
        ),
        None => (name, None),
    };
    let resolved = registry.resolve(tool)?;
    let def = resolved.tool.definition();
    // The catalogue's entry may be older than the registry (a tool replaced since):
    // an act must still exist, and a service is reached only through one.
    match act {
        Some(index) if index as usize >= def.acts.len() => None,
        // The program's own callers may still name a service with its `act`.
        None if lookup.remote && !def.acts.is_empty() => None,
        _ => Some(Found {
            resolved,
            act,
            shown: false,
        }),
    }
}

/// The call a tracked task runs: its tool (by canonical name) with the act it was
/// started with chosen, while the tool is still there.
#[cfg(feature = "mcp")]
pub(crate) fn find_tracked(registry: &Registry, tool: &str, act: Option<&str>) -> Option<Found> {
    let resolved = registry.resolve(tool)?;
    let act = act.and_then(|act| {
        resolved
            .tool
            .definition()
            .acts
            .iter()
            .position(|a| a.name == act)
            .and_then(|index| u32::try_from(index).ok())
    });
    Some(Found {
        resolved,
        act,
        shown: false,
    })
}

/// Whether a poller with `options` may see a tracked call of `tool`: a call whose
/// tool a layer hides from the poller is, to it, a call that does not exist (one
/// whose tool is gone stays readable by its caller).
#[cfg(any(feature = "http-server", feature = "mcp"))]
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

/// What the layers of `registry` and the scopes of its identity let the caller of
/// `options` see: a tool they hide is, to that caller, a tool that does not exist.
/// Without layers and identity, or without a caller to judge (a surface that leaves
/// it to the execution core), everything.
#[cfg(any(feature = "http-server", feature = "mcp"))]
pub(crate) fn shown_to<'a>(
    registry: &Registry,
    options: Option<&'a CallOptions>,
) -> impl Fn(&ToolDefinition) -> bool + 'a {
    let sight = Sight::of(registry, options);
    move |def| sight.shows(def)
}

/// What one caller may see of a catalogue: the layers' visibility, and the scopes
/// its verified identity holds. Written once here, read by every listing and every
/// lookup.
pub(crate) struct Sight<'a> {
    /// The layers that judge, with the caller as they see it.
    layers: Option<(crate::layer::Layers, Viewer<'a>)>,
    identity: Option<&'a Identity>,
}

impl<'a> Sight<'a> {
    /// The sight of the caller of `options` on `registry`.
    pub(crate) fn of(registry: &Registry, options: Option<&'a CallOptions>) -> Self {
        Self {
            layers: options.and_then(|options| Some((registry.layers()?, viewer_of(options)))),
            identity: options.and_then(|options| options.identity.as_ref()),
        }
    }

    /// The sight of the caller of `runner`: the layers of the runner and its
    /// registry, and the scopes of its identity.
    pub(crate) fn of_runner(runner: &'a Runner) -> Self {
        Self {
            layers: runner.layers().map(|layers| (layers, runner.viewer())),
            identity: runner.identity(),
        }
    }

    /// Whether this sight leaves anything out: layers judge, or scopes do.
    pub(crate) fn judges(&self) -> bool {
        self.layers.is_some() || self.identity.is_some()
    }

    /// Whether the caller holds every scope of `needed` (a caller with no verified
    /// identity is not judged by scopes).
    pub(crate) fn permits(&self, needed: &[String]) -> bool {
        needed.is_empty() || self.identity.is_none_or(|who| who.has_scopes(needed))
    }

    /// Whether the caller sees the tool (or function) `def`: its layers let it, and
    /// it holds the scopes `def` needs.
    pub(crate) fn shows(&self, def: &ToolDefinition) -> bool {
        self.permits(&def.scopes) && self.layers_show(def)
    }

    /// Whether `def` is offered to this caller from outside: offered to remote
    /// callers and shown by the layers (a caller that lacks its scopes is offered
    /// it, and refused with the scopes to ask for).
    pub(crate) fn offers(&self, def: &ToolDefinition) -> bool {
        def.api && self.layers_show(def)
    }

    /// Whether `def` is listed for this caller from outside: offered to remote
    /// callers, shown by the layers, and its scopes held.
    #[cfg(any(feature = "http-server", feature = "mcp"))]
    pub(crate) fn lists(&self, def: &ToolDefinition) -> bool {
        def.api && self.shows(def)
    }

    /// Whether the layers let the caller see `def` (a tool they hide does not
    /// exist for it; one it lacks scopes for exists, and a call is refused with
    /// the scopes to ask for).
    pub(crate) fn layers_show(&self, def: &ToolDefinition) -> bool {
        self.layers
            .as_ref()
            .is_none_or(|(layers, viewer)| crate::layer::visible(layers, def, viewer))
    }

    /// The function `name` of `offered`, when this caller may see it: offered to
    /// remote callers, the scopes the function needs held, and its tool shown (by
    /// the layers, and the tool's own scopes held).
    #[cfg(feature = "mcp")]
    pub(crate) fn function<'c>(
        &self,
        offered: &'c Catalog,
        name: &str,
    ) -> Option<&'c super::catalog::Function> {
        offered.function(name).filter(|function| {
            function.api
                && self.permits(&function.definition.scopes)
                && offered
                    .tool(&function.tool)
                    .is_some_and(|def| self.shows(def))
        })
    }

    /// `def` as the caller sees it: `None` when hidden (a service is hidden when
    /// the caller may run none of its acts), else with the acts it may not run
    /// left out (of `acts`, `methods` and the `act` parameter's choices).
    pub(crate) fn view<'d>(&self, def: &'d ToolDefinition) -> Option<Cow<'d, ToolDefinition>> {
        if !self.shows(def) {
            return None;
        }
        if def.acts.iter().all(|act| self.permits(&act.scopes)) {
            return Some(Cow::Borrowed(def));
        }
        let mut def = def.clone();
        def.acts.retain(|act| self.permits(&act.scopes));
        if def.acts.is_empty() {
            return None;
        }
        let kept: Vec<String> = def.acts.iter().map(|act| act.name.clone()).collect();
        def.methods.retain(|name| kept.contains(name));
        if let Some(Value::Array(choices)) = def.params.to_mut().pointer_mut("/properties/act/enum")
        {
            choices.retain(|c| c.as_str().is_some_and(|c| kept.iter().any(|k| k == c)));
        }
        Some(Cow::Owned(def))
    }
}

/// The refusal of a call whose caller lacks scopes it needs: 403
/// `INSUFFICIENT_SCOPE`, with every scope the call needs in `data.scope` (space
/// separated, as OAuth writes them) for the client to ask its authorization server.
pub(crate) fn insufficient_scope(needed: &[String]) -> ToolError {
    let scope = needed.join(" ");
    ToolError::custom(
        INSUFFICIENT_SCOPE,
        403,
        format!(
            "this call needs the scope `{scope}`; ask the authorization server for a \
             token that grants it"
        ),
    )
    .with_data(serde_json::json!({"scope": scope}))
}

/// The code of [`insufficient_scope`].
pub(crate) const INSUFFICIENT_SCOPE: &str = "INSUFFICIENT_SCOPE";

/// What a call needs of its caller that the caller must have said it can give.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Needs {
    /// Client capabilities it did not declare (MCP `needs_client`), by name.
    Capabilities(Vec<String>),
    /// The tool runs only as a task, and the caller takes none.
    Tasks,
}

impl Found {
    /// The call of a prompt's or a resource's function (`tool`), found and
    /// admitted by [`admit_prompt`](super::admit_prompt) or
    /// [`admit_resource`](super::admit_resource) (whose layers judged its caller).
    #[cfg(feature = "mcp")]
    pub(crate) fn of_function(registry: &Registry, tool: crate::tool::ToolRef) -> Self {
        Self {
            resolved: Resolved {
                tool,
                owner: registry.clone(),
                ready: None,
            },
            act: None,
            shown: true,
        }
    }

    /// The tool's canonical name (aliases resolved).
    #[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
    pub(crate) fn name(&self) -> &str {
        self.resolved.tool.name()
    }

    /// The tool's definition.
    pub(crate) fn definition(&self) -> &ToolDefinition {
        self.resolved.tool.definition()
    }

    /// The act the call runs, when one is chosen.
    pub(crate) fn act(&self) -> Option<&ActDefinition> {
        self.act
            .and_then(|index| self.definition().acts.get(index as usize))
    }

    /// Chooses the act (by its index in the definition's acts).
    #[cfg(feature = "http-server")]
    pub(crate) fn choose_act(&mut self, index: usize) {
        self.act = u32::try_from(index).ok();
    }

    /// The parameters' schema: the act's, or the tool's.
    #[cfg(feature = "http-server")]
    pub(crate) fn params(&self) -> &Value {
        self.act()
            .map_or(self.definition().params.value(), |act| &act.params)
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
    #[cfg(feature = "mcp")]
    pub(crate) fn runs_inline(&self) -> bool {
        self.resolved.tool.runs_inline() && self.act.is_none() && self.resolved.ready.is_none()
    }

    /// The scopes the call needs: the tool's, and the act's (the one chosen, else
    /// the one `args` names), each once.
    pub(crate) fn scopes(&self, args: Option<&Value>) -> Vec<String> {
        let def = self.definition();
        let act = self.act().or_else(|| {
            let named = args?.get("act")?.as_str()?;
            def.act_named(named).map(|(_, act)| act)
        });
        crate::tool::service::needed_scopes(def, act)
    }

    /// Writes the chosen act's canonical name into `args` as `act`, so that the
    /// service runs exactly what was found and admitted.
    pub(crate) fn name_act(&self, args: &mut Map<String, Value>) {
        if let Some(act) = self.act() {
            args.insert("act".to_owned(), Value::from(act.name.clone()));
        }
    }

    /// The resolved tool, for the execution core, and whether the registry's
    /// layers already let its caller see it (they are not asked again).
    pub(crate) fn into_parts(self) -> (Resolved, bool) {
        (self.resolved, self.shown)
    }
}
