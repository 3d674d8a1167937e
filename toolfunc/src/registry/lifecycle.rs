//! Tool lifecycle in a registry: `setup` when a tool is placed (pending while an async
//! setup runs), `dispose` when it is physically removed (then its dependency instances
//! are released, last declared first), readiness, and `clear`.

use std::collections::HashMap;

use futures::FutureExt;
use futures::future::BoxFuture;

use super::{Registry, RegistryEvent, UnregisterOptions};
use crate::error::ToolError;
use crate::tool::{DependencyTarget, ToolRef};

pub(crate) use crate::tool::Ready;

impl Registry {
    /// Runs the setup of the tool just placed under `name`. A setup that finishes at
    /// once decides the registration (an error takes the tool out again); one that
    /// does not leaves the tool pending, with its setup running on the tokio runtime
    /// (or driven by the first caller that waits for it).
    pub(super) fn finish_setup(&self, name: &str) -> Result<(), ToolError> {
        let Some(tool) = self
            .tools_read()
            .tools
            .get(name)
            .map(|slot| slot.tool.clone())
        else {
            return Ok(());
        };
        let Some(setup) = tool.setup.clone() else {
            return Ok(());
        };
        let mut running = setup();
        match (&mut running).now_or_never() {
            Some(Ok(())) => Ok(()),
            Some(Err(err)) => {
                self.undo(name, &tool);
                Err(err)
            }
            None => {
                let ready = running.shared();
                if let Some(slot) = self.write().tools.get_mut(name) {
                    slot.ready = Some(ready.clone());
                }
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(ready.map(drop));
                }
                Ok(())
            }
        }
    }

    /// Runs `tool`'s setup before the tool is placed, so no caller can reach it
    /// first. A setup that finishes at once decides the registration (an error
    /// refuses it while the name keeps what it had); one still running is returned
    /// for the slot to hold: calls wait for it.
    pub(super) fn start_setup(tool: &ToolRef) -> Result<Option<Ready>, ToolError> {
        let Some(setup) = tool.setup.clone() else {
            return Ok(None);
        };
        let mut running = setup();
        match (&mut running).now_or_never() {
            Some(done) => done.map(|()| None),
            None => Ok(Some(running.shared())),
        }
    }

    /// Drives a pending setup on the tokio runtime (without one, the first caller
    /// that waits for it drives it).
    pub(super) fn drive_setup(ready: &Ready) {
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(ready.clone().map(drop));
        }
    }

    /// Undoes the setup of a tool that did not go in after all (another registration
    /// of its name won the race): its `dispose` alone, logged.
    pub(super) fn dispose_unplaced(tool: &ToolRef) {
        let Some(dispose) = tool.dispose.clone() else {
            return;
        };
        let name = tool.name().to_owned();
        let mut running = dispose();
        match (&mut running).now_or_never() {
            Some(done) => log_teardown(&name, &done.err().into_iter().collect::<Vec<_>>()),
            None => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move {
                        log_teardown(&name, &running.await.err().into_iter().collect::<Vec<_>>());
                    });
                }
            }
        }
    }

    /// Takes out a tool whose setup failed (never announced), with the dependencies it
    /// brought in.
    fn undo(&self, name: &str, tool: &ToolRef) {
        self.write().remove(name);
        for dependency in tool.depends.iter().rev() {
            if let DependencyTarget::Tool(target) = &dependency.target {
                self.unregister(target.name());
            }
        }
    }

    /// Starts the teardown of a removed tool: finished at once for sync hooks, else
    /// run on the tokio runtime. Failures are logged (use the async entry points to
    /// receive them).
    pub(super) fn start_teardown(&self, tool: ToolRef) {
        let name = tool.name().to_owned();
        let mut teardown = self.teardown(tool);
        match (&mut teardown).now_or_never() {
            Some(errors) => log_teardown(&name, &errors),
            None => {
                if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                    runtime.spawn(async move { log_teardown(&name, &teardown.await) });
                } else {
                    tracing::warn!(
                        tool = %name,
                        "an asynchronous dispose needs a tokio runtime; it did not run"
                    );
                }
            }
        }
    }

    /// Disposes a removed tool, then releases the tool instances it depends on, last
    /// declared first (a dependency outlives what uses it). Returns every failure.
    pub(super) fn teardown(&self, tool: ToolRef) -> BoxFuture<'static, Vec<ToolError>> {
        let registry = self.clone();
        Box::pin(async move {
            let mut errors = Vec::new();
            if let Some(dispose) = &tool.dispose
                && let Err(err) = dispose().await
            {
                errors.push(err);
            }
            for dependency in tool.depends.iter().rev() {
                if let DependencyTarget::Tool(target) = &dependency.target {
                    let (_, removed) = registry.take(target.name(), UnregisterOptions::new());
                    for (owner, tool) in removed {
                        errors.extend(owner.teardown(tool).await);
                    }
                }
            }
            errors
        })
    }

    /// Removes every tool of this registry (not its parents'), disposing dependents
    /// before the tools they depend on, and reports every failure together
    /// (`AGGREGATE` when there are several). Subscribers see `Removed` for each tool,
    /// then `Cleared`.
    pub async fn clear(&self) -> Result<(), ToolError> {
        let tools: Vec<ToolRef> = {
            let mut state = self.write();
            state.aliases.clear();
            // Emptied, not dropped: a search that made it counts on finding it.
            if let Some(index) = &mut state.index {
                *index = super::search::Index::default();
            }
            state.tools.drain().map(|(_, slot)| slot.tool).collect()
        };
        for tool in &tools {
            self.emit(RegistryEvent::Removed {
                name: tool.name().to_owned(),
                replaced: false,
            });
        }
        self.emit(RegistryEvent::Cleared);
        let mut errors = Vec::new();
        for tool in teardown_order(tools) {
            if let Some(dispose) = &tool.dispose
                && let Err(err) = dispose().await
            {
                errors.push(err);
            }
        }
        ToolError::aggregate(errors).map_or(Ok(()), Err)
    }

    /// Waits until the tool `name` is ready: its asynchronous setup has finished.
    /// Returns the setup's error if it failed, `NOT_FOUND` for an unknown tool.
    pub async fn ready(&self, name: &str) -> Result<(), ToolError> {
        let found = self
            .resolve(name)
            .ok_or_else(|| crate::tool::service::not_found(name))?;
        match found.ready {
            Some(ready) => ready.await,
            None => Ok(()),
        }
    }

    /// Waits until every tool reachable here is ready; reports every failed setup.
    pub async fn all_ready(&self) -> Result<(), ToolError> {
        let pending: Vec<Ready> = self
            .names()
            .iter()
            .filter_map(|name| self.resolve(name)?.ready)
            .collect();
        let errors = futures::future::join_all(pending)
            .await
            .into_iter()
            .filter_map(Result::err)
            .collect();
        ToolError::aggregate(errors).map_or(Ok(()), Err)
    }
}

fn log_teardown(name: &str, errors: &[ToolError]) {
    for err in errors {
        tracing::error!(tool = %name, error = %err, "tool teardown failed");
    }
}

/// Dependents before their dependencies (by name, among `tools`); the rest of a cycle
/// in any order.
fn teardown_order(tools: Vec<ToolRef>) -> Vec<ToolRef> {
    let mut dependents: HashMap<String, usize> =
        tools.iter().map(|t| (t.name().to_owned(), 0)).collect();
    for tool in &tools {
        for dependency in &tool.depends {
            if let Some(count) = dependents.get_mut(dependency.name()) {
                *count += 1;
            }
        }
    }
    let mut left = tools;
    let mut order = Vec::with_capacity(left.len());
    while !left.is_empty() {
        let next = left
            .iter()
            .position(|t| dependents.get(t.name()).copied().unwrap_or(0) == 0)
            // A cycle: take any.
            .unwrap_or(0);
        let tool = left.remove(next);
        for dependency in &tool.depends {
            if let Some(count) = dependents.get_mut(dependency.name()) {
                *count = count.saturating_sub(1);
            }
        }
        order.push(tool);
    }
    order
}
