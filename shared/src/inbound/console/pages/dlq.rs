//! Dead letters: a tenant's (each with its queue, receives, last error and body; redrive one
//! or all), and every one of the deployment with its tenant. Redrive is the queue port's, as
//! `native dlq redrive` does it: the message goes back to its queue with five attempts again.
//! On `native serve` the serving process runs it at once; on AWS the deployment's functions do.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;

use super::super::html::{Href, Html};
use super::super::{action, done, render, Console, Form, Layout, PageResult, Problem};
use super::overview::DEAD_LETTERS_READ;
use super::{filters, load_tenant};
use crate::ports::{DeadLetter, QueueKind};

/// The most dead letters one "redrive all" moves per queue (as `native dlq redrive`).
const REDRIVE_MAX: usize = 10_000;

fn kinds(q: &Form) -> Result<Vec<QueueKind>, Problem> {
    match q.str("queue") {
        "" | "all" => Ok(vec![QueueKind::Events, QueueKind::Work]),
        "events" => Ok(vec![QueueKind::Events]),
        "work" => Ok(vec![QueueKind::Work]),
        other => Err(Problem::bad(format!(
            "queue {other:?} is not one of all, events, work"
        ))),
    }
}

/// Dead letters of `kinds` with their owner, those of `tenant` only when given.
async fn read(
    c: &Console,
    kinds: &[QueueKind],
    tenant: Option<&str>,
) -> crate::Result<Vec<(QueueKind, Option<String>, DeadLetter)>> {
    let rt = c.rt();
    let mut out = Vec::new();
    for &kind in kinds {
        for d in rt
            .services
            .backends
            .queue
            .dead_letters(kind, DEAD_LETTERS_READ)
            .await?
        {
            let owner = crate::events::owner(&rt.services.deployment, kind, &d.body);
            if tenant.is_none_or(|t| owner.as_deref() == Some(t)) {
                out.push((kind, owner, d));
            }
        }
    }
    Ok(out)
}

fn table(
    h: &mut Html,
    c: &Console,
    letters: &[(QueueKind, Option<String>, DeadLetter)],
    tenant: Option<&str>,
) {
    if letters.is_empty() {
        h.el_text("p", &[("class", "empty")], "No dead letters.");
        return;
    }
    h.open("table", &[("class", "list"), ("id", "dead-letters")]);
    h.raw("<thead><tr><th>queue</th><th>id</th>");
    if tenant.is_none() {
        h.raw("<th>tenant</th>");
    }
    h.raw("<th>receives</th><th>last error</th><th>body</th><th></th></tr></thead><tbody>");
    for (kind, owner, d) in letters {
        h.el("tr", &[("data-id", &d.id)], |h| {
            h.el_text("td", &[], kind.name());
            h.el_text("td", &[("class", "id")], &d.id);
            if tenant.is_none() {
                h.el("td", &[], |h| match owner {
                    Some(o) => {
                        h.link(&Href::to(&["tenants", o, "dlq"]), o);
                    }
                    None => {
                        h.el_text("span", &[("class", "none")], "none");
                    }
                });
            }
            h.el("td", &[("class", "num")], |h| {
                h.num(d.receive_count);
            });
            h.el_text(
                "td",
                &[("class", "error")],
                d.last_error
                    .as_deref()
                    .unwrap_or("(not kept by this queue)"),
            );
            h.el("td", &[], |h| {
                let pretty = serde_json::from_str::<serde_json::Value>(&d.body)
                    .ok()
                    .and_then(|v| serde_json::to_string_pretty(&v).ok())
                    .unwrap_or_else(|| d.body.clone());
                h.el_text(
                    "pre",
                    &[("class", "json")],
                    &crate::text::cut_text(pretty, 8 * 1024),
                );
                // A work message names its chain: its timeline is a click away.
                let chain = crate::ports::trace_of_body(&d.body);
                if let (Some(chain), Some(o)) = (chain, tenant.or(owner.as_deref())) {
                    h.el("p", &[("class", "chain")], |h| {
                        h.raw("chain ");
                        super::chains::chain_link(h, o, &chain);
                    });
                }
            });
            h.el("td", &[], |h| {
                if let Some(t) = tenant {
                    let action = Href::to(&["tenants", t, "dlq", "redrive"]);
                    h.el(
                        "form",
                        &[
                            ("method", "post"),
                            ("action", action.as_str()),
                            ("class", "inline"),
                        ],
                        |h| {
                            h.hidden("csrf", &c.csrf())
                                .hidden("queue", kind.name())
                                .hidden("id", &d.id);
                            h.raw("<button type=\"submit\">Redrive</button>");
                        },
                    );
                }
            });
        });
    }
    h.raw("</tbody></table>");
}

/// `/console/tenants/{tenant}/dlq?queue=`.
pub async fn tenant_list(c: &Console, name: &str, q: &Form) -> PageResult {
    let t = load_tenant(c, name).await?;
    let kinds = kinds(q)?;
    let letters = read(c, &kinds, Some(&t.name)).await?;
    let base = Href::to(&["tenants", name, "dlq"]);
    Ok(Layout {
        title: "Dead letters",
        tenant: Some(name),
        tab: "dlq",
        crumbs: vec![(Href::to(&[]), "tenants".into()), (Href::to(&["tenants", name]), name.into())],
        live: true,
        notice: q.get("notice"),
    }
    .render(c, |h| {
        h.el_text(
            "p",
            &[("class", "summary")],
            &format!(
                "{}{} dead letter(s): messages that failed {} times, or could never run. Redrive one once its cause is fixed: it gets {} attempts again.",
                letters.len(),
                if letters.len() >= DEAD_LETTERS_READ { "+ (the first of each queue are read)" } else { "" },
                crate::ports::MAX_RECEIVES,
                crate::ports::MAX_RECEIVES
            ),
        );
        filters(h, &base, "queue", if q.str("queue").is_empty() { "all" } else { q.str("queue") }, &["all", "events", "work"], &[]);
        if !letters.is_empty() {
            h.el(
                "form",
                &[
                    ("method", "post"),
                    ("action", Href::to(&["tenants", name, "dlq", "redrive"]).as_str()),
                    ("data-confirm", "Redrive every dead letter of this tenant?"),
                    ("class", "inline"),
                ],
                |h| {
                    h.hidden("csrf", &c.csrf()).hidden("all", "1").hidden("queue", q.str("queue"));
                    h.raw("<button type=\"submit\">Redrive all</button>");
                },
            );
        }
        table(h, c, &letters, Some(name));
    }))
}

/// `/console/tenants/{tenant}/dlq`.
pub async fn tenant(
    State(c): State<Arc<Console>>,
    Path(t): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let q = Form::parse(q.as_deref().unwrap_or(""));
    render(c, move |c| async move { tenant_list(&c, &t, &q).await }).await
}

/// `/console/dlq`: every dead letter, with its tenant.
pub async fn all(State(c): State<Arc<Console>>, RawQuery(q): RawQuery) -> Response {
    let q = Form::parse(q.as_deref().unwrap_or(""));
    render(c, move |c| async move {
        let kinds = kinds(&q)?;
        let letters = read(&c, &kinds, None).await?;
        Ok(Layout {
            title: "Every dead letter",
            tenant: None,
            tab: "",
            crumbs: vec![(Href::to(&[]), "tenants".into())],
            live: true,
            notice: None,
        }
        .render(&c, |h| {
            filters(
                h,
                &Href::to(&["dlq"]),
                "queue",
                if q.str("queue").is_empty() {
                    "all"
                } else {
                    q.str("queue")
                },
                &["all", "events", "work"],
                &[],
            );
            h.el_text(
                "p",
                &[("class", "summary")],
                "Redrive a tenant's from its page; those of no tenant with `native dlq redrive`.",
            );
            table(h, &c, &letters, None);
        }))
    })
    .await
}

/// `POST /console/tenants/{tenant}/dlq/redrive`: one (`queue`, `id`) or every one (`all`).
pub async fn redrive(State(c): State<Arc<Console>>, Path(t): Path<String>, body: Body) -> Response {
    action(c, body, t, move |c, tn, form| async move {
        let t = tn.name.as_str();
        let rt = c.rt();
        let queue = &rt.services.backends.queue;
        let deployment = &rt.services.deployment;
        let mut moved = 0;
        if form.get("all").is_some() {
            for kind in kinds(&form)? {
                let keep = |body: &str| {
                    crate::events::owner(deployment, kind, body).as_deref()
                        == Some(tn.name.as_str())
                };
                moved += queue.redrive(kind, &keep, REDRIVE_MAX).await?;
            }
        } else {
            let kinds = kinds(&form)?;
            let id = form.str("id");
            let found = read(&c, &kinds, Some(&tn.name))
                .await?
                .into_iter()
                .find(|(_, _, d)| d.id == id);
            let Some((kind, _, d)) = found else {
                return Err(Problem::new(
                    axum::http::StatusCode::NOT_FOUND,
                    format!("no dead letter {id:?} of tenant {t:?} (redriven already?)"),
                ));
            };
            let keep = |body: &str| body == d.body;
            moved += queue.redrive(kind, &keep, 1).await?;
        }
        Ok(done(
            Href::to(&["tenants", t, "dlq"]),
            &format!("{moved} dead letter(s) moved back to their queue"),
        ))
    })
    .await
}
