use toolfunc::{Registry, tool_service};

#[derive(Default)]
struct Svc;

#[tool_service(nam = "x")]
impl Svc {
    fn hello(&self) -> String {
        String::new()
    }
}

fn main() {
    let _ = Registry::global().register_service::<Svc>(Svc);
}
