//! The vault on AWS: one Secrets Manager secret per name, with the id
//! `<prefix><tenant>/<name>` (so that IAM can scope a role to the prefix). Values are cached in
//! the process for at most 60 s: a request that fills the same secret again within a minute
//! costs no API call, and a changed secret reaches every process within a minute. A set or
//! delete made through this process is seen at once.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use aws_sdk_secretsmanager::types::{Filter, FilterNameStringType};
use aws_sdk_secretsmanager::Client;

use super::{sdk_err, LazyClient};
use crate::ports::{check_secret, Secret, Vault};
use crate::Result;

/// How long a value read from Secrets Manager is used before it is read again.
pub const CACHE_FOR: Duration = Duration::from_secs(60);

/// The most entries the cache keeps; past it, it starts over.
const CACHE_ENTRIES: usize = 10_000;

type Cache = HashMap<(String, String), (Instant, Option<Secret>)>;

/// Secrets Manager as the vault.
pub struct SecretsVault {
    client: LazyClient<Client>,
    prefix: String,
    cache: Mutex<Cache>,
}

impl std::fmt::Debug for SecretsVault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "SecretsVault({:?})", self.prefix)
    }
}

impl SecretsVault {
    /// The vault over `client`, with secret ids under `prefix` (empty or ending in `/`).
    pub fn new(client: Client, prefix: &str) -> Self {
        Self::over(LazyClient::ready(client), prefix)
    }

    /// The vault with the client that `make` makes when it is first used ([`LazyClient`]):
    /// most scripts never read a secret.
    pub fn on_first_use(make: impl FnOnce() -> Client + Send + 'static, prefix: &str) -> Self {
        Self::over(LazyClient::on_first_use(make), prefix)
    }

    fn over(client: LazyClient<Client>, prefix: &str) -> Self {
        SecretsVault {
            client,
            prefix: prefix.to_string(),
            cache: Mutex::new(HashMap::new()),
        }
    }

    fn id(&self, tenant: &str, name: &str) -> String {
        format!("{}{tenant}/{name}", self.prefix)
    }

    fn cache(&self) -> std::sync::MutexGuard<'_, Cache> {
        self.cache.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn remember(&self, tenant: &str, name: &str, value: Option<Secret>) {
        let mut c = self.cache();
        if c.len() >= CACHE_ENTRIES {
            c.clear();
        }
        c.insert(
            (tenant.to_string(), name.to_string()),
            (Instant::now(), value),
        );
    }
}

#[async_trait]
impl Vault for SecretsVault {
    async fn get(&self, tenant: &str, name: &str) -> Result<Option<Secret>> {
        check_secret(tenant, name, None)?;
        if let Some((at, v)) = self.cache().get(&(tenant.to_string(), name.to_string())) {
            if at.elapsed() < CACHE_FOR {
                return Ok(v.clone());
            }
        }
        let id = self.id(tenant, name);
        let value = match self.client.get_secret_value().secret_id(&id).send().await {
            Ok(out) => match out.secret_string {
                Some(s) => Some(Secret::new(s)),
                None => {
                    return Err(crate::Error::InvalidInput(format!(
                        "secret {id} holds binary data; the vault keeps text (set it with native vault set)"
                    )))
                }
            },
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception()) =>
            {
                None
            }
            Err(e) => return Err(sdk_err("secretsmanager", format!("get {id}"), e)),
        };
        self.remember(tenant, name, value.clone());
        Ok(value)
    }

    async fn set(&self, tenant: &str, name: &str, value: &Secret) -> Result<()> {
        check_secret(tenant, name, Some(value))?;
        let id = self.id(tenant, name);
        let put = self
            .client
            .put_secret_value()
            .secret_id(&id)
            .secret_string(value.expose())
            .send()
            .await;
        match put {
            Ok(_) => {}
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception()) =>
            {
                self.client
                    .create_secret()
                    .name(&id)
                    .secret_string(value.expose())
                    .send()
                    .await
                    .map_err(|e| sdk_err("secretsmanager", format!("create {id}"), e))?;
            }
            Err(e) => return Err(sdk_err("secretsmanager", format!("put {id}"), e)),
        }
        self.remember(tenant, name, Some(value.clone()));
        Ok(())
    }

    async fn list(&self, tenant: &str) -> Result<Vec<String>> {
        crate::keys::check_name("tenant", tenant).map_err(crate::Error::InvalidInput)?;
        let folder = self.id(tenant, "");
        let mut names = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let out = self
                .client
                .list_secrets()
                .filters(
                    Filter::builder()
                        .key(FilterNameStringType::Name)
                        .values(&folder)
                        .build(),
                )
                .set_next_token(token.take())
                .max_results(100)
                .send()
                .await
                .map_err(|e| sdk_err("secretsmanager", format!("list {folder}*"), e))?;
            for s in out.secret_list.unwrap_or_default() {
                // The name filter matches prefixes of words too: keep exact folder members.
                if let Some(n) = s.name.as_deref().and_then(|n| n.strip_prefix(&folder)) {
                    if crate::keys::check_secret_name(n).is_ok() {
                        names.push(n.to_string());
                    }
                }
            }
            token = out.next_token;
            if token.is_none() {
                break;
            }
        }
        names.sort();
        names.dedup();
        Ok(names)
    }

    async fn delete(&self, tenant: &str, name: &str) -> Result<()> {
        check_secret(tenant, name, None)?;
        let id = self.id(tenant, name);
        let out = self
            .client
            .delete_secret()
            .secret_id(&id)
            .force_delete_without_recovery(true)
            .send()
            .await;
        match out {
            Ok(_) => {}
            Err(e)
                if e.as_service_error()
                    .is_some_and(|s| s.is_resource_not_found_exception()) => {}
            Err(e) => return Err(sdk_err("secretsmanager", format!("delete {id}"), e)),
        }
        self.remember(tenant, name, None);
        Ok(())
    }
}
