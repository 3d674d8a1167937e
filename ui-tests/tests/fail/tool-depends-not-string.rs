use toolfunc::tool;

/// A dependency named by an identifier instead of a string.
#[tool(depends(fetch = fetch_user))]
fn greet() {}

fn main() {}
