//! The options of a registration and of an unregistration.

/// How [`Registry::register_with`](super::Registry::register_with) treats a name that is already taken.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[must_use]
pub struct RegisterOptions {
    pub(super) allow_override: Option<bool>,
}

impl RegisterOptions {
    /// The default: an existing registration of the name is counted, not replaced.
    pub fn new() -> Self {
        Self::default()
    }

    /// `true`: replace an existing tool of that name in this registry, atomically (an
    /// alias that clashes with another tool refuses the whole replacement). `false`:
    /// namespace protection: refuse (`CONFLICT`) when the name or an alias exists
    /// anywhere up the chain of registries.
    pub fn allow_override(mut self, allow: bool) -> Self {
        self.allow_override = Some(allow);
        self
    }
}

/// Which registries [`Registry::unregister_with`](super::Registry::unregister_with) removes a tool from.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub enum UnregisterScope {
    /// Only this registry; removing a shadow makes the parent's tool visible again.
    #[default]
    Local,
    /// The first registry up the chain that has the tool.
    Inherited,
    /// This registry and every parent that has the tool.
    All,
}

/// Options of [`Registry::unregister_with`](super::Registry::unregister_with).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[must_use]
pub struct UnregisterOptions {
    pub(super) scope: UnregisterScope,
    pub(super) force: bool,
}

impl UnregisterOptions {
    /// Take back one registration, in this registry only.
    pub fn new() -> Self {
        Self::default()
    }

    /// Which registries to remove the tool from.
    pub fn scope(mut self, scope: UnregisterScope) -> Self {
        self.scope = scope;
        self
    }

    /// Remove the tool at once, whatever its registration count.
    pub fn force(mut self) -> Self {
        self.force = true;
        self
    }
}
