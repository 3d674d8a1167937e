//! Heap held by calls in flight: many calls of an async tool that waits, each polled
//! once (so it is running), and the bytes the allocator holds for them divided by
//! their number. A counting allocator wraps the system one; nothing is timed.
//!
//! `cargo bench --bench heap` prints the figure for a plain `run` (the returned
//! future, boxed as a caller that keeps many in flight would hold it) and for a
//! `spawn`ed call.

#[path = "../tests/support/counting.rs"]
mod counting;

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};

use serde_json::json;
use toolfunc::{Registry, tool};

#[global_allocator]
static ALLOCATOR: counting::Counting = counting::Counting;

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

    let before = counting::held();
    let mut running: Vec<Pin<Box<dyn Future<Output = _> + Send + '_>>> = Vec::with_capacity(CALLS);
    let vector = counting::held() - before;
    for _ in 0..CALLS {
        let mut call: Pin<Box<dyn Future<Output = _> + Send>> =
            Box::pin(registry.run("wait", json!({})));
        assert!(matches!(call.as_mut().poll(&mut cx), Poll::Pending));
        running.push(call);
    }
    let held = counting::held() - before - vector;
    println!(
        "run: {} B of heap per call in flight ({CALLS} calls, each future boxed)",
        held / CALLS.cast_signed()
    );
    drop(running);

    let before = counting::held();
    let handles: Vec<_> = runtime.block_on(async {
        let handles: Vec<_> = (0..CALLS)
            .map(|_| registry.spawn("wait", json!({})))
            .collect();
        tokio::task::yield_now().await;
        handles
    });
    let held = counting::held() - before;
    println!(
        "spawn: {} B of heap per call in flight ({CALLS} calls, handles included)",
        held / CALLS.cast_signed()
    );
    for handle in &handles {
        handle.abort("done measuring");
    }
}
