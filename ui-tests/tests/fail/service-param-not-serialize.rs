use toolfunc::tool_service;

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct Point {
    x: i32,
    y: i32,
}

#[derive(Default)]
struct Geometry;

#[tool_service]
impl Geometry {
    fn norm(&self, point: Point) -> i32 {
        point.x.abs() + point.y.abs()
    }
}

fn main() {}
