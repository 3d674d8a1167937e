use toolfunc::prompt;

/// Say hello.
#[prompt(alias = "hi", stream)]
fn hello(who: String) -> String {
    format!("Say hello to {who}.")
}

fn main() {}
