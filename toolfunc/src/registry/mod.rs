//! `Registry`: tools by name and alias, in a chain of registries (a child sees its
//! parent's tools and may shadow them); the global registry filled by `#[tool]`;
//! reference-counted registration with dependencies, overrides, sealing, lifecycle
//! hooks and events.

#[cfg(test)]
mod argument_checks;
mod cache;
mod derived;
mod events;
mod lifecycle;
pub(crate) mod options;
mod prompts_resources;
mod register;
mod search;
mod state;

use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock, PoisonError, RwLock, RwLockReadGuard};

use tokio::sync::broadcast;

#[cfg(feature = "http-server")]
pub(crate) use cache::generation;
use derived::Derived;
pub(crate) use events::Observer;
pub use events::{CallStatus, RegistryEvent, Subscription, SubscriptionError};
pub use options::{RegisterOptions, UnregisterOptions, UnregisterScope};
pub use search::SearchHit;
use state::{State, Write};

use crate::error::ToolError;
use crate::layer::{Layer, Layers};
use crate::tool::ToolDefinition;
use crate::tool::service::ServiceEntry;
use crate::tool::{DependencyTarget, ToolRef, ToolSpec};
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
    #[cfg_attr(
        not(any(feature = "http-server", feature = "mcp")),
        expect(dead_code, reason = "read by the HTTP and MCP servers only")
    )]
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

/// A tool found by name, with the registry that holds it.
pub(crate) struct Resolved {
    pub(crate) tool: ToolRef,
    pub(crate) owner: Registry,
    pub(crate) ready: Option<Ready>,
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
