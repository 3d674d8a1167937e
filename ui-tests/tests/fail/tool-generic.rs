use toolfunc::tool;

#[tool]
fn echo<T>(value: T) -> T {
    value
}

fn main() {}
