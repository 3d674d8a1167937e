//! How many calls each caller runs at once on one worker, each caller held to the
//! same share: the worker's calls (`max_in_flight_per_caller`) and its durable
//! calls (`DurableSettings::per_owner`) alike.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::wire::lock;

/// The calls running per caller key, each at most `max`. A key is kept only
/// while it has a call running, so the table holds at most one key per running
/// call.
#[derive(Clone, Debug)]
pub(crate) struct Shares {
    running: Arc<Mutex<HashMap<String, usize>>>,
    max: usize,
}

impl Shares {
    pub(crate) fn new(max: usize) -> Self {
        Self {
            running: Arc::default(),
            max: max.max(1),
        }
    }

    /// The most calls one caller runs at once.
    pub(crate) fn max(&self) -> usize {
        self.max
    }

    /// A place for a call of `key`, or `None` when it runs its share already.
    pub(crate) fn take(&self, key: &str) -> Option<Place> {
        let mut running = lock(&self.running);
        let count = running.entry(key.to_owned()).or_default();
        if *count >= self.max {
            return None;
        }
        *count += 1;
        Some(Place {
            running: Arc::clone(&self.running),
            key: key.to_owned(),
        })
    }
}

/// One running call's place in its caller's share, given back on drop.
#[derive(Debug)]
pub(crate) struct Place {
    running: Arc<Mutex<HashMap<String, usize>>>,
    key: String,
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut running = lock(&self.running);
        if let Some(count) = running.get_mut(&self.key) {
            *count -= 1;
            if *count == 0 {
                running.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_caller_gets_its_share_and_a_place_comes_back_when_dropped() {
        let shares = Shares::new(2);
        let first = shares.take("ann").expect("one");
        let _second = shares.take("ann").expect("two");
        assert!(shares.take("ann").is_none());
        assert!(shares.take("bob").is_some());
        drop(first);
        assert!(shares.take("ann").is_some());
        assert!(
            lock(&shares.running).get("bob").is_none(),
            "an idle key is not kept"
        );
    }
}
