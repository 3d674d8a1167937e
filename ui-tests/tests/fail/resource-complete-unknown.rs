use toolfunc::complete::CompletionRequest;
use toolfunc::resource;

fn dates(_: &CompletionRequest) -> Vec<String> {
    Vec::new()
}

/// The log of one day.
#[resource(uri = "file:///logs/{date}", complete(day = dates))]
fn logs(date: String) -> String {
    date
}

fn main() {}
