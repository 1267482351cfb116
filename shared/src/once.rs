//! Work that runs once though its message arrives twice. A continuation's work message names
//! its work ([`crate::ports::WorkMessage::once`]: the barrier and its create, the rendezvous
//! barrier's incarnation and generation), and the queue function runs it only if no earlier
//! delivery of that work finished:
//!
//! 1. [`claim`]: create the row `w#<tenant>` / `<key>` with a lease until the run's end (or
//!    take over one whose lease lapsed and that never finished);
//! 2. run the script;
//! 3. [`finish`] marks the row done when the script succeeded; [`release`] deletes it when the
//!    script failed, so that the queue's retry runs at once.
//!
//! A second delivery that finds the row done is dropped; one that finds it leased fails with
//! [`Error::Held`] and is retried by the queue after the first has finished. Second deliveries
//! come from the SDK (a `SendMessage` whose answer was lost is sent again: two messages), from
//! SQS itself (at least once), and from a dispatch that a later call finished after the first
//! call's send. Only a run whose `finish` fails past the SDK's retries (the script ran, the row
//! still leased) can run once more, after its lease.
//!
//! The rows expire after [`RETAIN_S`]; no `native.db` call (`d#...`) can address them.

use serde_json::{json, Value};

use crate::ports::{now_ms, KvStore, NewItem, PutMode};
use crate::{Error, Result};

/// How long a finished run is remembered: as long as every other row of a barrier lives.
pub const RETAIN_S: i64 = 7 * 86_400;

/// What [`claim`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Claim {
    /// The work is this call's to run.
    Run,
    /// An earlier delivery finished it: drop this one.
    Done,
}

fn pk(tenant: &str) -> String {
    format!("w#{tenant}")
}

fn row(tenant: &str, key: &str, value: Value, now_ms: i64) -> NewItem {
    NewItem {
        pk: pk(tenant),
        sk: key.to_string(),
        value: value.to_string(),
        expires_at_s: now_ms / 1000 + RETAIN_S,
    }
}

/// Claims the work `key` of `tenant` for a run that ends by `until_ms`: [`Claim::Run`] when it
/// is this call's, [`Claim::Done`] when an earlier delivery finished it, and
/// [`Error::Held`] while another call runs it.
pub async fn claim(kv: &dyn KvStore, tenant: &str, key: &str, until_ms: i64) -> Result<Claim> {
    let now = now_ms();
    let lease = |now| row(tenant, key, json!({ "until_ms": until_ms }), now);
    match kv.put(lease(now), PutMode::Create).await {
        Ok(_) => return Ok(Claim::Run),
        Err(Error::AlreadyExists { .. }) => {}
        Err(e) => return Err(e),
    }
    let Some(found) = kv.get(&pk(tenant), key).await? else {
        // Gone since (released by a run that failed): this call may run it.
        return match kv.put(lease(now), PutMode::Create).await {
            Ok(_) => Ok(Claim::Run),
            Err(Error::AlreadyExists { .. }) => Err(held(until_ms, now)),
            Err(e) => Err(e),
        };
    };
    let v: Value = serde_json::from_str(&found.value).unwrap_or_default();
    if v["done"] == json!(true) {
        return Ok(Claim::Done);
    }
    let leased = v["until_ms"].as_i64().unwrap_or(0);
    if leased > now {
        return Err(held(leased, now));
    }
    // The lease lapsed and the run never finished: its caller died. Take it over, unless
    // another call just did.
    match kv.put(lease(now), PutMode::Update(found.version)).await {
        Ok(_) => Ok(Claim::Run),
        Err(Error::Precondition { .. }) => Err(held(until_ms, now)),
        Err(e) => Err(e),
    }
}

/// Marks the work `key` of `tenant` done: later deliveries of it are dropped.
pub async fn finish(kv: &dyn KvStore, tenant: &str, key: &str) -> Result<()> {
    kv.put(
        row(tenant, key, json!({ "done": true }), now_ms()),
        PutMode::Overwrite,
    )
    .await
    .map(|_| ())
}

/// Gives up the claim on the work `key` of `tenant` after its run failed, so that the queue's
/// retry runs it at once (without this, after the lease).
pub async fn release(kv: &dyn KvStore, tenant: &str, key: &str) -> Result<()> {
    kv.delete(&pk(tenant), key, None).await.map(|_| ())
}

fn held(until_ms: i64, now_ms: i64) -> Error {
    Error::Held {
        what: "the continuation is being run by another delivery of its message".into(),
        retry_after_s: ((until_ms - now_ms).max(0) / 1000 + 1) as u32,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::Embedded;

    #[tokio::test]
    async fn a_second_delivery_waits_for_the_first_and_is_dropped_once_it_finished() {
        let dir = tempfile::tempdir().unwrap();
        let e = Embedded::open(&dir.path().join(".native"), vec![]).unwrap();
        let kv = &*e.backends().kv;
        let until = now_ms() + 60_000;
        // The first delivery runs; a second one meanwhile is told to retry.
        assert_eq!(claim(kv, "acme", "k", until).await.unwrap(), Claim::Run);
        let busy = claim(kv, "acme", "k", until).await.unwrap_err();
        assert!(matches!(busy, Error::Held { .. }), "{busy:?}");
        // Once it finished, a second delivery is dropped; another tenant's key is its own.
        finish(kv, "acme", "k").await.unwrap();
        assert_eq!(claim(kv, "acme", "k", until).await.unwrap(), Claim::Done);
        assert_eq!(claim(kv, "other", "k", until).await.unwrap(), Claim::Run);
        // A failed run releases its claim: the retry runs at once.
        assert_eq!(claim(kv, "acme", "j", until).await.unwrap(), Claim::Run);
        release(kv, "acme", "j").await.unwrap();
        assert_eq!(claim(kv, "acme", "j", until).await.unwrap(), Claim::Run);
        // A claim whose caller died lapses, and the next delivery takes it over.
        assert_eq!(
            claim(kv, "acme", "d", now_ms() - 1).await.unwrap(),
            Claim::Run
        );
        assert_eq!(claim(kv, "acme", "d", until).await.unwrap(), Claim::Run);
        assert!(claim(kv, "acme", "d", until).await.is_err());
    }
}
