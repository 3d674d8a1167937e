use std::rc::Rc;
use toolfunc::tool;

async fn fetch() {}

#[tool]
async fn count(text: String) -> usize {
    let shared = Rc::new(text);
    fetch().await;
    shared.len()
}

fn main() {}
