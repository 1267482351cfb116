//! One SigV4-signed request to an AWS API that native has no SDK client for (CloudFormation's
//! `DescribeStacks` and Lambda's `GetFunctionConfiguration`, which only `native deploy` calls):
//! the credentials, region and endpoint of the SDK configuration, signed with `aws-sigv4` and
//! sent with the outbound HTTP client (`crate::outbound::client`), all already in the build.
//! Two whole SDK crates would add minutes of compile for two read-only calls.

use std::time::{Duration, SystemTime};

use aws_credential_types::provider::ProvideCredentials;
use aws_sigv4::http_request::{sign, SignableBody, SignableRequest, SigningSettings};
use aws_sigv4::sign::v4;
use bytes::Bytes;
use hyper::header::{HeaderName, HeaderValue};
use hyper::Method;

use super::SdkConfig;
use crate::outbound::client::{send, Policy, Request};
use crate::outbound::Target;
use crate::{Error, Result};

/// How long one call may take, connection included.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);
/// The largest answer read, in bytes (a stack's outputs, a function's configuration).
pub const MAX_ANSWER: u64 = 4 * 1024 * 1024;

/// An answer: its status and body.
#[derive(Debug, Clone)]
pub struct Answer {
    /// The HTTP status.
    pub status: u16,
    /// The body.
    pub body: Vec<u8>,
}

/// The base URL of `service` in `sdk`'s region: `AWS_ENDPOINT_URL` (an emulator) when set,
/// else `https://<service>.<region>.amazonaws.com`.
pub fn endpoint(sdk: &SdkConfig, service: &str) -> Result<String> {
    if let Some(url) = sdk.endpoint_url() {
        return Ok(url.trim_end_matches('/').to_string());
    }
    let region = region(sdk)?;
    Ok(format!("https://{service}.{region}.amazonaws.com"))
}

fn region(sdk: &SdkConfig) -> Result<String> {
    sdk.region().map(|r| r.to_string()).ok_or_else(|| {
        Error::InvalidInput("no AWS region is set: set AWS_REGION (e.g. eu-west-1)".into())
    })
}

/// Sends `method path` (path and query, already percent-encoded) with `body` and `headers` to
/// `service`, signed for `service` with `sdk`'s credentials. `what` names the call in errors.
pub async fn call(
    sdk: &SdkConfig,
    service: &'static str,
    method: Method,
    path: &str,
    headers: &[(&'static str, &str)],
    body: Bytes,
    what: &str,
) -> Result<Answer> {
    let failed = |why: String| Error::Backend {
        backend: service,
        message: format!("{what}: {why}"),
        source: None,
    };
    let url = format!("{}{path}", endpoint(sdk, service)?);
    let target = Target::parse(&url).map_err(|e| failed(format!("bad URL {url:?}: {e}")))?;
    let provider = sdk.credentials_provider().ok_or_else(|| {
        failed("no AWS credentials are configured (AWS_ACCESS_KEY_ID, AWS_PROFILE, ...)".into())
    })?;
    let creds = provider
        .provide_credentials()
        .await
        .map_err(|e| failed(format!("no AWS credentials: {e}")))?;
    let identity = creds.into();
    let region = region(sdk)?;
    let params = v4::SigningParams::builder()
        .identity(&identity)
        .region(&region)
        .name(service)
        .time(SystemTime::now())
        .settings(SigningSettings::default())
        .build()
        .map_err(|e| failed(format!("cannot sign: {e}")))?
        .into();
    let signable = SignableRequest::new(
        method.as_str(),
        url.as_str(),
        headers.iter().copied(),
        SignableBody::Bytes(&body),
    )
    .map_err(|e| failed(format!("cannot sign: {e}")))?;
    let (instructions, _) = sign(signable, &params)
        .map_err(|e| failed(format!("cannot sign: {e}")))?
        .into_parts();
    let mut all: Vec<(HeaderName, HeaderValue)> = Vec::new();
    let signed = instructions.headers().map(|(n, v)| (n.to_string(), v));
    for (name, value) in headers
        .iter()
        .map(|(n, v)| (n.to_string(), *v))
        .chain(signed)
    {
        let n = HeaderName::from_bytes(name.as_bytes())
            .map_err(|e| failed(format!("header {name}: {e}")))?;
        let v = HeaderValue::from_str(value).map_err(|e| failed(format!("header {name}: {e}")))?;
        all.push((n, v));
    }
    let req = Request {
        method,
        target,
        headers: all,
        body,
    };
    // The operator's own call to AWS (or to the emulator AWS_ENDPOINT_URL names, often on
    // 127.0.0.1), not a tenant's: private addresses are allowed.
    let policy = Policy {
        allow_private: true,
        max_body: MAX_ANSWER,
    };
    let resp = tokio::time::timeout(CALL_TIMEOUT, send(req, policy))
        .await
        .map_err(|_| failed(format!("no answer within {} s", CALL_TIMEOUT.as_secs())))?
        .map_err(|e| failed(e.to_string()))?;
    Ok(Answer {
        status: resp.status,
        body: resp.body,
    })
}
