use toolfunc::tool_service;

#[derive(Default)]
struct Svc;

trait Greet {
    fn hello(&self) -> String;
}

#[tool_service]
impl Greet for Svc {
    fn hello(&self) -> String {
        String::new()
    }
}

fn main() {}
