//! A global allocator that counts the heap a process holds, and the most it has
//! held since [`reset_peak`]: what the tests and benches that measure bytes a
//! call, a session or an index holds install with
//! `#[global_allocator] static ALLOCATOR: counting::Counting = counting::Counting;`.

#![allow(dead_code)] // each user reads what it needs

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, Ordering};

/// Forwards to the system allocator and counts the bytes held.
pub(crate) struct Counting;

static HELD: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);

fn grew(by: isize) {
    let held = HELD.fetch_add(by, Ordering::Relaxed) + by;
    PEAK.fetch_max(held, Ordering::Relaxed);
}

// SAFETY: every call is forwarded to the system allocator unchanged; the counters
// only observe the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        grew(layout.size().cast_signed());
        // SAFETY: the caller's layout goes to the system allocator as given.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size().cast_signed(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        grew(new_size.cast_signed() - layout.size().cast_signed());
        // SAFETY: `ptr` came from this allocator with `layout`, as `realloc` requires.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

/// The bytes held now.
pub(crate) fn held() -> isize {
    HELD.load(Ordering::Relaxed)
}

/// Starts a new peak from what is held now.
pub(crate) fn reset_peak() {
    PEAK.store(held(), Ordering::Relaxed);
}

/// The most held since the last [`reset_peak`].
pub(crate) fn peak() -> isize {
    PEAK.load(Ordering::Relaxed)
}
