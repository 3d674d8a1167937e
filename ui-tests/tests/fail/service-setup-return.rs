use toolfunc::{tool_service, ToolError};

#[derive(Default)]
struct Svc;

#[tool_service(client = false)]
impl Svc {
    #[tool(setup)]
    fn open(&self) -> bool {
        true
    }

    #[tool(dispose)]
    async fn close(&self) -> Result<u32, ToolError> {
        Ok(0)
    }

    fn hello(&self) -> String {
        String::new()
    }
}

fn main() {}
