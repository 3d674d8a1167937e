//! Heap held by calls in flight: many calls of an async tool that waits, each polled
//! once (so it is running), and the bytes the allocator holds for them divided by
//! their number. A counting allocator wraps the system one; nothing is timed.
//!
//! `cargo bench --bench heap` prints the figure for a plain `run` (the returned
//! future, boxed as a caller that keeps many in flight would hold it) and for a
//! `spawn`ed call.

use std::alloc::{GlobalAlloc, Layout, System};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicIsize, Ordering};
use std::task::{Context, Poll, Waker};

use serde_json::json;
use toolfunc::{Registry, tool};

/// Counts the bytes held.
struct Counting;

static HELD: AtomicIsize = AtomicIsize::new(0);

// SAFETY: every call is forwarded to the system allocator unchanged; the counter
// only observes the sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        HELD.fetch_add(layout.size().cast_signed(), Ordering::Relaxed);
        // SAFETY: the caller's layout goes to the system allocator as given.
        unsafe { System.alloc(layout) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        HELD.fetch_sub(layout.size().cast_signed(), Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Waits until it is dropped.
#[tool]
async fn wait() -> u64 {
    std::future::pending::<()>().await;
    0
}

const CALLS: usize = 10_000;

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let registry = Registry::global();
    let args = json!({});
    let mut cx = Context::from_waker(Waker::noop());
    // Warm up: the registry and the runtime's own structures.
    {
        let mut first = Box::pin(registry.run("wait", args.clone()));
        assert!(first.as_mut().poll(&mut cx).is_pending());
    }
    let _entered = runtime.enter();

    let before = HELD.load(Ordering::Relaxed);
    let mut running: Vec<Pin<Box<dyn Future<Output = _> + Send + '_>>> = Vec::with_capacity(CALLS);
    let vector = HELD.load(Ordering::Relaxed) - before;
    for _ in 0..CALLS {
        let mut call: Pin<Box<dyn Future<Output = _> + Send>> =
            Box::pin(registry.run("wait", json!({})));
        assert!(matches!(call.as_mut().poll(&mut cx), Poll::Pending));
        running.push(call);
    }
    let held = HELD.load(Ordering::Relaxed) - before - vector;
    println!(
        "run: {} B of heap per call in flight ({CALLS} calls, each future boxed)",
        held / CALLS.cast_signed()
    );
    drop(running);

    let before = HELD.load(Ordering::Relaxed);
    let handles: Vec<_> = runtime.block_on(async {
        let handles: Vec<_> = (0..CALLS)
            .map(|_| registry.spawn("wait", json!({})))
            .collect();
        tokio::task::yield_now().await;
        handles
    });
    let held = HELD.load(Ordering::Relaxed) - before;
    println!(
        "spawn: {} B of heap per call in flight ({CALLS} calls, handles included)",
        held / CALLS.cast_signed()
    );
    for handle in &handles {
        handle.abort("done measuring");
    }
}
