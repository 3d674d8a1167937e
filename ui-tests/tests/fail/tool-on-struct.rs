use toolfunc::tool;

#[tool]
struct Add {
    a: i32,
    b: i32,
}

fn main() {}
