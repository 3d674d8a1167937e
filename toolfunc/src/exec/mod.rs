//! Execution: the life of a call, from a name and its arguments to a result.
//!
//! Every run method ([`Registry::run`](crate::Registry::run) and its kin in
//! `run.rs`, a [`Runner`](runner::Runner)'s, a [`Ctx`](ctx::Ctx)'s nested calls)
//! takes a call through the same steps; a call from outside (HTTP, MCP, NATS, LLM
//! tool-call messages) is found on the remote floor (`crate::remote`) and enters at
//! step 2 with its tool already resolved (`Runner::run_resolved` and its kin):
//!
//! 1. **Resolve** (`runner.rs`): the name or alias is looked up in the registry (a
//!    child's shadow first, then its parents), giving the tool and the registry that
//!    holds it. Unknown names are `NOT_FOUND` with a hint when one is known.
//! 2. **Context** (`ctx.rs`, `scope.rs`, `deadline.rs`): a [`Ctx`](ctx::Ctx) is made
//!    over the runner's [`Scope`](scope::Scope): the caller's options
//!    ([`CallOptions`](crate::CallOptions): extensions, caller, call id, timeout,
//!    cancellation, listeners), the nested-call binding, and the deadline (the shorter
//!    of the tool's timeout, the options' and an enclosing call's). Creating it is
//!    cheap: the call's state ([`CallState`](state::CallState) in `state.rs`: its own
//!    token and cleanups) is made only when a handler asks for it.
//! 3. **Layers** (`chain.rs`): when the registry (or its ancestors) or the runner
//!    has call middleware ([`crate::layer`]), a tool a layer hides from the caller is
//!    `NOT_FOUND`, and the call passes every layer in order, each of which may refuse
//!    it, change its arguments or wrap its result; the end of the chain takes the
//!    call on to the steps below. With no layer anywhere this step costs one load.
//! 4. **Admission** (`runner.rs`, `start.rs`): a tool still running its async setup
//!    is waited for; a call whose caller already cancelled it, or whose inherited
//!    deadline has passed, does not start; a tool with a concurrency limit waits for
//!    a slot (`BUSY` where a sync caller cannot wait).
//! 5. **Argument check** (`start.rs`): `null` is `{}`, anything but an object is
//!    `ARGUMENTS`, then the tool's check (typed deserialisation, whose failure the
//!    parameters type's schema locates and words, or the JSON Schema validator) with
//!    the JSON path of the first failure. A service picks its method from `act`.
//! 6. **Handler** (`start.rs`, `task.rs`): a sync handler runs on the calling thread;
//!    an async one in a [`Drive`](task::Drive), raced against the deadline timer
//!    (`deadline.rs`) and the cancellation tokens ([`Watch`](task::Watch)). A panic
//!    anywhere is `PANICKED`.
//! 7. **Stream or collect** (`stream.rs`, `start.rs`): a streaming handler's items
//!    go to a [`ToolStream`](stream::ToolStream) one by one, or are collected into an
//!    array within the [`CollectLimit`](crate::CollectLimit).
//! 8. **Cleanups** (`state.rs`): the hooks registered with `ctx.on_cleanup` run when
//!    the call ends, however it ends; their failures join the call's
//!    (`AGGREGATE`).
//! 9. **Events** (`runner.rs`, `task.rs`): `CallStarted` and `CallFinished` with its
//!    [`CallStatus`](crate::CallStatus) reach the registry's subscribers, only when
//!    there are any.
//!
//! [`spawn`](crate::Registry::spawn) runs the same steps on the tokio runtime behind a
//! [`CallHandle`](task::CallHandle) that can be awaited or aborted.

pub(crate) mod chain;
pub(crate) mod ctx;
pub(crate) mod deadline;
mod nested;
pub(crate) mod prompts_resources;
pub(crate) mod run;
pub(crate) mod runner;
pub(crate) mod scope;
pub(crate) mod start;
pub(crate) mod state;
pub mod stream;
pub(crate) mod task;
