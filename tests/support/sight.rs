//! A layer that counts how often it is asked whether a caller sees the tool `add`:
//! what the tests that hold each call to one visibility check read.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use toolfunc::ToolDefinition;
use toolfunc::layer::{Call, Layer, Next, ReplyFuture, Viewer};

/// Counts the visibility checks of `add`; lets every call through.
#[derive(Clone, Default)]
pub(crate) struct CountsSight(Arc<AtomicUsize>);

impl CountsSight {
    /// The checks since the last `take`, and the count back to zero.
    pub(crate) fn take(&self) -> usize {
        self.0.swap(0, Ordering::Relaxed)
    }
}

impl Layer for CountsSight {
    fn call(&self, call: Call, next: Next) -> ReplyFuture {
        next.run(call)
    }

    fn visible(&self, tool: &ToolDefinition, _viewer: &Viewer<'_>) -> bool {
        if tool.name == "add" {
            self.0.fetch_add(1, Ordering::Relaxed);
        }
        true
    }
}
