use toolfunc::resource;

/// The log of one day.
#[resource(uri = "file:///logs/{date")]
fn logs(date: String) -> String {
    date
}

fn main() {}
