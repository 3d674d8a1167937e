//! `#[tool(local)]`: an async tool holding an `Rc` across an `.await` compiles and
//! is an ordinary tool.
use std::rc::Rc;

use toolfunc::{Registry, tool};

async fn fetch() {}

#[tool(local, timeout = "1s")]
async fn count(text: String) -> usize {
    let shared = Rc::new(text);
    fetch().await;
    shared.len()
}

fn main() {
    let registry = Registry::global();
    assert!(registry.get("count").is_some());
}
