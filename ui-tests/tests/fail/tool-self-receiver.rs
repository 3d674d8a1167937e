use toolfunc::tool;

struct Greeter {
    greeting: String,
}

impl Greeter {
    #[tool]
    fn greet(&self, name: String) -> String {
        format!("{}, {name}", self.greeting)
    }
}

fn main() {
    let greeter = Greeter {
        greeting: "Hello".into(),
    };
    let _ = greeter.greet("Ann".into());
}
