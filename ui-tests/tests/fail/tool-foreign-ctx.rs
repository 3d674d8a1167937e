use toolfunc::tool;

struct Ctx {
    user: String,
}

/// Reads a user from a type that happens to be named `Ctx`.
#[tool]
fn user(ctx: Ctx) -> String {
    ctx.user
}

fn main() {}
