use toolfunc::{tool, tool_service};

#[derive(Default)]
struct Svc;

#[tool_service(setup, client = false)]
impl Svc {
    #[tool(setup, name = "open", timeout = "1s")]
    fn open(&self) {}

    #[tool(dispose, setup)]
    fn close(&self) {}

    #[tool(setup = true)]
    fn reopen(&self) {}

    fn hello(&self) -> String {
        String::new()
    }
}

#[tool(dispose)]
fn free() {}

fn main() {}
