//! Work a call leaves behind when it ends (an asynchronous cleanup, telling a
//! server that a dropped call is cancelled): run apart from its caller, on the
//! current tokio runtime, or on `wasm32-unknown-unknown` on the page's own event
//! loop, which needs no runtime.

use std::future::Future;

/// Runs `work` to its end apart from its caller; `false` when nothing can run it
/// (no tokio runtime on a target that needs one).
pub(crate) fn detach(work: impl Future<Output = ()> + Send + 'static) -> bool {
    #[cfg(all(target_arch = "wasm32", target_os = "unknown"))]
    {
        wasm_bindgen_futures::spawn_local(work);
        true
    }
    #[cfg(not(all(target_arch = "wasm32", target_os = "unknown")))]
    {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return false;
        };
        runtime.spawn(work);
        true
    }
}
