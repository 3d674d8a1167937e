use toolfunc::tool_service;

#[derive(Default)]
struct Svc;

#[tool_service]
impl Svc {
    fn ticks(&self, n: u64) -> impl futures::Stream<Item = u64> {
        futures::stream::iter(0..n)
    }
}

fn main() {}
