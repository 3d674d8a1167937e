use toolfunc::resource;

/// The log of one day.
#[resource(uri = "file:///logs/{day}")]
fn logs(date: Option<String>) -> String {
    date.unwrap_or_default()
}

fn main() {}
