//! The vault on the embedded backend: one file per secret, `vault/<tenant>/<name>` under the
//! backend's folder, readable by the owner only (files 0600, folders 0700). A write goes to a
//! temporary file made 0600 from the start and is renamed into place, so a reader never sees
//! half a value and no other user ever sees any. The value and its folder are synced before a
//! set returns.

use std::io::Write;
use std::path::PathBuf;

use async_trait::async_trait;

use super::{io_err, Embedded};
use crate::ports::{check_secret, Secret, Vault};
use crate::Result;

impl Embedded {
    fn vault_dir(&self, tenant: &str) -> PathBuf {
        self.inner.root.join("vault").join(tenant)
    }

    fn make_private_dir(&self, tenant: &str) -> Result<PathBuf> {
        let dir = self.vault_dir(tenant);
        for d in [self.inner.root.join("vault"), dir.clone()] {
            let mut b = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            match b.create(&d) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io_err(format!("cannot create {}", d.display()), e)),
            }
            // A folder made by an older build or by hand: tighten it.
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                std::fs::set_permissions(&d, std::fs::Permissions::from_mode(0o700))
                    .map_err(|e| io_err(format!("cannot restrict {}", d.display()), e))?;
            }
        }
        Ok(dir)
    }
}

#[async_trait]
impl Vault for Embedded {
    async fn get(&self, tenant: &str, name: &str) -> Result<Option<Secret>> {
        check_secret(tenant, name, None)?;
        let path = self.vault_dir(tenant).join(name);
        match std::fs::read(&path) {
            Ok(bytes) => {
                let value = String::from_utf8(bytes).map_err(|e| {
                    io_err(
                        format!("{} is not UTF-8", path.display()),
                        std::io::Error::new(std::io::ErrorKind::InvalidData, e.utf8_error()),
                    )
                })?;
                Ok(Some(Secret::new(value)))
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io_err(format!("cannot read {}", path.display()), e)),
        }
    }

    async fn set(&self, tenant: &str, name: &str, value: &Secret) -> Result<()> {
        check_secret(tenant, name, Some(value))?;
        let dir = self.make_private_dir(tenant)?;
        let tmp = dir.join(format!(".{name}.{}", super::token()));
        let mut opts = std::fs::OpenOptions::new();
        opts.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
        let write = || -> std::io::Result<()> {
            let mut f = opts.open(&tmp)?;
            f.write_all(value.expose().as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, dir.join(name))?;
            // The new name is on stable storage before the call is answered.
            std::fs::File::open(&dir)?.sync_all()
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io_err(format!("cannot write vault secret {name:?}"), e)
        })
    }

    async fn list(&self, tenant: &str) -> Result<Vec<String>> {
        crate::keys::check_name("tenant", tenant).map_err(crate::Error::InvalidInput)?;
        let dir = self.vault_dir(tenant);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io_err(format!("cannot list {}", dir.display()), e)),
        };
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok()?.file_name().into_string().ok())
            .filter(|n| crate::keys::check_secret_name(n).is_ok())
            .collect();
        names.sort();
        Ok(names)
    }

    async fn delete(&self, tenant: &str, name: &str) -> Result<()> {
        check_secret(tenant, name, None)?;
        let path = self.vault_dir(tenant).join(name);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(format!("cannot delete {}", path.display()), e)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn passes_the_vault_conformance_suite() {
        let dir = tempfile::tempdir().unwrap();
        let e = Embedded::open(dir.path(), vec![]).unwrap();
        crate::conformance::vault_set_get_list_delete(&e).await;
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn secrets_are_readable_by_the_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        // GIVEN a secret set on the embedded backend
        let dir = tempfile::tempdir().unwrap();
        let e = Embedded::open(dir.path(), vec![]).unwrap();
        e.set("acme", "stripe.key", &Secret::new("sk_live_1".into()))
            .await
            .unwrap();
        // WHEN its file and folders are looked at
        let mode = |p: PathBuf| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        // THEN the file is 0600 and both folders 0700
        assert_eq!(mode(dir.path().join("vault/acme/stripe.key")), 0o600);
        assert_eq!(mode(dir.path().join("vault/acme")), 0o700);
        assert_eq!(mode(dir.path().join("vault")), 0o700);
    }
}
