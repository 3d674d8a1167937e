//! `Registry`: tools by name and alias, in a chain of registries (a child sees its
//! parent's tools and may shadow them); the global registry filled by `#[tool]`;
//! reference-counted registration with dependencies, overrides, sealing, lifecycle
//! hooks and events.

mod events;
mod lifecycle;
mod prompts_resources;
mod search;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use tokio::sync::broadcast;

pub(crate) use cache::generation;
pub(crate) use events::Observer;
pub use events::{CallStatus, RegistryEvent, Subscription, SubscriptionError};
pub use search::SearchHit;

use crate::error::ToolError;
use crate::layer::{Layer, Layers};
use crate::tool::service::{ServiceEntry, ServiceParts};
use crate::tool::{DependencyTarget, ToolRef, ToolSpec};
use crate::tool::{ToolDefinition, ToolFunc};
use lifecycle::Ready;

/// A set of tools, each reachable by its name and its aliases.
///
/// `Registry` is a cheap handle (`Clone` shares the same tools), and what takes
/// `impl Into<Registry>` (the HTTP, MCP and NATS servers, a ledger) takes a
/// `&Registry` such as `Registry::global()` as well. Use
/// [`Registry::global`] for the tools declared with `#[tool]` anywhere in the program,
/// [`Registry::new`] for an empty one, and [`Registry::isolate`] for a child that sees
/// its parent's tools and may shadow them.
///
/// ```rust,standalone_crate
/// use serde_json::json;
/// use toolfunc::{tool, Registry};
///
/// /// Adds two numbers.
/// #[tool(alias = "plus", tags = ["math"])]
/// fn add(/** The left operand. */ a: f64, /** The right operand. */ b: f64) -> f64 {
///     a + b
/// }
///
/// let registry = Registry::global();
/// assert_eq!(registry.run_sync("add", json!({"a": 1, "b": 2})).unwrap(), json!(3.0));
/// assert_eq!(registry.run_sync("plus", json!({"a": 1, "b": 2})).unwrap(), json!(3.0));
/// ```
#[doc = include_str!("../docs/runtime.md")]
#[derive(Clone, Default)]
pub struct Registry {
    inner: Handle,
}

/// The shared state of a registry. The global registry lives for the whole program,
/// so its handle is a plain reference: cloning it (once per call, into the `Ctx`)
/// costs no atomic operation.
#[derive(Clone)]
enum Handle {
    Static(&'static Inner),
    Shared(Arc<Inner>),
}

impl Default for Handle {
    fn default() -> Self {
        Self::Shared(Arc::new(Inner::new(None)))
    }
}

impl std::ops::Deref for Handle {
    type Target = Inner;

    fn deref(&self) -> &Inner {
        match self {
            Self::Static(inner) => inner,
            Self::Shared(inner) => inner,
        }
    }
}

struct Inner {
    state: RwLock<State>,
    parent: Option<Registry>,
    sealed: AtomicBool,
    events: OnceLock<broadcast::Sender<RegistryEvent>>,
    /// Live subscriptions: calls check this (one load) before building events.
    subscribers: Arc<AtomicUsize>,
    /// The tool list's changes alone, for subscribers that want no call events.
    changes: OnceLock<broadcast::Sender<RegistryEvent>>,
    /// Live subscriptions to `changes`, which calls never look at.
    change_subscribers: Arc<AtomicUsize>,
    /// How many tools this registry holds (kept under the write lock), so a lookup
    /// passes an empty registry without locking it.
    len: AtomicUsize,
    /// Derived views of the tools (the remote catalogue, LLM exports, the MCP tool
    /// list), each under its typed key with the generation it was made at.
    derived: std::sync::Mutex<Vec<Derived>>,
    /// How many lookups by name started here (debug builds only): tests prove a
    /// remote call resolves its name once.
    #[cfg(debug_assertions)]
    lookups: std::sync::atomic::AtomicU64,
    /// Call middleware attached here, outermost first.
    layers: RwLock<Option<Layers>>,
    /// Whether `layers` holds any (read without the lock on every call).
    layered: AtomicBool,
    /// The prompts and resources held here.
    kinds: RwLock<prompts_resources::Kinds>,
}

/// Whether any registry of the program ever had a layer: until then, a call looks for
/// none.
static LAYERED: AtomicBool = AtomicBool::new(false);

/// How many events a subscriber may fall behind before it is told it lagged.
const EVENT_BUFFER: usize = 1024;

/// The channel of `slot`, made by its first subscriber: its buffer (1,024 events,
/// about 100 KB) is only held by a registry someone listens to.
fn channel(slot: &OnceLock<broadcast::Sender<RegistryEvent>>) -> &broadcast::Sender<RegistryEvent> {
    slot.get_or_init(|| broadcast::channel(EVENT_BUFFER).0)
}

impl Inner {
    fn new(parent: Option<Registry>) -> Self {
        Self {
            state: RwLock::default(),
            parent,
            sealed: AtomicBool::new(false),
            events: OnceLock::new(),
            subscribers: Arc::new(AtomicUsize::new(0)),
            changes: OnceLock::new(),
            change_subscribers: Arc::new(AtomicUsize::new(0)),
            len: AtomicUsize::new(0),
            derived: std::sync::Mutex::default(),
            #[cfg(debug_assertions)]
            lookups: std::sync::atomic::AtomicU64::new(0),
            layers: RwLock::default(),
            layered: AtomicBool::new(false),
            kinds: RwLock::default(),
        }
    }
}

/// Tool names are chosen by the program, not by callers: a caller can only look names
/// up, never insert them, so a fast non-keyed hash is safe here.
type Map<V> = HashMap<String, V, rustc_hash::FxBuildHasher>;

#[derive(Default)]
struct State {
    tools: Map<Slot>,
    /// alias → name of the tool that owns it.
    aliases: Map<String>,
    /// The words of the tools here, made on the first search and then changed with
    /// `tools` (see [`search`]).
    index: Option<search::Index>,
}

struct Slot {
    tool: ToolRef,
    /// How many registrations hold this tool; it is removed when this reaches zero.
    refs: usize,
    /// The tool's asynchronous setup, while (and after) it runs.
    ready: Option<Ready>,
}

/// A tool found by name, with the registry that holds it.
pub(crate) struct Resolved {
    pub(crate) tool: ToolRef,
    pub(crate) owner: Registry,
    pub(crate) ready: Option<Ready>,
}

impl State {
    fn slot(&self, name: &str) -> Option<&Slot> {
        match self.tools.get(name) {
            Some(slot) => Some(slot),
            None => self
                .aliases
                .get(name)
                .and_then(|owner| self.tools.get(owner)),
        }
    }

    /// The name of the tool `name` refers to here (itself or the owner of an alias).
    fn canonical(&self, name: &str) -> Option<String> {
        if self.tools.contains_key(name) {
            return Some(name.to_owned());
        }
        self.aliases.get(name).cloned()
    }

    /// Why `tool` cannot be added (its name or an alias already names something else).
    /// `replacing` is the name of a tool being replaced, whose names do not count.
    fn conflict(&self, tool: &ToolFunc, replacing: Option<&str>) -> Option<String> {
        let name = tool.name();
        if let Some(owner) = self.aliases.get(name)
            && Some(owner.as_str()) != replacing
        {
            return Some(format!(
                "tool name `{name}` is already an alias of `{owner}`"
            ));
        }
        for alias in &tool.definition().alias {
            if alias == name {
                continue;
            }
            if self.tools.contains_key(alias) && Some(alias.as_str()) != replacing {
                return Some(format!(
                    "alias `{alias}` of `{name}` is already the name of a tool"
                ));
            }
            if let Some(owner) = self.aliases.get(alias)
                && owner != name
                && Some(owner.as_str()) != replacing
            {
                return Some(format!(
                    "alias `{alias}` of `{name}` is already an alias of `{owner}`"
                ));
            }
        }
        None
    }

    fn insert(&mut self, tool: ToolRef, refs: usize, ready: Option<Ready>) {
        for alias in &tool.definition().alias {
            if alias != tool.name() {
                self.aliases.insert(alias.clone(), tool.name().to_owned());
            }
        }
        if let Some(index) = &mut self.index {
            index.add(tool.definition());
        }
        self.tools
            .insert(tool.name().to_owned(), Slot { tool, refs, ready });
    }

    fn remove(&mut self, name: &str) -> Option<Slot> {
        let slot = self.tools.remove(name)?;
        if let Some(index) = &mut self.index {
            index.remove(name);
        }
        for alias in &slot.tool.definition().alias {
            if self.aliases.get(alias).is_some_and(|owner| owner == name) {
                self.aliases.remove(alias);
            }
        }
        Some(slot)
    }
}

/// How [`Registry::register_with`] treats a name that is already taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[must_use]
pub struct RegisterOptions {
    allow_override: Option<bool>,
}

impl RegisterOptions {
    /// The default: an existing registration of the name is counted, not replaced.
    pub fn new() -> Self {
        Self::default()
    }

    /// `true`: replace an existing tool of that name in this registry, atomically (an
    /// alias that clashes with another tool refuses the whole replacement). `false`:
    /// namespace protection: refuse (`CONFLICT`) when the name or an alias exists
    /// anywhere up the chain of registries.
    pub fn allow_override(mut self, allow: bool) -> Self {
        self.allow_override = Some(allow);
        self
    }
}

/// Which registries [`Registry::unregister_with`] removes a tool from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnregisterScope {
    /// Only this registry; removing a shadow makes the parent's tool visible again.
    #[default]
    Local,
    /// The first registry up the chain that has the tool.
    Inherited,
    /// This registry and every parent that has the tool.
    All,
}

/// Options of [`Registry::unregister_with`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[must_use]
pub struct UnregisterOptions {
    scope: UnregisterScope,
    force: bool,
}

impl UnregisterOptions {
    /// Take back one registration, in this registry only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Which registries to remove the tool from.
    pub fn scope(mut self, scope: UnregisterScope) -> Self {
        self.scope = scope;
        self
    }

    /// Remove the tool at once, whatever its registration count.
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }
}

static GLOBAL: OnceLock<Result<Registry, ToolError>> = OnceLock::new();

impl Registry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// The registry of every `#[tool]` in the program, built on first use.
    ///
    /// Tools declared in a library crate are only linked in when the binary uses
    /// something from that crate (a limit of link-time collection).
    ///
    /// # Panics
    ///
    /// When two `#[tool]`s share a name or alias, a tool's definition is invalid, or a
    /// tool depends on a tool that does not exist: the message lists every such
    /// problem with the source location of each tool. Use [`Registry::try_global`] to
    /// handle that as an error instead.
    pub fn global() -> &'static Registry {
        match Self::try_global() {
            Ok(registry) => registry,
            Err(err) => panic!("toolfunc: the global registry cannot be built: {err}"),
        }
    }

    /// The global registry, or the error that prevents building it (`CONFLICT` for
    /// duplicate names or aliases, `DEFINITION` for an invalid tool or a missing
    /// dependency).
    pub fn try_global() -> Result<&'static Registry, ToolError> {
        GLOBAL
            .get_or_init(Self::from_inventory)
            .as_ref()
            .map_err(Clone::clone)
    }

    fn from_inventory() -> Result<Registry, ToolError> {
        let mut state = State::default();
        let mut problems = Vec::new();
        let mut conflict = false;
        let mut origin: HashMap<&str, &str> = HashMap::new();
        // `#[tool]` functions, then `#[tool_service]` types that are `Default`.
        let functions = inventory::iter::<ToolSpec>
            .into_iter()
            .map(|spec| (spec.name, spec.location, spec.build()));
        // A service's prompts and resources, kept until the other kinds are in.
        let mut service_kinds = Vec::new();
        let services = inventory::iter::<ServiceEntry>
            .into_iter()
            .filter_map(|entry| Some((entry.name, entry.location, (entry.build)()?)))
            .map(|(name, location, built)| {
                let tool = built.map(|parts| {
                    service_kinds.push((location, parts.kinds));
                    parts.tool
                });
                (name, location, tool)
            });
        for (name, location, built) in functions.chain(services) {
            let tool = match built {
                Ok(tool) => tool,
                Err(err) => {
                    problems.push(format!("{err} (at {location})"));
                    continue;
                }
            };
            if state.tools.contains_key(tool.name()) {
                conflict = true;
                let first_at = origin.get(tool.name()).copied().unwrap_or("?");
                problems.push(format!(
                    "two tools are named `{}`: at {first_at} and at {location}",
                    tool.name(),
                ));
            } else if let Some(why) = state.conflict(&tool, None) {
                conflict = true;
                problems.push(format!("{why} (at {location})"));
            } else {
                origin.insert(name, location);
                // Collected at link time, these live as long as the program.
                state.insert(ToolRef::leaked(tool), 1, None);
            }
        }
        // Dependencies by name are checked once every tool is in: order of collection
        // is not order of declaration.
        for slot in state.tools.values() {
            for dependency in &slot.tool.depends {
                if let DependencyTarget::Name(name) = &dependency.target
                    && state.slot(name).is_none()
                {
                    let at = origin.get(slot.tool.name()).copied().unwrap_or("?");
                    problems.push(format!(
                        "`{}` depends on `{name}` (as `{}`), which no #[tool] defines (at {at})",
                        slot.tool.name(),
                        dependency.alias
                    ));
                }
            }
        }
        // `#[prompt]` and `#[resource]` functions and methods.
        let kinds = prompts_resources::Kinds::from_inventory(service_kinds, &mut problems);
        if problems.is_empty() {
            let inner = Inner::new(None);
            *inner.kinds.write().unwrap_or_else(PoisonError::into_inner) = kinds;
            inner.len.store(state.tools.len(), Ordering::Release);
            let with_setup: Vec<String> = state
                .tools
                .values()
                .filter(|slot| slot.tool.setup.is_some())
                .map(|slot| slot.tool.name().to_owned())
                .collect();
            *inner.state.write().unwrap_or_else(PoisonError::into_inner) = state;
            let registry = Registry {
                inner: Handle::Static(Box::leak(Box::new(inner))),
            };
            // `#[tool]` functions have no lifecycle hooks, but a `Default`
            // `#[tool_service]` may have a `#[tool(setup)]`: it runs before the
            // registry is handed out (an async one holds calls until it is done). A
            // setup that fails leaves its service out, as `register` would refuse it.
            for name in with_setup {
                if let Err(err) = registry.finish_setup(&name) {
                    tracing::error!(tool = %name, error = %err, "the setup of a global service failed; it is left out");
                }
            }
            return Ok(registry);
        }
        problems.sort();
        let message = format!(
            "{} problem(s) among #[tool] declarations:\n  - {}",
            problems.len(),
            problems.join("\n  - ")
        );
        Err(if conflict {
            ToolError::conflict(message)
        } else {
            ToolError::Definition {
                name: "#[tool]".into(),
                message,
            }
        })
    }

    fn tools_read(&self) -> RwLockReadGuard<'_, State> {
        // No user code runs under the lock, so a poisoned lock still holds a consistent map.
        self.inner
            .state
            .read()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> Write<'_> {
        Write {
            guard: self
                .inner
                .state
                .write()
                .unwrap_or_else(PoisonError::into_inner),
            len: &self.inner.len,
        }
    }

    /// Whether the registry holds no tool of its own (no lock taken).
    fn is_empty_here(&self) -> bool {
        self.inner.len.load(Ordering::Acquire) == 0
    }

    /// A child registry: it sees this registry's tools (and its parents'), registers
    /// its own locally, and may shadow inherited ones. The normal way for tests and
    /// plugins to keep their tools to themselves.
    ///
    /// ```
    /// use serde_json::{json, Value};
    /// use toolfunc::{Registry, ToolFunc};
    ///
    /// let tool = |name: &str, out: &'static str| {
    ///     ToolFunc::builder(name).handler_sync(move |_, _| Ok(json!(out))).build().unwrap()
    /// };
    /// let parent = Registry::new();
    /// parent.register(tool("calc", "parent")).unwrap();
    /// let child = parent.isolate();
    /// child.register(tool("calc", "child")).unwrap();
    /// assert_eq!(child.run_sync("calc", Value::Null).unwrap(), "child");
    /// assert_eq!(parent.run_sync("calc", Value::Null).unwrap(), "parent");
    /// child.unregister("calc"); // the shadow goes; the parent's tool shows through
    /// assert_eq!(child.run_sync("calc", Value::Null).unwrap(), "parent");
    /// ```
    #[must_use]
    pub fn isolate(&self) -> Registry {
        Registry {
            inner: Handle::Shared(Arc::new(Inner::new(Some(self.clone())))),
        }
    }

    /// The registry this one was isolated from.
    pub fn parent(&self) -> Option<&Registry> {
        self.inner.parent.as_ref()
    }

    /// Whether two handles are the same registry (as `Arc::ptr_eq` asks of two `Arc`s).
    pub fn ptr_eq(&self, other: &Registry) -> bool {
        std::ptr::eq::<Inner>(&raw const *self.inner, &raw const *other.inner)
    }

    /// Whether `ancestor` is this registry's parent, grandparent, ... (not itself).
    pub fn descends_from(&self, ancestor: &Registry) -> bool {
        let mut current = self.parent();
        while let Some(registry) = current {
            if registry.ptr_eq(ancestor) {
                return true;
            }
            current = registry.parent();
        }
        false
    }

    /// Seals the registry: from now on, registering a tool fails with `SEALED`. One
    /// way; tools already in place keep working and can still be unregistered.
    pub fn seal(&self) {
        self.inner.sealed.store(true, Ordering::SeqCst);
    }

    /// Whether the registry is sealed.
    pub fn is_sealed(&self) -> bool {
        self.inner.sealed.load(Ordering::SeqCst)
    }

    /// Finds `name` here or up the chain.
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    pub(crate) fn resolve(&self, name: &str) -> Option<Resolved> {
        self.counted();
        self.find(name)
    }

    /// [`resolve`](Self::resolve), uncounted: for the registry's own walks over its
    /// tools, which are not lookups a caller asked for.
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    fn find(&self, name: &str) -> Option<Resolved> {
        if let Handle::Static(inner) = &self.inner
            && let Some(tool) = cache::hit(inner, name)
        {
            return Some(Resolved {
                tool: ToolRef::from_static(tool),
                owner: self.clone(),
                ready: None,
            });
        }
        self.resolve_here_or_up(name)
    }

    /// [`resolve`](Self::resolve) past the thread's memory: the lock and the hash.
    #[inline(never)]
    fn resolve_here_or_up(&self, name: &str) -> Option<Resolved> {
        let mut registry = self;
        loop {
            if !registry.is_empty_here() {
                let state = registry.tools_read();
                if let Some(slot) = state.slot(name) {
                    if let (Handle::Static(inner), Some(tool), None) =
                        (&registry.inner, slot.tool.as_static(), &slot.ready)
                        && std::ptr::eq(registry, self)
                    {
                        cache::store(inner, tool);
                    }
                    return Some(Resolved {
                        tool: slot.tool.clone(),
                        owner: registry.clone(),
                        ready: slot.ready.clone(),
                    });
                }
            }
            registry = registry.parent()?;
        }
    }

    /// The tool named `name`, by name or alias, here or inherited.
    pub fn get(&self, name: &str) -> Option<ToolRef> {
        self.resolve(name).map(|found| found.tool)
    }

    /// Whether a tool is reachable by `name` (a name or an alias), here or inherited.
    pub fn has(&self, name: &str) -> bool {
        self.counted();
        let mut registry = self;
        loop {
            if !registry.is_empty_here() && registry.tools_read().slot(name).is_some() {
                return true;
            }
            match registry.parent() {
                Some(parent) => registry = parent,
                None => return false,
            }
        }
    }

    /// Whether this registry itself (not a parent) holds `name`.
    pub fn has_local(&self, name: &str) -> bool {
        self.tools_read().slot(name).is_some()
    }

    /// The names of all tools reachable here (local and inherited), sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names = BTreeSet::new();
        let mut registry = Some(self);
        while let Some(current) = registry {
            names.extend(current.tools_read().tools.keys().cloned());
            registry = current.parent();
        }
        names.into_iter().collect()
    }

    /// Attaches call middleware: every call made through this registry (or a child of
    /// it), from any surface, passes `layer`, after the layers attached before it and
    /// after its parents' layers. Clones of this handle share it; to add layers to the
    /// global registry's tools for one purpose only, attach them to a child:
    /// `Registry::global().isolate().layer(..)`. See [`layer`](crate::layer).
    #[must_use = "the layer is attached to this registry; keep the handle to call through it"]
    pub fn layer(self, layer: impl Layer) -> Self {
        LAYERED.store(true, Ordering::Release);
        let mut layers = self
            .inner
            .layers
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let added: Arc<dyn Layer> = Arc::new(layer);
        let all = layers.iter().flat_map(|l| l.iter().cloned());
        *layers = Some(all.chain(std::iter::once(added)).collect());
        self.inner.layered.store(true, Ordering::Release);
        drop(layers);
        self
    }

    /// Whether calls made through this registry pass any layer.
    #[cfg_attr(not(any(feature = "http", feature = "mcp")), allow(dead_code))]
    pub(crate) fn has_layers(&self) -> bool {
        // Flags only: no lock, no list built.
        let mut registry = Some(self);
        while let Some(current) = registry {
            if current.inner.layered.load(Ordering::Acquire) {
                return true;
            }
            registry = current.parent();
        }
        false
    }

    /// The layers a call made through this registry passes, its ancestors' first.
    #[expect(
        clippy::inline_always,
        reason = "the run hot path, counted in benches/instructions.rs"
    )]
    #[inline(always)]
    pub(crate) fn layers(&self) -> Option<Layers> {
        if !LAYERED.load(Ordering::Acquire) {
            return None;
        }
        self.layers_here_and_up()
    }

    /// The layers once any exist in the program: this registry's ancestors' first.
    #[inline(never)]
    fn layers_here_and_up(&self) -> Option<Layers> {
        let mut found: Option<Layers> = None;
        let mut registry = Some(self);
        while let Some(current) = registry {
            let own = current
                .inner
                .layers
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(own) = own.as_ref() {
                found = Some(match found {
                    None => Arc::clone(own),
                    Some(inner) => own.iter().chain(inner.iter()).cloned().collect(),
                });
            }
            drop(own);
            registry = current.parent();
        }
        found
    }

    /// The definitions of all tools reachable here, as advertised to a caller (an
    /// authored `summary` replaces the description), sorted by name. A shadowed tool
    /// appears once, as its shadow. The full definition of one tool is
    /// `registry.get(name)?.definition()`.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.advertised_definitions()
            .into_iter()
            .map(Arc::unwrap_or_clone)
            .collect()
    }

    /// [`definitions`](Self::definitions), shared with the tools instead of copied:
    /// what the catalogue of callers from outside is made of.
    pub(crate) fn advertised_definitions(&self) -> Vec<Arc<ToolDefinition>> {
        // Each level's tools, nearest first, then one per name: the nearest (a
        // shadow). Taken straight from the maps, without copying the names to look
        // each one up again: a catalogue of thousands is made at a server's start.
        let mut found: Vec<(usize, Arc<ToolDefinition>)> = Vec::new();
        let mut registry = Some(self);
        let mut level = 0;
        while let Some(current) = registry {
            found.extend(
                current
                    .tools_read()
                    .tools
                    .values()
                    .map(|slot| (level, slot.tool.advertised())),
            );
            registry = current.parent();
            level += 1;
        }
        found.sort_unstable_by(|(a_level, a), (b_level, b)| {
            a.name.cmp(&b.name).then(a_level.cmp(b_level))
        });
        found.dedup_by(|(_, later), (_, kept)| later.name == kept.name);
        found
            .into_iter()
            .map(|(_, definition)| definition)
            .collect()
    }

    /// Registers a tool. Returns `Ok(true)` when it is new, `Ok(false)` when a tool of
    /// that name was already registered here: the existing tool is kept and its
    /// registration count goes up (each [`unregister`](Self::unregister) takes one
    /// back). Fails with `CONFLICT` when the name or an alias is already used by
    /// another tool's alias or name, `SEALED` on a sealed registry, `DEFINITION` when
    /// a dependency by name is missing, or the error of the tool's `setup`.
    ///
    /// The tool's dependencies on tool instances are registered with it (counted).
    pub fn register(&self, tool: impl Into<ToolRef>) -> Result<bool, ToolError> {
        self.register_with(tool, RegisterOptions::new())
    }

    /// [`register`](Self::register) with options: replace an existing tool, or protect
    /// the namespace up the chain (see [`RegisterOptions::allow_override`]).
    ///
    /// Replacing a tool that other registrations still hold logs a warning; either
    /// way subscribers see `Removed { replaced: true }` then `Added`.
    pub fn register_with(
        &self,
        tool: impl Into<ToolRef>,
        options: RegisterOptions,
    ) -> Result<bool, ToolError> {
        self.insert_tool(&tool.into(), options, &mut Vec::new())
    }

    fn insert_tool(
        &self,
        tool: &ToolRef,
        options: RegisterOptions,
        stack: &mut Vec<String>,
    ) -> Result<bool, ToolError> {
        let name = tool.name().to_owned();
        if self.is_sealed() {
            return Err(ToolError::Sealed { name });
        }
        // A cycle of dependencies: this tool is already being registered further up.
        if stack.contains(&name) {
            return Ok(false);
        }
        if options.allow_override == Some(false) {
            let names = std::iter::once(&name).chain(&tool.definition().alias);
            if let Some(taken) = names.into_iter().find(|n| self.has(n)) {
                return Err(ToolError::conflict(format!(
                    "`{taken}` already exists in this registry or a parent \
                     (registered with allow_override = false)"
                )));
            }
        }
        if options.allow_override != Some(true) {
            let mut state = self.write();
            if let Some(slot) = state.tools.get_mut(&name) {
                slot.refs += 1;
                return Ok(false);
            }
        }
        for dependency in &tool.depends {
            if let DependencyTarget::Name(target) = &dependency.target
                && target != &name
                && !self.has(target)
            {
                return Err(ToolError::Definition {
                    name,
                    message: format!(
                        "it depends on `{target}` (as `{}`), which is not registered",
                        dependency.alias
                    ),
                });
            }
        }
        // Dependency instances go in first, so the tool never sees them missing.
        stack.push(name.clone());
        let mut acquired = Vec::new();
        for dependency in &tool.depends {
            if let DependencyTarget::Tool(target) = &dependency.target {
                match self.insert_tool(target, RegisterOptions::new(), stack) {
                    Ok(_) => acquired.push(target.name().to_owned()),
                    Err(err) => {
                        stack.pop();
                        self.release_all(&acquired);
                        return Err(err);
                    }
                }
            }
        }
        stack.pop();
        // The setup runs before the tool is placed: callers keep reaching what the
        // name had (or nothing) until it has finished, and a refusal leaves no gap.
        let ready = match Self::start_setup(tool) {
            Ok(ready) => ready,
            Err(err) => {
                self.release_all(&acquired);
                return Err(err);
            }
        };
        let placed = self.place(tool, options, ready.clone());
        match placed {
            Err(err) => {
                self.release_all(&acquired);
                Self::dispose_unplaced(tool);
                Err(err)
            }
            Ok(Placed::Counted) => {
                // Someone registered the name meanwhile: theirs holds the dependencies.
                self.release_all(&acquired);
                Self::dispose_unplaced(tool);
                Ok(false)
            }
            Ok(Placed::New) => {
                if let Some(ready) = &ready {
                    Self::drive_setup(ready);
                }
                self.emit(RegistryEvent::Added { name });
                Ok(true)
            }
            Ok(Placed::Replaced { old, held }) => {
                if let Some(ready) = &ready {
                    Self::drive_setup(ready);
                }
                if held > 1 {
                    tracing::warn!(
                        tool = %name,
                        registrations = held,
                        "replacing a tool that other registrations still hold"
                    );
                }
                self.emit(RegistryEvent::Removed {
                    name: name.clone(),
                    replaced: true,
                });
                self.emit(RegistryEvent::Added { name });
                self.start_teardown(old);
                Ok(true)
            }
        }
    }

    /// Puts `tool` in this registry's table.
    fn place(
        &self,
        tool: &ToolRef,
        options: RegisterOptions,
        ready: Option<Ready>,
    ) -> Result<Placed, ToolError> {
        let mut state = self.write();
        let name = tool.name();
        if let Some(slot) = state.tools.get_mut(name) {
            if options.allow_override != Some(true) {
                slot.refs += 1;
                return Ok(Placed::Counted);
            }
            if let Some(why) = state.conflict(tool, Some(name)) {
                return Err(ToolError::conflict(format!(
                    "cannot replace `{name}`: {why}; the registered tool is kept"
                )));
            }
            let old = state.remove(name).map(|slot| (slot.tool, slot.refs));
            let (old, held) = old.unwrap_or_else(|| (tool.clone(), 0));
            state.insert(tool.clone(), held + 1, ready);
            return Ok(Placed::Replaced { old, held });
        }
        if let Some(why) = state.conflict(tool, None) {
            return Err(ToolError::conflict(why));
        }
        state.insert(tool.clone(), 1, ready);
        Ok(Placed::New)
    }

    /// Takes back one registration of each name (dependencies acquired for a tool
    /// that did not make it in).
    fn release_all(&self, names: &[String]) {
        for name in names.iter().rev() {
            self.unregister(name);
        }
    }

    /// Takes back one registration of the tool named `name` (or an alias of it) in
    /// this registry; the tool is removed when none is left, its `dispose` runs, and
    /// the tool instances it depends on are released. Returns `false` when no such
    /// tool is here.
    pub fn unregister(&self, name: &str) -> bool {
        self.unregister_with(name, UnregisterOptions::new())
    }

    /// [`unregister`](Self::unregister) with a scope (local, inherited, all) and
    /// `force`. An asynchronous `dispose` is started on the tokio runtime; use
    /// [`unregister_async`](Self::unregister_async) to wait for it.
    pub fn unregister_with(&self, name: &str, options: UnregisterOptions) -> bool {
        let (found, removed) = self.take(name, options);
        for (registry, tool) in removed {
            registry.start_teardown(tool);
        }
        found
    }

    /// [`unregister_with`](Self::unregister_with), waiting for the teardown (the
    /// tool's `dispose` and its dependencies' releases) and reporting its failures.
    pub async fn unregister_async(
        &self,
        name: &str,
        options: UnregisterOptions,
    ) -> Result<bool, ToolError> {
        let (found, removed) = self.take(name, options);
        let mut errors = Vec::new();
        for (registry, tool) in removed {
            errors.extend(registry.teardown(tool).await);
        }
        ToolError::aggregate(errors).map_or(Ok(found), Err)
    }

    /// Takes registrations back per `options`; returns whether any was found and the
    /// tools physically removed (with their registry), for teardown.
    fn take(&self, name: &str, options: UnregisterOptions) -> (bool, Vec<(Registry, ToolRef)>) {
        let mut found = false;
        let mut removed = Vec::new();
        let mut registry = Some(self);
        while let Some(current) = registry {
            if let Some(tool) = current.take_local(name, options.force, &mut found) {
                removed.push((current.clone(), tool));
            }
            let done = match options.scope {
                UnregisterScope::Local => true,
                UnregisterScope::Inherited => found,
                UnregisterScope::All => false,
            };
            if done {
                break;
            }
            registry = current.parent();
        }
        (found, removed)
    }

    fn take_local(&self, name: &str, force: bool, found: &mut bool) -> Option<ToolRef> {
        let slot = {
            let mut state = self.write();
            let canonical = state.canonical(name)?;
            *found = true;
            let slot = state.tools.get_mut(&canonical)?;
            slot.refs = if force {
                0
            } else {
                slot.refs.saturating_sub(1)
            };
            if slot.refs > 0 {
                return None;
            }
            state.remove(&canonical)?
        };
        self.emit(RegistryEvent::Removed {
            name: slot.tool.name().to_owned(),
            replaced: false,
        });
        Some(slot.tool)
    }

    /// A view derived from the tools (reachable here), made by `make` and kept under
    /// `key` until any registry changes. Keys are typed: each reader names its view
    /// with a value of its own key type, so two readers never share a slot by
    /// accident.
    pub(crate) fn derived<K, V>(
        &self,
        key: K,
        make: impl FnOnce() -> Result<V, ToolError>,
    ) -> Result<V, ToolError>
    where
        K: PartialEq + Send + Sync + 'static,
        V: Clone + Send + Sync + 'static,
    {
        let generation = generation();
        let lock = || {
            self.inner
                .derived
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        {
            let kept = lock();
            let value = kept
                .iter()
                .filter(|d| d.generation == generation)
                .find_map(|d| d.value_for::<K, V>(&key));
            if let Some(value) = value {
                return Ok(value.clone());
            }
        }
        let value = make()?;
        let mut kept = lock();
        kept.retain(|d| !d.is_for(&key));
        kept.push(Derived {
            key: Box::new(key),
            generation,
            value: Box::new(value.clone()),
        });
        Ok(value)
    }

    /// How many lookups by name (and alias) this registry was asked for since it was
    /// made: a debug-build counter, `None` in release builds (where nothing counts,
    /// so the run path stays as it is measured).
    #[doc(hidden)]
    pub fn lookups(&self) -> Option<u64> {
        #[cfg(debug_assertions)]
        {
            Some(self.inner.lookups.load(Ordering::Relaxed))
        }
        #[cfg(not(debug_assertions))]
        {
            None
        }
    }

    /// Counts a lookup (debug builds).
    #[inline]
    fn counted(&self) {
        #[cfg(debug_assertions)]
        self.inner.lookups.fetch_add(1, Ordering::Relaxed);
    }

    /// Subscribes to the registry's events: tools added, removed (a replacement is a
    /// removal then an addition) and cleared; calls started and finished, with the
    /// tool, call id, duration and status. Events of calls made through this registry
    /// (or a runner of it) reach its subscribers.
    ///
    /// The buffer is bounded: a subscriber that falls behind never slows calls down;
    /// it receives [`SubscriptionError::Lagged`] and then the newest events.
    pub fn subscribe(&self) -> Subscription {
        Subscription::new(
            channel(&self.inner.events).subscribe(),
            &self.inner.subscribers,
        )
    }

    /// Subscribes to the catalogue's changes only: tools added, removed and
    /// cleared, prompts and resources changed and resources updated, as
    /// [`subscribe`](Self::subscribe) tells them. Calls pay nothing for
    /// such a subscriber (no call events are made for it, and it is not woken by
    /// calls), so a long-lived watcher of the catalog (an MCP session, a NATS
    /// worker) should take this one.
    pub fn subscribe_tool_changes(&self) -> Subscription {
        Subscription::new(
            channel(&self.inner.changes).subscribe(),
            &self.inner.change_subscribers,
        )
    }

    pub(crate) fn has_subscribers(&self) -> bool {
        self.inner.subscribers.load(Ordering::Relaxed) > 0
    }

    pub(crate) fn emit(&self, event: RegistryEvent) {
        let change = matches!(
            event,
            RegistryEvent::Added { .. }
                | RegistryEvent::Removed { .. }
                | RegistryEvent::Cleared
                | RegistryEvent::PromptsChanged
                | RegistryEvent::ResourcesChanged
                | RegistryEvent::ResourceUpdated { .. }
        );
        if change
            && self.inner.change_subscribers.load(Ordering::Relaxed) > 0
            && let Some(changes) = self.inner.changes.get()
        {
            let _ = changes.send(event.clone());
        }
        if self.has_subscribers()
            && let Some(events) = self.inner.events.get()
        {
            // No receiver left between the check and the send is fine: nobody to tell.
            let _ = events.send(event);
        }
    }
}

impl Registry {
    /// Registers a `#[tool_service]` value (by value or as an `Arc`) as one tool.
    ///
    /// Services whose type is `Default` are in [`Registry::global`](crate::Registry::global)
    /// already; this is for services built with state, and for other registries.
    ///
    /// Its `#[prompt]` and `#[resource]` methods are registered with it, over the
    /// same value: all of them or, when one clashes with a prompt or resource here
    /// (`CONFLICT`), none, and not the tool either.
    pub fn register_service<S: crate::tool::service::ToolService>(
        &self,
        service: impl Into<Arc<S>>,
    ) -> Result<bool, ToolError> {
        let parts = ServiceParts::of(service)?;
        let made = parts
            .kinds
            .into_iter()
            .map(prompts_resources::Made::of)
            .collect::<Result<Vec<_>, _>>()?;
        let names: Vec<(bool, String)> = made
            .iter()
            .map(|one| match one {
                prompts_resources::Made::Prompt(p) => (true, p.name().to_owned()),
                prompts_resources::Made::Resource(r) => (false, r.address().to_owned()),
            })
            .collect();
        self.register_made(made)?;
        self.register(parts.tool)
            .inspect_err(|_| self.unregister_made(&names))
    }
}

/// The write lock of a registry's table; releasing it publishes the table's size.
struct Write<'a> {
    guard: RwLockWriteGuard<'a, State>,
    len: &'a AtomicUsize,
}

impl std::ops::Deref for Write<'_> {
    type Target = State;

    fn deref(&self) -> &State {
        &self.guard
    }
}

impl std::ops::DerefMut for Write<'_> {
    fn deref_mut(&mut self) -> &mut State {
        &mut self.guard
    }
}

impl Drop for Write<'_> {
    fn drop(&mut self) {
        self.len.store(self.guard.tools.len(), Ordering::Release);
        cache::invalidate();
    }
}

/// A per-thread memory of the last tool found by its name in a program-long registry
/// (the global one): the next call of the same tool skips the lock and the hash.
/// Any change to any registry forgets every thread's memory.
mod cache {
    use std::cell::Cell;
    use std::sync::atomic::{AtomicU64, Ordering};

    use super::Inner;
    use crate::tool::ToolFunc;

    static GENERATION: AtomicU64 = AtomicU64::new(0);

    #[derive(Clone, Copy)]
    struct Entry {
        registry: &'static Inner,
        tool: &'static ToolFunc,
        generation: u64,
    }

    thread_local! {
        static LAST: Cell<Option<Entry>> = const { Cell::new(None) };
    }

    #[inline]
    pub(super) fn hit(registry: &'static Inner, name: &str) -> Option<&'static ToolFunc> {
        let entry = LAST.with(Cell::get)?;
        (std::ptr::eq(entry.registry, registry)
            && entry.tool.name() == name
            && entry.generation == GENERATION.load(Ordering::Acquire))
        .then_some(entry.tool)
    }

    pub(super) fn store(registry: &'static Inner, tool: &'static ToolFunc) {
        let generation = GENERATION.load(Ordering::Acquire);
        LAST.with(|last| {
            last.set(Some(Entry {
                registry,
                tool,
                generation,
            }));
        });
    }

    pub(super) fn invalidate() {
        GENERATION.fetch_add(1, Ordering::AcqRel);
    }

    /// Bumped by every change to any registry.
    pub(crate) fn generation() -> u64 {
        GENERATION.load(Ordering::Acquire)
    }
}

/// One derived view: its typed key, the generation it was made at, its value.
struct Derived {
    key: Box<dyn std::any::Any + Send + Sync>,
    generation: u64,
    value: Box<dyn std::any::Any + Send + Sync>,
}

impl Derived {
    fn is_for<K: PartialEq + 'static>(&self, key: &K) -> bool {
        self.key.downcast_ref::<K>() == Some(key)
    }

    fn value_for<K: PartialEq + 'static, V: 'static>(&self, key: &K) -> Option<&V> {
        if self.is_for(key) {
            self.value.downcast_ref::<V>()
        } else {
            None
        }
    }
}

enum Placed {
    New,
    Counted,
    Replaced { old: ToolRef, held: usize },
}

/// A handle to the same registry (a cheap clone), so that what takes
/// `impl Into<Registry>` takes `Registry::global()` or `&registry` as it is.
///
/// ```
/// use toolfunc::Registry;
///
/// fn serve(registry: impl Into<Registry>) -> Registry {
///     registry.into()
/// }
///
/// let registry = Registry::new();
/// assert!(serve(&registry).ptr_eq(&registry));
/// assert!(serve(Registry::global()).ptr_eq(Registry::global()));
/// ```
impl From<&Registry> for Registry {
    fn from(registry: &Registry) -> Self {
        registry.clone()
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names())
            .field("sealed", &self.is_sealed())
            .field("isolated", &self.parent().is_some())
            .finish()
    }
}
