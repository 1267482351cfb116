//! Tenant-scoped credentials: the S3 and DynamoDB clients that run a tenant's script calls use
//! credentials from `sts:AssumeRole` into the tenant role with the session tag
//! `tenant=<name>`, so that IAM (`${aws:PrincipalTag/tenant}`, `dynamodb:LeadingKeys`) holds
//! each tenant to its own folders and partitions even if the engine were wrong about it.
//!
//! The vault's Secrets Manager client is scoped the same way: the tenant role may read only
//! `<prefix>${aws:PrincipalTag/tenant}/*`, so a runtime bug that asked for another tenant's
//! secret is refused by IAM, and the function roles read no tenant secret at all.
//!
//! Credentials are cached per warm process and tenant until [`REFRESH_MARGIN`] before they
//! expire; the queue port stays on the function's own credentials (a message names its tenant
//! in its body, which IAM cannot see).

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use aws_sdk_sts::types::Tag;

use super::{sdk_err, AwsConfig, DynamoKv, LazyClient, S3Objects, SdkConfig, SecretsVault};
use crate::ports::{Backends, KvStore, ObjectStore, Vault};
use crate::runtime::TenantScope;
use crate::Result;

/// How long before expiry cached credentials are replaced: longer than any invocation can run
/// (900 s), so that no call starts with credentials that expire under it.
pub const REFRESH_MARGIN: Duration = Duration::from_secs(15 * 60);
/// The session length asked for (the tenant role's `MaxSessionDuration`).
pub const SESSION_SECONDS: i32 = 3600;
/// Most tenants whose clients are kept; past it, expired entries go, then arbitrary ones.
const MAX_CACHED: usize = 1024;

/// Notes the access key id that each request of a client was signed with (from its
/// `Authorization` header, after signing), so that what a tenant's clients really send can be
/// checked, not only what they were built with.
#[derive(Debug, Clone, Default)]
struct SignedWith(Arc<std::sync::Mutex<Option<String>>>);

impl aws_sdk_s3::config::Intercept for SignedWith {
    fn name(&self) -> &'static str {
        "SignedWith"
    }

    fn read_before_transmit(
        &self,
        context: &aws_sdk_s3::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _: &aws_sdk_s3::config::RuntimeComponents,
        _: &mut aws_sdk_s3::config::ConfigBag,
    ) -> std::result::Result<(), aws_sdk_s3::error::BoxError> {
        let key = context
            .request()
            .headers()
            .get("authorization")
            .and_then(|h| h.split("Credential=").nth(1))
            .and_then(|c| c.split('/').next())
            .map(str::to_string);
        if key.is_some() {
            *self.0.lock().unwrap_or_else(|p| p.into_inner()) = key;
        }
        Ok(())
    }
}

impl SignedWith {
    fn get(&self) -> Option<String> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }
}

/// A tenant's ports, what their clients last signed with, and when their credentials expire.
struct Cached {
    s3_signed: SignedWith,
    dynamodb_signed: SignedWith,
    secrets_signed: SignedWith,
    objects: Arc<dyn ObjectStore>,
    kv: Arc<dyn KvStore>,
    vault: Arc<dyn Vault>,
    expires: SystemTime,
}

/// Backends per tenant over credentials of the tenant role.
pub struct StsTenantScope {
    sdk: SdkConfig,
    sts: LazyClient<aws_sdk_sts::Client>,
    role_arn: String,
    table: String,
    vault_prefix: String,
    margin: Duration,
    cache: tokio::sync::Mutex<HashMap<String, Cached>>,
    assumed: std::sync::atomic::AtomicU64,
}

impl std::fmt::Debug for StsTenantScope {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StsTenantScope")
            .field("role_arn", &self.role_arn)
            .finish_non_exhaustive()
    }
}

impl StsTenantScope {
    /// A scope that assumes `role_arn` for each tenant, with clients built from `sdk` (whose
    /// own credentials, the function's, are what may assume the role), over `config`'s table
    /// and vault prefix.
    pub fn new(sdk: &SdkConfig, role_arn: &str, config: &AwsConfig) -> Self {
        StsTenantScope {
            sdk: sdk.clone(),
            sts: {
                let sdk = sdk.clone();
                LazyClient::on_first_use(move || aws_sdk_sts::Client::new(&sdk))
            },
            role_arn: role_arn.to_string(),
            table: config.table.clone(),
            vault_prefix: config.vault_prefix.clone(),
            margin: REFRESH_MARGIN,
            cache: tokio::sync::Mutex::new(HashMap::new()),
            assumed: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// The same scope replacing credentials `margin` before they expire (tests force renewal
    /// with a margin longer than a session).
    pub fn with_refresh_margin(mut self, margin: Duration) -> Self {
        self.margin = margin;
        self
    }

    /// How many times this scope has called `AssumeRole`.
    pub fn assumed(&self) -> u64 {
        self.assumed.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The session name for a tenant: what CloudTrail shows as the caller of its data calls.
    pub fn session_name(tenant: &str) -> String {
        // Tenant names are 1 to 64 of [A-Za-z0-9_-]; a session name may hold 64 of
        // [\w+=,.@-], so the name is cut to fit after the prefix.
        let mut name = format!("native-{tenant}");
        name.truncate(64);
        name
    }

    /// The `AssumeRole` request for a tenant: the session tag that the tenant role's policy
    /// keys on, and a session name that says whose it is.
    pub fn assume_request(
        &self,
        tenant: &str,
    ) -> aws_sdk_sts::operation::assume_role::builders::AssumeRoleFluentBuilder {
        self.sts
            .assume_role()
            .role_arn(&self.role_arn)
            .role_session_name(Self::session_name(tenant))
            .duration_seconds(SESSION_SECONDS)
            .tags(
                Tag::builder()
                    .key("tenant")
                    .value(tenant)
                    .build()
                    .expect("key and value are set"),
            )
    }

    /// The access key ids that the last request of `tenant`'s S3 client and of its DynamoDB
    /// client were signed with (None before the first of each).
    pub async fn signed_with(&self, tenant: &str) -> (Option<String>, Option<String>) {
        let cache = self.cache.lock().await;
        match cache.get(tenant) {
            Some(c) => (c.s3_signed.get(), c.dynamodb_signed.get()),
            None => (None, None),
        }
    }

    /// The access key id that the last request of `tenant`'s Secrets Manager client (its
    /// vault) was signed with (None before the first).
    pub async fn vault_signed_with(&self, tenant: &str) -> Option<String> {
        let cache = self.cache.lock().await;
        cache.get(tenant).and_then(|c| c.secrets_signed.get())
    }

    async fn assume(&self, tenant: &str) -> Result<Cached> {
        let send = self.assume_request(tenant).send();
        // Within the request's time: a held STS never keeps an invocation past its deadline
        // (issue 50: 60 s past a 5 s one).
        let late = || {
            crate::Error::Backend {
            backend: "sts",
            message: format!(
                "AssumeRole of the tenant role for tenant {tenant:?} had no answer before the request's deadline; STS is slow or unavailable: retry"
            ),
            source: None,
        }
        };
        let answered = crate::deadline::before(crate::deadline::current(), send, late).await?;
        let out = answered.map_err(|e| {
                sdk_err(
                    "sts",
                    format!(
                        "assume the tenant role {} for tenant {tenant:?} (check NATIVE_TENANT_ROLE_ARN and that the function's role may sts:AssumeRole and sts:TagSession on it)",
                        self.role_arn
                    ),
                    e,
                )
            })?;
        self.assumed
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let c = out.credentials().ok_or_else(|| crate::Error::Backend {
            backend: "sts",
            message: format!("AssumeRole for tenant {tenant:?} returned no credentials"),
            source: None,
        })?;
        let expires = SystemTime::try_from(*c.expiration())
            .unwrap_or_else(|_| SystemTime::now() + Duration::from_secs(SESSION_SECONDS as u64));
        let creds = aws_sdk_s3::config::Credentials::new(
            c.access_key_id(),
            c.secret_access_key(),
            Some(c.session_token().to_string()),
            Some(expires),
            "native-tenant-role",
        );
        let (s3_signed, dynamodb_signed, secrets_signed) = (
            SignedWith::default(),
            SignedWith::default(),
            SignedWith::default(),
        );
        let s3 = aws_sdk_s3::config::Builder::from(&self.sdk)
            .force_path_style(self.sdk.endpoint_url().is_some())
            .credentials_provider(creds.clone())
            .interceptor(s3_signed.clone())
            .build();
        let dynamodb = aws_sdk_dynamodb::config::Builder::from(&self.sdk)
            .credentials_provider(creds.clone())
            .interceptor(dynamodb_signed.clone())
            .build();
        let secrets = aws_sdk_secretsmanager::config::Builder::from(&self.sdk)
            .credentials_provider(creds)
            .interceptor(secrets_signed.clone())
            .build();
        // Each client is made when the tenant's script first uses it.
        Ok(Cached {
            objects: Arc::new(S3Objects::on_first_use(move || {
                aws_sdk_s3::Client::from_conf(s3)
            })),
            kv: Arc::new(DynamoKv::on_first_use(
                move || aws_sdk_dynamodb::Client::from_conf(dynamodb),
                &self.table,
            )),
            vault: Arc::new(SecretsVault::on_first_use(
                move || aws_sdk_secretsmanager::Client::from_conf(secrets),
                &self.vault_prefix,
            )),
            s3_signed,
            dynamodb_signed,
            secrets_signed,
            expires,
        })
    }
}

#[async_trait::async_trait]
impl TenantScope for StsTenantScope {
    async fn backends(&self, tenant: &str, shared: &Backends) -> Result<Backends> {
        let scoped = |c: &Cached| Backends {
            objects: c.objects.clone(),
            kv: c.kv.clone(),
            queue: shared.queue.clone(),
            vault: c.vault.clone(),
        };
        let mut cache = self.cache.lock().await;
        let fresh = |c: &Cached| c.expires > SystemTime::now() + self.margin;
        if let Some(c) = cache.get(tenant).filter(|c| fresh(c)) {
            return Ok(scoped(c));
        }
        // Held across the call: a cold process's first messages for one tenant assume the
        // role once, not once each.
        let new = self.assume(tenant).await?;
        if cache.len() >= MAX_CACHED {
            cache.retain(|_, c| fresh(c));
            if cache.len() >= MAX_CACHED {
                if let Some(k) = cache.keys().next().cloned() {
                    cache.remove(&k);
                }
            }
        }
        let out = scoped(&new);
        cache.insert(tenant.to_string(), new);
        Ok(out)
    }
}
