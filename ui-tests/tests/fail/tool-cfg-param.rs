use toolfunc::tool;

/// A parameter that exists only in some builds.
#[tool]
fn visible(#[cfg(any())] a: i32, b: i32) -> i32 {
    b
}

fn main() {}
