//! The vault port: a tenant's secrets by name, for `{{vault:NAME}}` placeholders in outbound
//! requests. Values are only ever read by the host, never handed to a script; they are kept
//! in a [`Secret`], whose `Debug` does not show them.

use async_trait::async_trait;

use crate::Result;

/// The largest secret value, in bytes (Secrets Manager's own limit is 64 KB).
pub const MAX_SECRET_BYTES: usize = 64 * 1024;

/// A secret value. `Debug` prints its length only, so a stray `{:?}` never logs it.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a value.
    pub fn new(value: String) -> Self {
        Secret(value)
    }

    /// The value: for filling a request, never for a script or a log.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Secret({} bytes)", self.0.len())
    }
}

/// Tenants' secrets. Names are checked by [`crate::keys::check_secret_name`] before they get
/// here; every method refuses a bad one as well.
#[async_trait]
pub trait Vault: std::fmt::Debug + Send + Sync {
    /// The secret, or `None`.
    async fn get(&self, tenant: &str, name: &str) -> Result<Option<Secret>>;
    /// Creates or replaces the secret.
    async fn set(&self, tenant: &str, name: &str, value: &Secret) -> Result<()>;
    /// The tenant's secret names, sorted.
    async fn list(&self, tenant: &str) -> Result<Vec<String>>;
    /// Deletes the secret; a missing one is fine.
    async fn delete(&self, tenant: &str, name: &str) -> Result<()>;
}

/// Checks a tenant and a secret name, and a value's size, for the implementations.
pub(crate) fn check(tenant: &str, name: &str, value: Option<&Secret>) -> Result<()> {
    crate::keys::check_name("tenant", tenant).map_err(crate::Error::InvalidInput)?;
    crate::keys::check_secret_name(name).map_err(crate::Error::InvalidInput)?;
    if let Some(v) = value {
        if v.0.len() > MAX_SECRET_BYTES {
            return Err(crate::Error::InvalidInput(format!(
                "the value of vault secret {name:?} is {} bytes; at most {MAX_SECRET_BYTES}",
                v.0.len()
            )));
        }
        if v.0.is_empty() {
            return Err(crate::Error::InvalidInput(format!(
                "the value of vault secret {name:?} is empty; delete the secret instead"
            )));
        }
    }
    Ok(())
}
