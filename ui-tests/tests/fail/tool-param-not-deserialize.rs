use toolfunc::tool;

struct Point {
    x: i32,
    y: i32,
}

#[tool]
fn norm(point: Point) -> i32 {
    point.x.abs() + point.y.abs()
}

fn main() {}
