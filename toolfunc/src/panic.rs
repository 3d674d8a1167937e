//! Handler panics are caught where a call runs and become `PANICKED` errors. This
//! module keeps them out of stderr: while toolfunc polls a handler, the process's
//! panic hook only notes where the panic happened, and the catch site reports it
//! once through `tracing` (a client that makes a tool panic on purpose cannot
//! flood the log with backtraces). Panics anywhere else reach the hook that was
//! installed before, untouched.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::sync::Once;

use crate::error::ToolError;

thread_local! {
    /// How many handler polls are running on this thread (nested calls nest).
    static CATCHING: Cell<u32> = const { Cell::new(0) };
    /// Where the last caught panic happened on this thread.
    static LOCATION: RefCell<Option<String>> = const { RefCell::new(None) };
}

static INSTALL: Once = Once::new();

/// Marks the current thread as running handler code until dropped.
pub(crate) struct Catching(());

impl Catching {
    pub(crate) fn enter() -> Self {
        INSTALL.call_once(|| {
            let previous = std::panic::take_hook();
            std::panic::set_hook(Box::new(move |info| {
                if CATCHING.with(Cell::get) > 0 {
                    let location = info.location().map(ToString::to_string);
                    LOCATION.with(|l| *l.borrow_mut() = location);
                } else {
                    previous(info);
                }
            }));
        });
        CATCHING.with(|c| c.set(c.get() + 1));
        Self(())
    }
}

impl Drop for Catching {
    fn drop(&mut self) {
        CATCHING.with(|c| c.set(c.get().saturating_sub(1)));
    }
}

/// Where the panic being handled on this thread happened, if the hook saw it.
pub(crate) fn take_location() -> Option<String> {
    LOCATION.with(|l| l.borrow_mut().take())
}

pub(crate) fn panic_message(payload: &(dyn Any + Send)) -> String {
    payload
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic payload".to_owned())
}

/// The error a caught panic becomes, reported once through `tracing` (with where
/// it happened) instead of the panic hook's backtrace on stderr.
pub(crate) fn panicked(payload: &(dyn Any + Send)) -> ToolError {
    let message = panic_message(payload);
    let location = take_location().unwrap_or_default();
    tracing::error!(panic = %message, %location, "tool handler panicked");
    ToolError::Panicked { message }
}
