use schemars::JsonSchema;
use serde::Deserialize;
use toolfunc::tool;

#[derive(Deserialize, JsonSchema)]
struct Point {
    x: i32,
    y: i32,
}

#[tool(args)]
fn scale(point: Point, factor: i32) -> i32 {
    (point.x + point.y) * factor
}

fn main() {}
