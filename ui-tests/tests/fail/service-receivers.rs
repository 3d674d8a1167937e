use toolfunc::tool_service;

#[derive(Default)]
struct Svc;

#[tool_service]
impl Svc {
    fn by_value(self) -> u8 {
        0
    }

    fn by_mut(&mut self) -> u8 {
        0
    }

    fn no_receiver() -> u8 {
        0
    }

    fn boxed(self: Box<Self>) -> u8 {
        0
    }
}

fn main() {}
