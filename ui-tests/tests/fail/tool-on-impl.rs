use toolfunc::tool;

struct Calculator;

#[tool]
impl Calculator {
    fn add(&self, a: i32, b: i32) -> i32 {
        a + b
    }
}

fn main() {}
