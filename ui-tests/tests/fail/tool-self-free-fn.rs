use toolfunc::tool;

#[tool]
fn describe(self) -> String {
    String::new()
}

fn main() {}
