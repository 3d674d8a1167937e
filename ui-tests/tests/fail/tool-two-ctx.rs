use toolfunc::{Ctx, tool};

#[tool]
fn whoami(ctx: &Ctx, again: &Ctx) -> String {
    format!("{} {}", ctx.tool_name(), again.tool_name())
}

fn main() {}
