//! What callers hold of a bounded store (tracked calls, parked rounds): its
//! entries and their bytes, in all and per caller, so that a store refuses the one
//! caller that filled its share while others still get in; and the cap on the ids
//! and caller names a store keeps.

use std::collections::HashMap;

use crate::error::ToolError;

/// The refusal of an id or a caller name a store would keep that is longer than
/// `max` bytes: `TOO_LONG` (400), with `{"what", "max", "bytes"}` as its data.
/// `None` when it fits.
pub(crate) fn too_long(what: &str, value: &str, max: usize) -> Option<ToolError> {
    (value.len() > max).then(|| {
        ToolError::custom(
            "TOO_LONG",
            400,
            format!(
                "the {what} is {} bytes long; at most {max} are kept",
                value.len()
            ),
        )
        .with_data(serde_json::json!({"what": what, "max": max, "bytes": value.len()}))
    })
}

/// Entries and bytes held.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Usage {
    pub(crate) entries: usize,
    pub(crate) bytes: usize,
}

/// What a store holds, in all and per caller (`None`: entries kept for no caller,
/// which share one caller's share). A caller is forgotten with its last entry.
#[derive(Debug, Default)]
pub(crate) struct Holdings {
    total: Usage,
    named: HashMap<Box<str>, Usage>,
    anonymous: Usage,
}

impl Holdings {
    /// What the store holds in all.
    pub(crate) fn total(&self) -> Usage {
        self.total
    }

    /// What `owner`'s entries hold.
    pub(crate) fn of(&self, owner: Option<&str>) -> Usage {
        match owner {
            None => self.anonymous,
            Some(owner) => self.named.get(owner).copied().unwrap_or_default(),
        }
    }

    /// Counts `entries` more entries and `bytes` more bytes for `owner`.
    pub(crate) fn add(&mut self, owner: Option<&str>, entries: usize, bytes: usize) {
        let usage = match owner {
            None => &mut self.anonymous,
            Some(owner) => self.named.entry(owner.into()).or_default(),
        };
        usage.entries += entries;
        usage.bytes += bytes;
        self.total.entries += entries;
        self.total.bytes += bytes;
    }

    /// Gives back `entries` entries and `bytes` bytes of `owner` (nothing for an
    /// owner that holds nothing).
    pub(crate) fn release(&mut self, owner: Option<&str>, entries: usize, bytes: usize) {
        let usage = match owner {
            None => &mut self.anonymous,
            Some(owner) => match self.named.get_mut(owner) {
                Some(usage) => usage,
                None => return,
            },
        };
        let entries = entries.min(usage.entries);
        let bytes = bytes.min(usage.bytes);
        usage.entries -= entries;
        usage.bytes -= bytes;
        self.total.entries = self.total.entries.saturating_sub(entries);
        self.total.bytes = self.total.bytes.saturating_sub(bytes);
        if let Some(owner) = owner
            && usage.entries == 0
        {
            self.named.remove(owner);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{Holdings, Usage, too_long};

    #[test]
    fn holdings_count_per_caller_and_forget_a_caller_with_its_last_entry() {
        let mut held = Holdings::default();
        held.add(Some("ann"), 1, 10);
        held.add(Some("ann"), 0, 5);
        held.add(None, 1, 3);
        assert_eq!(
            held.of(Some("ann")),
            Usage {
                entries: 1,
                bytes: 15
            }
        );
        assert_eq!(
            held.total(),
            Usage {
                entries: 2,
                bytes: 18
            }
        );
        held.release(Some("ann"), 1, 15);
        assert!(held.named.is_empty());
        held.release(Some("bob"), 1, 1);
        assert_eq!(
            held.total(),
            Usage {
                entries: 1,
                bytes: 3
            }
        );
    }

    #[test]
    fn too_long_says_what_and_how_long() {
        assert!(too_long("id", "1234", 4).is_none());
        let err = too_long("id", "12345", 4).unwrap();
        assert_eq!((err.code(), err.status()), ("TOO_LONG", 400));
        assert_eq!(err.data().unwrap()["bytes"], 5);
    }
}
