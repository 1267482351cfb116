//! Tenant API keys for inbound HTTP: created, listed, revoked and checked over the key-value
//! port, so the same code manages keys in `.native/` and in the DynamoDB table.
//!
//! A key reads `nk_<id>_<secret>`: `id` (16 hex digits) names it in lists and revocations;
//! `secret` (64 hex digits, 256 random bits) is shown once, at creation, and stored only as its
//! SHA-256. A fast hash is enough here: slow password hashes exist to make guessing
//! low-entropy secrets expensive, and nobody guesses 256 random bits, so a leaked table gives
//! away nothing usable while a request is checked in microseconds. Hashes are compared in
//! constant time. The tenant comes from the stored record, never from the request.
//!
//! Two items per key, under partitions no script can address (scripts reach only `d#...`
//! through `native.db`, barriers use `b#...`):
//! - `K#<id>` / `-`: `{ tenant, name, hash, created_ms, last_used_ms }`, read when a process
//!   first sees the key (and once a minute, and after a revocation: [`Verified`]);
//! - `KT#<tenant>` / `<id>`: the tenant's index, for `native keys list`.
//!
//! And one item for all keys, `KG#` / `-`, rewritten by every revocation where the store has no
//! shared counter ([`crate::ports::Generation`]; DynamoDB): what lets every process cache the
//! keys it verified ([`Verified`]) and still refuse a revoked one within [`GENERATION_EVERY`].

use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::ports::{now_ms, KvStore, NewItem, PutMode, TxOp};
use crate::{Error, Result};

/// What every key starts with, so that a key in a log or a paste is recognisable.
pub const PREFIX: &str = "nk_";
const ID_HEX: usize = 16;
const SECRET_HEX: usize = 64;
/// Keys never expire by themselves (31 Dec 9999); they are revoked.
const NEVER_S: i64 = 253_402_300_799;
/// `last_used_ms` is written at most this often per key, so that a busy key does not cost a
/// write per request.
const LAST_USED_EVERY_MS: i64 = 60_000;
/// The longest key name.
pub const MAX_NAME_BYTES: usize = 200;

fn record_pk(id: &str) -> String {
    format!("K#{id}")
}

fn index_pk(tenant: &str) -> String {
    format!("KT#{tenant}")
}

const RECORD_SK: &str = "-";

/// The generation item's key: one for all tenants, so that a process reads one item a second
/// however many tenants and keys it serves (revocations are rare; each one makes every process
/// read each key it serves once more).
const GENERATION_PK: &str = "KG#";
const GENERATION_SK: &str = "-";

/// How long a process uses the generation item it read before reading it again: the longest a
/// revoked key is still accepted by a process that had verified it, where the store has no
/// shared counter (DynamoDB). Where it has one (the embedded store), a revocation is seen at
/// the next request.
pub const GENERATION_EVERY: Duration = Duration::from_secs(1);

/// The stored record of a key (never the secret).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    tenant: String,
    name: String,
    hash: String,
    created_ms: i64,
    #[serde(default)]
    last_used_ms: Option<i64>,
}

/// A key as `native keys list` shows it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeyInfo {
    /// The key's id, as in `nk_<id>_...`.
    pub id: String,
    /// Its name, as given at creation (may be empty).
    pub name: String,
    /// When it was created, in ms since the epoch.
    pub created_ms: i64,
    /// When it last authenticated a request (to the minute), if ever.
    pub last_used_ms: Option<i64>,
}

/// A new key: the secret, to be shown once, and its id.
#[derive(Debug, Clone)]
pub struct NewKey {
    /// The whole key, `nk_<id>_<secret>`: hand it to the client, it is stored nowhere.
    pub key: String,
    /// Its id.
    pub id: String,
}

/// Why a presented key was refused. The message never repeats the key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum AuthError {
    /// No `Authorization` header.
    #[error("missing API key: send the header `Authorization: Bearer <key>` with a key from `native keys create TENANT`")]
    Missing,
    /// A header that is not `Bearer nk_<16 hex>_<64 hex>`.
    #[error("malformed Authorization header: expected `Bearer nk_<id>_<secret>` as printed by `native keys create`")]
    Malformed,
    /// Well formed, but no such key (never created, or revoked).
    #[error("API key is not valid: it was revoked or never existed; create one with `native keys create TENANT`")]
    Unknown,
}

fn sha256_hex(s: &str) -> String {
    hex::encode(Sha256::digest(s.as_bytes()))
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len
        && s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
}

/// Splits a key into id and secret, or says it is malformed.
fn parse(key: &str) -> std::result::Result<(&str, &str), AuthError> {
    let rest = key.strip_prefix(PREFIX).ok_or(AuthError::Malformed)?;
    let (id, secret) = rest.split_once('_').ok_or(AuthError::Malformed)?;
    if is_hex(id, ID_HEX) && is_hex(secret, SECRET_HEX) {
        Ok((id, secret))
    } else {
        Err(AuthError::Malformed)
    }
}

/// Takes the key out of an `Authorization` header value (`Bearer <key>`; the scheme is
/// case-insensitive, as RFC 9110 says).
pub fn bearer(header: Option<&str>) -> std::result::Result<&str, AuthError> {
    let h = header.ok_or(AuthError::Missing)?.trim();
    let (scheme, key) = h.split_once(' ').ok_or(AuthError::Malformed)?;
    if !scheme.eq_ignore_ascii_case("bearer") {
        return Err(AuthError::Malformed);
    }
    Ok(key.trim())
}

fn check_tenant(tenant: &str) -> Result<()> {
    if tenant.is_empty() || tenant.len() > 128 || tenant.contains('#') || tenant.contains('/') {
        return Err(Error::InvalidInput(format!(
            "tenant name {tenant:?} must be 1 to 128 bytes without '#' or '/'"
        )));
    }
    Ok(())
}

fn decode(item_value: &str, what: &str) -> Result<Record> {
    serde_json::from_str(item_value).map_err(|e| {
        Error::backend(
            "kv",
            format!("stored API key {what} is not a key record"),
            e,
        )
    })
}

/// Creates a key for `tenant` and returns it; only its hash is stored.
pub async fn create(kv: &dyn KvStore, tenant: &str, name: &str) -> Result<NewKey> {
    check_tenant(tenant)?;
    if name.len() > MAX_NAME_BYTES || name.chars().any(char::is_control) {
        return Err(Error::InvalidInput(format!(
            "key name must be at most {MAX_NAME_BYTES} bytes without control characters, not {} bytes",
            name.len()
        )));
    }
    let id = hex::encode(rand::random::<[u8; ID_HEX / 2]>());
    let secret = hex::encode(rand::random::<[u8; SECRET_HEX / 2]>());
    let key = format!("{PREFIX}{id}_{secret}");
    let created_ms = now_ms();
    let record = Record {
        tenant: tenant.into(),
        name: name.into(),
        hash: sha256_hex(&secret),
        created_ms,
        last_used_ms: None,
    };
    let index = serde_json::json!({ "name": name, "created_ms": created_ms });
    let ops = vec![
        TxOp::Put {
            item: NewItem {
                pk: record_pk(&id),
                sk: RECORD_SK.into(),
                value: serde_json::to_string(&record)
                    .map_err(|e| Error::InvalidInput(e.to_string()))?,
                expires_at_s: NEVER_S,
            },
            mode: PutMode::Create,
        },
        TxOp::Put {
            item: NewItem {
                pk: index_pk(tenant),
                sk: id.clone(),
                value: index.to_string(),
                expires_at_s: NEVER_S,
            },
            mode: PutMode::Create,
        },
    ];
    match kv.transact(ops).await? {
        Ok(()) => Ok(NewKey { key, id }),
        // 64 random bits colliding: say so rather than overwrite another key.
        Err(_) => Err(Error::AlreadyExists {
            what: format!("API key id {id}; run the command again"),
        }),
    }
}

/// The keys of `tenant`, in id order.
pub async fn list(kv: &dyn KvStore, tenant: &str) -> Result<Vec<KeyInfo>> {
    check_tenant(tenant)?;
    let mut out = Vec::new();
    let mut after: Option<String> = None;
    loop {
        let page = kv
            .query(&index_pk(tenant), "", after.as_deref(), 100)
            .await?;
        for it in page.items {
            // The record holds last use; an index entry whose record is gone was half revoked.
            if let Some(rec) = kv.get(&record_pk(&it.sk), RECORD_SK).await? {
                let r = decode(&rec.value, &it.sk)?;
                if r.tenant == tenant {
                    out.push(KeyInfo {
                        id: it.sk,
                        name: r.name,
                        created_ms: r.created_ms,
                        last_used_ms: r.last_used_ms,
                    });
                }
            }
        }
        match page.next {
            Some(n) => after = Some(n),
            None => return Ok(out),
        }
    }
}

/// Revokes key `id` of `tenant`: requests with it fail from now on in this process, and within
/// [`GENERATION_EVERY`] in every other one ([`Verified`]).
///
/// The record goes first, then the generation moves, then the index entry: a revocation cut
/// short after the record (the generation's write failed) still has its index entry, and
/// running it again finishes it.
pub async fn revoke(kv: &dyn KvStore, tenant: &str, id: &str) -> Result<()> {
    check_tenant(tenant)?;
    let not_found = || Error::NotFound {
        what: format!("API key {id:?} of tenant {tenant:?}"),
        hint: format!("`native keys list {tenant}` shows its keys"),
        missing: crate::error::Missing::Other,
    };
    if !is_hex(id, ID_HEX) {
        return Err(not_found());
    }
    match kv.get(&record_pk(id), RECORD_SK).await? {
        Some(rec) if decode(&rec.value, id)?.tenant == tenant => {
            kv.delete(&record_pk(id), RECORD_SK, None).await?;
        }
        Some(_) => return Err(not_found()),
        // Half revoked: the index entry (in the tenant's own partition) says it was theirs.
        None if kv.get(&index_pk(tenant), id).await?.is_some() => {}
        None => return Err(not_found()),
    }
    // Every process that cached the key ([`Verified`]) reads it again.
    bump(kv, id).await?;
    kv.delete(&index_pk(tenant), id, None).await?;
    Ok(())
}

/// Moves the store's generation on: its shared counter, else the generation item (a new
/// version is all that matters; the value says what moved it, for an operator who reads it).
async fn bump(kv: &dyn KvStore, id: &str) -> Result<()> {
    if let Some(g) = kv.generation() {
        g.bump();
        return Ok(());
    }
    let item = NewItem {
        pk: GENERATION_PK.into(),
        sk: GENERATION_SK.into(),
        value: serde_json::json!({ "revoked": id, "at_ms": now_ms() }).to_string(),
        expires_at_s: NEVER_S,
    };
    kv.put(item, PutMode::Overwrite).await.map(drop)
}

/// The generation item's version as a number: 0 when there is none.
fn stored_generation(item: Option<&crate::ports::Item>) -> u64 {
    item.map_or(0, |it| {
        let h = Sha256::digest(it.version.as_bytes());
        // Never 0, which is "no item yet".
        u64::from_le_bytes(h[..8].try_into().unwrap_or_default()).max(1)
    })
}

/// Checks a presented key and returns its tenant.
pub async fn authenticate(
    kv: &Arc<dyn KvStore>,
    key: &str,
) -> Result<std::result::Result<String, AuthError>> {
    let (id, secret) = match parse(key) {
        Ok(p) => p,
        Err(e) => return Ok(Err(e)),
    };
    let Some(item) = kv.get(&record_pk(id), RECORD_SK).await? else {
        return Ok(Err(AuthError::Unknown));
    };
    let mut rec = decode(&item.value, id)?;
    let item_version = item.version;
    let presented = Sha256::digest(secret.as_bytes());
    let stored = hex::decode(&rec.hash).unwrap_or_default();
    if !bool::from(presented.as_slice().ct_eq(&stored)) {
        return Ok(Err(AuthError::Unknown));
    }
    let now = now_ms();
    if rec
        .last_used_ms
        .is_none_or(|t| now - t >= LAST_USED_EVERY_MS)
    {
        rec.last_used_ms = Some(now);
        if let Ok(value) = serde_json::to_string(&rec) {
            // Only over the version read: a concurrent revoke must not be undone by this
            // write. Losing the race (or failing) costs only a stale `last used`. The request
            // does not wait for it, and it is best-effort: a sync of the disk for it would slow
            // every tenant's first request (BENCHMARKS.md, Figures behind the code),
            // and a deferred write would make the next run's flush wait for that sync. A power
            // cut can lose it, which costs a `last used` a minute old.
            let (kv, pk) = (kv.clone(), record_pk(id));
            tokio::spawn(crate::ports::durability::best_effort(async move {
                let item = NewItem {
                    pk,
                    sk: RECORD_SK.into(),
                    value,
                    expires_at_s: NEVER_S,
                };
                let _ = kv.put(item, PutMode::Update(item_version)).await;
            }));
        }
    }
    Ok(Ok(rec.tenant))
}

/// The most keys one process keeps verified; past it the cache starts again empty.
pub const MAX_VERIFIED: usize = 10_000;

/// API keys this process has verified, so that a request with a key seen before costs no read
/// of its record: a look at the store's generation, a SHA-256 of the presented secret and a map
/// lookup. A revocation moves the generation, so every process reads every key's record again
/// once it sees the move:
/// - where the store has a shared counter ([`crate::ports::Generation`], the embedded store),
///   the look is one load of it, and a revocation is seen at the next request;
/// - elsewhere (DynamoDB) it is a read of the generation item, at most once per
///   [`GENERATION_EVERY`] per process for all keys and tenants (the requests that find it due
///   wait for one read), and a revocation is seen within that.
///
/// Only successes are kept, under the hash of their secret, never the secret: a caller sending
/// keys that do not verify never adds an entry, and the entries are at most [`MAX_VERIFIED`].
/// A key's `last_used_ms` is still written once a minute, as each entry is read from the store
/// again after [`LAST_USED_EVERY_MS`].
#[derive(Debug)]
pub struct Verified {
    keys: std::sync::Mutex<std::collections::HashMap<String, Known>>,
    /// The generation item as last read (`None`: that read failed), read at most once per
    /// [`GENERATION_EVERY`].
    stored: crate::every::Every<Option<u64>>,
    /// The keys being checked against the store, by the hash of their secret.
    checking: crate::every::InFlight<[u8; 32]>,
}

impl Default for Verified {
    fn default() -> Self {
        Verified::new(GENERATION_EVERY)
    }
}

/// A key verified against the store.
#[derive(Debug)]
struct Known {
    /// SHA-256 of its secret.
    hash: [u8; 32],
    tenant: String,
    /// The store's generation when it was read.
    generation: u64,
    /// When it was read, in ms since the epoch.
    read_ms: i64,
}

impl Verified {
    /// A cache that uses a read of the generation item for `every` (see [`GENERATION_EVERY`]).
    pub fn new(every: Duration) -> Self {
        Verified {
            keys: Default::default(),
            stored: crate::every::Every::new(every),
            checking: Default::default(),
        }
    }

    /// [`authenticate`], from this cache where the store allows.
    pub async fn authenticate(
        &self,
        kv: &Arc<dyn KvStore>,
        key: &str,
    ) -> Result<std::result::Result<String, AuthError>> {
        let (id, secret) = match parse(key) {
            Ok(p) => p,
            Err(e) => return Ok(Err(e)),
        };
        // Read before the record is: a revocation committed after this read moves past it, so
        // what is cached below under it is stale once the move is seen.
        let Ok(seen) = self.generation(kv).await else {
            // The generation cannot be told: check the key as if nothing were cached.
            return authenticate(kv, key).await;
        };
        let presented: [u8; 32] = Sha256::digest(secret.as_bytes()).into();
        let now = now_ms();
        let cached = || {
            let keys = self.lock();
            let k = keys.get(id)?;
            (k.generation == seen
                && now - k.read_ms < LAST_USED_EVERY_MS
                && bool::from(k.hash.ct_eq(&presented)))
            .then(|| k.tenant.clone())
        };
        if let Some(tenant) = cached() {
            return Ok(Ok(tenant));
        }
        // The requests that present this very key while it is not cached wait for one check of
        // it (a cold process's burst reads the record once); other secrets, a caller's wrong
        // guesses, never wait behind it.
        let _one = self.checking.one(presented).await;
        if let Some(tenant) = cached() {
            return Ok(Ok(tenant));
        }
        let out = authenticate(kv, key).await?;
        if let Ok(tenant) = &out {
            let mut keys = self.lock();
            if keys.len() >= MAX_VERIFIED && !keys.contains_key(id) {
                keys.clear();
            }
            keys.insert(
                id.to_string(),
                Known {
                    hash: presented,
                    tenant: tenant.clone(),
                    generation: seen,
                    read_ms: now,
                },
            );
        }
        Ok(out)
    }

    /// The store's generation as this process may use it now: its shared counter, or the
    /// generation item read at most once per `every` (one request reads it; the others that
    /// find it due wait for that read).
    async fn generation(&self, kv: &Arc<dyn KvStore>) -> Result<u64> {
        if let Some(g) = kv.generation() {
            return Ok(g.current());
        }
        // A failed read is kept too, so that the requests waiting for it do not each try again
        // in turn: they check their keys uncached until the next read.
        let read = || async {
            let item = kv.get(GENERATION_PK, GENERATION_SK).await.ok()?;
            Some(stored_generation(item.as_ref()))
        };
        self.stored.get(read).await.ok_or_else(|| Error::Backend {
            backend: "kv",
            message: "the API keys' generation item could not be read".into(),
            source: None,
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, std::collections::HashMap<String, Known>> {
        self.keys.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::Embedded;
    use std::time::Instant;

    fn kv() -> (tempfile::TempDir, std::sync::Arc<dyn KvStore>) {
        let dir = tempfile::tempdir().unwrap();
        let e = Embedded::open(dir.path(), Default::default()).unwrap();
        let kv = e.backends().kv;
        (dir, kv)
    }

    #[tokio::test]
    async fn a_created_key_authenticates_its_tenant_until_revoked() {
        // GIVEN a key of tenant acme
        let (_d, kv) = kv();
        let k = create(&*kv, "acme", "ci").await.unwrap();
        assert!(k.key.starts_with("nk_") && k.key.len() == 3 + 16 + 1 + 64);
        // WHEN it is presented THEN it names acme, and use is recorded
        assert_eq!(authenticate(&kv, &k.key).await.unwrap(), Ok("acme".into()));
        // (written by a task of its own, which the request does not wait for)
        let mut l = list(&*kv, "acme").await.unwrap();
        for _ in 0..500 {
            if l[0].last_used_ms.is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            l = list(&*kv, "acme").await.unwrap();
        }
        assert_eq!(l.len(), 1);
        assert_eq!(
            (l[0].id.as_str(), l[0].name.as_str()),
            (k.id.as_str(), "ci")
        );
        assert!(l[0].last_used_ms.is_some());
        // WHEN it is revoked THEN it no longer authenticates, and is no longer listed
        revoke(&*kv, "acme", &k.id).await.unwrap();
        assert_eq!(
            authenticate(&kv, &k.key).await.unwrap(),
            Err(AuthError::Unknown)
        );
        assert!(list(&*kv, "acme").await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn only_the_hash_is_stored_and_a_wrong_secret_is_refused() {
        // GIVEN a key
        let (_d, kv) = kv();
        let k = create(&*kv, "acme", "").await.unwrap();
        let secret = k.key.rsplit('_').next().unwrap();
        // THEN the stored record does not hold the secret
        let rec = kv.get(&record_pk(&k.id), RECORD_SK).await.unwrap().unwrap();
        assert!(!rec.value.contains(secret));
        // WHEN the same id comes with another secret THEN it is unknown
        let forged = format!("nk_{}_{}", k.id, "0".repeat(64));
        assert_eq!(
            authenticate(&kv, &forged).await.unwrap(),
            Err(AuthError::Unknown)
        );
    }

    #[tokio::test]
    async fn malformed_keys_and_headers_are_told_apart_from_unknown_ones() {
        let (_d, kv) = kv();
        assert_eq!(bearer(None), Err(AuthError::Missing));
        assert_eq!(bearer(Some("Basic abc")), Err(AuthError::Malformed));
        assert_eq!(bearer(Some("bearer nk_x")), Ok("nk_x"));
        for bad in ["nk_x", "xx_0123456789abcdef_00", "nk_0123456789abcdef"] {
            assert_eq!(
                authenticate(&kv, bad).await.unwrap(),
                Err(AuthError::Malformed),
                "{bad}"
            );
        }
        let unknown = format!("nk_{}_{}", "a".repeat(16), "b".repeat(64));
        assert_eq!(
            authenticate(&kv, &unknown).await.unwrap(),
            Err(AuthError::Unknown)
        );
    }

    #[tokio::test]
    async fn a_verified_key_is_answered_from_memory_until_any_process_revokes_one() {
        // GIVEN two keys of acme, verified once by a process (its cache)
        let (d, kv) = kv();
        let (k1, k2) = (
            create(&*kv, "acme", "").await.unwrap(),
            create(&*kv, "acme", "").await.unwrap(),
        );
        let cache = Verified::default();
        for k in [&k1, &k2] {
            assert_eq!(
                cache.authenticate(&kv, &k.key).await.unwrap(),
                Ok("acme".into())
            );
        }
        // WHEN k1's record is deleted behind the cache's back (no revocation: no bump)
        kv.delete(&record_pk(&k1.id), RECORD_SK, None)
            .await
            .unwrap();
        // THEN the cache still answers it: the store was not read
        assert_eq!(
            cache.authenticate(&kv, &k1.key).await.unwrap(),
            Ok("acme".into())
        );
        // AND a wrong secret for a cached id is still refused
        let forged = format!("nk_{}_{}", k2.id, "0".repeat(64));
        assert_eq!(
            cache.authenticate(&kv, &forged).await.unwrap(),
            Err(AuthError::Unknown)
        );
        // WHEN another process (another opening of the same project) revokes k2
        let other = Embedded::open(d.path(), Default::default()).unwrap();
        revoke(&*other.backends().kv, "acme", &k2.id).await.unwrap();
        // THEN this process refuses k2 at its very next request, and k1 (whose record is
        // gone) too: every entry is read from the store again
        assert_eq!(
            cache.authenticate(&kv, &k2.key).await.unwrap(),
            Err(AuthError::Unknown)
        );
        assert_eq!(
            cache.authenticate(&kv, &k1.key).await.unwrap(),
            Err(AuthError::Unknown)
        );
    }

    /// The store, counting its reads, with or without its shared counter (without: as
    /// DynamoDB is), each read taking `delay` (so that requests overlap it).
    #[derive(Debug)]
    struct Counted {
        kv: Arc<dyn KvStore>,
        shared_counter: bool,
        delay: Duration,
        gets: std::sync::atomic::AtomicUsize,
    }

    impl Counted {
        fn over(kv: &Arc<dyn KvStore>, shared_counter: bool, delay: Duration) -> Arc<Counted> {
            Arc::new(Counted {
                kv: kv.clone(),
                shared_counter,
                delay,
                gets: Default::default(),
            })
        }
        fn gets(&self) -> usize {
            self.gets.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    #[async_trait::async_trait]
    impl KvStore for Counted {
        async fn get(&self, pk: &str, sk: &str) -> Result<Option<crate::ports::Item>> {
            self.gets.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            tokio::time::sleep(self.delay).await;
            self.kv.get(pk, sk).await
        }
        async fn put_as(&self, item: NewItem, mode: PutMode, token: &str) -> Result<String> {
            self.kv.put_as(item, mode, token).await
        }
        async fn delete(&self, pk: &str, sk: &str, if_version: Option<&str>) -> Result<bool> {
            self.kv.delete(pk, sk, if_version).await
        }
        async fn query(
            &self,
            pk: &str,
            prefix: &str,
            after: Option<&str>,
            limit: usize,
        ) -> Result<crate::ports::ItemPage> {
            self.kv.query(pk, prefix, after, limit).await
        }
        async fn query_back(
            &self,
            pk: &str,
            prefix: &str,
            before: Option<&str>,
            limit: usize,
        ) -> Result<crate::ports::ItemPage> {
            self.kv.query_back(pk, prefix, before, limit).await
        }
        async fn put_batch(&self, items: Vec<NewItem>) -> Result<()> {
            self.kv.put_batch(items).await
        }
        async fn transact_as(
            &self,
            ops: Vec<TxOp>,
            token: &str,
        ) -> Result<std::result::Result<(), usize>> {
            self.kv.transact_as(ops, token).await
        }
        fn generation(&self) -> Option<&dyn crate::ports::Generation> {
            self.kv.generation().filter(|_| self.shared_counter)
        }
    }

    /// A store counting its reads ([`Counted`]), a key of acme, and a cache that verified it.
    async fn verified_once(
        shared_counter: bool,
        delay: Duration,
    ) -> (
        tempfile::TempDir,
        Arc<dyn KvStore>,
        Arc<Counted>,
        Arc<dyn KvStore>,
        NewKey,
        Arc<Verified>,
    ) {
        let (d, kv) = kv();
        let store = Counted::over(&kv, shared_counter, delay);
        let dynamic: Arc<dyn KvStore> = store.clone();
        let k = create(&*kv, "acme", "").await.unwrap();
        let cache = Arc::new(Verified::default());
        assert_eq!(
            cache.authenticate(&dynamic, &k.key).await.unwrap(),
            Ok("acme".into())
        );
        (d, kv, store, dynamic, k, cache)
    }

    /// Requests with `key` through `cache`, 64 at once every 20 ms, for `run` (at least
    /// once); how many reads they made and how long they took.
    async fn requests_for(
        cache: &Arc<Verified>,
        kv: &Arc<Counted>,
        key: &str,
        run: Duration,
    ) -> (usize, Duration) {
        let (before, start) = (kv.gets(), Instant::now());
        let store: Arc<dyn KvStore> = kv.clone();
        loop {
            let mut burst = tokio::task::JoinSet::new();
            for _ in 0..64 {
                let (cache, store, key) = (cache.clone(), store.clone(), key.to_string());
                burst.spawn(async move { cache.authenticate(&store, &key).await });
            }
            while let Some(r) = burst.join_next().await {
                assert_eq!(r.unwrap().unwrap(), Ok("acme".into()));
            }
            if start.elapsed() >= run {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        (kv.gets() - before, start.elapsed())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn without_a_shared_counter_a_key_costs_one_read_a_second_and_revocation_is_seen_within_it(
    ) {
        // GIVEN a store without a shared counter (as DynamoDB), whose reads take 5 ms, and a
        // key verified once by a process
        let (_d, kv, store, dynamic, k, cache) =
            verified_once(false, Duration::from_millis(5)).await;
        // WHEN requests with it come 64 at once for 2.5 s
        let (reads, took) = requests_for(&cache, &store, &k.key, Duration::from_millis(2500)).await;
        // THEN they read the store at most once a second (the generation item; the record
        // is not read again within the minute)
        let seconds = took.as_secs_f64().ceil() as usize;
        assert!(
            reads <= seconds,
            "{reads} reads in {took:?} of requests with one key"
        );
        assert!(reads >= 1, "the generation item was never read again");
        // AND a wrong secret for the cached id is refused, and never cached as valid
        let forged = format!("nk_{}_{}", k.id, "0".repeat(64));
        for _ in 0..2 {
            assert_eq!(
                cache.authenticate(&dynamic, &forged).await.unwrap(),
                Err(AuthError::Unknown)
            );
        }
        // AND keys that do not verify add nothing to the cache
        for i in 0..100 {
            let random = format!("nk_{i:016x}_{}", "c".repeat(64));
            assert_eq!(
                cache.authenticate(&dynamic, &random).await.unwrap(),
                Err(AuthError::Unknown)
            );
        }
        assert_eq!(cache.lock().len(), 1);
        // WHEN another process revokes the key (through its own handle, no shared counter)
        let other = Counted::over(&kv, false, Duration::ZERO);
        revoke(&*other, "acme", &k.id).await.unwrap();
        let revoked = Instant::now();
        // THEN this process refuses it within GENERATION_EVERY
        loop {
            let got = cache.authenticate(&dynamic, &k.key).await.unwrap();
            if got == Err(AuthError::Unknown) {
                break;
            }
            assert_eq!(got, Ok("acme".into()));
            assert!(
                revoked.elapsed() < GENERATION_EVERY + Duration::from_millis(100),
                "a revoked key still accepted {:?} after its revocation",
                revoked.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cold_burst_with_one_key_reads_its_record_once() {
        for shared_counter in [false, true] {
            // GIVEN a key, a process that has not seen it, and a store whose reads take 20 ms
            let (_d, kv) = kv();
            let store = Counted::over(&kv, shared_counter, Duration::from_millis(20));
            let k = create(&*kv, "acme", "").await.unwrap();
            let cache = Arc::new(Verified::default());
            // WHEN 64 requests with it come at once
            let (reads, _) = requests_for(&cache, &store, &k.key, Duration::ZERO).await;
            // THEN its record is read once (and the generation item once, without a counter)
            let want = if shared_counter { 1 } else { 2 };
            assert_eq!(reads, want, "shared counter: {shared_counter}");
            assert!(cache.checking.is_empty());
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_the_shared_counter_a_cached_key_costs_no_read() {
        // GIVEN the embedded store's shared counter and a key verified once
        let (_d, _kv, store, _dynamic, k, cache) = verified_once(true, Duration::ZERO).await;
        // WHEN requests with it come 64 at once for half a second THEN none reads the store
        let (reads, took) = requests_for(&cache, &store, &k.key, Duration::from_millis(500)).await;
        assert_eq!(reads, 0, "{reads} reads in {took:?}");
    }

    #[tokio::test]
    async fn a_revocation_cut_short_after_its_record_is_finished_by_running_it_again() {
        // GIVEN a key whose record is gone but whose index entry stays (a revocation whose
        // generation write failed)
        let (_d, kv) = kv();
        let k = create(&*kv, "acme", "").await.unwrap();
        kv.delete(&record_pk(&k.id), RECORD_SK, None).await.unwrap();
        let store = Counted::over(&kv, false, Duration::ZERO);
        let before = store.get(GENERATION_PK, GENERATION_SK).await.unwrap();
        // WHEN it is revoked again THEN it succeeds, moves the generation and drops the entry
        revoke(&*store, "acme", &k.id).await.unwrap();
        let after = store.get(GENERATION_PK, GENERATION_SK).await.unwrap();
        assert_ne!(
            stored_generation(before.as_ref()),
            stored_generation(after.as_ref())
        );
        assert!(kv.get(&index_pk("acme"), &k.id).await.unwrap().is_none());
        // AND another tenant cannot do the same to it
        let k2 = create(&*kv, "acme", "").await.unwrap();
        kv.delete(&record_pk(&k2.id), RECORD_SK, None)
            .await
            .unwrap();
        assert!(matches!(
            revoke(&*store, "globex", &k2.id).await,
            Err(Error::NotFound { .. })
        ));
    }

    #[tokio::test]
    async fn a_tenant_cannot_revoke_another_tenants_key() {
        // GIVEN a key of acme
        let (_d, kv) = kv();
        let k = create(&*kv, "acme", "").await.unwrap();
        // WHEN globex tries to revoke it THEN it is not found, and the key still works
        assert!(matches!(
            revoke(&*kv, "globex", &k.id).await,
            Err(Error::NotFound { .. })
        ));
        assert_eq!(authenticate(&kv, &k.key).await.unwrap(), Ok("acme".into()));
        assert!(list(&*kv, "globex").await.unwrap().is_empty());
    }
}
