use toolfunc::{tool_service, Ctx};

#[derive(Default)]
struct Svc;

#[tool_service(client = false)]
impl Svc {
    #[tool(setup)]
    fn open(&self, url: String) {
        let _ = url;
    }

    #[tool(dispose)]
    async fn close(&self, ctx: &Ctx) {
        let _ = ctx;
    }

    fn hello(&self) -> String {
        String::new()
    }
}

fn main() {}
