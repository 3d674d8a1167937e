//! Registering and unregistering: a tool placed in a registry (counted, with its
//! aliases and dependencies, under the conflict rules), a service with its prompts
//! and resources, and the way back out.

use std::sync::Arc;

use super::Registry;
use super::events::RegistryEvent;
use super::lifecycle::Ready;
use super::options::{RegisterOptions, UnregisterOptions, UnregisterScope};
use super::prompts_resources;
use crate::error::ToolError;
use crate::tool::service::ServiceParts;
use crate::tool::{DependencyTarget, ToolRef};

impl Registry {
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
    pub(super) fn take(
        &self,
        name: &str,
        options: UnregisterOptions,
    ) -> (bool, Vec<(Registry, ToolRef)>) {
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

/// How a registration placed its tool.
enum Placed {
    New,
    Counted,
    Replaced { old: ToolRef, held: usize },
}
