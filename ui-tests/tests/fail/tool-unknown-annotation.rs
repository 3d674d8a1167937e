use toolfunc::tool;

/// A misspelt hint.
#[tool(annotations(readonly))]
fn look() {}

fn main() {}
