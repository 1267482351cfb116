//! A tenant's namespaces: create, read, list, update and delete, the `default` namespace that
//! every tenant has, and the namespace row that every barrier call needs: its incarnation
//! keys the barriers' partition. That is cached per process for [`NS_CACHE`] (an arrival or a
//! wait poll reads one row, the barrier's, not two); a barrier not found under a cached
//! incarnation reads the namespace again, and a delete in this process forgets it at once. So a
//! namespace deleted (or deleted and made again) by another process may still reach its old
//! barriers from here for up to [`NS_CACHE`], as a revoked API key may be taken for 1 s.

use std::collections::HashMap;
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use super::check_name;
use super::model::{self, NamespaceRow};
use super::page::{check_token, Lister, Page};
use super::{
    contended, damaged, ns_pk, token, Metadata, Namespace, Rendezvous, DEFAULT_NAMESPACE,
    MAX_ATTEMPTS, NEVER_S,
};
use crate::budget::Budget;
use crate::ports::{Item, NewItem, PutMode};
use crate::{Error, Result};

/// Every tenant has `default`; its row is written the first time anything reads it, created
/// then, always with the same incarnation (so barriers made before its row are still its own).
fn default_namespace(now_ns: i64) -> NamespaceRow {
    NamespaceRow {
        namespace: Namespace {
            name: DEFAULT_NAMESPACE.into(),
            description: String::new(),
            metadata: Metadata::new(),
            created_at: now_ns,
            updated_at: now_ns,
        },
        incarnation: "0".into(),
        barriers: 0,
    }
}

/// How long this process takes a namespace's incarnation as read, unless
/// [`Rendezvous::ns_cache`] says otherwise (see the module docs).
pub const NS_CACHE: Duration = Duration::from_secs(1);
/// The most namespaces cached at once; past it the cache starts again empty.
const NS_CACHE_MAX: usize = 10_000;

/// A cached incarnation's key: the tenant and the namespace. (A process has one store; where
/// tests run several, an incarnation cached from another finds no barrier, and the namespace
/// is read again: incarnations are random, and `default`'s is the same in every store.)
type NsKey = (String, String);

static INCARNATIONS: LazyLock<Mutex<HashMap<NsKey, (String, Instant)>>> =
    LazyLock::new(|| Mutex::new(HashMap::new()));

fn cache() -> std::sync::MutexGuard<'static, HashMap<NsKey, (String, Instant)>> {
    INCARNATIONS.lock().unwrap_or_else(|p| p.into_inner())
}

impl<B: Budget + ?Sized> Rendezvous<'_, B> {
    fn ns_key(&self, name: &str) -> NsKey {
        (self.tenant.to_string(), name.to_string())
    }

    /// Notes what this process read of namespace `name` (`None`: it is not there).
    fn remember_ns(&self, name: &str, incarnation: Option<&str>) {
        let mut map = cache();
        match incarnation {
            Some(i) => {
                if map.len() >= NS_CACHE_MAX {
                    map.clear();
                }
                map.insert(self.ns_key(name), (i.to_string(), Instant::now()));
            }
            None => {
                map.remove(&self.ns_key(name));
            }
        }
    }

    /// The incarnation of namespace `name` (`not_found` when there is none), from this
    /// process's cache when it was read within [`Rendezvous::ns_cache`] and `fresh` is false;
    /// and whether
    /// it came from the cache.
    pub(super) async fn ns_incarnation(&self, name: &str, fresh: bool) -> Result<(String, bool)> {
        check_name("namespace_name", name)?;
        if !fresh {
            let hit = cache()
                .get(&self.ns_key(name))
                .filter(|(_, at)| at.elapsed() < self.ns_cache)
                .map(|(i, _)| i.clone());
            if let Some(i) = hit {
                return Ok((i, true));
            }
        }
        Ok((self.need_ns(name).await?.0.incarnation, false))
    }

    pub(super) async fn ns_row(
        &self,
        name: &str,
    ) -> Result<Option<(NamespaceRow, Option<String>)>> {
        let row = self.read_ns(name).await?;
        self.remember_ns(name, row.as_ref().map(|(r, _)| r.incarnation.as_str()));
        Ok(row)
    }

    async fn read_ns(&self, name: &str) -> Result<Option<(NamespaceRow, Option<String>)>> {
        // Twice at most: a missing `default` is written, and read again if another call wrote
        // it first.
        for _ in 0..2 {
            self.budget.spend(1)?;
            match self
                .kv
                .get(&ns_pk(self.tenant), &format!("n#{name}"))
                .await?
            {
                Some(item) => {
                    let row: NamespaceRow =
                        serde_json::from_str(&item.value).map_err(|e| damaged("namespace", e))?;
                    return Ok(Some((row, Some(item.version))));
                }
                None if name == DEFAULT_NAMESPACE => {
                    let row = default_namespace(self.now_ns());
                    self.budget.spend(1)?;
                    match self.kv.put(self.ns_item(&row), PutMode::Create).await {
                        Ok(version) => return Ok(Some((row, Some(version)))),
                        Err(Error::AlreadyExists { .. } | Error::Precondition { .. }) => continue,
                        Err(e) => return Err(e),
                    }
                }
                None => return Ok(None),
            }
        }
        Err(contended())
    }

    pub(super) async fn need_ns(&self, name: &str) -> Result<(NamespaceRow, Option<String>)> {
        check_name("namespace_name", name)?;
        self.ns_row(name).await?.ok_or_else(no_namespace)
    }

    pub(super) fn ns_item(&self, row: &NamespaceRow) -> NewItem {
        NewItem {
            pk: ns_pk(self.tenant),
            sk: format!("n#{}", row.namespace.name),
            value: serde_json::to_string(row).unwrap_or_default(),
            expires_at_s: NEVER_S,
        }
    }

    pub(super) fn ns_mode(version: &Option<String>) -> PutMode {
        match version {
            Some(v) => PutMode::Update(v.clone()),
            None => PutMode::Create,
        }
    }

    /// Creates a namespace.
    pub async fn create_namespace(
        &self,
        name: &str,
        description: &str,
        metadata: Metadata,
    ) -> Result<Namespace> {
        check_name("name", name)?;
        model::check_description(description)?;
        model::check_metadata(&metadata)?;
        if name == DEFAULT_NAMESPACE {
            return Err(Error::AlreadyExists {
                what: "namespace \"default\" (every tenant has it)".into(),
            });
        }
        let now = self.now_ns();
        let row = NamespaceRow {
            namespace: Namespace {
                name: name.into(),
                description: description.into(),
                metadata,
                created_at: now,
                updated_at: now,
            },
            incarnation: token(),
            barriers: 0,
        };
        self.check_namespace_cap().await?;
        self.budget.spend(1)?;
        match self.kv.put(self.ns_item(&row), PutMode::Create).await {
            Ok(_) => Ok(row.namespace),
            Err(Error::AlreadyExists { .. }) => Err(Error::AlreadyExists {
                what: "namespace".into(),
            }),
            Err(e) => Err(e),
        }
    }

    /// A namespace.
    pub async fn get_namespace(&self, name: &str) -> Result<Namespace> {
        Ok(self.need_ns(name).await?.0.namespace)
    }

    /// A page of namespaces in name order ([`Page`]: either token gives the page beside it).
    pub async fn list_namespaces(&self, token: &str, limit: u64) -> Result<Page<Namespace>> {
        check_token(token)?;
        let limit = model::page_limit(limit)?;
        // `default` is listed as every other namespace: its row is written if it is not yet.
        self.ns_row(DEFAULT_NAMESPACE).await?;
        let pk = ns_pk(self.tenant);
        let lister = Lister {
            kv: self.kv,
            budget: self.budget,
            pk: &pk,
            prefix: "n#",
            keep: |item: &Item| {
                let row: NamespaceRow =
                    serde_json::from_str(&item.value).map_err(|e| damaged("namespace", e))?;
                Ok(Some(row.namespace))
            },
        };
        lister.page(token, limit).await
    }

    /// How many barriers the tenant's namespaces hold, as their counts have it (barriers gone
    /// for inactivity count until a create at the limit counts again), reading at most
    /// `max_namespaces` namespace rows; and whether there were more.
    pub async fn barrier_count(&self, max_namespaces: usize) -> Result<(u64, bool)> {
        let mut n = 0;
        let mut read = 0;
        let mut after: Option<String> = None;
        loop {
            self.budget.spend(1)?;
            let page = self
                .kv
                .query(&ns_pk(self.tenant), "n#", after.as_deref(), 1000)
                .await?;
            for item in &page.items {
                let row: NamespaceRow =
                    serde_json::from_str(&item.value).map_err(|e| damaged("namespace", e))?;
                n += row.barriers;
            }
            read += page.items.len();
            match page.next {
                Some(next) if read < max_namespaces => after = Some(next),
                Some(_) => return Ok((n, true)),
                None => return Ok((n, false)),
            }
        }
    }

    /// Replaces a namespace's description and metadata.
    pub async fn update_namespace(
        &self,
        name: &str,
        description: &str,
        metadata: Metadata,
    ) -> Result<Namespace> {
        model::check_description(description)?;
        model::check_metadata(&metadata)?;
        for _ in 0..MAX_ATTEMPTS {
            let (mut row, version) = self.need_ns(name).await?;
            row.namespace.description = description.into();
            row.namespace.metadata = metadata.clone();
            row.namespace.updated_at = self.now_ns();
            self.budget.spend(1)?;
            match self
                .kv
                .put(self.ns_item(&row), Self::ns_mode(&version))
                .await
            {
                Ok(_) => return Ok(row.namespace),
                // A barrier create or delete moved its count meanwhile: read again.
                Err(Error::Precondition { .. } | Error::AlreadyExists { .. }) => continue,
                Err(e) => return Err(e),
            }
        }
        Err(contended())
    }

    /// Deletes a namespace with all its barriers (they are out of reach at once, their rows
    /// expire). The `default` namespace cannot be deleted.
    pub async fn delete_namespace(&self, name: &str) -> Result<()> {
        check_name("namespace_name", name)?;
        if name == DEFAULT_NAMESPACE {
            return Err(Error::InvalidInput(
                "the default namespace cannot be deleted; delete its barriers one by one".into(),
            ));
        }
        if self.ns_row(name).await?.is_none() {
            return Err(no_namespace());
        }
        self.budget.spend(1)?;
        self.kv
            .delete(&ns_pk(self.tenant), &format!("n#{name}"), None)
            .await?;
        self.remember_ns(name, None);
        Ok(())
    }
}

/// The error of a namespace that is not there.
fn no_namespace() -> Error {
    Error::missing(crate::error::Missing::Namespace, "namespace")
}
