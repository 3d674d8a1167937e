use toolfunc::{Registry, ToolError, tool_service};

#[derive(Default)]
struct Counter {
    count: u32,
}

#[tool_service]
impl Counter {
    fn bump(&mut self, by: u32) -> u32 {
        self.count += by;
        self.count
    }
}

async fn call() -> Result<u32, ToolError> {
    let client = CounterClient::new(Registry::global().clone());
    client.bump(1).await
}

fn main() {
    let _ = call();
    let mut counter = Counter::default();
    let _ = counter.bump(2);
}
