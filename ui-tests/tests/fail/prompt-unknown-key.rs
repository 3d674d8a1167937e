use toolfunc::prompt;

/// Say hello.
#[prompt(colour = "red")]
fn hello(who: String) -> String {
    format!("Say hello to {who}.")
}

fn main() {}
