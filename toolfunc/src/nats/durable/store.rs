//! The stream and the bucket: their names, the headers of a stored call, the
//! server version they need, opening them, and reading and writing a call's
//! record by revision.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use async_nats::jetstream::{self, kv, stream};
use serde_json::{Value, json};

use super::seal::Seal;
use super::settings::DurableSettings;
use crate::error::ToolError;
use crate::identity::Identity;

/// The stream, consumer and bucket names of a prefix.
pub(crate) fn stream_name(prefix: &str) -> String {
    format!("{}_TASKS", name_part(prefix).to_ascii_uppercase())
}

pub(crate) fn bucket_name(prefix: &str) -> String {
    format!("{}_results", name_part(prefix))
}

/// The bucket of the cancels owners asked for, by call id.
pub(crate) fn cancels_name(prefix: &str) -> String {
    format!("{}_cancels", name_part(prefix))
}

pub(super) const CONSUMER: &str = "workers";

/// On a stored call: when it was submitted (ms since the epoch).
pub(super) const SUBMITTED: &str = "Tf-Submitted";
/// On a stored call: whose it is (the verified subject, else the stated caller).
pub(super) const OWNER: &str = "Tf-Owner";
/// On a stored call: the identity its submitter proved (`{"sub", "iss", "scopes"}`).
pub(super) const IDENTITY: &str = "Tf-Identity";
/// On a stored call: the secret the workers seal its records with.
pub(super) const SEAL_KEY: &str = "Tf-Seal-Key";

fn name_part(prefix: &str) -> String {
    prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

/// `<prefix>.task.<tool>`: the subjects of the stream.
pub(crate) fn task_subject(prefix: &str, tool: &str) -> String {
    format!("{prefix}.task.{tool}")
}

/// The oldest nats-server whose JetStream API durable calls use (2.10: the
/// consumer and stream settings and the answers async-nats expects).
pub(crate) const MIN_SERVER: (u64, u64) = (2, 10);

/// Refuses a nats-server older than [`MIN_SERVER`], naming the version found, before
/// its JetStream answers fail to decode.
pub(crate) fn check_server_version(version: &str) -> Result<(), ToolError> {
    let mut parts = version
        .trim_start_matches('v')
        .split(['.', '-', '+'])
        .map(|part| part.parse::<u64>().ok());
    let found = (parts.next().flatten(), parts.next().flatten());
    match found {
        (Some(major), Some(minor)) if (major, minor) >= MIN_SERVER => Ok(()),
        _ => Err(ToolError::custom(
            "UNSUPPORTED",
            503,
            format!(
                "durable calls need nats-server {}.{} or later, with JetStream; this server is \
                 version {version:?}",
                MIN_SERVER.0, MIN_SERVER.1
            ),
        )),
    }
}

pub(super) fn jetstream_error(what: &str, err: &dyn std::fmt::Display) -> ToolError {
    ToolError::custom(
        "UNREACHABLE",
        503,
        format!("JetStream: cannot {what}: {err}"),
    )
}

pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

pub(super) fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

/// Opens (or creates) the stream and the bucket.
pub(super) async fn open(
    js: &jetstream::Context,
    prefix: &str,
    settings: &DurableSettings,
) -> Result<(stream::Stream, kv::Store), ToolError> {
    let stream = js
        .get_or_create_stream(stream::Config {
            name: stream_name(prefix),
            subjects: vec![task_subject(prefix, ">")],
            retention: stream::RetentionPolicy::WorkQueue,
            max_messages: settings.max_pending,
            discard: stream::DiscardPolicy::New,
            storage: stream::StorageType::File,
            duplicate_window: Duration::from_secs(120),
            ..Default::default()
        })
        .await
        .map_err(|e| jetstream_error("open the task stream", &e))?;
    let store = open_bucket(js, prefix, settings).await?;
    Ok((stream, store))
}

/// The bucket; created with `settings` when it is missing.
async fn open_bucket(
    js: &jetstream::Context,
    prefix: &str,
    settings: &DurableSettings,
) -> Result<kv::Store, ToolError> {
    open_named(js, bucket_name(prefix), prefix, settings).await
}

/// The bucket `bucket`; created with `settings` when it is missing.
pub(super) async fn open_named(
    js: &jetstream::Context,
    bucket: String,
    prefix: &str,
    settings: &DurableSettings,
) -> Result<kv::Store, ToolError> {
    if let Ok(store) = js.get_key_value(&bucket).await {
        return Ok(store);
    }
    let created = js
        .create_key_value(kv::Config {
            bucket: bucket.clone(),
            description: format!("toolfunc durable results under `{prefix}`"),
            history: 1,
            max_age: settings.retention,
            storage: stream::StorageType::File,
            num_replicas: 1,
            ..Default::default()
        })
        .await;
    match created {
        Ok(store) => Ok(store),
        // Another worker made it first, with settings of its own: use that one.
        Err(err) => js
            .get_key_value(&bucket)
            .await
            .map_err(|_| jetstream_error("create the result bucket", &err)),
    }
}

/// The identity of a stored call, as its header carries it.
pub(super) fn identity_header(identity: &Identity) -> String {
    json!({"sub": identity.subject(), "iss": identity.issuer(), "scopes": identity.scopes()})
        .to_string()
}

pub(super) fn identity_from_header(text: &str) -> Option<Identity> {
    let value: Value = serde_json::from_str(text).ok()?;
    let mut identity = Identity::new(value.get("sub")?.as_str()?);
    if let Some(issuer) = value.get("iss").and_then(Value::as_str) {
        identity = identity.with_issuer(issuer);
    }
    if let Some(scopes) = value.get("scopes").and_then(Value::as_array) {
        identity = identity.with_scopes(scopes.iter().filter_map(Value::as_str));
    }
    Some(identity)
}

/// Whether an id can be a key of the bucket (and names one key, not a pattern).
pub(crate) fn valid_key(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= 256
        && !id.starts_with('.')
        && !id.ends_with('.')
        && id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '=' | '/' | '.'))
}

/// Where a call stands in the bucket, as the workers judge it.
pub(super) enum Read {
    /// A sealed outcome: the call ran.
    Done,
    /// A worker's sealed claim that still holds, for `until` more.
    Held { worker: String, until: Duration },
    /// No outcome and no live claim (queued, a claim past its lease, a record no
    /// worker sealed, or none): the call may be claimed over this revision (0: no
    /// record).
    Free { revision: u64 },
}

pub(super) async fn read(store: &kv::Store, id: &str, seal: &Seal) -> Result<Read, ToolError> {
    let entry = store
        .entry(id)
        .await
        .map_err(|e| jetstream_error("read the call's state", &e))?;
    let Some(entry) = entry else {
        return Ok(Read::Free { revision: 0 });
    };
    let revision = entry.revision;
    if entry.operation != kv::Operation::Put {
        return Ok(Read::Free { revision });
    }
    let Ok(record) = serde_json::from_slice::<Value>(&entry.value) else {
        return Ok(Read::Free { revision });
    };
    if !seal.verify(&record) {
        return Ok(Read::Free { revision });
    }
    match record.get("status").and_then(Value::as_str) {
        Some("completed" | "failed") => Ok(Read::Done),
        Some("working") => {
            let lease = record.get("lease").and_then(Value::as_u64).unwrap_or(0);
            let now = now_ms();
            if lease > now {
                Ok(Read::Held {
                    worker: record
                        .get("worker")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                    until: Duration::from_millis(lease - now),
                })
            } else {
                Ok(Read::Free { revision })
            }
        }
        _ => Ok(Read::Free { revision }),
    }
}

/// Writes `record` over `revision` (0: where there is none) and answers the new
/// revision; `None` when the record changed meanwhile (or cannot be written).
pub(super) async fn write_rev(
    store: &kv::Store,
    id: &str,
    revision: u64,
    record: &Value,
) -> Option<u64> {
    let body = bytes::Bytes::from(record.to_string());
    if revision == 0 {
        store.create(id, body).await.ok()
    } else {
        store.update(id, body, revision).await.ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn servers_older_than_2_10_are_named_and_refused() {
        for ok in ["2.10.0", "2.11.4", "2.12.0-RC.1", "3.0.0", "v2.10.29"] {
            assert!(check_server_version(ok).is_ok(), "{ok}");
        }
        for old in ["2.9.25", "2.2.0", "1.4.1", "", "unknown"] {
            let err = check_server_version(old).expect_err(old);
            assert_eq!(err.code(), "UNSUPPORTED");
            assert!(err.to_string().contains("2.10 or later"), "{err}");
            assert!(err.to_string().contains(&format!("{old:?}")), "{err}");
        }
    }

    #[test]
    fn identities_survive_their_header() {
        let who = Identity::new("ann")
            .with_issuer("https://i")
            .with_scopes(["a", "b"]);
        let back = identity_from_header(&identity_header(&who)).unwrap();
        assert_eq!(back.subject(), "ann");
        assert_eq!(back.issuer(), Some("https://i"));
        assert_eq!(back.scopes(), ["a", "b"]);
        assert!(identity_from_header("{}").is_none());
    }
}
