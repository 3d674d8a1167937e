use toolfunc::{tool_service, ToolError};

#[derive(Default)]
struct Svc;

#[tool_service(client = false)]
impl Svc {
    #[tool(setup)]
    fn open(&self) -> Result<(), ToolError> {
        Ok(())
    }

    #[tool(setup)]
    async fn open_more(&self) {}

    #[tool(dispose)]
    fn close(&self) {}

    #[tool(dispose)]
    fn close_more(&self) {}

    fn hello(&self) -> String {
        String::new()
    }
}

fn main() {}
