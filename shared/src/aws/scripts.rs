//! Tenants in the scripts bucket: `<tenant>/config.json`, `<tenant>/.luaurc` and
//! `<tenant>/scripts/**.luau` (scripts, and modules in subfolders), as `native deploy` uploads
//! them, and the deploy marker [`MARKER`] that `native deploy` rewrites after each upload.
//!
//! A warm process keeps each tenant in memory, with what it cost per process (docs/cost.md):
//! - at most every [`RECHECK_EVERY`] it reads the marker's metadata (one HEAD for all
//!   tenants, made by one request while the others that find it due wait for it);
//! - a tenant loaded since the marker last changed is used as it is; another (the marker moved,
//!   or the bucket has no marker: deployed by hand, or by a native older than the marker)
//!   lists its folder if its last listing is [`RECHECK_EVERY`] old and compares each file's
//!   etag with what it loaded, reading the files again only when something changed;
//! - the requests that find a tenant due wait for one load of it, however many arrive: a cold
//!   process loads a tenant once.
//!
//! So a deploy is seen within [`RECHECK_EVERY`] of `native deploy` returning, and events in
//! between never touch the bucket beyond the marker.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;

use crate::config::Tenant;
use crate::every::{Every, InFlight};
use crate::keys::check_name;
use crate::ports::ObjectStore;
use crate::tenants::TenantSource;
use crate::{Error, Result};

/// The longest a request waits for the deploy marker's HEAD before it lists its tenant instead.
pub const MARKER_WAIT: Duration = Duration::from_secs(1);

/// How long a loaded tenant is used without looking at the bucket, and the marker's read.
pub const RECHECK_EVERY: Duration = Duration::from_secs(5);

/// The deploy marker's key in the scripts bucket: rewritten by [`upload_tenant`] once a
/// tenant's files are all in place. No tenant can be named so (`check_name`).
pub const MARKER: &str = ".native/deployed";

use crate::tenants::MAX_FILES;

/// The most tenant names cached as absent: an event may carry any name, so past this the
/// absent name checked longest ago is forgotten (and listed again if it comes back).
pub const MAX_ABSENT: usize = 1024;

/// `(key, etag)` of every file that makes a tenant, sorted by key.
type Fingerprint = Vec<(String, String)>;

/// What the marker's read said.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Marker {
    /// Its etag: every tenant loaded under it is current.
    At(String),
    /// There is none (a bucket deployed by hand or by an older native), or it could not be
    /// read: each tenant is listed again once its listing is [`RECHECK_EVERY`] old.
    Unknown,
}

#[derive(Debug)]
struct Cached {
    /// `None`: there is no such tenant (cached too, so stray events do not list every time).
    tenant: Option<Arc<Tenant>>,
    fingerprint: Fingerprint,
    /// When its last listing began (or failed).
    checked: Instant,
    /// The marker as read before that listing began.
    marker: Marker,
}

impl Cached {
    /// Whether it may be used without listing, the marker being `now`.
    fn current(&self, now: &Marker, recheck: Duration) -> bool {
        self.checked.elapsed() < recheck || (matches!(now, Marker::At(_)) && self.marker == *now)
    }
}

/// Tenants read from a scripts bucket through any [`ObjectStore`] (S3 on AWS).
#[derive(Debug)]
pub struct S3Tenants {
    objects: Arc<dyn ObjectStore>,
    bucket: String,
    recheck: Duration,
    cache: Mutex<HashMap<String, Cached>>,
    /// The tenants being loaded: one request loads each.
    loading: InFlight<String>,
    marker: Every<Marker>,
}

impl S3Tenants {
    /// Tenants in `bucket`, re-checked at most every `recheck` (use [`RECHECK_EVERY`]).
    pub fn new(objects: Arc<dyn ObjectStore>, bucket: &str, recheck: Duration) -> Self {
        S3Tenants {
            objects,
            bucket: bucket.to_string(),
            recheck,
            cache: Mutex::default(),
            loading: InFlight::default(),
            marker: Every::new(recheck),
        }
    }

    /// The marker, read at most once per `recheck` by one request.
    async fn marker(&self) -> Marker {
        self.marker
            .get(|| async {
                // Within the request's deadline and MARKER_WAIT: a stalled HEAD must not hold
                // the request (or a route batch) past its deadline; without the marker, each
                // tenant is listed as before.
                let cap = Instant::now() + MARKER_WAIT;
                let until = crate::deadline::current().map_or(cap, |end| end.min(cap));
                let head = self.objects.head(&self.bucket, MARKER);
                let read = tokio::time::timeout_at(until.into(), head)
                    .await
                    .unwrap_or_else(|_| {
                        Err(Error::Backend {
                            backend: "s3",
                            message: format!("no answer within {MARKER_WAIT:?}"),
                            source: None,
                        })
                    });
                match read {
                    Ok(Some(meta)) => Marker::At(meta.etag),
                    Ok(None) => Marker::Unknown,
                    Err(e) => {
                        tracing::warn!(
                            bucket = %self.bucket,
                            error = %e,
                            "the scripts bucket's deploy marker could not be read; each tenant is listed again after its interval"
                        );
                        Marker::Unknown
                    }
                }
            })
            .await
    }

    /// The tenant as cached (`Some(None)`: cached as absent), if it may be used now.
    fn cached(&self, tenant: &str, now: &Marker) -> Option<Option<Arc<Tenant>>> {
        let cache = self.cache();
        let c = cache.get(tenant)?;
        c.current(now, self.recheck).then(|| c.tenant.clone())
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, HashMap<String, Cached>> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The files that make the tenant, with their etags.
    async fn fingerprint(&self, tenant: &str) -> Result<Fingerprint> {
        let prefix = format!("{tenant}/");
        let mut out = Vec::new();
        let mut after: Option<String> = None;
        loop {
            let page = self
                .objects
                .list(&self.bucket, &prefix, after.as_deref(), 1000)
                .await?;
            for o in page.objects {
                let rel = &o.key[prefix.len()..];
                if crate::tenants::is_tenant_file(rel) {
                    out.push((o.key, o.etag));
                }
            }
            if out.len() > MAX_FILES {
                return Err(Error::InvalidInput(format!(
                    "tenant {tenant:?} has more than {MAX_FILES} scripts and modules in s3://{}/{prefix}",
                    self.bucket
                )));
            }
            match page.next {
                Some(n) => after = Some(n),
                None => break,
            }
        }
        out.sort();
        Ok(out)
    }

    /// Lists the tenant's files and reads them if they changed since `previous` (the tenant
    /// and fingerprint cached), within the time left to the request ([`crate::budget`]); a
    /// cold load whose listing fails is tried again while there is time. `None`: no tenant.
    async fn check(
        &self,
        tenant: &str,
        previous: Option<&(Option<Arc<Tenant>>, Fingerprint)>,
    ) -> Result<(Option<Arc<Tenant>>, Fingerprint)> {
        let end = crate::deadline::current();
        let mut wait = Duration::from_millis(100);
        let files = loop {
            let listed = match end {
                Some(end) => tokio::time::timeout_at(end.into(), self.fingerprint(tenant))
                    .await
                    .unwrap_or_else(|_| Err(self.stalled(tenant))),
                None => self.fingerprint(tenant).await,
            };
            match listed {
                Ok(files) => break files,
                // A cold load (nothing cached to serve) tries again within the deadline.
                Err(Error::Backend { .. })
                    if previous.is_none()
                        && end.is_some_and(|end| Instant::now() + wait * 2 < end) =>
                {
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                }
                Err(e) => return Err(e),
            }
        };
        let tenant_now = match previous {
            Some((t, fp)) if *fp == files => t.clone(),
            _ if files.is_empty() => None,
            _ => {
                let read = self.read(tenant, &files);
                let t = match end {
                    Some(end) => tokio::time::timeout_at(end.into(), read)
                        .await
                        .unwrap_or_else(|_| Err(self.stalled(tenant)))?,
                    None => read.await?,
                };
                Some(Arc::new(t))
            }
        };
        Ok((tenant_now, files))
    }

    /// The error of a load that the request's deadline ended.
    fn stalled(&self, tenant: &str) -> Error {
        Error::Backend {
            backend: "s3",
            message: format!(
                "the scripts of tenant {tenant:?} could not be read from bucket {} before the request's deadline; retry",
                self.bucket
            ),
            source: None,
        }
    }

    /// Reads every file of the fingerprint and builds the tenant.
    async fn read(&self, tenant: &str, files: &Fingerprint) -> Result<Tenant> {
        let shown = format!("s3://{}/{tenant}/", self.bucket);
        let mut texts = Vec::with_capacity(files.len());
        for (key, _) in files {
            let rel = &key[tenant.len() + 1..];
            let Some((_, data)) = self.objects.get(&self.bucket, key).await? else {
                // Deleted between the listing and now: the next check sees it gone.
                continue;
            };
            let text = String::from_utf8(data.to_vec())
                .map_err(|_| Error::config(format!("{shown}{rel}"), "-", "is not UTF-8 text"))?;
            texts.push((rel.to_string(), text));
        }
        crate::tenants::assemble(tenant, &shown, texts)
    }
}

#[async_trait]
impl TenantSource for S3Tenants {
    async fn load(&self, tenant: &str) -> Result<Arc<Tenant>> {
        check_name("tenant", tenant).map_err(Error::InvalidInput)?;
        let not_found = || {
            Error::no_tenant(
                tenant,
                format!(
                    "there is nothing under s3://{}/{tenant}/; deploy it with `native deploy {tenant} --bucket {}`",
                    self.bucket, self.bucket
                ),
            )
        };
        let marker = self.marker().await;
        if let Some(t) = self.cached(tenant, &marker) {
            return t.ok_or_else(not_found);
        }
        // One request loads the tenant; the others that found it due wait for it and take
        // what it loaded.
        let one = self.loading.one(tenant.to_string());
        let _turn = match crate::deadline::current() {
            Some(end) => tokio::time::timeout_at(end.into(), one)
                .await
                .map_err(|_| self.stalled(tenant))?,
            None => one.await,
        };
        if let Some(t) = self.cached(tenant, &marker) {
            return t.ok_or_else(not_found);
        }
        let previous = self
            .cache()
            .get(tenant)
            .map(|c| (c.tenant.clone(), c.fingerprint.clone()));
        let began = Instant::now();
        let (tenant_now, files) = match self.check(tenant, previous.as_ref()).await {
            Ok(checked) => checked,
            // The bucket failed or stalled: a tenant loaded before keeps working on what it
            // was, and is checked again after `recheck`, not at every event.
            Err(e @ Error::Backend { .. }) => match previous {
                Some((Some(cached), _)) => {
                    tracing::warn!(
                        tenant,
                        bucket = %self.bucket,
                        error = %e,
                        "the re-check of a tenant's scripts failed; its cached scripts are used until the next one"
                    );
                    if let Some(c) = self.cache().get_mut(tenant) {
                        c.checked = Instant::now();
                    }
                    return Ok(cached);
                }
                _ => return Err(e),
            },
            Err(e) => return Err(e),
        };
        let mut cache = self.cache();
        if tenant_now.is_none() {
            forget_absent(&mut cache, tenant);
        }
        cache.insert(
            tenant.to_string(),
            Cached {
                tenant: tenant_now.clone(),
                fingerprint: files,
                checked: began,
                marker,
            },
        );
        drop(cache);
        tenant_now.ok_or_else(not_found)
    }

    /// Every `<tenant>/config.json` of the bucket, at most [`MAX_LISTED`] keys read.
    async fn list(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let mut after: Option<String> = None;
        let mut read = 0;
        loop {
            let page = self
                .objects
                .list(&self.bucket, "", after.as_deref(), 1000)
                .await?;
            read += page.objects.len();
            for o in &page.objects {
                if let Some(t) = o.key.strip_suffix("/config.json") {
                    if check_name("tenant", t).is_ok() {
                        out.push(t.to_string());
                    }
                }
            }
            match page.next {
                Some(n) if read < MAX_LISTED => after = Some(n),
                _ => break,
            }
        }
        out.sort();
        Ok(out)
    }
}

/// Before `tenant` is cached as absent: when [`MAX_ABSENT`] other names are, forgets the one
/// checked longest ago. A scan of the cache, made only after a listing that found nothing.
fn forget_absent(cache: &mut HashMap<String, Cached>, tenant: &str) {
    let absent = || {
        cache
            .iter()
            .filter(|(name, c)| c.tenant.is_none() && name.as_str() != tenant)
    };
    if absent().count() >= MAX_ABSENT {
        if let Some(oldest) = absent()
            .min_by_key(|(_, c)| c.checked)
            .map(|(name, _)| name.clone())
        {
            cache.remove(&oldest);
        }
    }
}

/// The most keys of the scripts bucket read to list its tenants.
pub const MAX_LISTED: usize = 100_000;

/// Uploads a tenant folder (`config.json`, `.luaurc`, `scripts/**.luau`: its scripts and
/// modules) to `<tenant>/` of the scripts bucket and deletes scripts, modules and a `.luaurc`
/// there that the folder no longer has: what `native deploy` does after `native check` passed.
/// `config.json` goes last, so a warm function that re-reads between two uploads sees new
/// scripts before the config that may name them; then the marker ([`MARKER`]) is rewritten,
/// which tells every warm process to list the tenant again. Returns the keys written and
/// deleted.
pub async fn upload_tenant(
    store: &dyn ObjectStore,
    bucket: &str,
    tenant: &str,
    dir: &std::path::Path,
) -> Result<(Vec<String>, Vec<String>)> {
    check_name("tenant", tenant).map_err(Error::InvalidInput)?;
    let io = |what: String, e: std::io::Error| Error::InvalidInput(format!("{what}: {e}"));
    // Scripts and modules first, `.luaurc` and `config.json` last.
    let mut files: Vec<(String, std::path::PathBuf)> = Vec::new();
    let mut last = Vec::new();
    for (rel, path) in crate::tenants::files_of(dir)? {
        let key = format!("{tenant}/{rel}");
        if let Some(name) = rel
            .strip_prefix("scripts/")
            .and_then(|n| n.strip_suffix(".luau"))
        {
            let checked = if name.contains('/') {
                crate::config::modules::module_name(&rel["scripts/".len()..])
                    .unwrap_or(Ok(String::new()))
                    .map(|_| ())
            } else {
                check_name("script", name)
            };
            checked.map_err(|why| Error::config(path.display(), "-", why))?;
            files.push((key, path));
        } else if rel != "config.json" {
            last.push((key, path));
        }
    }
    let config = dir.join("config.json");
    files.append(&mut last);
    if config.is_file() {
        files.push((format!("{tenant}/config.json"), config));
    }
    if files.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{} has no config.json and no scripts/**.luau: nothing to deploy",
            dir.display()
        )));
    }
    let mut written = Vec::new();
    for (key, path) in &files {
        let data =
            std::fs::read(path).map_err(|e| io(format!("cannot read {}", path.display()), e))?;
        store
            .put(bucket, key, data.into(), crate::ports::PutMode::Overwrite)
            .await?;
        written.push(key.clone());
    }
    // Scripts, modules and a `.luaurc` the folder no longer has go.
    let mut deleted = Vec::new();
    let prefix = format!("{tenant}/");
    let mut after: Option<String> = None;
    loop {
        let page = store.list(bucket, &prefix, after.as_deref(), 1000).await?;
        for o in &page.objects {
            let rel = &o.key[prefix.len()..];
            let ours = rel != "config.json" && crate::tenants::is_tenant_file(rel);
            if ours && !written.contains(&o.key) {
                deleted.push(o.key.clone());
            }
        }
        match page.next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    for key in &deleted {
        store.delete(bucket, key).await?;
    }
    // Last, once the tenant is whole: a process that read the marker before this write lists
    // the tenant again when it reads the marker next.
    let marker = serde_json::json!({ "tenant": tenant, "at_ms": crate::ports::now_ms() });
    store
        .put(
            bucket,
            MARKER,
            marker.to_string().into(),
            crate::ports::PutMode::Overwrite,
        )
        .await?;
    Ok((written, deleted))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::embedded::Embedded;
    use crate::ports::PutMode;

    #[tokio::test]
    async fn loads_caches_and_notices_changes() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(Embedded::open(dir.path(), vec![]).unwrap());
        let put = |key: &'static str, text: &'static str| {
            let store = store.clone();
            async move {
                store
                    .put("scripts-b", key, text.into(), PutMode::Overwrite)
                    .await
                    .unwrap();
            }
        };
        put("acme/config.json", r#"{"queue":true}"#).await;
        put("acme/scripts/a.luau", "return 1").await;
        put("acme/notes.txt", "ignored").await;
        let src = S3Tenants::new(store.clone(), "scripts-b", Duration::from_millis(300));
        let t1 = src.load("acme").await.unwrap();
        assert!(t1.config.queue);
        assert_eq!(t1.scripts.keys().collect::<Vec<_>>(), ["a"]);

        put("acme/scripts/b.luau", "return 2").await;
        let t2 = src.load("acme").await.unwrap();
        assert!(
            Arc::ptr_eq(&t1, &t2),
            "within the recheck time, the cache answers"
        );

        tokio::time::sleep(Duration::from_millis(350)).await;
        let t3 = src.load("acme").await.unwrap();
        assert_eq!(t3.scripts.keys().collect::<Vec<_>>(), ["a", "b"]);
        tokio::time::sleep(Duration::from_millis(350)).await;
        let t4 = src.load("acme").await.unwrap();
        assert!(Arc::ptr_eq(&t3, &t4), "unchanged files are not read again");

        let e = src.load("nobody").await.unwrap_err();
        assert!(matches!(e, Error::NotFound { .. }), "{e}");
        assert!(e.to_string().contains("native deploy nobody"), "{e}");

        put("bad/config.json", r#"{"queue":"yes"}"#).await;
        let e = src.load("bad").await.unwrap_err().to_string();
        assert!(e.starts_with("s3://scripts-b/bad/config.json: "), "{e}");

        // A deploy replaces the scripts and removes the ones that are gone.
        let t = dir.path().join("acme");
        std::fs::create_dir_all(t.join("scripts")).unwrap();
        std::fs::write(t.join("config.json"), "{}").unwrap();
        std::fs::write(t.join("scripts/b.luau"), "return 3").unwrap();
        let (written, deleted) = upload_tenant(&*store, "scripts-b", "acme", &t)
            .await
            .unwrap();
        assert_eq!(written, ["acme/scripts/b.luau", "acme/config.json"]);
        assert_eq!(deleted, ["acme/scripts/a.luau"]);
        tokio::time::sleep(Duration::from_millis(350)).await;
        let t5 = src.load("acme").await.unwrap();
        assert_eq!(t5.scripts.keys().collect::<Vec<_>>(), ["b"]);
        assert!(!t5.config.queue);
    }

    #[tokio::test]
    async fn absent_tenant_names_are_cached_up_to_a_bound() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(Embedded::open(dir.path(), vec![]).unwrap());
        let outage = Outage::over(store, Duration::ZERO);
        let src = S3Tenants::new(outage.clone(), "scripts-b", Duration::from_secs(60));
        let absent = |src: &S3Tenants| src.cache().values().filter(|c| c.tenant.is_none()).count();
        // GIVEN events naming twice as many tenants that do not exist as are cached
        for i in 0..2 * MAX_ABSENT {
            let e = src.load(&format!("stray-{i}")).await.unwrap_err();
            assert!(matches!(e, Error::NotFound { .. }), "{e}");
        }
        // THEN at most the bound are held
        assert_eq!(absent(&src), MAX_ABSENT);
        // AND the latest names are still cached: an event naming one again lists nothing
        let lists = outage.calls_of("list");
        let last = format!("stray-{}", 2 * MAX_ABSENT - 1);
        assert!(src.load(&last).await.is_err());
        assert_eq!(outage.calls_of("list"), lists, "{last} was listed again");
        // AND the first, forgotten, is listed again when it comes back
        assert!(src.load("stray-0").await.is_err());
        assert_eq!(outage.calls_of("list"), lists + 1);
        assert_eq!(absent(&src), MAX_ABSENT);
    }

    /// A bucket that counts its calls by kind, makes each take `delay`, and fails every call
    /// while `down` is set, as S3 does in an outage.
    #[derive(Debug, Default)]
    struct Outage {
        store: Option<Arc<dyn ObjectStore>>,
        down: std::sync::atomic::AtomicBool,
        delay: Duration,
        calls: Mutex<Vec<&'static str>>,
    }

    impl Outage {
        fn over(store: Arc<dyn ObjectStore>, delay: Duration) -> Arc<Outage> {
            Arc::new(Outage {
                store: Some(store),
                delay,
                ..Default::default()
            })
        }
        fn calls(&self) -> Vec<&'static str> {
            self.calls.lock().unwrap().clone()
        }
        fn calls_of(&self, kind: &str) -> usize {
            self.calls().iter().filter(|c| **c == kind).count()
        }
        fn store(&self) -> &dyn ObjectStore {
            &**self.store.as_ref().unwrap()
        }
        async fn check(&self, kind: &'static str) -> Result<()> {
            self.calls.lock().unwrap().push(kind);
            tokio::time::sleep(self.delay).await;
            if self.down.load(std::sync::atomic::Ordering::SeqCst) {
                return Err(Error::Backend {
                    backend: "s3",
                    message: "cannot list scripts-b: SlowDown: Please reduce your request rate."
                        .into(),
                    source: None,
                });
            }
            Ok(())
        }
    }

    #[async_trait]
    impl ObjectStore for Outage {
        async fn put_in_chain(
            &self,
            bucket: &str,
            key: &str,
            data: bytes::Bytes,
            mode: PutMode,
            depth: u32,
            trace: Option<&str>,
        ) -> Result<crate::ports::ObjectMeta> {
            self.check("put").await?;
            self.store()
                .put_in_chain(bucket, key, data, mode, depth, trace)
                .await
        }
        async fn get(
            &self,
            bucket: &str,
            key: &str,
        ) -> Result<Option<(crate::ports::ObjectMeta, bytes::Bytes)>> {
            self.check("get").await?;
            self.store().get(bucket, key).await
        }
        async fn open(
            &self,
            bucket: &str,
            key: &str,
        ) -> Result<
            Option<(
                crate::ports::ObjectMeta,
                Box<dyn crate::ports::ObjectReader>,
            )>,
        > {
            self.check("open").await?;
            self.store().open(bucket, key).await
        }
        async fn head(&self, bucket: &str, key: &str) -> Result<Option<crate::ports::ObjectMeta>> {
            self.check("head").await?;
            self.store().head(bucket, key).await
        }
        async fn delete(&self, bucket: &str, key: &str) -> Result<()> {
            self.check("delete").await?;
            self.store().delete(bucket, key).await
        }
        async fn list(
            &self,
            bucket: &str,
            prefix: &str,
            after: Option<&str>,
            limit: usize,
        ) -> Result<crate::ports::ListPage> {
            self.check("list").await?;
            self.store().list(bucket, prefix, after, limit).await
        }
    }

    #[tokio::test]
    async fn a_cached_tenant_keeps_working_through_an_outage_of_the_bucket() {
        use std::sync::atomic::Ordering;
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(Embedded::open(dir.path(), vec![]).unwrap());
        store
            .put(
                "scripts-b",
                "acme/scripts/a.luau",
                "return 1".into(),
                PutMode::Overwrite,
            )
            .await
            .unwrap();
        let outage = Outage::over(store, Duration::ZERO);
        let src = S3Tenants::new(outage.clone(), "scripts-b", Duration::from_millis(100));
        // GIVEN a tenant loaded, then the bucket failing every call
        let t1 = src.load("acme").await.unwrap();
        outage.down.store(true, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(150)).await;
        // WHEN its re-check is due
        let t2 = src.load("acme").await.unwrap();
        // THEN the cached tenant answers, and the failed check counts as one: the next
        // request within `recheck` does not call the bucket again
        assert!(Arc::ptr_eq(&t1, &t2));
        let calls = outage.calls().len();
        assert!(Arc::ptr_eq(&t1, &src.load("acme").await.unwrap()));
        assert_eq!(outage.calls().len(), calls, "{:?}", outage.calls());
        // AND a tenant never loaded fails with the bucket's error, after trying again within
        // the request's deadline
        let end = Instant::now() + Duration::from_millis(800);
        let e = crate::deadline::within(end, src.load("beta"))
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("SlowDown"), "{e}");
        assert!(
            Instant::now() < end,
            "the cold load gave up within the deadline"
        );
        // AND once the bucket is back, the next re-check reads it
        outage.down.store(false, Ordering::SeqCst);
        tokio::time::sleep(Duration::from_millis(150)).await;
        assert!(Arc::ptr_eq(&t1, &src.load("acme").await.unwrap()));
    }

    /// A tenant `acme` of three files deployed as `native deploy` does (the marker written),
    /// in a bucket that counts its calls, each taking `delay`.
    async fn deployed(delay: Duration) -> (tempfile::TempDir, Arc<Outage>) {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(Embedded::open(dir.path(), vec![]).unwrap());
        let t = dir.path().join("acme");
        std::fs::create_dir_all(t.join("scripts")).unwrap();
        std::fs::write(t.join("config.json"), "{}").unwrap();
        std::fs::write(t.join("scripts/a.luau"), "return 1").unwrap();
        std::fs::write(t.join("scripts/b.luau"), "return 2").unwrap();
        upload_tenant(&*store, "scripts-b", "acme", &t)
            .await
            .unwrap();
        (dir, Outage::over(store, delay))
    }

    /// `n` loads of `tenant` at once.
    async fn burst(src: &Arc<S3Tenants>, tenant: &str, n: usize) -> Vec<Arc<Tenant>> {
        let mut all = tokio::task::JoinSet::new();
        for _ in 0..n {
            let (src, tenant) = (src.clone(), tenant.to_string());
            all.spawn(async move { src.load(&tenant).await.unwrap() });
        }
        all.join_all().await
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_cold_burst_loads_a_tenant_once_and_a_warm_one_makes_at_most_one_request() {
        // GIVEN a deployed tenant in a bucket whose calls take 20 ms, and a cold process
        let (_d, bucket) = deployed(Duration::from_millis(20)).await;
        let src = Arc::new(S3Tenants::new(
            bucket.clone(),
            "scripts-b",
            Duration::from_millis(300),
        ));
        // WHEN 64 requests for it arrive at once
        let cold = burst(&src, "acme", 64).await;
        // THEN it is loaded once: the marker, one listing, its three files
        assert!(cold.iter().all(|t| Arc::ptr_eq(t, &cold[0])));
        let mut calls = bucket.calls();
        calls.sort();
        assert_eq!(calls, ["get", "get", "get", "head", "list"]);
        // WHEN, its interval past, 64 more arrive at once, twice
        for round in 1..=2 {
            tokio::time::sleep(Duration::from_millis(350)).await;
            let before = bucket.calls().len();
            let warm = burst(&src, "acme", 64).await;
            // THEN they make one request, the marker's, and use the tenant as loaded
            assert!(warm.iter().all(|t| Arc::ptr_eq(t, &cold[0])));
            assert_eq!(
                bucket.calls()[before..],
                ["head"],
                "round {round}: {:?}",
                bucket.calls()
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_deploy_is_seen_within_the_recheck_and_a_failed_marker_read_serves_the_cache() {
        use std::sync::atomic::Ordering;
        // GIVEN a deployed tenant, loaded by a warm process that re-checks every 300 ms
        let (d, bucket) = deployed(Duration::ZERO).await;
        let recheck = Duration::from_millis(300);
        let src = S3Tenants::new(bucket.clone(), "scripts-b", recheck);
        let t1 = src.load("acme").await.unwrap();
        // WHEN a deploy changes a script
        let dir = d.path().join("acme");
        std::fs::write(dir.join("scripts/b.luau"), "return 3").unwrap();
        upload_tenant(bucket.store(), "scripts-b", "acme", &dir)
            .await
            .unwrap();
        let deployed = Instant::now();
        // THEN the process runs the new script within the recheck of the deploy
        loop {
            let t = src.load("acme").await.unwrap();
            if t.scripts["b"].source == "return 3" {
                break;
            }
            assert!(Arc::ptr_eq(&t, &t1));
            assert!(
                deployed.elapsed() < recheck + Duration::from_millis(100),
                "a deploy not seen {:?} after it",
                deployed.elapsed()
            );
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let t2 = src.load("acme").await.unwrap();
        // WHEN the bucket then fails every call, the marker's read included
        bucket.down.store(true, Ordering::SeqCst);
        tokio::time::sleep(recheck + Duration::from_millis(50)).await;
        let heads = bucket.calls_of("head");
        // THEN the tenant loaded is served, and the failed check is not tried again at once
        assert!(Arc::ptr_eq(&t2, &src.load("acme").await.unwrap()));
        assert_eq!(bucket.calls_of("head"), heads + 1);
        let calls = bucket.calls().len();
        assert!(Arc::ptr_eq(&t2, &src.load("acme").await.unwrap()));
        assert_eq!(bucket.calls().len(), calls, "{:?}", bucket.calls());
    }

    #[tokio::test]
    async fn modules_and_aliases_are_deployed_loaded_and_rechecked() {
        // GIVEN a tenant folder with a script, modules in subfolders and a .luaurc
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(Embedded::open(dir.path(), vec![]).unwrap());
        let t = dir.path().join("acme");
        std::fs::create_dir_all(t.join("scripts/lib/util")).unwrap();
        std::fs::write(t.join("config.json"), "{}").unwrap();
        std::fs::write(
            t.join(".luaurc"),
            r#"{"aliases": {"lib": "./scripts/lib"}}"#,
        )
        .unwrap();
        std::fs::write(t.join("scripts/main.luau"), "return 1").unwrap();
        std::fs::write(t.join("scripts/lib/orders.luau"), "return {}").unwrap();
        std::fs::write(t.join("scripts/lib/util/init.luau"), "return {}").unwrap();
        // WHEN it is deployed and loaded
        let (written, _) = upload_tenant(&*store, "scripts-b", "acme", &t)
            .await
            .unwrap();
        // THEN the modules go first, the configs last, and the loader sees all of them
        assert_eq!(
            written,
            [
                "acme/scripts/lib/orders.luau",
                "acme/scripts/lib/util/init.luau",
                "acme/scripts/main.luau",
                "acme/.luaurc",
                "acme/config.json"
            ]
        );
        let src = S3Tenants::new(store.clone(), "scripts-b", Duration::from_millis(100));
        let t1 = src.load("acme").await.unwrap();
        assert_eq!(t1.scripts.keys().collect::<Vec<_>>(), ["main"]);
        assert_eq!(
            t1.modules.keys().collect::<Vec<_>>(),
            ["lib/orders", "lib/util/init"]
        );
        assert_eq!(
            t1.resolve("main", "@lib/util").unwrap().name,
            "lib/util/init"
        );
        // WHEN a module is edited and one removed, and deployed again
        std::fs::write(t.join("scripts/lib/orders.luau"), "return { v = 2 }").unwrap();
        std::fs::remove_dir_all(t.join("scripts/lib/util")).unwrap();
        let (_, deleted) = upload_tenant(&*store, "scripts-b", "acme", &t)
            .await
            .unwrap();
        assert_eq!(deleted, ["acme/scripts/lib/util/init.luau"]);
        // THEN the re-check after its interval loads the new module and drops the old
        tokio::time::sleep(Duration::from_millis(150)).await;
        let t2 = src.load("acme").await.unwrap();
        assert_eq!(t2.modules.keys().collect::<Vec<_>>(), ["lib/orders"]);
        assert_eq!(t2.modules["lib/orders"].source, "return { v = 2 }");
        assert_ne!(t1.version, t2.version);
    }

    #[tokio::test]
    async fn tenants_from_the_bucket_get_the_same_checks_as_from_a_folder() {
        let dir = tempfile::tempdir().unwrap();
        let store: Arc<dyn ObjectStore> = Arc::new(Embedded::open(dir.path(), vec![]).unwrap());
        let put = |key: &'static str, text: &'static str| {
            let store = store.clone();
            async move {
                store
                    .put("scripts-b", key, text.into(), PutMode::Overwrite)
                    .await
                    .unwrap();
            }
        };
        let src = S3Tenants::new(store.clone(), "scripts-b", Duration::from_millis(300));
        // GIVEN a config.json that is an array THEN it is refused, naming the object
        put("arr/config.json", "[true]").await;
        let e = src.load("arr").await.unwrap_err().to_string();
        assert_eq!(
            e,
            "s3://scripts-b/arr/config.json: must be a JSON object { ... }, not an array"
        );
        // GIVEN a mistyped limit THEN its JSON path is named
        put("typ/config.json", r#"{"limits":{"timeout_s":"5"}}"#).await;
        let e = src.load("typ").await.unwrap_err().to_string();
        assert!(
            e.starts_with("s3://scripts-b/typ/config.json: limits.timeout_s: invalid type"),
            "{e}"
        );
        // GIVEN a script with a NUL byte on line 2 THEN it is refused with the object and line
        put("nul/scripts/a.luau", "return 1\n--\0 hidden").await;
        let e = src.load("nul").await.unwrap_err().to_string();
        assert!(
            e.starts_with("s3://scripts-b/nul/scripts/a.luau:2: contains a NUL byte"),
            "{e}"
        );
        // GIVEN a script saved with a BOM THEN it loads without it
        put("bom/scripts/a.luau", "\u{feff}return 1").await;
        let t = src.load("bom").await.unwrap();
        assert_eq!(t.scripts["a"].source, "return 1");
    }
}
