use toolfunc::tool;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Point {
    x: i32,
    y: i32,
}

/// Adds the coordinates.
#[tool(args, deny_unknown_fields)]
fn sum(point: Point) -> i32 {
    point.x + point.y
}

fn main() {}
