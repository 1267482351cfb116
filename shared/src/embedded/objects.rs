//! Buckets of the embedded backend.

use std::path::{Path, PathBuf};

use async_trait::async_trait;
use bytes::Bytes;
use rusqlite::{params, OptionalExtension};
use sha2::{Digest, Sha256};

use super::{db_err, faults, token, Embedded};
use crate::error::StorageFault;
use crate::events::object_created_body;
use crate::ports::{now_ms, ListPage, ObjectMeta, ObjectReader, ObjectStore, PutMode, QueueKind};
use crate::{Error, Result};

impl Embedded {
    pub(super) fn blob_path(&self, blob: &str) -> PathBuf {
        blob_path(&self.inner.root, blob)
    }

    fn meta_row(
        tx: &rusqlite::Connection,
        bucket: &str,
        key: &str,
    ) -> Result<Option<(ObjectMeta, String)>> {
        super::query_row(
            tx,
            "SELECT size, etag, modified_ms, blob, depth, trace FROM objects WHERE bucket = ?1 AND key = ?2",
            params![bucket, key],
            |r| {
                Ok((
                    ObjectMeta {
                        key: key.to_string(),
                        size: r.get::<_, i64>(0)? as u64,
                        etag: r.get(1)?,
                        modified_ms: r.get(2)?,
                        depth: r.get(4)?,
                        trace: r.get(5)?,
                    },
                    r.get::<_, String>(3)?,
                ))
            },
        )
        .optional()
        .map_err(db_err)
    }

    /// Opens an object's content for streaming, its length checked against the object's size
    /// (the digest is checked as the stream ends). The file stays readable even if the object
    /// is overwritten or deleted meanwhile.
    fn open_checked(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<(ObjectMeta, String, std::fs::File)>> {
        for _ in 0..2 {
            let Some((meta, blob)) = self.read(|c| Self::meta_row(c, bucket, key))? else {
                return Ok(None);
            };
            let path = self.blob_path(&blob);
            match std::fs::File::open(&path) {
                Ok(file) => {
                    let len = file
                        .metadata()
                        .map_err(|e| {
                            faults::io(&format!("cannot read object {bucket}/{key}"), &path, &e)
                        })?
                        .len();
                    if len != meta.size {
                        return Err(damaged(
                            bucket,
                            key,
                            &path,
                            format!("has {len} bytes, not {}", meta.size),
                        ));
                    }
                    return Ok(Some((meta, blob, file)));
                }
                // Overwritten and collected between the two reads: read the new version.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => {
                    return Err(faults::io(
                        &format!("cannot read object {bucket}/{key}"),
                        &path,
                        &e,
                    ))
                }
            }
        }
        let Some((_, blob)) = self.read(|c| Self::meta_row(c, bucket, key))? else {
            return Ok(None);
        };
        Err(damaged(
            bucket,
            key,
            &self.blob_path(&blob),
            "is missing".into(),
        ))
    }
}

impl Embedded {
    /// The file that holds an object's content, its length checked (benchmarks read it raw).
    pub fn open_object(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<(ObjectMeta, std::fs::File)>> {
        Ok(self
            .open_checked(bucket, key)?
            .map(|(meta, _, file)| (meta, file)))
    }
}

fn blob_path(root: &Path, blob: &str) -> PathBuf {
    root.join("blobs").join(&blob[..2]).join(blob)
}

/// An object whose content does not match its row: named, with what to do.
fn damaged(bucket: &str, key: &str, path: &Path, why: String) -> Error {
    Error::Storage {
        fault: StorageFault::Damaged,
        path: path.display().to_string(),
        message: format!(
            "object {bucket}/{key} is damaged: its content {} {why}; put the object again or delete it (`native doctor` lists every damaged object)",
            path.display()
        ),
    }
}

#[async_trait]
impl ObjectStore for Embedded {
    async fn put_in_chain(
        &self,
        bucket: &str,
        key: &str,
        data: Bytes,
        mode: PutMode,
        depth: u32,
        trace: Option<&str>,
    ) -> Result<ObjectMeta> {
        let digest = hex::encode(Sha256::digest(&data));
        let etag = digest[..32].to_string();
        let what = format!("cannot write object {bucket}/{key}");
        // Named after this backend's owner, so that another process removes it only once this
        // one is dead.
        let tmp = self
            .inner
            .root
            .join("tmp")
            .join(format!("{}.{}", self.inner.owner.id, token()));
        let disk = self.inner.disk.clone();
        // The content is on stable storage before anything names it.
        if let Err(e) = disk.create_file(&tmp, &data, true) {
            let _ = disk.remove_file(&tmp);
            return Err(faults::io(&what, &tmp, &e));
        }
        let blobs = self.inner.root.join("blobs");
        let blob_dir = blobs.join(&digest[..2]);
        let blob_path = blob_dir.join(&digest);
        let meta = ObjectMeta {
            key: key.to_string(),
            size: data.len() as u64,
            etag: etag.clone(),
            modified_ms: now_ms(),
            depth,
            trace: trace.map(str::to_string),
        };
        let notify =
            self.inner.notify.iter().any(|(b, suffix)| {
                b == bucket && suffix.as_deref().is_none_or(|s| key.ends_with(s))
            });
        let (bucket_, key_, meta_, tmp_, disk_) = (
            bucket.to_string(),
            key.to_string(),
            meta.clone(),
            tmp.clone(),
            disk.clone(),
        );
        let result = self
            .inner
            .writer
            .write(move |tx, group| {
                let (bucket, key, meta, tmp, disk) = (bucket_, key_, meta_, tmp_, disk_);
                let old = Self::meta_row(tx, &bucket, &key)?;
                match (&mode, &old) {
                    (PutMode::Create, Some(_)) => {
                        return Err(Error::AlreadyExists {
                            what: format!("object {bucket}/{key}"),
                        })
                    }
                    (PutMode::Update(want), Some((m, _))) if *want != m.etag => {
                        return Err(Error::Precondition {
                            what: format!("object {bucket}/{key} has etag {}, not {want}", m.etag),
                        })
                    }
                    (PutMode::Update(want), None) => {
                        return Err(Error::Precondition {
                            what: format!(
                                "object {bucket}/{key} does not exist (expected etag {want})"
                            ),
                        })
                    }
                    _ => {}
                }
                // Placed in the write transaction, so that collecting an old blob of the same
                // digest cannot be between this and the row; the folders that name it are
                // synced before the group commits.
                if disk
                    .create_dir(&blob_dir)
                    .map_err(|e| faults::io(&what, &blob_dir, &e))?
                {
                    group.sync_before_commit(&blobs);
                }
                disk.rename(&tmp, &blob_path)
                    .map_err(|e| faults::io(&what, &blob_path, &e))?;
                group.sync_before_commit(&blob_dir);
                super::execute(
                    tx,
                    "INSERT OR REPLACE INTO objects (bucket, key, size, etag, blob, modified_ms, depth, trace)
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                    params![
                        bucket,
                        key,
                        meta.size as i64,
                        meta.etag,
                        digest,
                        meta.modified_ms,
                        depth,
                        meta.trace
                    ],
                )
                .map_err(db_err)?;
                if notify {
                    let body = object_created_body(&bucket, &meta, "local");
                    Self::enqueue(tx, QueueKind::Events, &body, 0)?;
                }
                // The old content goes once this row is synced (writer.rs).
                if let Some((_, blob)) = old.filter(|(_, b)| *b != digest) {
                    group.collect_after_sync(tx, &blob)?;
                }
                Ok(())
            })
            .await;
        // Renamed away when the write went through; otherwise not left behind.
        let _ = std::fs::remove_file(&tmp);
        result?;
        Ok(meta)
    }

    async fn get(&self, bucket: &str, key: &str) -> Result<Option<(ObjectMeta, Bytes)>> {
        use std::io::Read;
        let Some((meta, blob, mut file)) = self.open_checked(bucket, key)? else {
            return Ok(None);
        };
        let path = self.blob_path(&blob);
        let mut data = Vec::with_capacity(meta.size as usize);
        file.read_to_end(&mut data)
            .map_err(|e| faults::io(&format!("cannot read object {bucket}/{key}"), &path, &e))?;
        // Content-addressed: the name is the digest of what must be in the file.
        if data.len() as u64 != meta.size {
            return Err(damaged(
                bucket,
                key,
                &path,
                format!("has {} bytes, not {}", data.len(), meta.size),
            ));
        }
        if hex::encode(Sha256::digest(&data)) != blob {
            return Err(damaged(
                bucket,
                key,
                &path,
                "does not have the sha256 it is named by".into(),
            ));
        }
        Ok(Some((meta, Bytes::from(data))))
    }

    async fn open(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<(ObjectMeta, Box<dyn ObjectReader>)>> {
        Ok(self.open_checked(bucket, key)?.map(|(meta, blob, file)| {
            let reader = FileReader {
                path: self.blob_path(&blob),
                name: format!("{bucket}/{key}"),
                file,
                digest: Sha256::new(),
                blob,
                left: meta.size,
                ended: false,
            };
            (meta, Box::new(reader) as Box<dyn ObjectReader>)
        }))
    }

    async fn head(&self, bucket: &str, key: &str) -> Result<Option<ObjectMeta>> {
        Ok(self
            .read(|c| Self::meta_row(c, bucket, key))?
            .map(|(m, _)| m))
    }

    async fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        let (b, k) = (bucket.to_string(), key.to_string());
        self.inner
            .writer
            .write(move |tx, group| {
                let old = Self::meta_row(tx, &b, &k)?;
                super::execute(
                    tx,
                    "DELETE FROM objects WHERE bucket = ?1 AND key = ?2",
                    params![b, k],
                )
                .map_err(db_err)?;
                // Its content goes once this delete is synced (writer.rs).
                if let Some((_, blob)) = old {
                    group.collect_after_sync(tx, &blob)?;
                }
                Ok(())
            })
            .await
    }

    async fn list(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage> {
        let limit = limit.clamp(1, 1000);
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT key, size, etag, modified_ms FROM objects
                 WHERE bucket = ?1 AND key >= ?2 AND key > ?3 AND substr(key, 1, ?4) = ?2
                 ORDER BY key LIMIT ?5",
                )
                .map_err(db_err)?;
            let rows = stmt
                .query_map(
                    params![
                        bucket,
                        prefix,
                        after.unwrap_or(""),
                        prefix.chars().count() as i64,
                        limit as i64 + 1
                    ],
                    |r| {
                        Ok(ObjectMeta {
                            key: r.get(0)?,
                            size: r.get::<_, i64>(1)? as u64,
                            etag: r.get(2)?,
                            modified_ms: r.get(3)?,
                            depth: 0,
                            trace: None,
                        })
                    },
                )
                .map_err(db_err)?;
            let objects = rows.collect::<Result<Vec<_>, _>>().map_err(db_err)?;
            Ok(ListPage::from_overfetch(objects, limit))
        })
    }

    async fn flush(&self) -> Result<()> {
        self.flush_writes().await
    }

    fn may_need_flush(&self) -> bool {
        self.has_unsynced_writes()
    }
}

/// Reads a blob file in chunks, checking as it goes that it holds the object's size and, at
/// its end, the digest it is named by: a damaged content ends the stream with an error that
/// names the object, never as a short or altered read.
struct FileReader {
    path: PathBuf,
    name: String,
    file: std::fs::File,
    digest: Sha256,
    blob: String,
    left: u64,
    /// The end was reached and checked: later calls answer the end again.
    ended: bool,
}

const CHUNK: usize = 256 * 1024;

impl FileReader {
    fn damaged(&self, why: String) -> Error {
        let (bucket, key) = self.name.split_once('/').unwrap_or((&self.name, ""));
        damaged(bucket, key, &self.path, why)
    }
}

#[async_trait]
impl ObjectReader for FileReader {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>> {
        use std::io::Read;
        if self.ended {
            return Ok(None);
        }
        let mut buf = vec![0u8; CHUNK];
        let n = self.file.read(&mut buf).map_err(|e| {
            faults::io(&format!("cannot read object {}", self.name), &self.path, &e)
        })?;
        if n == 0 {
            if self.left != 0 {
                return Err(self.damaged(format!("ended {} bytes early", self.left)));
            }
            let digest = hex::encode(std::mem::take(&mut self.digest).finalize());
            if digest != self.blob {
                return Err(self.damaged("does not have the sha256 it is named by".into()));
            }
            self.ended = true;
            return Ok(None);
        }
        if n as u64 > self.left {
            return Err(self.damaged("is longer than the object".into()));
        }
        self.left -= n as u64;
        buf.truncate(n);
        self.digest.update(&buf);
        Ok(Some(Bytes::from(buf)))
    }

    fn verified_sha256(&self) -> Option<&str> {
        // Content-addressed: the blob is named by its digest, checked as the stream ends.
        Some(&self.blob)
    }
}
