//! Buckets of the embedded backend.

use std::io::Write;

use async_trait::async_trait;
use bytes::Bytes;
use rusqlite::{params, OptionalExtension};
use sha2::{Digest, Sha256};

use super::{db_err, io_err, token, Embedded};
use crate::events::object_created_body;
use crate::ports::{now_ms, ListPage, ObjectMeta, ObjectReader, ObjectStore, PutMode, QueueKind};
use crate::{Error, Result};

impl Embedded {
    fn blob_path(&self, blob: &str) -> std::path::PathBuf {
        self.inner.root.join("blobs").join(&blob[..2]).join(blob)
    }

    /// Removes a blob file if no object refers to it any more. Runs in its own write
    /// transaction so that no put can be between placing the blob and referring to it.
    fn collect_blob(&self, blob: &str) -> Result<()> {
        self.write(|tx| {
            let refs: i64 = tx
                .query_row(
                    "SELECT count(*) FROM objects WHERE blob = ?1",
                    [blob],
                    |r| r.get(0),
                )
                .map_err(db_err)?;
            if refs == 0 {
                let _ = std::fs::remove_file(self.blob_path(blob));
            }
            Ok(())
        })
    }

    fn meta_row(
        tx: &rusqlite::Connection,
        bucket: &str,
        key: &str,
    ) -> Result<Option<(ObjectMeta, String)>> {
        tx.query_row(
            "SELECT size, etag, modified_ms, blob, depth FROM objects WHERE bucket = ?1 AND key = ?2",
            params![bucket, key],
            |r| {
                Ok((
                    ObjectMeta {
                        key: key.to_string(),
                        size: r.get::<_, i64>(0)? as u64,
                        etag: r.get(1)?,
                        modified_ms: r.get(2)?,
                        depth: r.get(4)?,
                    },
                    r.get::<_, String>(3)?,
                ))
            },
        )
        .optional()
        .map_err(db_err)
    }

    /// Reads an object's content as a file, for streaming. The file stays readable even if the
    /// object is overwritten or deleted meanwhile.
    pub fn open_object(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<(ObjectMeta, std::fs::File)>> {
        let Some((meta, blob)) = Self::meta_row(&self.conn(), bucket, key)? else {
            return Ok(None);
        };
        let file = std::fs::File::open(self.blob_path(&blob))
            .map_err(|e| io_err(format!("object {bucket}/{key} has lost its content"), e))?;
        Ok(Some((meta, file)))
    }
}

#[async_trait]
impl ObjectStore for Embedded {
    async fn put_at_depth(
        &self,
        bucket: &str,
        key: &str,
        data: Bytes,
        mode: PutMode,
        depth: u32,
    ) -> Result<ObjectMeta> {
        let digest = hex::encode(Sha256::digest(&data));
        let etag = digest[..32].to_string();
        let tmp = self.inner.root.join("tmp").join(token());
        let mut f =
            std::fs::File::create(&tmp).map_err(|e| io_err("cannot write object".into(), e))?;
        f.write_all(&data)
            .map_err(|e| io_err("cannot write object".into(), e))?;
        drop(f);
        let blob_path = self.blob_path(&digest);
        let meta = ObjectMeta {
            key: key.to_string(),
            size: data.len() as u64,
            etag: etag.clone(),
            modified_ms: now_ms(),
            depth,
        };
        let notify =
            self.inner.notify.iter().any(|(b, suffix)| {
                b == bucket && suffix.as_deref().is_none_or(|s| key.ends_with(s))
            });
        let result = self.write(|tx| {
            let old = Self::meta_row(tx, bucket, key)?;
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
            if let Some(dir) = blob_path.parent() {
                std::fs::create_dir_all(dir)
                    .map_err(|e| io_err("cannot write object".into(), e))?;
            }
            std::fs::rename(&tmp, &blob_path)
                .map_err(|e| io_err("cannot write object".into(), e))?;
            tx.execute(
                "INSERT OR REPLACE INTO objects (bucket, key, size, etag, blob, modified_ms, depth)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                params![
                    bucket,
                    key,
                    meta.size as i64,
                    etag,
                    digest,
                    meta.modified_ms,
                    depth
                ],
            )
            .map_err(db_err)?;
            if notify {
                let body = object_created_body(bucket, &meta, "local");
                Self::enqueue(tx, QueueKind::Events, &body, 0)?;
            }
            Ok(old.map(|(_, blob)| blob))
        });
        let _ = std::fs::remove_file(&tmp);
        if let Some(old_blob) = result? {
            if old_blob != digest {
                self.collect_blob(&old_blob)?;
            }
        }
        Ok(meta)
    }

    async fn get(&self, bucket: &str, key: &str) -> Result<Option<(ObjectMeta, Bytes)>> {
        let Some((meta, blob)) = Self::meta_row(&self.conn(), bucket, key)? else {
            return Ok(None);
        };
        match std::fs::read(self.blob_path(&blob)) {
            Ok(data) => Ok(Some((meta, Bytes::from(data)))),
            // Overwritten and collected between the two reads: read the new version.
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let Some((meta, blob)) = Self::meta_row(&self.conn(), bucket, key)? else {
                    return Ok(None);
                };
                let data = std::fs::read(self.blob_path(&blob)).map_err(|e| {
                    io_err(format!("object {bucket}/{key} has lost its content"), e)
                })?;
                Ok(Some((meta, Bytes::from(data))))
            }
            Err(e) => Err(io_err(format!("cannot read object {bucket}/{key}"), e)),
        }
    }

    async fn open(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<(ObjectMeta, Box<dyn ObjectReader>)>> {
        Ok(self
            .open_object(bucket, key)?
            .map(|(meta, file)| (meta, Box::new(FileReader(file)) as Box<dyn ObjectReader>)))
    }

    async fn head(&self, bucket: &str, key: &str) -> Result<Option<ObjectMeta>> {
        Ok(Self::meta_row(&self.conn(), bucket, key)?.map(|(m, _)| m))
    }

    async fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        let old = self.write(|tx| {
            let old = Self::meta_row(tx, bucket, key)?;
            tx.execute(
                "DELETE FROM objects WHERE bucket = ?1 AND key = ?2",
                params![bucket, key],
            )
            .map_err(db_err)?;
            Ok(old)
        })?;
        if let Some((_, blob)) = old {
            self.collect_blob(&blob)?;
        }
        Ok(())
    }

    async fn list(
        &self,
        bucket: &str,
        prefix: &str,
        after: Option<&str>,
        limit: usize,
    ) -> Result<ListPage> {
        let limit = limit.clamp(1, 1000);
        let conn = self.conn();
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
                    })
                },
            )
            .map_err(db_err)?;
        let objects = rows.collect::<Result<Vec<_>, _>>().map_err(db_err)?;
        Ok(ListPage::from_overfetch(objects, limit))
    }
}

/// Reads a blob file in chunks.
struct FileReader(std::fs::File);

const CHUNK: usize = 256 * 1024;

#[async_trait]
impl ObjectReader for FileReader {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>> {
        use std::io::Read;
        let mut buf = vec![0u8; CHUNK];
        let n = self
            .0
            .read(&mut buf)
            .map_err(|e| io_err("cannot read object".into(), e))?;
        if n == 0 {
            return Ok(None);
        }
        buf.truncate(n);
        Ok(Some(Bytes::from(buf)))
    }
}
