use toolfunc::tool;

#[tool]
fn greeting() -> impl std::fmt::Display {
    "hello"
}

fn main() {}
