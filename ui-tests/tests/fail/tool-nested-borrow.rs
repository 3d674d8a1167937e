use toolfunc::tool;

#[tool]
fn shout(text: Option<&'static str>) -> String {
    text.unwrap_or_default().to_uppercase()
}

fn main() {}
