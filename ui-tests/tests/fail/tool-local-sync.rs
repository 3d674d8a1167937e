use toolfunc::tool;

#[tool(local)]
fn count(text: String) -> usize {
    text.len()
}

fn main() {}
