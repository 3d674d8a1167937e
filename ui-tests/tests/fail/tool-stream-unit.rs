//! `#[tool(stream)]` on a function that returns nothing: no stream to send.
use toolfunc::tool;

/// Returns nothing.
#[tool(stream)]
fn nothing() {}

/// Returns nothing, or fails.
#[tool(stream)]
fn nothing_or_fails() -> Result<(), String> {
    Ok(())
}

fn main() {}
