//! The object store port: buckets of immutable objects addressed by key.

use async_trait::async_trait;
use bytes::Bytes;

use super::PutMode;
use crate::Result;

/// What is known about a stored object without reading it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectMeta {
    /// The full key in the real bucket.
    pub key: String,
    /// Size in bytes.
    pub size: u64,
    /// An opaque version tag that changes with every write.
    pub etag: String,
    /// When it was last written, in ms since the epoch.
    pub modified_ms: i64,
    /// The chain depth that events about this object run at: one more than the depth of the
    /// invocation that wrote it, 0 for writes from outside (see `ctx.depth`). Read by `head`,
    /// `get` and `open`; 0 in listings.
    pub depth: u32,
    /// The chain of the invocation that wrote it (`ctx.trace`), which its events continue;
    /// `None` for writes from outside and in listings.
    pub trace: Option<String>,
}

/// One page of a listing.
#[derive(Debug, Clone, Default)]
pub struct ListPage {
    /// Objects in key order.
    pub objects: Vec<ObjectMeta>,
    /// Pass back as `after` to get the next page; `None` on the last page.
    pub next: Option<String>,
}

/// An object's bytes, a chunk at a time, so that nothing holds a whole object in memory.
#[async_trait]
pub trait ObjectReader: Send {
    /// The next chunk; `None` at the end.
    async fn next_chunk(&mut self) -> Result<Option<Bytes>>;

    /// The SHA-256 (lowercase hex) of the whole object where the reader checks it itself: a
    /// stream that reaches its end without an error had exactly the bytes of this digest. A
    /// reader of data with a digest of its own (a batch manifest's) need not hash it again.
    /// `None` (the default): the reader checks no digest.
    fn verified_sha256(&self) -> Option<&str> {
        None
    }
}

/// A reader over bytes already in memory.
pub struct InMemory(pub Option<Bytes>);

#[async_trait]
impl ObjectReader for InMemory {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>> {
        Ok(self.0.take().filter(|b| !b.is_empty()))
    }
}

impl ListPage {
    /// A page from up to `limit + 1` objects read in key order: the first `limit`, with a
    /// cursor when there were more.
    pub fn from_overfetch(mut objects: Vec<ObjectMeta>, limit: usize) -> Self {
        let next = (objects.len() > limit).then(|| {
            objects.truncate(limit);
            objects.last().map(|m| m.key.clone())
        });
        ListPage {
            objects,
            next: next.flatten(),
        }
    }
}

/// Buckets of objects. Bucket names are real names (`acme-in`), keys are full keys; mapping from
/// the logical names and tenant folders that scripts use happens in the host API.
#[async_trait]
pub trait ObjectStore: std::fmt::Debug + Send + Sync {
    /// Writes an object whole, as an outside party (its events start a chain at depth 0).
    /// Returns its metadata (with the new etag).
    async fn put(&self, bucket: &str, key: &str, data: Bytes, mode: PutMode) -> Result<ObjectMeta> {
        self.put_in_chain(bucket, key, data, mode, 0, None).await
    }

    /// Writes an object whole, recording the chain depth its events run at
    /// ([`ObjectMeta::depth`]), so that a script that writes into a bucket it is triggered by
    /// cannot loop forever, and the chain they continue ([`ObjectMeta::trace`]).
    async fn put_in_chain(
        &self,
        bucket: &str,
        key: &str,
        data: Bytes,
        mode: PutMode,
        depth: u32,
        trace: Option<&str>,
    ) -> Result<ObjectMeta>;

    /// Reads an object whole; `None` when there is none.
    async fn get(&self, bucket: &str, key: &str) -> Result<Option<(ObjectMeta, Bytes)>>;

    /// Opens an object for reading as a stream; `None` when there is none. Backends that can
    /// stream override this; the default reads the object whole.
    async fn open(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<(ObjectMeta, Box<dyn ObjectReader>)>> {
        Ok(self.get(bucket, key).await?.map(|(meta, data)| {
            (
                meta,
                Box::new(InMemory(Some(data))) as Box<dyn ObjectReader>,
            )
        }))
    }

    /// Reads an object's metadata; `None` when there is none.
    async fn head(&self, bucket: &str, key: &str) -> Result<Option<ObjectMeta>>;

    /// Deletes an object. Deleting what is not there succeeds.
    async fn delete(&self, bucket: &str, key: &str) -> Result<()>;

    /// Lists objects whose key starts with `prefix`, in key order, strictly after the key
    /// `after`, at most `limit` (1 to 1000) of them.
    async fn list(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage>;

    /// Makes the writes that this backend answered before syncing them (inside
    /// [`super::durability::deferring`]) durable. The default: every write is durable when it
    /// returns.
    async fn flush(&self) -> Result<()> {
        Ok(())
    }

    /// Whether [`Self::flush`] may have anything to do: false lets a caller skip it and the
    /// boxed future every call of it costs (three a request served). The default, true, is
    /// right for any backend; one that never defers a write, or knows that nothing is
    /// pending, says false.
    fn may_need_flush(&self) -> bool {
        true
    }
}
