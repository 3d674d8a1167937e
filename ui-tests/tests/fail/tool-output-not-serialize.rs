use toolfunc::tool;

#[derive(schemars::JsonSchema)]
struct Report {
    lines: Vec<String>,
}

#[tool]
fn report() -> Report {
    Report { lines: Vec::new() }
}

fn main() {}
