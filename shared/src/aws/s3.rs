//! The object store port over S3. Conditional writes are S3's own: `If-None-Match: *` for
//! [`PutMode::Create`] and `If-Match: <etag>` for [`PutMode::Update`], so they hold under
//! concurrent writers (moto honours both too).

use async_trait::async_trait;
use aws_sdk_s3::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_s3::primitives::ByteStream;
use bytes::Bytes;

use super::{sdk_err, LazyClient};
use crate::ports::{now_ms, ListPage, ObjectMeta, ObjectReader, ObjectStore, PutMode};
use crate::{Error, Result};

/// Buckets in S3.
#[derive(Debug, Clone)]
pub struct S3Objects {
    client: LazyClient<aws_sdk_s3::Client>,
}

impl S3Objects {
    /// The port over an S3 client.
    pub fn new(client: aws_sdk_s3::Client) -> Self {
        S3Objects {
            client: LazyClient::ready(client),
        }
    }

    /// The port over the client that `make` makes when it is first used ([`LazyClient`]).
    pub fn on_first_use(make: impl FnOnce() -> aws_sdk_s3::Client + Send + 'static) -> Self {
        S3Objects {
            client: LazyClient::on_first_use(make),
        }
    }

    /// The client, for what the port does not cover (notifications, bucket setup).
    pub fn client(&self) -> &aws_sdk_s3::Client {
        &self.client
    }

    /// GetObject: the metadata and the body still to be read; `None` when there is no object.
    async fn get_stream(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<(ObjectMeta, ByteStream)>> {
        let out = match self
            .client
            .get_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => out,
            Err(e) => {
                let (status, code) = status_code(&e);
                // A missing bucket is also a 404, but with its own code: that is an error.
                if code.as_deref() == Some("NoSuchKey") || (status == Some(404) && code.is_none()) {
                    return Ok(None);
                }
                return Err(sdk_err("s3", format!("cannot get {bucket}/{key}"), e));
            }
        };
        let meta = ObjectMeta {
            key: key.to_string(),
            size: out.content_length().unwrap_or(0).max(0) as u64,
            etag: bare(out.e_tag()),
            modified_ms: ms(out.last_modified()),
            depth: depth_of(out.metadata()),
            trace: trace_of(out.metadata()),
        };
        Ok(Some((meta, out.body)))
    }
}

/// An S3 object's body, read as it arrives.
struct S3Reader {
    body: ByteStream,
    what: String,
}

#[async_trait]
impl ObjectReader for S3Reader {
    async fn next_chunk(&mut self) -> Result<Option<Bytes>> {
        loop {
            match self.body.next().await {
                None => return Ok(None),
                Some(Ok(b)) if b.is_empty() => continue,
                Some(Ok(b)) => return Ok(Some(b)),
                Some(Err(e)) => {
                    return Err(sdk_err(
                        "s3",
                        format!("cannot read the body of {}", self.what),
                        e,
                    ))
                }
            }
        }
    }
}

/// The user metadata that holds [`ObjectMeta::depth`] (`x-amz-meta-native-depth`).
const DEPTH_META: &str = "native-depth";

/// The user metadata that holds [`ObjectMeta::trace`] (`x-amz-meta-native-trace`).
const TRACE_META: &str = "native-trace";

/// The chain an object's metadata names, when it is one ([`crate::ports::is_trace`]): anyone
/// who can write to the bucket can set metadata.
fn trace_of(meta: Option<&std::collections::HashMap<String, String>>) -> Option<String> {
    meta.and_then(|m| m.get(TRACE_META))
        .filter(|t| crate::ports::is_trace(t))
        .cloned()
}

fn depth_of(meta: Option<&std::collections::HashMap<String, String>>) -> u32 {
    meta.and_then(|m| m.get(DEPTH_META))
        .and_then(|d| d.parse().ok())
        .unwrap_or(0)
}

/// S3 etags come quoted; the port's etags are bare.
fn bare(etag: Option<&str>) -> String {
    etag.unwrap_or("").trim_matches('"').to_string()
}

fn ms(t: Option<&aws_sdk_s3::primitives::DateTime>) -> i64 {
    t.and_then(|t| t.to_millis().ok()).unwrap_or_else(now_ms)
}

/// The HTTP status and error code of a service error, if it is one.
fn status_code<E: ProvideErrorMetadata>(e: &SdkError<E>) -> (Option<u16>, Option<String>) {
    match e {
        SdkError::ServiceError(se) => {
            let status = e.raw_response().map(|r| r.status().as_u16());
            (status, se.err().code().map(str::to_string))
        }
        SdkError::ResponseError(_) => (e.raw_response().map(|r| r.status().as_u16()), None),
        _ => (None, None),
    }
}

#[async_trait]
impl ObjectStore for S3Objects {
    /// Every write is durable when its call returns: a flush has nothing to do.
    fn may_need_flush(&self) -> bool {
        false
    }

    async fn put_in_chain(
        &self,
        bucket: &str,
        key: &str,
        data: Bytes,
        mode: PutMode,
        depth: u32,
        trace: Option<&str>,
    ) -> Result<ObjectMeta> {
        let size = data.len() as u64;
        let mut req = self
            .client
            .put_object()
            .bucket(bucket)
            .key(key)
            .body(ByteStream::from(data));
        if depth > 0 {
            req = req.metadata(DEPTH_META, depth.to_string());
        }
        if let Some(t) = trace {
            req = req.metadata(TRACE_META, t);
        }
        match &mode {
            PutMode::Overwrite => {}
            PutMode::Create => req = req.if_none_match("*"),
            PutMode::Update(etag) => req = req.if_match(format!("\"{etag}\"")),
        }
        match req.send().await {
            Ok(out) => Ok(ObjectMeta {
                key: key.to_string(),
                size,
                etag: bare(out.e_tag()),
                modified_ms: now_ms(),
                depth,
                trace: trace.map(str::to_string),
            }),
            Err(e) => {
                let (status, code) = status_code(&e);
                // 412 PreconditionFailed: the condition did not hold. 409
                // ConditionalRequestConflict: a concurrent conditional write won. 404 on
                // If-Match: there is no object to match.
                let failed = matches!(status, Some(412) | Some(409))
                    || matches!(
                        code.as_deref(),
                        Some("PreconditionFailed") | Some("ConditionalRequestConflict")
                    );
                match &mode {
                    PutMode::Create if failed => Err(Error::AlreadyExists {
                        what: format!("object {bucket}/{key}"),
                    }),
                    PutMode::Update(want) if failed => Err(Error::Precondition {
                        what: format!("object {bucket}/{key} no longer has etag {want}"),
                    }),
                    PutMode::Update(want) if code.as_deref() == Some("NoSuchKey") => {
                        Err(Error::Precondition {
                            what: format!(
                                "object {bucket}/{key} does not exist (expected etag {want})"
                            ),
                        })
                    }
                    _ => Err(sdk_err("s3", format!("cannot put {bucket}/{key}"), e)),
                }
            }
        }
    }

    async fn get(&self, bucket: &str, key: &str) -> Result<Option<(ObjectMeta, Bytes)>> {
        let Some((meta, body)) = self.get_stream(bucket, key).await? else {
            return Ok(None);
        };
        let data = body
            .collect()
            .await
            .map_err(|e| sdk_err("s3", format!("cannot read the body of {bucket}/{key}"), e))?
            .into_bytes();
        Ok(Some((
            ObjectMeta {
                size: data.len() as u64,
                ..meta
            },
            data,
        )))
    }

    /// Streams the body as S3 sends it, chunk by chunk, without holding the object in memory.
    async fn open(
        &self,
        bucket: &str,
        key: &str,
    ) -> Result<Option<(ObjectMeta, Box<dyn ObjectReader>)>> {
        Ok(self.get_stream(bucket, key).await?.map(|(meta, body)| {
            let reader = S3Reader {
                body,
                what: format!("{bucket}/{key}"),
            };
            (meta, Box::new(reader) as Box<dyn ObjectReader>)
        }))
    }

    async fn head(&self, bucket: &str, key: &str) -> Result<Option<ObjectMeta>> {
        match self
            .client
            .head_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
        {
            Ok(out) => Ok(Some(ObjectMeta {
                key: key.to_string(),
                size: out.content_length().unwrap_or(0).max(0) as u64,
                etag: bare(out.e_tag()),
                modified_ms: ms(out.last_modified()),
                depth: depth_of(out.metadata()),
                trace: trace_of(out.metadata()),
            })),
            Err(e) => {
                let (status, code) = status_code(&e);
                // HEAD responses have no body, so no error code: a 404 is the object's.
                if (status == Some(404) && code.as_deref() != Some("NoSuchBucket"))
                    || code.as_deref() == Some("NoSuchKey")
                {
                    Ok(None)
                } else {
                    Err(sdk_err("s3", format!("cannot head {bucket}/{key}"), e))
                }
            }
        }
    }

    async fn delete(&self, bucket: &str, key: &str) -> Result<()> {
        self.client
            .delete_object()
            .bucket(bucket)
            .key(key)
            .send()
            .await
            .map_err(|e| sdk_err("s3", format!("cannot delete {bucket}/{key}"), e))?;
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
        let mut req = self
            .client
            .list_objects_v2()
            .bucket(bucket)
            .prefix(prefix)
            .max_keys(limit as i32);
        if let Some(a) = after {
            req = req.start_after(a);
        }
        let out = req
            .send()
            .await
            .map_err(|e| sdk_err("s3", format!("cannot list {bucket}/{prefix}"), e))?;
        let objects: Vec<ObjectMeta> = out
            .contents()
            .iter()
            .map(|o| ObjectMeta {
                key: o.key().unwrap_or_default().to_string(),
                size: o.size().unwrap_or(0).max(0) as u64,
                etag: bare(o.e_tag()),
                modified_ms: ms(o.last_modified()),
                depth: 0,
                trace: None,
            })
            .collect();
        let next = if out.is_truncated().unwrap_or(false) {
            objects.last().map(|o| o.key.clone())
        } else {
            None
        };
        Ok(ListPage { objects, next })
    }
}
