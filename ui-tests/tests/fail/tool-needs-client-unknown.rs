use toolfunc::tool;

/// Reads minds.
#[tool(needs_client = "telepathy")]
fn read_mind() -> u32 {
    1
}

fn main() {}
