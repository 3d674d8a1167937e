use toolfunc::tool;

#[tool(timout = "30s")]
fn add(a: i32, b: i32) -> i32 {
    a + b
}

fn main() {}
