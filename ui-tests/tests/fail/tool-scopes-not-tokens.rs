use toolfunc::{tool, tool_service};

/// A scope with a space in it is two scopes.
#[tool(scopes = ["files:read files:write"])]
fn read() {}

struct Files;

/// Files.
#[tool_service(scopes = "")]
impl Files {
    /// Writes.
    #[tool(scopes = ["files:\"write\""])]
    fn write(&self) {}
}

fn main() {}
