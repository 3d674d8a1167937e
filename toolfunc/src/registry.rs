//! `Registry`: tools by name and alias, the global registry filled by `#[tool]`, and
//! running tools by name.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, OnceLock, PoisonError, RwLock, RwLockReadGuard, RwLockWriteGuard};

use serde_json::Value;

use crate::ctx::Scope;
use crate::stream::ToolStream;
use crate::task::{Call, CallHandle};
use crate::tool::{Started, ToolRef, ToolSpec};
use crate::{CallOptions, Ctx, ToolCall, ToolDefinition, ToolError, ToolFunc, ToolResult};

/// A set of tools, each reachable by its name and its aliases.
///
/// `Registry` is a cheap handle (`Clone` shares the same tools). Use
/// [`Registry::global`] for the tools declared with `#[tool]` anywhere in the program,
/// or [`Registry::new`] for an empty one.
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
#[derive(Clone, Default)]
pub struct Registry {
    inner: Handle,
}

/// The shared state of a registry. The global registry lives for the whole program,
/// so its handle is a plain reference: cloning it (once per call, into the `Ctx`)
/// costs no atomic operation.
#[derive(Clone)]
enum Handle {
    Static(&'static RwLock<State>),
    Shared(Arc<RwLock<State>>),
}

impl Default for Handle {
    fn default() -> Self {
        Self::Shared(Arc::default())
    }
}

impl std::ops::Deref for Handle {
    type Target = RwLock<State>;

    fn deref(&self) -> &Self::Target {
        match self {
            Self::Static(state) => state,
            Self::Shared(state) => state,
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
}

struct Slot {
    tool: ToolRef,
    /// How many registrations hold this tool; it is removed when this reaches zero.
    refs: usize,
}

impl State {
    fn lookup(&self, name: &str) -> Option<&ToolRef> {
        match self.tools.get(name) {
            Some(slot) => Some(&slot.tool),
            None => self
                .aliases
                .get(name)
                .and_then(|owner| self.tools.get(owner))
                .map(|slot| &slot.tool),
        }
    }

    /// Why `tool` cannot be added (its name or an alias already names something else).
    fn conflict(&self, tool: &ToolFunc) -> Option<String> {
        let name = tool.name();
        if let Some(owner) = self.aliases.get(name) {
            return Some(format!(
                "tool name `{name}` is already an alias of `{owner}`"
            ));
        }
        for alias in &tool.definition().alias {
            if alias == name {
                continue;
            }
            if self.tools.contains_key(alias) {
                return Some(format!(
                    "alias `{alias}` of `{name}` is already the name of a tool"
                ));
            }
            if let Some(owner) = self.aliases.get(alias)
                && owner != name
            {
                return Some(format!(
                    "alias `{alias}` of `{name}` is already an alias of `{owner}`"
                ));
            }
        }
        None
    }

    fn insert(&mut self, tool: ToolRef) {
        for alias in &tool.definition().alias {
            if alias != tool.name() {
                self.aliases.insert(alias.clone(), tool.name().to_owned());
            }
        }
        self.tools
            .insert(tool.name().to_owned(), Slot { tool, refs: 1 });
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
    /// When two `#[tool]`s share a name or alias, or a tool's definition is invalid:
    /// the message lists every such problem with the source location of each tool.
    /// Use [`Registry::try_global`] to handle that as an error instead.
    pub fn global() -> &'static Registry {
        match Self::try_global() {
            Ok(registry) => registry,
            Err(err) => panic!("toolfunc: the global registry cannot be built: {err}"),
        }
    }

    /// The global registry, or the error that prevents building it (`CONFLICT` for
    /// duplicate names or aliases, `DEFINITION` for an invalid tool).
    pub fn try_global() -> Result<&'static Registry, ToolError> {
        GLOBAL
            .get_or_init(Self::from_inventory)
            .as_ref()
            .map_err(Clone::clone)
    }

    fn from_inventory() -> Result<Registry, ToolError> {
        let registry = Registry::new();
        let mut problems = Vec::new();
        let mut conflict = false;
        let mut origin: HashMap<&str, &str> = HashMap::new();
        for spec in inventory::iter::<ToolSpec> {
            let tool = match spec.build() {
                Ok(tool) => tool,
                Err(err) => {
                    problems.push(format!("{err} (at {})", spec.location));
                    continue;
                }
            };
            let mut state = registry.write();
            if let Some(first) = state.tools.get(tool.name()) {
                conflict = true;
                let first_at = origin.get(first.tool.name()).copied().unwrap_or("?");
                problems.push(format!(
                    "two tools are named `{}`: at {first_at} and at {}",
                    tool.name(),
                    spec.location
                ));
            } else if let Some(why) = state.conflict(&tool) {
                conflict = true;
                problems.push(format!("{why} (at {})", spec.location));
            } else {
                origin.insert(spec.name, spec.location);
                // Collected at link time, these live as long as the program.
                state.insert(ToolRef::leaked(tool));
            }
        }
        if problems.is_empty() {
            let state = std::mem::take(&mut *registry.write());
            return Ok(Registry {
                inner: Handle::Static(Box::leak(Box::new(RwLock::new(state)))),
            });
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

    fn read(&self) -> RwLockReadGuard<'_, State> {
        // No user code runs under the lock, so a poisoned lock still holds a consistent map.
        self.inner.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn write(&self) -> RwLockWriteGuard<'_, State> {
        self.inner.write().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a tool. Returns `Ok(true)` when it is new, `Ok(false)` when a tool of
    /// that name was already registered: the existing tool is kept and its
    /// registration count goes up (each [`unregister`](Self::unregister) takes one
    /// back). Fails with `CONFLICT` when the name or an alias is already used by
    /// another tool's alias or name.
    pub fn register(&self, tool: ToolFunc) -> Result<bool, ToolError> {
        let mut state = self.write();
        if let Some(slot) = state.tools.get_mut(tool.name()) {
            slot.refs += 1;
            return Ok(false);
        }
        if let Some(why) = state.conflict(&tool) {
            return Err(ToolError::conflict(why));
        }
        state.insert(ToolRef::shared(tool));
        Ok(true)
    }

    /// Takes back one registration of the tool named `name` (or an alias of it); the
    /// tool is removed when none is left. Returns `false` when no such tool exists.
    pub fn unregister(&self, name: &str) -> bool {
        let mut state = self.write();
        let owner = match state.aliases.get(name) {
            Some(owner) => owner.clone(),
            None => name.to_owned(),
        };
        let Entry::Occupied(mut slot) = state.tools.entry(owner) else {
            return false;
        };
        slot.get_mut().refs -= 1;
        if slot.get().refs == 0 {
            let tool = slot.remove().tool;
            for alias in &tool.definition().alias {
                state.aliases.remove(alias);
            }
        }
        true
    }

    /// The tool named `name`, by name or alias.
    pub fn get(&self, name: &str) -> Option<ToolRef> {
        self.read().lookup(name).cloned()
    }

    /// Whether a tool is reachable by `name` (a name or an alias).
    pub fn has(&self, name: &str) -> bool {
        self.read().lookup(name).is_some()
    }

    /// The names of all tools, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = self.read().tools.keys().cloned().collect();
        names.sort_unstable();
        names
    }

    /// The definitions of all tools as advertised to a caller (an authored `summary`
    /// replaces the description), sorted by name. The full definition of one tool is
    /// `registry.get(name)?.definition()`.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        let state = self.read();
        let mut defs: Vec<ToolDefinition> = state
            .tools
            .values()
            .map(|slot| slot.tool.definition().advertised())
            .collect();
        drop(state);
        defs.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        defs
    }

    /// A runner whose calls all carry `options`: typed extensions, caller identity,
    /// timeout, cancellation tokens, progress listener. Runners chain with
    /// [`Runner::with`].
    ///
    /// ```rust,standalone_crate
    /// use std::time::Duration;
    /// use toolfunc::{tool, CallOptions, Ctx, Registry};
    ///
    /// /// Reports who called.
    /// #[tool]
    /// fn who(ctx: &Ctx) -> String {
    ///     ctx.caller().unwrap_or("anonymous").to_owned()
    /// }
    ///
    /// let billing = Registry::global().with(CallOptions::new().caller("billing"));
    /// assert_eq!(billing.run_sync("who", serde_json::json!({})).unwrap(), "billing");
    /// let strict = billing.with(CallOptions::new().timeout(Duration::from_secs(1)));
    /// assert_eq!(strict.run_sync("who", serde_json::json!({})).unwrap(), "billing");
    /// ```
    pub fn with(&self, options: CallOptions) -> Runner {
        Runner::new(self.clone(), Scope::default().with(options))
    }

    fn calls(&self) -> Calls<'_> {
        Calls {
            registry: self,
            scope: &NO_SCOPE,
        }
    }

    /// Runs a tool by name or alias with an arguments object.
    ///
    /// The arguments are checked before the handler runs (`ARGUMENTS`, with the JSON
    /// Pointer of the failing value); a handler error is `FAILED` (or the handler's
    /// own `ToolError`), and a panic is `PANICKED`. A streaming tool's items are
    /// collected into an array. Dropping the returned future cancels the call and runs
    /// its cleanups.
    pub fn run<'a>(
        &'a self,
        name: &'a str,
        args: Value,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send + 'a {
        self.calls().run(name, args)
    }

    /// Runs a sync tool on the calling thread. An async or streaming tool gives
    /// `ASYNC_ONLY`.
    pub fn run_sync(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        self.calls().run_sync(name, args)
    }

    /// Runs a tool with positional arguments, mapped onto its parameters in
    /// declaration order (see [`ToolBuilder::param_order`](crate::ToolBuilder::param_order)).
    pub fn run_with_pos<'a>(
        &'a self,
        name: &'a str,
        args: Vec<Value>,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send + 'a {
        self.calls().run_with_pos(name, args)
    }

    /// Runs a sync tool with positional arguments on the calling thread.
    pub fn run_with_pos_sync(&self, name: &str, args: Vec<Value>) -> Result<Value, ToolError> {
        self.calls().run_with_pos_sync(name, args)
    }

    /// Runs a tool as a stream of results: a streaming tool's items one by one, any
    /// other tool's single result. See [`ToolStream`].
    pub fn run_stream(&self, name: &str, args: Value) -> ToolStream {
        self.calls().run_stream(name, args)
    }

    /// Starts a call on the tokio runtime and returns its handle: await it for the
    /// result, or [`abort`](CallHandle::abort) it. Outside a tokio runtime the handle
    /// resolves to a `FAILED` error.
    pub fn spawn(&self, name: &str, args: Value) -> CallHandle {
        self.calls().spawn(name, args)
    }

    /// Executes one call; any failure is in the result, never returned as an error.
    pub fn execute(&self, call: ToolCall) -> impl Future<Output = ToolResult> + Send + '_ {
        self.calls().execute(call)
    }

    /// Executes calls concurrently and returns their results in input order. One
    /// failing call never fails the batch.
    pub async fn execute_batch(
        &self,
        calls: impl IntoIterator<Item = ToolCall>,
    ) -> Vec<ToolResult> {
        self.calls().execute_batch(calls).await
    }
}

static NO_SCOPE: Scope = Scope::none();

/// Runs tools of a registry with a context: made by [`Registry::with`] or
/// [`Ctx::with`], it offers the registry's run methods, and every call it makes
/// carries its [`CallOptions`].
#[derive(Clone)]
pub struct Runner {
    registry: Registry,
    scope: Scope,
}

impl fmt::Debug for Runner {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Runner").finish_non_exhaustive()
    }
}

impl Runner {
    pub(crate) fn new(registry: Registry, scope: Scope) -> Self {
        Self { registry, scope }
    }

    fn calls(&self) -> Calls<'_> {
        Calls {
            registry: &self.registry,
            scope: &self.scope,
        }
    }

    /// A runner with `options` added on top of this one's (they win where both set
    /// something; timeouts take the shorter; cancellation tokens add up).
    #[must_use]
    pub fn with(&self, options: CallOptions) -> Runner {
        Runner::new(self.registry.clone(), self.scope.with(options))
    }

    /// The registry this runner calls into.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// [`Registry::run`] with this runner's context.
    pub fn run<'a>(
        &'a self,
        name: &'a str,
        args: Value,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send + 'a {
        self.calls().run(name, args)
    }

    /// [`Registry::run_sync`] with this runner's context.
    pub fn run_sync(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        self.calls().run_sync(name, args)
    }

    /// [`Registry::run_with_pos`] with this runner's context.
    pub fn run_with_pos<'a>(
        &'a self,
        name: &'a str,
        args: Vec<Value>,
    ) -> impl Future<Output = Result<Value, ToolError>> + Send + 'a {
        self.calls().run_with_pos(name, args)
    }

    /// [`Registry::run_with_pos_sync`] with this runner's context.
    pub fn run_with_pos_sync(&self, name: &str, args: Vec<Value>) -> Result<Value, ToolError> {
        self.calls().run_with_pos_sync(name, args)
    }

    /// [`Registry::run_stream`] with this runner's context.
    pub fn run_stream(&self, name: &str, args: Value) -> ToolStream {
        self.calls().run_stream(name, args)
    }

    /// [`Registry::spawn`] with this runner's context.
    pub fn spawn(&self, name: &str, args: Value) -> CallHandle {
        self.calls().spawn(name, args)
    }

    /// [`Registry::execute`] with this runner's context.
    pub fn execute(&self, call: ToolCall) -> impl Future<Output = ToolResult> + Send + '_ {
        self.calls().execute(call)
    }

    /// [`Registry::execute_batch`] with this runner's context.
    pub async fn execute_batch(
        &self,
        calls: impl IntoIterator<Item = ToolCall>,
    ) -> Vec<ToolResult> {
        self.calls().execute_batch(calls).await
    }
}

/// The run methods, written once for a registry with or without a context.
#[derive(Clone, Copy)]
struct Calls<'a> {
    registry: &'a Registry,
    scope: &'a Scope,
}

impl Calls<'_> {
    /// The context of a call of `name`; `None` when no tool has that name (the
    /// caller makes the error, which keeps this return small and cheap to move).
    fn ctx(self, name: &str, call_id: Option<Arc<str>>) -> Option<Ctx> {
        let tool = self.registry.get(name)?;
        Some(Ctx::new(
            self.registry.clone(),
            tool,
            call_id,
            self.scope.clone(),
        ))
    }

    async fn run(self, name: &str, args: Value) -> Result<Value, ToolError> {
        let ctx = self
            .ctx(name, None)
            .ok_or_else(|| ToolError::not_found(name))?;
        if !ctx.tool().is_async() {
            // Sync tools finish here, within the first poll, with no call future.
            return ctx.tool().call_sync(&ctx, args);
        }
        // Boxed, so that this future stays small for the sync path above.
        Box::pin(ToolFunc::call(ctx, args)).await
    }

    fn run_sync(self, name: &str, args: Value) -> Result<Value, ToolError> {
        let ctx = self
            .ctx(name, None)
            .ok_or_else(|| ToolError::not_found(name))?;
        ctx.tool().call_sync(&ctx, args)
    }

    async fn run_with_pos(self, name: &str, args: Vec<Value>) -> Result<Value, ToolError> {
        let ctx = self
            .ctx(name, None)
            .ok_or_else(|| ToolError::not_found(name))?;
        let args = ctx.tool().positional_to_named(args)?;
        ToolFunc::call(ctx, args).await
    }

    fn run_with_pos_sync(self, name: &str, args: Vec<Value>) -> Result<Value, ToolError> {
        let ctx = self
            .ctx(name, None)
            .ok_or_else(|| ToolError::not_found(name))?;
        let args = ctx.tool().positional_to_named(args)?;
        ctx.tool().call_sync(&ctx, args)
    }

    fn run_stream(self, name: &str, args: Value) -> ToolStream {
        let Some(ctx) = self.ctx(name, None) else {
            return ToolStream::failed(ToolError::not_found(name));
        };
        let ctx = ctx.streaming();
        if !ctx.tool().is_stream() {
            return ToolStream::single(ToolFunc::call(ctx, args));
        }
        match ToolFunc::start(ctx, args, true, false) {
            Ok(Started::Stream(opening, watch)) => ToolStream::items(opening, watch),
            Ok(Started::Value(drive)) => ToolStream::single(Call::Running(drive)),
            Err(err) => ToolStream::failed(err),
        }
    }

    fn spawn(self, name: &str, args: Value) -> CallHandle {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return CallHandle::failed(ToolError::failed("spawn needs a running tokio runtime"));
        };
        let Some(ctx) = self.ctx(name, None) else {
            return CallHandle::failed(ToolError::not_found(name));
        };
        let state = Arc::clone(ctx.state());
        let join = if ctx.tool().is_async() {
            runtime.spawn(ToolFunc::call_with(ctx, args, true))
        } else {
            // A sync tool may block: keep it off the async workers.
            runtime.spawn_blocking(move || ctx.tool().call_sync(&ctx, args))
        };
        CallHandle::spawned(state, join)
    }

    async fn execute(self, call: ToolCall) -> ToolResult {
        let ToolCall {
            id,
            name,
            arguments,
        } = call;
        let output = match self.ctx(&name, Some(Arc::from(id.as_str()))) {
            Some(ctx) => ToolFunc::call(ctx, arguments).await,
            None => Err(ToolError::not_found(&name)),
        };
        ToolResult::new(id, name, output)
    }

    async fn execute_batch(self, calls: impl IntoIterator<Item = ToolCall>) -> Vec<ToolResult> {
        futures::future::join_all(calls.into_iter().map(|call| self.execute(call))).await
    }
}

impl fmt::Debug for Registry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registry")
            .field("tools", &self.names())
            .finish()
    }
}
