//! Replay of object notifications that were lost: for every key under a prefix of a tenant's
//! folder, an `ObjectCreated` notification as S3 writes it goes onto the events queue, so the
//! tenant's router sees the object again. Handlers must take duplicates anyway (S3 delivers at
//! least once), so replaying an object whose event was not lost is harmless.

use crate::budget::Budget;
use crate::config::Deployment;
use crate::events::object_created_body;
use crate::ports::{ObjectStore, Queue, QueueKind};
use crate::{Error, Result};

/// Backend calls one replayed key costs: its send (the listing is shared by a page).
pub const CALLS_PER_KEY: u32 = 1;

/// What a replay did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Replayed {
    /// Notifications sent.
    pub replayed: u64,
    /// Where to go on: the last key replayed, when the budget ran out first. `None`: done.
    pub cursor: Option<String>,
}

/// The places of a replay: which tenant's folder of which bucket.
pub struct Replay<'a> {
    /// The buckets.
    pub objects: &'a dyn ObjectStore,
    /// The events queue's side.
    pub queue: &'a dyn Queue,
    /// The deployment (real bucket names, folders).
    pub deployment: &'a Deployment,
    /// The tenant.
    pub tenant: &'a str,
    /// The data-ops budget: a replay stops, with a cursor, before it would run out.
    pub budget: &'a dyn Budget,
}

impl Replay<'_> {
    /// Sends a notification for each key under `prefix` of `logical` (relative to the tenant's
    /// folder) after the key `after`, a page at a time, while the budget lasts.
    pub async fn run(&self, logical: &str, prefix: &str, after: Option<&str>) -> Result<Replayed> {
        crate::keys::check_prefix(prefix).map_err(Error::InvalidInput)?;
        let real = self
            .deployment
            .real_bucket(logical)
            .ok_or_else(|| Error::NotFound {
                what: format!("bucket {logical:?}"),
                hint: "replay names a logical bucket of deployment.json, or $batch".into(),
                missing: crate::error::Missing::Other,
            })?
            .to_string();
        let folder = self.deployment.full_key(logical, self.tenant, "");
        let full_prefix = format!("{folder}{prefix}");
        let mut after = after.map(|a| format!("{folder}{a}"));
        let mut out = Replayed::default();
        loop {
            // A page costs its listing and a send per key; keep one call for the listing.
            let left = self.budget.left();
            if left < 1 + CALLS_PER_KEY {
                out.cursor = after.map(|k| k[folder.len()..].to_string());
                return Ok(out);
            }
            let limit = ((left - 1) / CALLS_PER_KEY).min(1000) as usize;
            self.budget.spend(1)?;
            let page = self
                .objects
                .list(&real, &full_prefix, after.as_deref(), limit)
                .await?;
            for meta in &page.objects {
                self.budget.spend(CALLS_PER_KEY)?;
                let body = object_created_body(&real, meta, "replay");
                self.queue.send(QueueKind::Events, body, 0).await?;
                out.replayed += 1;
                after = Some(meta.key.clone());
            }
            if page.next.is_none() {
                return Ok(out);
            }
        }
    }
}
