//! `/console/`: every tenant with its counts (open and overdue barriers, running jobs,
//! rendezvous barriers, due timers, dead letters, invocations and errors of the last hour);
//! `/console/tenants/{tenant}`: one tenant's counts, each a link to its page.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::extract::{Path, State};
use axum::response::Response;

use super::super::html::{Href, Html};
use super::super::{render, Console, Layout, PageResult};
use super::{barriers_of, TOOLS};
use crate::config::Tenant;
use crate::ports::{now_ms, QueueKind};

/// The most dead letters read per queue, to count them or show them: each body may be as large
/// as a queue takes (256 KB on SQS), and the port hands them over whole.
pub(crate) const DEAD_LETTERS_READ: usize = 200;
/// Tenants counted on the front page (the rest are listed by name).
const MAX_COUNTED: usize = 200;

/// One tenant's counts; a count that could not be read says why.
struct Counts {
    open: Result<u64, String>,
    overdue: Result<u64, String>,
    jobs: Option<Result<u64, String>>,
    rendezvous: Result<u64, String>,
    due_timers: Result<u64, String>,
    dead: u64,
    hour: Option<(u64, u64)>,
}

/// Dead letters of both queues, by owning tenant ("" for none that can be told), and whether a
/// queue had more than were read.
pub(crate) async fn dead_letters_by_tenant(
    c: &Console,
) -> crate::Result<(BTreeMap<String, u64>, bool)> {
    let rt = c.rt();
    let mut out = BTreeMap::new();
    let mut capped = false;
    for kind in [QueueKind::Events, QueueKind::Work] {
        let letters = rt
            .services
            .backends
            .queue
            .dead_letters(kind, DEAD_LETTERS_READ)
            .await?;
        capped |= letters.len() >= DEAD_LETTERS_READ;
        for d in letters {
            let owner = crate::events::owner(&rt.services.deployment, kind, &d.body);
            *out.entry(owner.unwrap_or_default()).or_insert(0) += 1;
        }
    }
    Ok((out, capped))
}

async fn counts(c: &Console, t: &Tenant, dead: u64) -> Counts {
    let rt = c.rt();
    let b = &rt.services.backends;
    let now = now_ms();
    let list = barriers_of(c, t)
        .list_counts()
        .await
        .map_err(|e| e.to_string());
    let jobs = (t.config.batch && rt.services.deployment.batch.is_some()).then_some(());
    let jobs = match jobs {
        Some(()) => Some(
            crate::batch::inspect::running(b.objects.as_ref(), &rt.services.deployment, &t.name)
                .await
                .map_err(|e| e.to_string()),
        ),
        None => None,
    };
    let rendezvous =
        crate::rendezvous::Rendezvous::new(b.kv.as_ref(), b.queue.as_ref(), &t.name, &TOOLS)
            .barrier_count(10_000)
            .await
            .map(|(n, _)| n)
            .map_err(|e| e.to_string());
    let due_timers = due_timers(c, t, now).await.map_err(|e| e.to_string());
    Counts {
        open: list.as_ref().map(|l| l.open).map_err(Clone::clone),
        overdue: list.map(|l| l.overdue),
        jobs,
        rendezvous,
        due_timers,
        dead,
        hour: rt
            .recent()
            .filter(|_| c.runs_scripts())
            .and_then(|r| r.last_hour(&t.name, now).ok()),
    }
}

/// Timers due now (not yet fired): they sort by due time, so the first pages tell.
pub(crate) async fn due_timers(c: &Console, t: &Tenant, now: i64) -> crate::Result<u64> {
    let timers = crate::timer::Timers {
        kv: c.rt().services.backends.kv.as_ref(),
        tenant: &t.name,
        budget: &TOOLS,
    };
    let mut n = 0;
    let mut after: Option<String> = None;
    for _ in 0..10 {
        let (page, next) = timers.list(after.as_deref(), 1000).await?;
        for i in &page {
            if i.at_ms > now {
                return Ok(n);
            }
            n += 1;
        }
        match next {
            Some(x) => after = Some(x),
            None => break,
        }
    }
    Ok(n)
}

fn count_cell(h: &mut Html, v: &Result<u64, String>, href: &Href, warn: bool) {
    h.el("td", &[("class", "num")], |h| match v {
        Ok(n) => {
            let class = if warn && *n > 0 { "warn" } else { "" };
            h.el("a", &[("href", href.as_str()), ("class", class)], |h| {
                h.num(n);
            });
        }
        Err(e) => {
            h.el_text("span", &[("class", "error"), ("title", e)], "?");
        }
    });
}

/// The front page.
pub async fn page(State(c): State<Arc<Console>>) -> Response {
    render(c, |c| async move { front(&c).await }).await
}

async fn front(c: &Console) -> PageResult {
    let names = c.rt().tenants.list().await?;
    let dead = dead_letters_by_tenant(c).await;
    let mut rows = Vec::new();
    for name in names.iter().take(MAX_COUNTED) {
        let t = c.rt().tenants.load(name).await;
        let n = dead
            .as_ref()
            .map_or(0, |(d, _)| d.get(name).copied().unwrap_or(0));
        rows.push((
            name.clone(),
            match t {
                Ok(t) => Ok(counts(c, &t, n).await),
                Err(e) => Err(e.to_string()),
            },
        ));
    }
    let now_counted = rows.len();
    Ok(Layout {
        title: "Tenants",
        tenant: None,
        tab: "",
        crumbs: Vec::new(),
        live: true,
        notice: None,
    }
    .render(c, |h| {
        h.open("table", &[("class", "list")]);
        h.raw("<thead><tr><th>tenant</th><th>open barriers</th><th>overdue</th><th>running jobs</th><th>rendezvous barriers</th><th>due timers</th><th>dead letters</th><th>invocations (1 h)</th><th>errors (1 h)</th></tr></thead><tbody>");
        for (name, counts) in &rows {
            let t = |kind: &str| Href::to(&["tenants", name, kind]);
            h.el("tr", &[], |h| {
                h.el("td", &[], |h| {
                    h.link(&Href::to(&["tenants", name]), name);
                });
                match counts {
                    Err(e) => {
                        h.el_text("td", &[("class", "error"), ("colspan", "8")], e);
                    }
                    Ok(k) => {
                        count_cell(h, &k.open, &t("barriers").query(&[("state", "open")]), false);
                        count_cell(h, &k.overdue, &t("barriers").query(&[("state", "overdue")]), true);
                        match &k.jobs {
                            Some(j) => count_cell(h, j, &t("jobs").query(&[("state", "waiting")]), false),
                            None => {
                                h.el_text("td", &[("class", "num none")], "—");
                            }
                        }
                        count_cell(h, &k.rendezvous, &t("rendezvous"), false);
                        count_cell(h, &k.due_timers, &t("timers").query(&[("state", "due")]), true);
                        count_cell(h, &Ok(k.dead), &t("dlq"), true);
                        match k.hour {
                            Some((n, f)) => {
                                count_cell(h, &Ok(n), &t("invocations"), false);
                                count_cell(h, &Ok(f), &t("invocations").query(&[("failed", "1")]), true);
                            }
                            None => {
                                h.raw("<td class=\"num none\" title=\"recorded by the process that runs scripts\">—</td><td class=\"num none\">—</td>");
                            }
                        }
                    }
                }
            });
        }
        h.raw("</tbody></table>");
        if names.len() > now_counted {
            h.el_text("p", &[], &format!("{} more tenants, not counted:", names.len() - now_counted));
            h.el("p", &[], |h| {
                for n in &names[now_counted..] {
                    h.link(&Href::to(&["tenants", n]), n).raw(" ");
                }
            });
        }
        match &dead {
            Ok((d, capped)) => {
                let unowned = d.get("").copied().unwrap_or(0);
                h.el("p", &[], |h| {
                    h.link(&Href::to(&["dlq"]), "Every dead letter");
                    if unowned > 0 {
                        h.text(&format!(" ({unowned} belong to no tenant)"));
                    }
                    if *capped {
                        h.text(&format!(
                            " (the first {DEAD_LETTERS_READ} of each queue are counted)"
                        ));
                    }
                });
            }
            Err(e) => {
                h.el_text("p", &[("class", "error")], &format!("dead letters cannot be read: {e}"));
            }
        }
    }))
}

/// One tenant's counts.
pub async fn tenant_page(c: &Console, name: &str) -> PageResult {
    let t = super::load_tenant(c, name).await?;
    let dead = dead_letters_by_tenant(c).await.map_err(|e| e.to_string());
    let n = dead
        .as_ref()
        .map_or(0, |(d, _)| d.get(name).copied().unwrap_or(0));
    let k = counts(c, &t, n).await;
    let show = |v: &Result<u64, String>| match v {
        Ok(n) => n.to_string(),
        Err(e) => format!("? ({e})"),
    };
    Ok(Layout {
        title: &format!("Tenant {}", t.name),
        tenant: Some(&t.name),
        tab: "",
        crumbs: vec![(Href::to(&[]), "tenants".into())],
        live: true,
        notice: None,
    }
    .render(c, |h| {
        let cards: Vec<(String, String, Href)> = vec![
            (
                "open barriers".into(),
                show(&k.open),
                Href::to(&["tenants", name, "barriers"]).query(&[("state", "open")]),
            ),
            (
                "overdue barriers".into(),
                show(&k.overdue),
                Href::to(&["tenants", name, "barriers"]).query(&[("state", "overdue")]),
            ),
            (
                "running jobs".into(),
                k.jobs.as_ref().map_or("no batch".into(), show),
                Href::to(&["tenants", name, "jobs"]),
            ),
            (
                "rendezvous barriers".into(),
                show(&k.rendezvous),
                Href::to(&["tenants", name, "rendezvous"]),
            ),
            (
                "due timers".into(),
                show(&k.due_timers),
                Href::to(&["tenants", name, "timers"]),
            ),
            (
                "dead letters".into(),
                match &dead {
                    Ok(_) => k.dead.to_string(),
                    Err(e) => format!("? ({e})"),
                },
                Href::to(&["tenants", name, "dlq"]),
            ),
            (
                "invocations, last hour".into(),
                k.hour.map_or("—".into(), |(n, _)| n.to_string()),
                Href::to(&["tenants", name, "invocations"]),
            ),
            (
                "errors, last hour".into(),
                k.hour.map_or("—".into(), |(_, f)| f.to_string()),
                Href::to(&["tenants", name, "invocations"]).query(&[("failed", "1")]),
            ),
        ];
        h.el("div", &[("class", "cards")], |h| {
            for (label, value, href) in &cards {
                h.el("a", &[("class", "card"), ("href", href.as_str())], |h| {
                    h.el_text("span", &[("class", "value")], value);
                    h.el_text("span", &[("class", "label")], label);
                });
            }
        });
        facts(h, &t);
    }))
}

fn facts(h: &mut Html, t: &Tenant) {
    let l = &t.config.limits;
    super::facts(
        h,
        &[
            ("queue", t.config.queue.to_string()),
            ("batch", t.config.batch.to_string()),
            (
                "router",
                match t.router() {
                    crate::config::Router::Script(name) => name.to_string(),
                    crate::config::Router::BuiltIn => "(built-in)".to_string(),
                },
            ),
            ("timeout_s", l.timeout_s.to_string()),
            ("max_data_ops", l.max_data_ops.to_string()),
            ("max_chain_depth", l.max_chain_depth.to_string()),
        ],
    );
}

/// `/console/tenants/{tenant}`.
pub async fn tenant(State(c): State<Arc<Console>>, Path(name): Path<String>) -> Response {
    render(c, move |c| async move { tenant_page(&c, &name).await }).await
}
