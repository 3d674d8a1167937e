//! A per-thread memory of the last tool found by its name in a program-long registry
//! (the global one): the next call of the same tool skips the lock and the hash.
//! Any change to any registry forgets every thread's memory.

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
