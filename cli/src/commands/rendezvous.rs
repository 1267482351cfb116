//! `native rendezvous status TENANT NAMESPACE NAME` and `native rendezvous list TENANT
//! NAMESPACE`: rendezvous barriers as the project's store has them, on the project clock.

use std::path::Path;

use native_core::error::Missing;
use native_core::rendezvous::{Rendezvous, Unlimited};
use native_core::Error;
use serde_json::json;

use super::{open, Failed, Outcome};
use crate::out::outln;
use crate::RendezvousCommand;

/// What was looked up, for a not-found error that says as much as `native barrier status`.
struct Wanted<'a> {
    tenant: &'a str,
    namespace: &'a str,
    name: Option<&'a str>,
}

fn missing(e: Error, w: &Wanted<'_>) -> Failed {
    let (tenant, ns) = (w.tenant, w.namespace);
    match (e, w.name) {
        // Like `native barrier status`: a barrier that is not there is a failed look-up (1).
        (
            Error::NotFound {
                missing: Missing::Namespace,
                ..
            },
            _,
        ) => Failed::script(format!(
            "tenant {tenant:?} has no rendezvous namespace {ns:?} (never created, or deleted); \
             every tenant has \"default\", others are made with CreateNamespace"
        )),
        (Error::NotFound { .. }, Some(name)) => Failed::script(format!(
            "tenant {tenant:?} has no rendezvous barrier {name:?} in namespace {ns:?} (never \
             created, deleted, or gone after its delete_inactive_after_seconds without an \
             arrival); `native rendezvous list {tenant} {ns}` lists the namespace's barriers"
        )),
        (e @ Error::NotFound { .. }, None) => Failed::script(e.to_string()),
        (e, _) => e.into(),
    }
}

fn print(v: &serde_json::Value) {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    outln!("{}", crate::show::json(&text));
}

pub async fn run(project: &Path, command: RendezvousCommand) -> Outcome {
    let p = open(project)?;
    let backends = p.backend.backends();
    match command {
        RendezvousCommand::Status {
            tenant,
            namespace,
            name,
        } => {
            let t = p.runtime().tenants.load(&tenant).await?;
            let r = Rendezvous::new(&*backends.kv, &*backends.queue, &t.name, &Unlimited);
            let w = Wanted {
                tenant: &tenant,
                namespace: &namespace,
                name: Some(&name),
            };
            let b = r.get(&namespace, &name).await.map_err(|e| missing(e, &w))?;
            let page = r
                .participants(&namespace, &name, 0, "", 250)
                .await
                .map_err(|e| missing(e, &w))?;
            let mut v = serde_json::to_value(&b).unwrap_or_default();
            v["participants"] = json!(page.items);
            v["more_participants"] = json!(page.next.is_some());
            print(&v);
            Ok(())
        }
        RendezvousCommand::List {
            tenant,
            namespace,
            limit,
        } => {
            let t = p.runtime().tenants.load(&tenant).await?;
            let r = Rendezvous::new(&*backends.kv, &*backends.queue, &t.name, &Unlimited);
            let mut all = Vec::new();
            let mut token = String::new();
            loop {
                let w = Wanted {
                    tenant: &tenant,
                    namespace: &namespace,
                    name: None,
                };
                let page = r
                    .list(&namespace, &token, 250)
                    .await
                    .map_err(|e| missing(e, &w))?;
                all.extend(page.items);
                match page.next {
                    Some(n) if all.len() < limit => token = n,
                    _ => break,
                }
            }
            all.truncate(limit);
            print(&json!(all));
            Ok(())
        }
    }
}
