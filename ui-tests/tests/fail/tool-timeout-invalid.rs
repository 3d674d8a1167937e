use toolfunc::tool;

/// A timeout that is not a duration.
#[tool(timeout = "soon")]
async fn wait() {}

fn main() {}
