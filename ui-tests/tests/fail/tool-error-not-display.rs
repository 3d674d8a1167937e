use toolfunc::tool;

#[derive(Debug)]
struct Oops;

/// Fails with an error type that cannot be shown.
#[tool]
fn fail() -> Result<u8, Oops> {
    Err(Oops)
}

fn main() {}
