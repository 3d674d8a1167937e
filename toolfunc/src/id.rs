//! Unguessable ids: for tracked calls and parked rounds, which a caller names to
//! read or resume, so one caller cannot guess another's.

use std::hash::{BuildHasher, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

/// Unpredictable bytes from the operating system's CSPRNG.
pub(crate) fn random_bytes(out: &mut [u8]) {
    if let Err(err) = getrandom::fill(out) {
        // The OS refused (no entropy source at all): fall back to the standard
        // library's hasher keys, which it seeds from the OS when it can.
        tracing::error!(error = %err, "the operating system's random source failed");
        hashed_bytes(out);
    }
}

/// The fallback: each `RandomState` hashes a counter and the time under keys of
/// its own.
fn hashed_bytes(out: &mut [u8]) {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    for chunk in out.chunks_mut(8) {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u64(NEXT.fetch_add(1, Ordering::Relaxed));
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        let bytes = hasher.finish().to_le_bytes();
        chunk.copy_from_slice(&bytes[..chunk.len()]);
    }
}

/// 128 random bits in hex.
pub(crate) fn random_hex() -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut bytes = [0u8; 16];
    random_bytes(&mut bytes);
    let mut id = String::with_capacity(32);
    for byte in bytes {
        id.push(char::from(HEX[usize::from(byte >> 4)]));
        id.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
    id
}

#[cfg(test)]
mod tests {
    #[test]
    fn ids_are_32_hex_digits_and_differ() {
        let (a, b) = (super::random_hex(), super::random_hex());
        assert_eq!(a.len(), 32);
        assert!(
            a.bytes()
                .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase())
        );
        assert_ne!(a, b);
    }

    #[test]
    fn the_fallback_differs_too() {
        let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
        super::hashed_bytes(&mut a);
        super::hashed_bytes(&mut b);
        assert_ne!(a, b);
    }
}
