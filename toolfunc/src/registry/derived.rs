//! Views derived from a registry's tools (the remote catalogue, the MCP tool list,
//! discovery), made once per registry generation and kept under typed keys.

use std::sync::PoisonError;

use super::Registry;
use super::cache::generation;
use crate::error::ToolError;

impl Registry {
    /// A view derived from the tools (reachable here), made by `make` and kept under
    /// `key` until any registry changes. Keys are typed: each reader names its view
    /// with a value of its own key type, so two readers never share a slot by
    /// accident.
    pub(crate) fn derived<K, V>(
        &self,
        key: K,
        make: impl FnOnce() -> Result<V, ToolError>,
    ) -> Result<V, ToolError>
    where
        K: PartialEq + Send + Sync + 'static,
        V: Clone + Send + Sync + 'static,
    {
        let generation = generation();
        let lock = || {
            self.inner
                .derived
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
        };
        {
            let kept = lock();
            let value = kept
                .iter()
                .filter(|d| d.generation == generation)
                .find_map(|d| d.value_for::<K, V>(&key));
            if let Some(value) = value {
                return Ok(value.clone());
            }
        }
        let value = make()?;
        let mut kept = lock();
        kept.retain(|d| !d.is_for(&key));
        kept.push(Derived {
            key: Box::new(key),
            generation,
            value: Box::new(value.clone()),
        });
        Ok(value)
    }
}

/// One derived view: its typed key, the generation it was made at, its value.
pub(super) struct Derived {
    pub(super) key: Box<dyn std::any::Any + Send + Sync>,
    pub(super) generation: u64,
    pub(super) value: Box<dyn std::any::Any + Send + Sync>,
}

impl Derived {
    pub(super) fn is_for<K: PartialEq + 'static>(&self, key: &K) -> bool {
        self.key.downcast_ref::<K>() == Some(key)
    }

    pub(super) fn value_for<K: PartialEq + 'static, V: 'static>(&self, key: &K) -> Option<&V> {
        if self.is_for(key) {
            self.value.downcast_ref::<V>()
        } else {
            None
        }
    }
}
