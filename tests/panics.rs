//! A handler panic is reported once through `tracing`, not by the process's panic
//! hook (whose default prints a backtrace to stderr for every one, which a client
//! could use to flood the log). Panics outside handlers still reach the hook.
//!
//! One test in its own binary: it installs a panic hook, which is process-wide.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use futures::StreamExt;
use serde_json::json;
use toolfunc::{Registry, ToolError, ToolFunc};

#[tokio::test]
async fn handler_panics_do_not_reach_the_panic_hook() {
    let hooked = Arc::new(AtomicUsize::new(0));
    let seen = Arc::clone(&hooked);
    std::panic::set_hook(Box::new(move |_| {
        seen.fetch_add(1, Ordering::SeqCst);
    }));
    let registry = Registry::new();
    registry
        .register(
            ToolFunc::builder("sync_boom")
                .handler_sync(|_, _| panic!("sync boom"))
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("async_boom")
                .handler(|_, _| async { panic!("async boom") })
                .build()
                .unwrap(),
        )
        .unwrap();
    registry
        .register(
            ToolFunc::builder("stream_boom")
                .stream_handler(|_, _| async {
                    Ok(futures::stream::iter(0..3).map(|n| {
                        assert!(n < 2, "stream boom");
                        Ok::<_, ToolError>(json!(n))
                    }))
                })
                .build()
                .unwrap(),
        )
        .unwrap();
    for _ in 0..50 {
        for name in ["sync_boom", "async_boom", "stream_boom"] {
            let err = registry.run(name, json!({})).await.unwrap_err();
            assert_eq!(err.code(), "PANICKED", "{name}");
        }
        let err = registry.run_sync("sync_boom", json!({})).unwrap_err();
        assert_eq!(err.code(), "PANICKED");
    }
    assert_eq!(
        hooked.load(Ordering::SeqCst),
        0,
        "a handler panic reached the hook"
    );
    // A panic anywhere else still does.
    let outside = std::panic::catch_unwind(|| panic!("not in a tool"));
    assert!(outside.is_err());
    assert_eq!(hooked.load(Ordering::SeqCst), 1);
}
