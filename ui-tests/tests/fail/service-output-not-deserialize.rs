use toolfunc::tool_service;

#[derive(serde::Serialize, schemars::JsonSchema)]
struct Total {
    sum: i64,
}

#[derive(Default)]
struct Sums;

#[tool_service]
impl Sums {
    fn total(&self, a: i64, b: i64) -> Total {
        Total { sum: a + b }
    }
}

fn main() {}
