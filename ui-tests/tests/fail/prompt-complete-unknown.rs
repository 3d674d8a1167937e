use toolfunc::complete::{Completion, CompletionRequest};
use toolfunc::prompt;

fn names(request: &CompletionRequest) -> Completion {
    Completion::matching(["Ada", "Alan"], &request.value)
}

/// Say hello.
#[prompt(complete(whom = names))]
fn hello(who: String) -> String {
    format!("Say hello to {who}.")
}

fn main() {}
