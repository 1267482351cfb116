//! Per-tenant caps on rendezvous namespaces and barriers (`limits.max_rendezvous_namespaces`,
//! `limits.max_rendezvous_barriers`), so that one tenant cannot fill the table. A create past
//! a cap fails with the limit's error; the figures are read from the tenant's namespace rows
//! (one query of its namespace partition), so creates racing each other at the cap may pass it
//! by as many as run at once.

use super::model::NamespaceRow;
use super::{damaged, ns_pk, Rendezvous, DEFAULT_NAMESPACE};
use crate::budget::Budget;
use crate::config::{Limits, CEILINGS};
use crate::{Error, Result};

/// A tenant's namespace rows: name and barrier count.
async fn namespaces<B: Budget + ?Sized>(r: &Rendezvous<'_, B>) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        r.budget.spend(1)?;
        let page =
            r.kv.query(&ns_pk(r.tenant), "n#", after.as_deref(), 1000)
                .await?;
        for item in &page.items {
            let row: NamespaceRow =
                serde_json::from_str(&item.value).map_err(|e| damaged("namespace", e))?;
            out.push((row.namespace.name, row.barriers));
        }
        match page.next {
            Some(next) => after = Some(next),
            None => return Ok(out),
        }
    }
}

impl<B: Budget + ?Sized> Rendezvous<'_, B> {
    /// Caps this tenant's namespaces and barriers at its limits (callers acting for a tenant:
    /// the API, scripts; the operator's CLI is not capped).
    pub fn limit_to(&mut self, limits: &Limits) {
        self.max_namespaces = u64::from(limits.max_rendezvous_namespaces);
        self.max_tenant_barriers = u64::from(limits.max_rendezvous_barriers);
        self.max_waits = u64::from(limits.max_rendezvous_waits);
    }

    /// Refuses a new namespace past `max_rendezvous_namespaces`.
    pub(super) async fn check_namespace_cap(&self) -> Result<()> {
        if self.max_namespaces == u64::MAX {
            return Ok(());
        }
        let held = namespaces(self)
            .await?
            .iter()
            .filter(|(n, _)| n != DEFAULT_NAMESPACE)
            .count() as u64;
        if held >= self.max_namespaces {
            return Err(Error::LimitExceeded {
                limit: "max_rendezvous_namespaces",
                detail: format!(
                    "tenant {:?} holds {held} rendezvous namespaces and may hold {}; delete some \
                     (DeleteNamespace) or raise limits.max_rendezvous_namespaces in \
                     tenants/{}/config.json (ceiling {})",
                    self.tenant,
                    self.max_namespaces,
                    self.tenant,
                    CEILINGS.max_rendezvous_namespaces
                ),
            });
        }
        Ok(())
    }

    /// Refuses a new barrier in `namespace` past `max_rendezvous_barriers`. Barriers gone for
    /// inactivity count until a create at the cap counts the namespace's live ones (`live`,
    /// read only then).
    pub(super) async fn check_barrier_cap(
        &self,
        namespace: &str,
        live: impl std::future::Future<Output = Result<u64>>,
    ) -> Result<()> {
        if self.max_tenant_barriers == u64::MAX {
            return Ok(());
        }
        let rows = namespaces(self).await?;
        let total: u64 = rows.iter().map(|(_, n)| n).sum();
        if total < self.max_tenant_barriers {
            return Ok(());
        }
        let here = rows
            .iter()
            .find(|(n, _)| n == namespace)
            .map_or(0, |(_, n)| *n);
        let held = total - here + live.await?;
        if held >= self.max_tenant_barriers {
            return Err(Error::LimitExceeded {
                limit: "max_rendezvous_barriers",
                detail: format!(
                    "tenant {:?} holds {held} rendezvous barriers and may hold {}; delete some \
                     (DeleteBarrier, or DeleteNamespace for all of a namespace's) or raise \
                     limits.max_rendezvous_barriers in tenants/{}/config.json (ceiling {})",
                    self.tenant,
                    self.max_tenant_barriers,
                    self.tenant,
                    CEILINGS.max_rendezvous_barriers
                ),
            });
        }
        Ok(())
    }
}
