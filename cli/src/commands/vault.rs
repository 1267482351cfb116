//! `native vault set|list|delete`: a tenant's secrets for `{{vault:NAME}}` placeholders, in
//! the project's `.native/vault/` or, with `--aws`, in Secrets Manager under a prefix. `set`
//! reads the value from stdin and never prints or logs it.

use std::io::Read;
use std::path::Path;
use std::sync::Arc;

use native_core::aws::{load_sdk_config, Clients, SecretsVault};
use native_core::ports::{Secret, Vault, MAX_SECRET_BYTES};

use super::{open, Failed, Outcome};
use crate::out::{errln, outln};
use crate::VaultCommand;

/// Where the secrets live: the project's embedded vault, or Secrets Manager under `prefix`.
async fn vault(project: &Path, aws: Option<&str>, tenant: &str) -> Result<Arc<dyn Vault>, Failed> {
    match aws {
        Some(prefix) => {
            let sdk = load_sdk_config().await;
            Ok(Arc::new(SecretsVault::new(
                Clients::new(&sdk).secrets,
                prefix,
            )))
        }
        None => {
            let p = open(project)?;
            p.tenants.read(tenant)?;
            Ok(p.backend.backends().vault)
        }
    }
}

/// The value from stdin: all of it, one trailing newline (what `echo` and a terminal add)
/// dropped.
fn read_value(name: &str) -> Result<Secret, Failed> {
    let mut buf = Vec::new();
    std::io::stdin()
        .take(MAX_SECRET_BYTES as u64 + 2)
        .read_to_end(&mut buf)
        .map_err(|e| Failed::usage(format!("cannot read the value from stdin: {e}")))?;
    if buf.ends_with(b"\n") {
        buf.pop();
        if buf.ends_with(b"\r") {
            buf.pop();
        }
    }
    let value = String::from_utf8(buf)
        .map_err(|_| Failed::usage(format!("the value of {name:?} on stdin is not UTF-8 text")))?;
    Ok(Secret::new(value))
}

pub async fn run(project: &Path, command: VaultCommand) -> Outcome {
    match command {
        VaultCommand::Set { tenant, name, aws } => {
            let v = vault(project, aws.as_deref(), &tenant).await?;
            if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
                errln!("type the value of {name:?}, then Enter and Ctrl-D (it is not shown back):");
            }
            let value = read_value(&name)?;
            v.set(&tenant, &name, &value).await?;
            errln!(
                "set vault secret {name:?} of tenant {tenant:?} ({} bytes); requests use it as {{{{vault:{name}}}}} once \"{name}\" is in the tenant's \"vault\" list",
                value.expose().len()
            );
        }
        VaultCommand::List { tenant, aws } => {
            let v = vault(project, aws.as_deref(), &tenant).await?;
            let names = v.list(&tenant).await?;
            for n in &names {
                outln!("{n}");
            }
            errln!("{} secret(s) of tenant {tenant:?}", names.len());
        }
        VaultCommand::Delete { tenant, name, aws } => {
            let v = vault(project, aws.as_deref(), &tenant).await?;
            v.delete(&tenant, &name).await?;
            errln!("deleted vault secret {name:?} of tenant {tenant:?}");
        }
    }
    Ok(())
}
