use futures::Stream;
use toolfunc::{tool, Ctx};

/// Streams, but borrows the context.
#[tool]
fn numbers(ctx: &Ctx, n: u32) -> impl Stream<Item = u32> {
    let _ = ctx.tool_name();
    futures::stream::iter(0..n)
}

fn main() {}
