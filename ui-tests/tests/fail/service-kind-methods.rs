use toolfunc::tool_service;

#[derive(Default)]
struct Notes;

/// Notes.
#[tool_service]
impl Notes {
    /// How many.
    fn count(&self) -> u64 {
        0
    }

    /// Both a prompt and an act.
    #[prompt]
    #[tool(name = "other")]
    fn both(&self) -> String {
        String::new()
    }

    /// No URI.
    #[resource(mime_type = "text/plain")]
    fn no_uri(&self) -> String {
        String::new()
    }

    /// Takes `&mut self`.
    #[prompt]
    fn mutable(&mut self) -> String {
        String::new()
    }

    /// Not `Send`.
    #[prompt(local)]
    async fn local(&self) -> String {
        String::new()
    }

    /// Answers nothing.
    #[prompt]
    fn nothing(&self) {}

    /// A completer for nothing.
    #[resource(uri = "notes://{id}", complete(name = names))]
    fn note(&self, id: String) -> String {
        id
    }
}

fn names(_: &toolfunc::complete::CompletionRequest) -> Vec<String> {
    Vec::new()
}

fn main() {}
