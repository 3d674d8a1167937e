use toolfunc::tool_service;

struct Svc<T>(T);

#[tool_service]
impl<T: Send + Sync + 'static> Svc<T> {
    fn hello(&self) -> String {
        String::new()
    }
}

fn main() {}
