//! What a registry holds of its tools: the slots by canonical name and alias, and
//! the write guard that tells the derived views and subscribers of a change.

use std::collections::HashMap;
use std::sync::RwLockWriteGuard;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::lifecycle::Ready;
use super::{cache, search};
use crate::tool::ToolFunc;
use crate::tool::ToolRef;

/// Tool names are chosen by the program, not by callers: a caller can only look names
/// up, never insert them, so a fast non-keyed hash is safe here.
pub(super) type Map<V> = HashMap<String, V, rustc_hash::FxBuildHasher>;

#[derive(Default)]
pub(super) struct State {
    pub(super) tools: Map<Slot>,
    /// alias → name of the tool that owns it.
    pub(super) aliases: Map<String>,
    /// The words of the tools here, made on the first search and then changed with
    /// `tools` (see [`search`]).
    pub(super) index: Option<search::Index>,
}

pub(super) struct Slot {
    pub(super) tool: ToolRef,
    /// How many registrations hold this tool; it is removed when this reaches zero.
    pub(super) refs: usize,
    /// The tool's asynchronous setup, while (and after) it runs.
    pub(super) ready: Option<Ready>,
}

impl State {
    pub(super) fn slot(&self, name: &str) -> Option<&Slot> {
        match self.tools.get(name) {
            Some(slot) => Some(slot),
            None => self
                .aliases
                .get(name)
                .and_then(|owner| self.tools.get(owner)),
        }
    }

    /// The name of the tool `name` refers to here (itself or the owner of an alias).
    pub(super) fn canonical(&self, name: &str) -> Option<String> {
        if self.tools.contains_key(name) {
            return Some(name.to_owned());
        }
        self.aliases.get(name).cloned()
    }

    /// Why `tool` cannot be added (its name or an alias already names something else).
    /// `replacing` is the name of a tool being replaced, whose names do not count.
    pub(super) fn conflict(&self, tool: &ToolFunc, replacing: Option<&str>) -> Option<String> {
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

    pub(super) fn insert(&mut self, tool: ToolRef, refs: usize, ready: Option<Ready>) {
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

    pub(super) fn remove(&mut self, name: &str) -> Option<Slot> {
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

/// The write lock of a registry's table; releasing it publishes the table's size.
pub(super) struct Write<'a> {
    pub(super) guard: RwLockWriteGuard<'a, State>,
    pub(super) len: &'a AtomicUsize,
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
