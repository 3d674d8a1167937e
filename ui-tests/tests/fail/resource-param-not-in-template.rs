use toolfunc::resource;

/// The log of one day, at one level.
#[resource(uri = "file:///logs/{date}")]
fn logs(date: String, level: u8) -> String {
    format!("{date} {level}")
}

fn main() {}
