//! The seals of a call's records: under the secret its stored message carries,
//! and under the fleet's key when the workers share one.

use serde_json::Value;

use super::settings::DurableSettings;

/// What seals a call's records: HMAC-SHA256 under the secret its stored message
/// carries, over the fields that decide who runs it.
#[derive(Clone)]
pub(super) struct Seal {
    id: String,
    key: ring::hmac::Key,
    /// The fleet's key, when the workers share one.
    fleet: Option<ring::hmac::Key>,
}

impl Seal {
    pub(super) fn new(id: &str, secret: &str) -> Self {
        Self {
            id: id.to_owned(),
            key: ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret.as_bytes()),
            fleet: None,
        }
    }

    fn text(&self, record: &Value) -> String {
        seal_text(&self.id, record)
    }

    /// Adds the seal to a record this worker writes.
    pub(super) fn sign(&self, record: &mut Value) {
        let text = self.text(record);
        let tag = ring::hmac::sign(&self.key, text.as_bytes());
        record["seal"] = Value::String(hex(tag.as_ref()));
        if let Some(fleet) = &self.fleet {
            record["fleet"] = Value::String(hex(ring::hmac::sign(fleet, text.as_bytes()).as_ref()));
        }
    }

    /// The same call's seal with the fleet's key too.
    pub(super) fn with_fleet(mut self, fleet: Option<&ring::hmac::Key>) -> Self {
        self.fleet = fleet.cloned();
        self
    }

    /// Whether a record carries this call's seal.
    pub(super) fn verify(&self, record: &Value) -> bool {
        let Some(seal) = record.get("seal").and_then(Value::as_str).and_then(unhex) else {
            return false;
        };
        ring::hmac::verify(&self.key, self.text(record).as_bytes(), &seal).is_ok()
    }
}

/// What a record's seals cover: the fields that decide who runs the call
/// (status, worker, attempt, lease), whose it is (owner), and what it came to (a
/// digest of its result or error).
fn seal_text(id: &str, record: &Value) -> String {
    let field = |key: &str| match record.get(key) {
        Some(Value::String(text)) => text.clone(),
        Some(Value::Number(n)) => n.to_string(),
        _ => String::new(),
    };
    let digest = |key: &str| {
        record.get(key).map_or_else(String::new, |value| {
            let bytes = serde_json::to_vec(value).unwrap_or_default();
            hex(ring::digest::digest(&ring::digest::SHA256, &bytes).as_ref())
        })
    };
    format!(
        "{id}\n{}\n{}\n{}\n{}\n{}\n{}\n{}",
        field("status"),
        field("worker"),
        field("attempt"),
        field("lease"),
        field("owner"),
        digest("result"),
        digest("error"),
    )
}

/// The fleet's key of `settings`, when they have one.
pub(super) fn fleet_key(settings: &DurableSettings) -> Option<ring::hmac::Key> {
    settings
        .fleet_key
        .as_deref()
        .map(|secret| ring::hmac::Key::new(ring::hmac::HMAC_SHA256, secret))
}

/// Seals a record of call `id` with the fleet's key.
pub(super) fn fleet_sign(fleet: &ring::hmac::Key, id: &str, record: &mut Value) {
    let tag = ring::hmac::sign(fleet, seal_text(id, record).as_bytes());
    record["fleet"] = Value::String(hex(tag.as_ref()));
}

/// Whether a record of call `id` carries the fleet's seal.
pub(super) fn fleet_verify(fleet: &ring::hmac::Key, id: &str, record: &Value) -> bool {
    let Some(tag) = record.get("fleet").and_then(Value::as_str).and_then(unhex) else {
        return false;
    };
    ring::hmac::verify(fleet, seal_text(id, record).as_bytes(), &tag).is_ok()
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut out, b| {
        let _ = write!(out, "{b:02x}");
        out
    })
}

fn unhex(text: &str) -> Option<Vec<u8>> {
    if !text.len().is_multiple_of(2) {
        return None;
    }
    (0..text.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(text.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn seals_cover_the_fields_that_decide_who_runs_a_call() {
        let seal = Seal::new("id-1", "secret");
        let mut record = json!({"status": "working", "worker": "w", "attempt": 1, "lease": 5});
        seal.sign(&mut record);
        assert!(seal.verify(&record));
        let mut longer = record.clone();
        longer["lease"] = json!(6);
        assert!(!seal.verify(&longer));
        let mut done = record.clone();
        done["status"] = json!("completed");
        assert!(!seal.verify(&done));
        // What it came to and whose it is are sealed too.
        let mut outcome = record.clone();
        outcome["result"] = json!({"paid": 10});
        outcome["owner"] = json!("ann");
        seal.sign(&mut outcome);
        assert!(seal.verify(&outcome));
        for (key, forged) in [
            ("result", json!({"paid": 1000})),
            ("owner", json!("eve")),
            ("error", json!({})),
        ] {
            let mut forged_record = outcome.clone();
            forged_record[key] = forged;
            assert!(!seal.verify(&forged_record), "{key}");
        }
        assert!(!Seal::new("id-1", "other").verify(&record));
        assert!(!Seal::new("id-2", "secret").verify(&record));
        let mut garbage = record;
        garbage["seal"] = json!("zz");
        assert!(!seal.verify(&garbage));
    }

    #[test]
    fn hex_round_trips() {
        assert_eq!(unhex(&hex(&[0, 1, 254, 255])), Some(vec![0, 1, 254, 255]));
        assert_eq!(unhex("abc"), None);
        assert_eq!(unhex("zz"), None);
    }
}
