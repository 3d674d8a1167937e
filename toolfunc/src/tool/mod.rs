//! `ToolFunc` (a tool: definition + handler), `ToolDefinition` (its serialisable
//! metadata) and `ToolBuilder` (tools made at run time).

mod builder;
pub(crate) mod definition;
mod func;
pub(crate) mod kind_builder;
pub mod service;
mod spec;

pub use builder::ToolBuilder;
pub use definition::{Annotations, ToolDefinition};
pub use func::{Answer, ItemStream, Kind, ToolFunc, ToolRef, failed_future, to_output};
pub(crate) use func::{Dependency, DependencyTarget, Handler, Ready, SyncHandler};
pub use spec::{SpecHandler, ToolSpec};
