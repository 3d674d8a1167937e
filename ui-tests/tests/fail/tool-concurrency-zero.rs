use toolfunc::tool;

/// No call could ever run.
#[tool(concurrency = 0)]
fn never() {}

fn main() {}
