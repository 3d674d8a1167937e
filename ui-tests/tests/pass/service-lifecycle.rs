//! `#[tool(setup)]` and `#[tool(dispose)]`: sync and async, `&self` and
//! `self: Arc<Self>`, `()` and `Result<(), E>` with any displayable error. They are
//! not acts and the client has no method for them.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use toolfunc::{tool_service, Registry};

#[derive(Default)]
pub struct Counter {
    setups: AtomicUsize,
}

#[tool_service(name = "lifecycle_counter")]
impl Counter {
    #[tool(setup)]
    async fn open(self: Arc<Self>) -> std::io::Result<()> {
        self.setups.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }

    #[tool(dispose)]
    fn close(&self) -> Result<(), String> {
        Ok(())
    }

    /// How many setups ran.
    pub fn setups(&self) -> usize {
        self.setups.load(Ordering::SeqCst)
    }
}

fn main() {
    let registry = Registry::new();
    let counter = Arc::new(Counter::default());
    registry.register_service::<Counter>(Arc::clone(&counter)).unwrap();
    assert_eq!(counter.setups(), 1);
    let def = registry.get("lifecycle_counter").unwrap().definition().clone();
    assert_eq!(def.methods, ["$setups"]);
    let _client = CounterClient::new(registry.clone());
    assert!(registry.unregister("lifecycle_counter"));
}
