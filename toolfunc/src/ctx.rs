//! `Ctx`: the per-call context a tool receives.

use std::fmt;
use std::sync::Arc;

use serde_json::Value;

use crate::{Registry, ToolDefinition, ToolError, ToolFunc};

/// The context of one call: which tool runs, under which call id, and the registry it
/// was called through (for nested calls).
///
/// A `#[tool]` function receives it by declaring a `&Ctx` (or `Ctx`) parameter, which
/// is injected and left out of the parameter schema:
///
/// ```rust,standalone_crate
/// use toolfunc::{tool, Ctx, Registry};
///
/// /// Says which tool is running.
/// #[tool]
/// fn whoami(ctx: &Ctx) -> String {
///     ctx.tool_name().to_owned()
/// }
///
/// let out = Registry::global().run_sync("whoami", serde_json::json!({})).unwrap();
/// assert_eq!(out, "whoami");
/// ```
///
/// A `Ctx` is cheap to create and to clone: it holds reference-counted handles, never
/// deep copies, and every call gets its own, so concurrent calls never see each
/// other's context.
#[derive(Clone)]
pub struct Ctx {
    registry: Registry,
    tool: Arc<ToolFunc>,
    call_id: Option<Arc<str>>,
}

impl Ctx {
    pub(crate) fn new(registry: Registry, tool: Arc<ToolFunc>, call_id: Option<Arc<str>>) -> Self {
        Self {
            registry,
            tool,
            call_id,
        }
    }

    pub(crate) fn tool(&self) -> &Arc<ToolFunc> {
        &self.tool
    }

    /// The name of the running tool.
    pub fn tool_name(&self) -> &str {
        self.tool.name()
    }

    /// The definition of the running tool.
    pub fn definition(&self) -> &ToolDefinition {
        self.tool.definition()
    }

    /// The id of this call, when it was started with one (`execute` with a
    /// [`ToolCall`](crate::ToolCall)).
    pub fn call_id(&self) -> Option<&str> {
        self.call_id.as_deref()
    }

    /// The registry this call was made through.
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// Runs another tool through the same registry: a nested call.
    pub async fn run(&self, name: &str, args: Value) -> Result<Value, ToolError> {
        self.registry.run(name, args).await
    }
}

impl fmt::Debug for Ctx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ctx")
            .field("tool", &self.tool_name())
            .field("call_id", &self.call_id)
            .finish_non_exhaustive()
    }
}
