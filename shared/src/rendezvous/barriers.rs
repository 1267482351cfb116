//! Barriers: finding one (live, of its namespace's incarnation), create, read, list, update
//! and delete, and the listing of a generation's participants.

use super::model::{self, BarrierRow};
use super::page::{check_token, Lister, Page};
use super::{
    barrier_item, barrier_not_found, barriers_pk, check_name, contended, damaged, gen_key, notify,
    token, Barrier, CreateBarrier, Found, Participant, Rendezvous, UpdateBarrier, MAX_ATTEMPTS,
};
use super::{barrier_row, ARRIVED};
use crate::budget::Budget;
use crate::ports::{Item, PutMode, TxOp};
use crate::{Error, Result};

impl<B: Budget + ?Sized> Rendezvous<'_, B> {
    /// Reads a live barrier: `None` when there is none, or it is past its inactivity window.
    /// The namespace's incarnation as this process cached it, read again when no barrier is
    /// found under it.
    pub(super) async fn find(&self, ns: &str, name: &str) -> Result<Option<Found>> {
        let (incarnation, cached) = self.ns_incarnation(ns, false).await?;
        check_name("barrier_name", name)?;
        match self.find_in(ns, &incarnation, name).await? {
            None if cached => {
                let (now, _) = self.ns_incarnation(ns, true).await?;
                match now == incarnation {
                    true => Ok(None),
                    false => self.find_in(ns, &now, name).await,
                }
            }
            found => Ok(found),
        }
    }

    /// [`Self::find`] in the namespace's incarnation `incarnation`.
    async fn find_in(&self, ns: &str, incarnation: &str, name: &str) -> Result<Option<Found>> {
        let pk = barriers_pk(self.tenant, ns, incarnation);
        self.budget.spend(1)?;
        let Some(item) = self.kv.get(&pk, &format!("b#{name}")).await? else {
            return Ok(None);
        };
        let row = barrier_row(&item)?;
        if row.barrier.inactive_at_ms() <= self.now_ms() {
            return Ok(None);
        }
        let parts_pk = format!("{pk}#{name}#{}", row.incarnation);
        Ok(Some(Found {
            row,
            seen: item,
            pk,
            parts_pk,
        }))
    }

    /// Reads a barrier found a moment ago again, by its partition: `not_found` if it is gone
    /// or is another incarnation now.
    pub(super) async fn reread(&self, found: &Found) -> Result<Found> {
        let name = &found.row.barrier.name;
        self.budget.spend(1)?;
        let item = self
            .kv
            .get(&found.pk, &format!("b#{name}"))
            .await?
            .ok_or_else(barrier_not_found)?;
        let row = barrier_row(&item)?;
        if row.incarnation != found.row.incarnation || row.barrier.inactive_at_ms() <= self.now_ms()
        {
            return Err(barrier_not_found());
        }
        Ok(Found {
            row,
            seen: item,
            pk: found.pk.clone(),
            parts_pk: found.parts_pk.clone(),
        })
    }

    pub(super) async fn need(&self, ns: &str, name: &str) -> Result<Found> {
        self.find(ns, name).await?.ok_or_else(barrier_not_found)
    }

    /// Creates a barrier at generation 1.
    pub async fn create(&self, spec: CreateBarrier) -> Result<Barrier> {
        spec.validate()?;
        if spec.continue_with.is_some() && !self.queue_enabled {
            return Err(Error::InvalidInput(format!(
                "continue_with needs a queue: set \"queue\": true in tenants/{}/config.json",
                self.tenant
            )));
        }
        if let Some(s) = &spec.continue_with {
            crate::keys::check_name("script", s).map_err(Error::InvalidInput)?;
        }
        for attempt in 0..MAX_ATTEMPTS {
            let (mut ns, ns_version) = self.need_ns(&spec.namespace).await?;
            let pk = barriers_pk(self.tenant, &spec.namespace, &ns.incarnation);
            if attempt == 0 {
                self.check_barrier_cap(&spec.namespace, self.count_barriers(&pk))
                    .await?;
            }
            if ns.barriers >= self.max_barriers {
                // Barriers gone for inactivity still count: count the live ones.
                ns.barriers = self.count_barriers(&pk).await?;
                if ns.barriers >= self.max_barriers {
                    return Err(Error::LimitExceeded {
                        limit: "barriers_per_namespace",
                        detail: format!(
                            "namespace {:?} holds {} barriers, the most it may; delete some first",
                            spec.namespace, ns.barriers
                        ),
                    });
                }
            }
            ns.barriers += 1;
            // A row past its window may still be in the store (sweeps lag): replace it.
            self.budget.spend(1)?;
            let mode = match self.kv.get(&pk, &format!("b#{}", spec.name)).await? {
                None => PutMode::Create,
                Some(item) => {
                    let old = barrier_row(&item)?;
                    if old.barrier.inactive_at_ms() > self.now_ms() {
                        return Err(Error::AlreadyExists {
                            what: "barrier".into(),
                        });
                    }
                    PutMode::Update(item.version)
                }
            };
            let now = self.now_ns();
            let row = BarrierRow {
                barrier: Barrier {
                    name: spec.name.clone(),
                    description: spec.description.clone(),
                    expected_processes: spec.expected_processes,
                    arrived_processes: 0,
                    generation: 1,
                    version: 1,
                    created_at: now,
                    updated_at: now,
                    last_activity_at: now,
                    delete_inactive_after_seconds: spec.delete_inactive_after_seconds,
                    metadata: spec.metadata.clone(),
                    continue_with: spec.continue_with.clone(),
                },
                incarnation: token(),
                chain: crate::observe::chain(),
            };
            let ops = vec![
                TxOp::Put {
                    item: barrier_item(&pk, &row),
                    mode: mode.clone(),
                },
                TxOp::Put {
                    item: self.ns_item(&ns),
                    mode: Self::ns_mode(&ns_version),
                },
            ];
            self.budget.spend(1)?;
            match self.kv.transact(ops).await? {
                Ok(()) => return Ok(row.barrier),
                Err(0) if mode == PutMode::Create => {
                    return Err(Error::AlreadyExists {
                        what: "barrier".into(),
                    })
                }
                // The namespace's count, or the old row, changed meanwhile: read again.
                Err(_) => continue,
            }
        }
        Err(contended())
    }

    pub(super) async fn count_barriers(&self, pk: &str) -> Result<u64> {
        let mut n = 0;
        let mut after: Option<String> = None;
        loop {
            self.budget.spend(1)?;
            let page = self.kv.query(pk, "b#", after.as_deref(), 1000).await?;
            let now = self.now_ms();
            for item in &page.items {
                let row = barrier_row(item)?;
                n += u64::from(row.barrier.inactive_at_ms() > now);
            }
            match page.next {
                Some(next) => after = Some(next),
                None => return Ok(n),
            }
        }
    }

    /// A barrier.
    pub async fn get(&self, ns: &str, name: &str) -> Result<Barrier> {
        check_name("namespace_name", ns)?;
        check_name("barrier_name", name)?;
        Ok(self.need(ns, name).await?.row.barrier)
    }

    /// A page of a namespace's barriers in name order ([`Page`]); barriers past their window
    /// are not listed.
    pub async fn list(&self, ns: &str, token: &str, limit: u64) -> Result<Page<Barrier>> {
        check_name("namespace_name", ns)?;
        check_token(token)?;
        let limit = model::page_limit(limit)?;
        let (ns_row, _) = self.need_ns(ns).await?;
        let pk = barriers_pk(self.tenant, ns, &ns_row.incarnation);
        let now = self.now_ms();
        let lister = Lister {
            kv: self.kv,
            budget: self.budget,
            pk: &pk,
            prefix: "b#",
            keep: |item: &Item| {
                let row = barrier_row(item)?;
                Ok((row.barrier.inactive_at_ms() > now).then_some(row.barrier))
            },
        };
        lister.page(token, limit).await
    }

    /// Deletes a barrier with its participants; a missing one is fine.
    pub async fn delete(&self, ns: &str, name: &str) -> Result<()> {
        check_name("namespace_name", ns)?;
        check_name("barrier_name", name)?;
        for _ in 0..MAX_ATTEMPTS {
            let (mut ns_row, ns_version) = self.need_ns(ns).await?;
            let Some(found) = self.find(ns, name).await? else {
                return Ok(());
            };
            ns_row.barriers = ns_row.barriers.saturating_sub(1);
            let ops = vec![
                TxOp::Delete {
                    pk: found.pk.clone(),
                    sk: format!("b#{name}"),
                },
                TxOp::Put {
                    item: self.ns_item(&ns_row),
                    mode: Self::ns_mode(&ns_version),
                },
            ];
            self.budget.spend(1)?;
            match self.kv.transact(ops).await? {
                Ok(()) | Err(0) => {
                    super::waiting::note(self.kv, self.tenant, ns, name, None);
                    notify::wake(self.tenant, ns, name, None);
                    return Ok(());
                }
                Err(_) => continue,
            }
        }
        Err(contended())
    }

    /// Replaces a barrier's description, count, metadata and window if it has
    /// `expected_version`. A count equal to the arrived count trips it.
    pub async fn update(&self, spec: UpdateBarrier) -> Result<Barrier> {
        spec.validate()?;
        for _ in 0..MAX_ATTEMPTS {
            let found = self.need(&spec.namespace, &spec.name).await?;
            let b = &found.row.barrier;
            if b.version != spec.expected_version {
                return Err(Error::Precondition {
                    what: format!(
                        "expected_version {} does not match the barrier's version {}",
                        spec.expected_version, b.version
                    ),
                });
            }
            if spec.expected_processes < b.arrived_processes {
                return Err(Error::InvalidInput(format!(
                    "expected_processes {} is below arrived_processes {}; it may be lowered to {} at least, which trips the barrier",
                    spec.expected_processes, b.arrived_processes, b.arrived_processes
                )));
            }
            let mut next = found.row.clone();
            next.barrier.description = spec.description.clone();
            next.barrier.expected_processes = spec.expected_processes;
            next.barrier.metadata = spec.metadata.clone();
            next.barrier.delete_inactive_after_seconds = spec.delete_inactive_after_seconds;
            next.barrier.version += 1;
            next.barrier.updated_at = self.now_ns();
            let tripped = b.arrived_processes > 0 && spec.expected_processes == b.arrived_processes;
            if tripped {
                next.barrier.trip();
            }
            // The JSON rewritten with the arrivals counted so far, if none came since.
            let mut ops = vec![TxOp::Count(found.rewrite(&next, found.count(ARRIVED)))];
            let continues = tripped && self.claim_continuation(&found, &mut ops);
            self.budget.spend(1)?;
            match self.kv.transact(ops).await? {
                Ok(()) => {
                    if tripped {
                        self.after_trip(&spec.namespace, &spec.name, &found, &next, continues)
                            .await?;
                    }
                    return Ok(next.barrier);
                }
                // An arrival got in first: check the version and the count again.
                Err(_) => continue,
            }
        }
        Err(contended())
    }

    /// A page of one generation's participants (0: the current one) in process_id order
    /// ([`Page`]).
    pub async fn participants(
        &self,
        ns: &str,
        name: &str,
        generation: u64,
        token: &str,
        limit: u64,
    ) -> Result<Page<Participant>> {
        check_name("namespace_name", ns)?;
        check_name("barrier_name", name)?;
        check_token(token)?;
        let limit = model::page_limit(limit)?;
        let found = self.need(ns, name).await?;
        let generation = if generation == 0 {
            found.row.barrier.generation
        } else {
            generation
        };
        let prefix = format!("p#{}#", gen_key(generation));
        let lister = Lister {
            kv: self.kv,
            budget: self.budget,
            pk: &found.parts_pk,
            prefix: &prefix,
            keep: |item: &Item| {
                serde_json::from_str(&item.value)
                    .map(Some)
                    .map_err(|e| damaged("participant", e))
            },
        };
        lister.page(token, limit).await
    }
}
