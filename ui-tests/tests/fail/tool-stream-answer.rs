//! `#[tool(stream)]` on a tool returning `Answer` would change nothing: refused.
use toolfunc::{Answer, ToolError, tool};

/// Answers once.
#[tool(stream)]
fn count() -> Result<Answer, ToolError> {
    Answer::value(&1)
}

fn main() {}
