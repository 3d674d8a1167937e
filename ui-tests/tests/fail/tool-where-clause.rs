use toolfunc::tool;

#[tool]
fn answer() -> i32
where
    i32: Copy,
{
    42
}

fn main() {}
