//! An object store that counts the calls made through it, per bucket and kind, on the way to a
//! real one: for tests that hold an operation to a number of backend calls (counts are
//! deterministic where timings are not).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use bytes::Bytes;
use native_core::ports::{ListPage, ObjectMeta, ObjectReader, ObjectStore, PutMode};
use native_core::Result;

/// Counts every call, then makes it on `inner`.
#[derive(Debug)]
pub struct CountedObjects {
    inner: Arc<dyn ObjectStore>,
    calls: Mutex<BTreeMap<(String, &'static str), u32>>,
}

impl CountedObjects {
    /// Counts the calls made to `inner` from now on.
    pub fn new(inner: Arc<dyn ObjectStore>) -> Self {
        CountedObjects {
            inner,
            calls: Mutex::new(BTreeMap::new()),
        }
    }

    fn count(&self, bucket: &str, what: &'static str) {
        *self
            .calls
            .lock()
            .unwrap()
            .entry((bucket.to_string(), what))
            .or_default() += 1;
    }

    /// The calls made on `bucket` so far by kind (`put`, `get`, `head`, `delete`, `list`;
    /// `open` is a streamed `get`), and forgets them.
    pub fn take(&self, bucket: &str) -> BTreeMap<&'static str, u32> {
        let mut calls = self.calls.lock().unwrap();
        let mine: Vec<_> = calls.keys().filter(|(b, _)| b == bucket).cloned().collect();
        mine.into_iter()
            .map(|k| (k.1, calls.remove(&k).unwrap_or(0)))
            .collect()
    }
}

#[async_trait]
impl ObjectStore for CountedObjects {
    async fn put_in_chain(
        &self,
        bucket: &str,
        key: &str,
        data: Bytes,
        mode: PutMode,
        depth: u32,
        trace: Option<&str>,
    ) -> Result<ObjectMeta> {
        self.count(bucket, "put");
        self.inner
            .put_in_chain(bucket, key, data, mode, depth, trace)
            .await
    }

    async fn get(&self, bucket: &str, key: &str) -> Result<Option<(ObjectMeta, Bytes)>> {
        self.count(bucket, "get");
        self.inner.get(bucket, key).await
    }

    async fn open(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<(ObjectMeta, Box<dyn ObjectReader>)>> {
        self.count(bucket, "get");
        self.inner.open(bucket, key).await
    }

    async fn head(&self, bucket: &str, key: &str) -> Result<Option<ObjectMeta>> {
        self.count(bucket, "head");
        self.inner.head(bucket, key).await
    }

    async fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        self.count(bucket, "delete");
        self.inner.delete(bucket, key).await
    }

    async fn list(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage> {
        self.count(bucket, "list");
        self.inner.list(bucket, prefix, after, limit).await
    }

    async fn flush(&self) -> Result<()> {
        self.inner.flush().await
    }

    fn may_need_flush(&self) -> bool {
        self.inner.may_need_flush()
    }
}
