//! `native keys create|list|revoke`: tenant API keys for inbound HTTP, in the project's
//! `.native/` or, with `--table`, in the DynamoDB table of a deployment on AWS.

use std::path::Path;
use std::sync::Arc;

use native_core::api_keys;
use native_core::aws::{load_sdk_config, Clients, DynamoKv};
use native_core::ports::KvStore;

use super::{open, Failed, Outcome};
use crate::out::{errln, outln};
use crate::KeysCommand;

/// Where the keys live: the project's embedded store, or a DynamoDB table.
async fn store(
    project: &Path,
    table: Option<&str>,
    tenant: &str,
) -> Result<Arc<dyn KvStore>, Failed> {
    match table {
        Some(t) => {
            let sdk = load_sdk_config().await;
            Ok(Arc::new(DynamoKv::new(Clients::new(&sdk).dynamodb, t)))
        }
        None => {
            let p = open(project)?;
            // A key for a tenant that does not exist would authenticate requests that all fail.
            p.tenants.read(tenant)?;
            Ok(p.backend.backends().kv)
        }
    }
}

pub async fn run(project: &Path, command: KeysCommand) -> Outcome {
    match command {
        KeysCommand::Create {
            tenant,
            name,
            table,
        } => {
            let kv = store(project, table.as_deref(), &tenant).await?;
            let k = api_keys::create(&*kv, &tenant, name.as_deref().unwrap_or("")).await?;
            outln!("{}", k.key);
            errln!(
                "created API key {} for tenant {tenant:?}; it is shown only this once. Send it as `Authorization: Bearer <key>`",
                k.id
            );
        }
        KeysCommand::List { tenant, table } => {
            let kv = store(project, table.as_deref(), &tenant).await?;
            let keys = api_keys::list(&*kv, &tenant).await?;
            for k in &keys {
                let line = serde_json::json!({ "id": k.id, "name": k.name, "created_ms": k.created_ms, "last_used_ms": k.last_used_ms }).to_string();
                outln!("{}", crate::show::json(&line));
            }
            errln!("{} key(s) of tenant {tenant:?}", keys.len());
        }
        KeysCommand::Revoke { tenant, id, table } => {
            let kv = store(project, table.as_deref(), &tenant).await?;
            api_keys::revoke(&*kv, &tenant, &id).await?;
            errln!("revoked API key {id} of tenant {tenant:?}");
        }
    }
    Ok(())
}
