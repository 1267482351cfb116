//! A tenant's rendezvous barriers (seed 003): its namespaces, a namespace's barriers (a page at
//! a time), and one barrier: generation, expected and arrived, metadata, the participants of
//! each generation with theirs, and the waiters parked on it in this process.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::response::Response;

use super::super::html::{Href, Html};
use super::super::{render, Console, Form, Layout, PageResult, Problem};
use super::{facts, load_tenant, pager, time_cell, when, TOOLS};
use crate::ports::now_ms;
use crate::rendezvous::{Metadata, Rendezvous};

fn rdv<'a>(c: &'a Console, t: &'a str) -> Rendezvous<'a, crate::rendezvous::Unlimited> {
    let b = &c.rt().services.backends;
    Rendezvous::new(b.kv.as_ref(), b.queue.as_ref(), t, &TOOLS)
}

fn metadata(h: &mut Html, m: &Metadata) {
    if m.is_empty() {
        h.el_text("span", &[("class", "none")], "—");
        return;
    }
    h.el("dl", &[("class", "meta")], |h| {
        for (k, v) in m {
            h.el_text("dt", &[], k);
            h.el_text("dd", &[], v);
        }
    });
}

fn crumbs(name: &str) -> Vec<(Href, String)> {
    vec![
        (Href::to(&[]), "tenants".into()),
        (Href::to(&["tenants", name]), name.into()),
        (
            Href::to(&["tenants", name, "rendezvous"]),
            "rendezvous".into(),
        ),
    ]
}

/// `/console/tenants/{tenant}/rendezvous?after=`: the namespaces.
pub async fn namespaces(
    State(c): State<Arc<Console>>,
    Path(t): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let q = Form::parse(q.as_deref().unwrap_or(""));
    render(c, move |c| async move {
        let tn = load_tenant(&c, &t).await?;
        let crate::rendezvous::Page { items: list, next, .. } =
            rdv(&c, &tn.name).list_namespaces(q.str("after"), 250).await?;
        let base = Href::to(&["tenants", &t, "rendezvous"]);
        Ok(Layout {
            title: "Rendezvous namespaces",
            tenant: Some(&t),
            tab: "rendezvous",
            crumbs: crumbs(&t)[..2].to_vec(),
            live: true,
            notice: None,
        }
        .render(&c, |h| {
            h.open("table", &[("class", "list"), ("id", "namespaces")]);
            h.raw("<thead><tr><th>namespace</th><th>description</th><th>metadata</th><th>created</th></tr></thead><tbody>");
            for n in &list {
                h.el("tr", &[], |h| {
                    h.el("td", &[("class", "id")], |h| {
                        h.link(&Href::to(&["tenants", &t, "rendezvous", &n.name]), &n.name);
                    });
                    h.el_text("td", &[], &n.description);
                    h.el("td", &[], |h| metadata(h, &n.metadata));
                    h.el_text("td", &[], &if n.created_at == 0 { "—".into() } else { when(n.created_at / 1_000_000) });
                });
            }
            h.raw("</tbody></table>");
            pager(h, &base, &[], next.as_deref(), q.get("after").is_some());
        }))
    })
    .await
}

/// `/console/tenants/{tenant}/rendezvous/{ns}?after=`: a namespace's barriers.
pub async fn barriers(
    State(c): State<Arc<Console>>,
    Path((t, ns)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> Response {
    let q = Form::parse(q.as_deref().unwrap_or(""));
    render(
        c,
        move |c| async move { barriers_page(&c, &t, &ns, &q).await },
    )
    .await
}

async fn barriers_page(c: &Console, name: &str, ns: &str, q: &Form) -> PageResult {
    let tn = load_tenant(c, name).await?;
    let r = rdv(c, &tn.name);
    let namespace = r.get_namespace(ns).await?;
    let crate::rendezvous::Page {
        items: list, next, ..
    } = r.list(ns, q.str("after"), 100).await?;
    let now = now_ms();
    let base = Href::to(&["tenants", name, "rendezvous", ns]);
    let title = format!("Namespace {ns}");
    Ok(Layout {
        title: &title,
        tenant: Some(name),
        tab: "rendezvous",
        crumbs: crumbs(name),
        live: true,
        notice: None,
    }
    .render(c, |h| {
        if !namespace.description.is_empty() {
            h.el_text("p", &[], &namespace.description);
        }
        metadata(h, &namespace.metadata);
        if list.is_empty() {
            h.el_text("p", &[("class", "empty")], "No barriers here.");
        } else {
            h.open("table", &[("class", "list"), ("id", "rendezvous")]);
            h.raw("<thead><tr><th>barrier</th><th>generation</th><th>arrived</th><th>expected</th><th>last activity</th><th>continuation</th></tr></thead><tbody>");
            for b in &list {
                h.el("tr", &[], |h| {
                    h.el("td", &[("class", "id")], |h| {
                        h.link(&Href::to(&["tenants", name, "rendezvous", ns, &b.name]), &b.name);
                    });
                    h.el("td", &[("class", "num")], |h| {
                        h.num(b.generation);
                    });
                    h.el("td", &[("class", "num")], |h| {
                        h.num(b.arrived_processes);
                    });
                    h.el("td", &[("class", "num")], |h| {
                        h.num(b.expected_processes);
                    });
                    time_cell(h, b.last_activity_at / 1_000_000, now);
                    h.el_text("td", &[], b.continue_with.as_deref().unwrap_or("—"));
                });
            }
            h.raw("</tbody></table>");
        }
        pager(h, &base, &[], next.as_deref(), q.get("after").is_some());
    }))
}

/// `/console/tenants/{tenant}/rendezvous/{ns}/{barrier}?generation=&after=`.
pub async fn one(
    State(c): State<Arc<Console>>,
    Path((t, ns, name)): Path<(String, String, String)>,
    RawQuery(q): RawQuery,
) -> Response {
    let q = Form::parse(q.as_deref().unwrap_or(""));
    render(
        c,
        move |c| async move { one_page(&c, &t, &ns, &name, &q).await },
    )
    .await
}

async fn one_page(c: &Console, tenant_name: &str, ns: &str, name: &str, q: &Form) -> PageResult {
    let tn = load_tenant(c, tenant_name).await?;
    let r = rdv(c, &tn.name);
    let b = r.get(ns, name).await?;
    let generation = match q.get("generation").filter(|g| !g.is_empty()) {
        None => b.generation,
        Some(g) => g
            .parse::<u64>()
            .ok()
            .filter(|g| (1..=b.generation).contains(g))
            .ok_or_else(|| {
                Problem::bad(format!(
                    "generation {g:?} is not one of 1 to {}",
                    b.generation
                ))
            })?,
    };
    let crate::rendezvous::Page {
        items: participants,
        next,
        ..
    } = r
        .participants(ns, name, generation, q.str("after"), 250)
        .await?;
    let waiters = c
        .runs_scripts()
        .then(|| crate::rendezvous::notify::waiters(&tn.name, ns, name));
    let now = now_ms();
    let here = Href::to(&["tenants", tenant_name, "rendezvous", ns, name]);
    let mut crumbs = crumbs(tenant_name);
    crumbs.push((
        Href::to(&["tenants", tenant_name, "rendezvous", ns]),
        ns.into(),
    ));
    let title = format!("Rendezvous barrier {name}");
    Ok(Layout {
        title: &title,
        tenant: Some(tenant_name),
        tab: "rendezvous",
        crumbs,
        live: true,
        notice: None,
    }
    .render(c, |h| {
        facts(
            h,
            &[
                ("generation", b.generation.to_string()),
                ("arrived", format!("{} of {} expected", b.arrived_processes, b.expected_processes)),
                ("version", b.version.to_string()),
                ("created", when(b.created_at / 1_000_000)),
                ("last activity", when(b.last_activity_at / 1_000_000)),
                ("gone after inactivity", format!("{} s, at {}", b.delete_inactive_after_seconds, when(b.inactive_at_ms()))),
                ("continuation", b.continue_with.clone().unwrap_or_else(|| "—".into())),
                (
                    "parked waiters",
                    waiters.map_or("not visible from here (they are parked in the processes that serve the API)".into(), |n| n.to_string()),
                ),
            ],
        );
        if !b.description.is_empty() {
            h.el_text("p", &[], &b.description);
        }
        h.el_text("h2", &[], "Metadata");
        metadata(h, &b.metadata);
        h.el("h2", &[], |h| {
            h.raw("Participants of generation ").num(generation);
        });
        h.el("p", &[("class", "filters")], |h| {
            h.raw("Generation: ");
            let first = b.generation.saturating_sub(9).max(1);
            for g in first..=b.generation {
                let href = here.clone().query(&[("generation", &g.to_string())]);
                let class = if g == generation { "on" } else { "" };
                h.el_text("a", &[("href", href.as_str()), ("class", class)], &g.to_string());
            }
        });
        if participants.is_empty() {
            h.el_text("p", &[("class", "empty")], "No process has arrived in this generation.");
        } else {
            h.open("table", &[("class", "list"), ("id", "participants")]);
            h.raw("<thead><tr><th>process</th><th>arrived</th><th>metadata</th></tr></thead><tbody>");
            for p in &participants {
                h.el("tr", &[], |h| {
                    h.el_text("td", &[("class", "id")], &p.process_id);
                    time_cell(h, p.arrived_at / 1_000_000, now);
                    h.el("td", &[], |h| metadata(h, &p.metadata));
                });
            }
            h.raw("</tbody></table>");
        }
        let g = generation.to_string();
        pager(h, &here, &[("generation", &g)], next.as_deref(), q.get("after").is_some());
        let _ = now;
    }))
}
