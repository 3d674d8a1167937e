use toolfunc::tool;

#[tool(name = "add", name = "plus")]
fn add(a: i32, b: i32) -> i32 {
    a + b
}

fn main() {}
