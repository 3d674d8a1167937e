//! The one entry of a call from outside: what a surface parsed ([`RemoteCall`])
//! goes in, and either the call found for its caller with the way it answers
//! ([`Admitted`]) or the one reason it is refused ([`Refusal`]) comes out. Every
//! surface calls [`admit`] once per call (or [`precheck`] where it must judge
//! before reading what it needs to run the call), and only parses before and
//! encodes after.

use serde_json::Value;

use super::dispatch::Plan;
use super::find::{Found, Lookup, Needs, find, insufficient_scope};
use crate::error::ToolError;
use crate::identity::Identity;
use crate::options::CallOptions;
use crate::registry::Registry;

/// What a surface parsed of a call from outside.
pub(crate) struct RemoteCall<'a> {
    /// The name the caller used.
    name: &'a str,
    /// How the surface names what it calls (tools, or functions).
    lookup: Lookup,
    /// The caller's options, for the layers to judge what it may see; `None` where
    /// the execution core judges the call with its own options.
    viewer: Option<&'a CallOptions>,
    /// The caller's verified identity, judged by scopes; `None` for a caller that
    /// has none (the program's own, a surface without an authenticator).
    identity: Option<&'a Identity>,
    /// The arguments, when read: an act they name needs its scopes too.
    args: Option<&'a Value>,
    /// Whether the caller takes a streaming call's items one by one.
    stream: bool,
    /// Whether the caller takes tracked tasks, where the surface speaks of them
    /// (`None`: it does not, and runs a background-only tool to its end); asked
    /// only of a tool that may be tracked.
    takes_tasks: Option<&'a (dyn Fn() -> bool + Sync)>,
    /// Whether the call may be tracked now (a call past its soft deadline moves to
    /// the background).
    tracks: bool,
    /// Whether the surface asks a person to confirm a call that needs it before
    /// the call runs: such a call is then not tracked at once.
    asks_first: bool,
    /// The client capabilities the caller declared, read only when the tool needs
    /// some.
    declared: Option<&'a (dyn Fn() -> Value + Sync)>,
}

impl<'a> RemoteCall<'a> {
    /// A call of `name`, named as `lookup` says, by a caller of no options, no
    /// identity, that takes one value and no task.
    pub(crate) fn new(name: &'a str, lookup: Lookup) -> Self {
        Self {
            name,
            lookup,
            viewer: None,
            identity: None,
            args: None,
            stream: false,
            takes_tasks: None,
            tracks: false,
            asks_first: false,
            declared: None,
        }
    }

    /// The caller's options: the layers judge what it may see with them, and its
    /// verified identity (if any) is judged by scopes.
    #[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
    pub(crate) fn caller(mut self, options: &'a CallOptions) -> Self {
        self.viewer = Some(options);
        self.identity = options.identity.as_ref();
        self
    }

    /// The caller's verified identity alone (no layers judge it here).
    pub(crate) fn identity(mut self, identity: Option<&'a Identity>) -> Self {
        self.identity = identity;
        self
    }

    /// The arguments, read: an act they name is admitted too.
    pub(crate) fn args(mut self, args: &'a Value) -> Self {
        self.args = Some(args);
        self
    }

    /// Whether the caller takes a streaming call's items one by one.
    #[cfg(any(feature = "http-server", feature = "mcp"))]
    pub(crate) fn stream(mut self, stream: bool) -> Self {
        self.stream = stream;
        self
    }

    /// The caller takes a tracked task for a call that may become one, and may be
    /// given one now (a surface that does not ask its callers, as HTTP).
    #[cfg(feature = "http-server")]
    pub(crate) fn tracks(mut self) -> Self {
        self.tracks = true;
        self
    }

    /// Whether the caller takes tracked tasks (`takes`, asked only of a tool that
    /// may be tracked: a background-only tool is refused to one that does not),
    /// and may be given one for this call (`now`).
    #[cfg(feature = "mcp")]
    pub(crate) fn tasks(mut self, takes: &'a (dyn Fn() -> bool + Sync), now: bool) -> Self {
        self.takes_tasks = Some(takes);
        self.tracks = now;
        self
    }

    /// The surface asks for a confirmation first, when the call needs one.
    #[cfg(feature = "mcp")]
    pub(crate) fn asks_first(mut self) -> Self {
        self.asks_first = true;
        self
    }

    /// The client capabilities the caller declared.
    #[cfg(feature = "mcp")]
    pub(crate) fn declared(mut self, declared: &'a (dyn Fn() -> Value + Sync)) -> Self {
        self.declared = Some(declared);
        self
    }
}

/// A call admitted for its caller: the call found, and how it answers.
pub(crate) struct Admitted {
    pub(crate) found: Found,
    #[cfg_attr(
        not(feature = "mcp"),
        expect(dead_code, reason = "read by the surfaces that serve it only")
    )]
    pub(crate) plan: Plan,
    /// Whether the call may be tracked and its caller takes tasks (asked at most
    /// once, and only of such a call).
    #[cfg_attr(
        not(feature = "mcp"),
        expect(dead_code, reason = "read by the surfaces that serve it only")
    )]
    pub(crate) takes_tasks: bool,
}

/// Why a call from outside is refused: written once here, encoded by each surface
/// in its own wire.
#[derive(Debug)]
pub(crate) enum Refusal {
    /// No such tool for this caller: unknown, not offered to remote callers, or
    /// hidden from it by a layer, alike (the error says which name).
    NotFound(ToolError),
    /// The caller's verified identity lacks scopes the call needs; all of them.
    Scope(Vec<String>),
    /// What the call needs of its caller and the caller did not declare.
    Needs(Needs),
}

impl Refusal {
    /// The refusal as the error a surface that speaks `ToolError` sends: `NOT_FOUND`,
    /// `INSUFFICIENT_SCOPE` (403, the scopes in `data.scope`), or for what a caller
    /// lacks, `CAPABILITIES_REQUIRED` / `TASKS_REQUIRED`.
    pub(crate) fn into_error(self) -> ToolError {
        match self {
            Self::NotFound(err) => err,
            Self::Scope(needed) => insufficient_scope(&needed),
            Self::Needs(Needs::Capabilities(missing)) => ToolError::custom(
                "CAPABILITIES_REQUIRED",
                400,
                format!(
                    "this call needs the client capabilities {}",
                    missing.join(", ")
                ),
            ),
            Self::Needs(Needs::Tasks) => ToolError::custom(
                "TASKS_REQUIRED",
                400,
                "this tool runs only as a task, and the caller takes none",
            ),
        }
    }
}

/// Admits `call` on `registry`: the tool found once for its caller (a tool the
/// caller may not see is unknown to it), the scopes of the tool and its act (the
/// one a function name chose, else the one the arguments name) held by its
/// verified identity, what the tool needs of its caller declared, and the way it
/// answers decided.
pub(crate) fn admit(registry: &Registry, call: &RemoteCall<'_>) -> Result<Admitted, Refusal> {
    let found = judged(registry, call)?;
    let (plan, takes_tasks) = planned(&found, call)?;
    Ok(Admitted {
        found,
        plan,
        takes_tasks,
    })
}

/// Admits a call [`precheck`] judged, now that what runs it is read (its
/// arguments, the act the surface chose): the scopes of the tool and that act held,
/// what the tool needs of its caller declared, and the way it answers decided (its
/// plan), as [`admit`] does.
#[cfg(feature = "http-server")]
pub(crate) fn admit_judged(found: &Found, call: &RemoteCall<'_>) -> Result<Plan, Refusal> {
    found.settle(call.identity, call.args)?;
    planned(found, call).map(|(plan, _)| plan)
}

/// What [`admit`] decides once the call is found and its scopes held: how it
/// answers, and whether its caller takes tasks.
fn planned(found: &Found, call: &RemoteCall<'_>) -> Result<(Plan, bool), Refusal> {
    let def = found.definition();
    if let Some(declared) = call.declared
        && !def.needs_client.is_empty()
    {
        let declared = declared();
        let missing: Vec<String> = def
            .needs_client
            .iter()
            .filter(|name| declared.get(name.as_str()).is_none_or(Value::is_null))
            .cloned()
            .collect();
        if !missing.is_empty() {
            return Err(Refusal::Needs(Needs::Capabilities(missing)));
        }
    }
    // Whether the caller takes tasks, asked once and only of a tool that may be
    // tracked; a surface that does not speak of tasks takes what it is given.
    let takes = found.may_be_tracked() && call.takes_tasks.is_none_or(|takes| takes());
    if def.background_only && !takes {
        return Err(Refusal::Needs(Needs::Tasks));
    }
    let tracks = call.tracks && takes && !(call.asks_first && found.needs_confirmation());
    Ok((Plan::of(found, call.stream, tracks), takes))
}

/// Judges `call` before what runs it is read (a body, a queued submit): found for
/// its caller, with the scopes its identity holds.
#[cfg(any(feature = "http-server", feature = "mcp", feature = "nats"))]
pub(crate) fn precheck(registry: &Registry, call: &RemoteCall<'_>) -> Result<Found, Refusal> {
    judged(registry, call)
}

fn judged(registry: &Registry, call: &RemoteCall<'_>) -> Result<Found, Refusal> {
    let found = find(registry, call.name, call.lookup, call.viewer).map_err(Refusal::NotFound)?;
    found.settle(call.identity, call.args)?;
    Ok(found)
}

impl Found {
    /// Admits the act chosen since the call was found (HTTP picks it from its path
    /// or body): the scopes of the tool and of that act (chosen, or named by
    /// `args`) held by `identity`.
    pub(crate) fn settle(
        &self,
        identity: Option<&Identity>,
        args: Option<&Value>,
    ) -> Result<(), Refusal> {
        let Some(identity) = identity else {
            return Ok(());
        };
        let def = self.definition();
        if def.scopes.is_empty() && def.acts.iter().all(|act| act.scopes.is_empty()) {
            return Ok(());
        }
        let needed = self.scopes(args);
        if identity.has_scopes(&needed) {
            Ok(())
        } else {
            Err(Refusal::Scope(needed))
        }
    }
}
