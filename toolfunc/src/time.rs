//! The clock calls read: the standard library's `Instant` where the target has a
//! monotonic clock, the page's (`performance.now()`, through `web-time`) on
//! `wasm32-unknown-unknown`, where the standard library's panics.

#[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
pub(crate) use std::time::Instant;
#[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
pub(crate) use web_time::Instant;
