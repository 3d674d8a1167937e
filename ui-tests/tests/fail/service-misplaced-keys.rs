use toolfunc::{tool, tool_service};

#[derive(Default)]
struct Svc;

#[tool_service(stream, client = false)]
impl Svc {
    #[tool(alias = "hi", concurrency = 2)]
    fn hello(&self) -> String {
        String::new()
    }

    #[tool(name = "hello")]
    fn hello_again(&self) -> String {
        String::new()
    }
}

#[tool(skip)]
fn free() {}

fn main() {}
