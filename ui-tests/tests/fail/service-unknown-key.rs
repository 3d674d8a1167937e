use toolfunc::tool_service;

#[derive(Default)]
struct Svc;

#[tool_service(colour = "red")]
impl Svc {
    fn hello(&self) -> String {
        String::new()
    }
}

fn main() {}
