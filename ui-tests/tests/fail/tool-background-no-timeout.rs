use toolfunc::tool;

/// A long report.
#[tool(background)]
async fn report() -> u32 {
    1
}

fn main() {}
