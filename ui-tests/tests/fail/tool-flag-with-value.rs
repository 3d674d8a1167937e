use toolfunc::tool;

#[tool(deny_unknown_fields = true)]
fn add(a: i32, b: i32) -> i32 {
    a + b
}

fn main() {}
