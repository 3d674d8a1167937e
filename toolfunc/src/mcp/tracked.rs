//! A tracked call before it is a task: how it answers its `tools/call` ([`TaskPlan`]),
//! and the call parked between rounds while it asks its client ([`Parked`]). Held
//! by the [rounds](super::rounds) that park it, run by the [tasks](super::tasks)
//! extension.

use std::time::Duration;

use crate::remote::ledger::Ledger;

use super::shape::Shape;

/// A call answering its client's questions before it became a task, parked between
/// rounds. Dropped unresumed (expired, or the server's table full), it stops the
/// call.
pub(super) struct Parked {
    pub(super) id: String,
    pub(super) ledger: Option<Ledger>,
    pub(super) plan: TaskPlan,
}

impl Drop for Parked {
    fn drop(&mut self) {
        if let Some(ledger) = self.ledger.take() {
            ledger.remove(&self.id);
        }
    }
}

/// How a tracked call answers its `tools/call`.
#[derive(Clone, Copy)]
pub(super) struct TaskPlan {
    /// How long it may run before it becomes a task.
    pub(super) soft: Duration,
    /// `background = "only"`: a task however soon it ends.
    pub(super) only: bool,
    pub(super) shape: Shape,
}

impl TaskPlan {
    pub(super) fn new(soft: Duration, only: bool, shape: Shape) -> Self {
        Self { soft, only, shape }
    }
}
