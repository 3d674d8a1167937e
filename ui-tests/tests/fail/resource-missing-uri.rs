use toolfunc::resource;

/// Today's notes.
#[resource(mime_type = "text/plain")]
fn notes() -> String {
    String::new()
}

fn main() {}
