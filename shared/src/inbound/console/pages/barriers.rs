//! A tenant's barriers: the list (newest first, by state, a page at a time) and one barrier
//! with every member's outcome, its deadline and its continuation's dispatch; actions: ack a
//! member (ok, or failed with an error), cancel the barrier. The actions are the primitive's
//! own calls, as `native barrier ack` and `cancel` make them; a continuation they send is run by
//! whatever processes the work queue (the serving process itself on `native serve`).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, RawQuery, State};
use axum::response::Response;

use super::super::html::{Href, Html};
use super::super::{action, done, render, Console, Form, Layout, PageResult, Problem};
use super::{
    ago, badge, barriers_of, facts, filters, json_block, load_tenant, pager, time_cell, when,
};
use crate::barrier::{DispatchState, Filter, MemberFilter, Outcome};
use crate::ports::now_ms;
use serde_json::json;

/// Barriers per page unless `limit` says otherwise (at most 500).
const PAGE: usize = 100;

/// `/console/tenants/{tenant}/barriers?state=&after=&limit=`.
pub async fn list(
    State(c): State<Arc<Console>>,
    Path(t): Path<String>,
    RawQuery(q): RawQuery,
) -> Response {
    let q = Form::parse(q.as_deref().unwrap_or(""));
    render(c, move |c| async move { list_page(&c, &t, &q).await }).await
}

async fn list_page(c: &Console, name: &str, q: &Form) -> PageResult {
    let t = load_tenant(c, name).await?;
    let filter = Filter::parse(q.str("state")).ok_or_else(|| {
        Problem::bad(format!(
            "state {:?} is not one of all, open, overdue, complete",
            q.str("state")
        ))
    })?;
    let limit = q.limit("limit", PAGE, 500);
    let b = barriers_of(c, &t);
    // One query for a page (a filter reads on until the page is full); the counts, which read
    // every row, are on the tenant's page.
    let page = b.list(filter, q.get("after"), limit).await?;
    let now = now_ms();
    let base = Href::to(&["tenants", name, "barriers"]);
    let limit_s = if limit == PAGE {
        String::new()
    } else {
        limit.to_string()
    };
    let keep = [("state", filter.name()), ("limit", limit_s.as_str())];
    Ok(Layout {
        title: "Barriers",
        tenant: Some(name),
        tab: "barriers",
        crumbs: vec![(Href::to(&[]), "tenants".into()), (Href::to(&["tenants", name]), name.into())],
        live: true,
        notice: None,
    }
    .render(c, |h| {
        h.el("p", &[("class", "summary")], |h| {
            h.raw("Newest first. How many are in each state: ");
            h.link(&Href::to(&["tenants", name]), "the tenant's page");
            h.raw(".");
        });
        filters(h, &base, "state", filter.name(), &["all", "open", "overdue", "complete"], &[("limit", &limit_s)]);
        if page.barriers.is_empty() {
            h.el_text("p", &[("class", "empty")], "No barriers here.");
        } else {
            h.open("table", &[("class", "list"), ("id", "barriers")]);
            h.raw("<thead><tr><th>barrier</th><th>state</th><th>created</th><th>members</th><th>deadline</th><th>continuation</th><th>completed</th></tr></thead><tbody>");
            for l in &page.barriers {
                let state = l.state(now);
                h.el("tr", &[("data-state", state.name())], |h| {
                    h.el("td", &[("class", "id")], |h| {
                        h.link(&Href::to(&["tenants", name, "barriers", &l.id]), &l.id);
                    });
                    h.el("td", &[], |h| badge(h, state.name()));
                    time_cell(h, l.created_ms, now);
                    h.el("td", &[("class", "num")], |h| {
                        h.num(l.members);
                    });
                    match l.deadline_ms {
                        Some(d) => time_cell(h, d, now),
                        None => {
                            h.el_text("td", &[("class", "none")], "—");
                        }
                    }
                    h.el_text("td", &[], l.continue_with.as_deref().unwrap_or("—"));
                    match l.done_ms {
                        Some(d) => time_cell(h, d, now),
                        None => {
                            h.el_text("td", &[("class", "none")], "—");
                        }
                    }
                });
            }
            h.raw("</tbody></table>");
        }
        if page.next.is_some() && page.barriers.len() < limit {
            h.el_text(
                "p",
                &[("class", "note")],
                &format!("{} barriers read for this page; more may match further on.", page.scanned),
            );
        }
        pager(h, &base, &keep, page.next.as_deref(), q.get("after").is_some());
    }))
}

/// `/console/tenants/{tenant}/barriers/{id}?members=&after=&notice=`.
/// The most rows a barrier's page counts of each kind (pending, failed, added members): past
/// it the page says "or more", so that it costs the same for a barrier of any size.
const COUNTED: usize = 1000;

pub async fn one(
    State(c): State<Arc<Console>>,
    Path((t, id)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> Response {
    let q = Form::parse(q.as_deref().unwrap_or(""));
    render(c, move |c| async move { one_page(&c, &t, &id, &q).await }).await
}

async fn one_page(c: &Console, name: &str, id: &str, q: &Form) -> PageResult {
    let t = load_tenant(c, name).await?;
    let which = MemberFilter::parse(q.str("members")).ok_or_else(|| {
        Problem::bad(format!(
            "members {:?} is not one of all, pending, resolved, failed",
            q.str("members")
        ))
    })?;
    let b = barriers_of(c, &t);
    let Some(meta) = b.describe(id).await? else {
        return Err(Problem::new(
            axum::http::StatusCode::NOT_FOUND,
            format!("tenant {name:?} has no barrier {id:?} (never created, still being created, or expired)"),
        ));
    };
    // Counts read a query each, at most COUNTED rows: the page costs the same at any size.
    let Some((st, capped)) = b.glance(id, COUNTED).await? else {
        return Err(Problem::new(
            axum::http::StatusCode::NOT_FOUND,
            format!("barrier {id:?} is gone"),
        ));
    };
    let cancelled = b.cancelled(id).await?;
    let dispatch = b.dispatch_state(id).await?;
    let limit = q.limit("limit", PAGE, 500);
    let (members, next) = b
        .members(id, which, q.get("after"), limit)
        .await?
        .unwrap_or_default();
    let now = now_ms();
    let here = Href::to(&["tenants", name, "barriers", id]);
    let state = if st.complete {
        "complete"
    } else if st.overdue {
        "overdue"
    } else {
        "open"
    };
    let dispatch_text = match (&st.continue_with, dispatch) {
        (None, _) => "no continuation".to_string(),
        (Some(_), _) if !t.config.queue => "no queue: the continuation is not sent".to_string(),
        (Some(s), DispatchState::Sent) => format!("{s}: sent"),
        (Some(s), DispatchState::Claimed(until)) => format!(
            "{s}: being sent (claimed until {}; if that call died, the tick sends it {})",
            when(until),
            ago(until, now)
        ),
        (Some(s), DispatchState::Unclaimed) if st.complete => format!("{s}: not sent yet"),
        (Some(s), DispatchState::Unclaimed) => format!("{s}: waits for the last member"),
    };
    let title = format!("Barrier {id}");
    Ok(Layout {
        title: &title,
        tenant: Some(name),
        tab: "barriers",
        crumbs: vec![
            (Href::to(&[]), "tenants".into()),
            (Href::to(&["tenants", name]), name.into()),
            (Href::to(&["tenants", name, "barriers"]), "barriers".into()),
        ],
        live: true,
        notice: q.get("notice"),
    }
    .render(c, |h| {
        h.el("p", &[("class", "state")], |h| {
            badge(h, state);
            if let Some(r) = &cancelled {
                h.raw(" ");
                h.el_text("span", &[("class", "badge bad")], &format!("cancelled: {r}"));
            }
        });
        let at_least = |n: u64, more: bool| if more { format!("{n} or more") } else { n.to_string() };
        let mut rows = vec![
            ("members", at_least(st.total, capped.added)),
            ("pending", at_least(st.pending, capped.pending)),
            (
                "resolved",
                if capped.pending || capped.added {
                    format!(
                        "not counted past {COUNTED} ({} failed)",
                        at_least(st.failed, capped.failed)
                    )
                } else {
                    format!("{} ({} failed)", st.resolved, at_least(st.failed, capped.failed))
                },
            ),
            ("created", format!("{} ({})", when(st.created_ms), ago(st.created_ms, now))),
        ];
        if let Some(d) = st.deadline_ms {
            rows.push((
                "deadline",
                format!("{} ({}){}", when(d), ago(d, now), if st.overdue { ", overdue" } else { "" }),
            ));
        }
        if let Some(o) = &meta.on_overdue {
            rows.push(("on overdue", o.clone()));
        }
        rows.push(("continuation", dispatch_text.clone()));
        rows.push(("expires", when(st.expires_at_s * 1000)));
        facts(h, &rows);
        if let Some(chain) = &meta.chain {
            h.el("p", &[("class", "chain")], |h| {
                h.raw("Chain (the work that waits on it): ");
                super::chains::chain_link(h, &t.name, chain);
            });
        }
        if !meta.state.is_null() {
            h.el_text("h2", &[], "State for the continuation");
            json_block(h, &meta.state, 16 * 1024);
        }
        h.el_text("h2", &[], "Members");
        filters(h, &here, "members", which.name(), &["all", "pending", "resolved", "failed"], &[]);
        members_table(h, c, name, id, &members, now);
        pager(h, &here, &[("members", which.name())], next.as_deref(), q.get("after").is_some());
        if !st.complete {
            h.el_text("h2", &[], "Cancel");
            h.el(
                "form",
                &[
                    ("method", "post"),
                    ("action", Href::to(&["tenants", name, "barriers", id, "cancel"]).as_str()),
                    ("data-confirm", "Cancel this barrier? Every pending member is resolved as failed and the continuation runs."),
                    ("class", "inline"),
                ],
                |h| {
                    h.hidden("csrf", &c.csrf());
                    h.open("input", &[("name", "reason"), ("placeholder", "reason"), ("value", "cancelled by the operator"), ("maxlength", "1024")]);
                    h.raw("<button type=\"submit\" class=\"danger\">Cancel barrier</button>");
                },
            );
        }
    }))
}

fn members_table(
    h: &mut Html,
    c: &Console,
    name: &str,
    id: &str,
    members: &[crate::barrier::Member],
    now: i64,
) {
    if members.is_empty() {
        h.el_text("p", &[("class", "empty")], "No members here.");
        return;
    }
    let ack = Href::to(&["tenants", name, "barriers", id, "ack"]);
    h.open("table", &[("class", "list"), ("id", "members")]);
    h.raw("<thead><tr><th>member</th><th>outcome</th><th>acknowledged</th><th>error / result</th><th>act</th></tr></thead><tbody>");
    for m in members {
        let state = match m.ok {
            None => "pending",
            Some(true) => "ok",
            Some(false) => "failed",
        };
        h.el(
            "tr",
            &[("data-member", &m.name), ("data-state", state)],
            |h| {
                h.el_text("td", &[("class", "id member")], &m.name);
                h.el("td", &[], |h| badge(h, state));
                match m.at_ms {
                    Some(at) => time_cell(h, at, now),
                    None => {
                        h.el_text(
                            "td",
                            &[("class", "none")],
                            if m.ok.is_some() { "(not kept)" } else { "—" },
                        );
                    }
                }
                h.el("td", &[("class", "detail")], |h| {
                    if let Some(e) = &m.error {
                        h.el_text("span", &[("class", "error")], e);
                    }
                    if let Some(r) = &m.result {
                        h.el_text("code", &[], &crate::text::cut_text(r.to_string(), 2048));
                    }
                });
                h.el("td", &[], |h| {
                    if m.ok.is_none() {
                        // Two forms, so that Enter in the error field fails the member, never acks it.
                        h.el(
                            "form",
                            &[
                                ("method", "post"),
                                ("action", ack.as_str()),
                                ("class", "inline ack"),
                            ],
                            |h| {
                                h.hidden("csrf", &c.csrf())
                                    .hidden("member", &m.name)
                                    .hidden("outcome", "ok");
                                h.raw("<button type=\"submit\">Ack ok</button>");
                            },
                        );
                        h.raw(" ");
                        h.el(
                            "form",
                            &[
                                ("method", "post"),
                                ("action", ack.as_str()),
                                ("class", "inline fail"),
                            ],
                            |h| {
                                h.hidden("csrf", &c.csrf())
                                    .hidden("member", &m.name)
                                    .hidden("outcome", "failed");
                                h.open(
                                    "input",
                                    &[
                                        ("name", "error"),
                                        ("placeholder", "error"),
                                        ("maxlength", "2048"),
                                        ("aria-label", "error for a failed ack"),
                                    ],
                                );
                                h.raw("<button type=\"submit\" class=\"danger\">Fail</button>");
                            },
                        );
                    }
                });
            },
        );
    }
    h.raw("</tbody></table>");
}

/// Records an operator's action on a barrier in the barrier's chain `chain` (when it has one):
/// a step ([`crate::observe::step`]) linked to the console request's chain `request`.
fn operator_step(
    c: &Console,
    tenant: &str,
    chain: Option<&str>,
    (request, span): (Option<&str>, Option<u64>),
    msg: &str,
    fields: serde_json::Value,
) {
    let Some(chain) = chain else {
        return;
    };
    let by = crate::observe::step::Origin::Operator {
        via: "console",
        who: None,
        chain: request,
    };
    let rec = crate::observe::step::record(chain, tenant, msg, &by, fields);
    c.rt.services.log.write(&rec);
    crate::observe::step::export(c.rt.services.exporter.as_deref(), &rec, span);
}

/// `POST .../barriers/{id}/ack`: `member`, `outcome` (`ok` or `failed`), `error`.
pub async fn ack(
    State(c): State<Arc<Console>>,
    Path((t, id)): Path<(String, String)>,
    body: Body,
) -> Response {
    // The request's chain, which the step links (the work runs on a thread of its own).
    let (request, span) = (crate::observe::chain(), crate::observe::context().span);
    action(c, body, t, move |c, tn, form| async move {
        let t = tn.name.as_str();
        let member = form.str("member");
        if member.is_empty() {
            return Err(Problem::bad("the form names no member"));
        }
        let ok = match form.str("outcome") {
            "ok" => true,
            "failed" => false,
            other => return Err(Problem::bad(format!("outcome {other:?} is neither ok nor failed"))),
        };
        let error = form.get("error").filter(|e| !e.is_empty());
        let outcome = Outcome {
            ok,
            error: (!ok).then(|| error.unwrap_or("failed by the operator").to_string()),
            result: None,
        };
        let r = barriers_of(&c, &tn).ack(&id, member, outcome).await?;
        if !r.duplicate {
            operator_step(&c, &tn.name, r.chain.as_deref(), (request.as_deref(), span), "barrier member acked",
                json!({ "barrier": id, "member": member, "ok": ok, "complete": r.complete }));
        }
        let what = if ok { "ok" } else { "failed" };
        let notice = match (r.duplicate, r.complete, r.dispatched) {
            (true, _, _) => format!("member {member:?} was already acknowledged; nothing changed"),
            (false, true, true) => format!("acknowledged {member:?} ({what}); the barrier is complete and its continuation was sent"),
            (false, true, false) => format!("acknowledged {member:?} ({what}); the barrier is complete"),
            (false, false, _) => format!("acknowledged {member:?} ({what})"),
        };
        Ok(done(Href::to(&["tenants", t, "barriers", &id]), &notice))
    })
    .await
}

/// `POST .../barriers/{id}/cancel`: `reason`.
pub async fn cancel(
    State(c): State<Arc<Console>>,
    Path((t, id)): Path<(String, String)>,
    body: Body,
) -> Response {
    let (request, span) = (crate::observe::chain(), crate::observe::context().span);
    action(c, body, t, move |c, tn, form| async move {
        let t = tn.name.as_str();
        let reason = match form.str("reason") {
            "" => "cancelled by the operator",
            r => r,
        };
        let b = barriers_of(&c, &tn);
        let n = b.cancel(&id, reason).await?;
        if n > 0 {
            operator_step(
                &c,
                &tn.name,
                b.chain(&id).await?.as_deref(),
                (request.as_deref(), span),
                "barrier cancelled",
                json!({ "barrier": id, "resolved": n, "reason": reason }),
            );
        }
        Ok(done(
            Href::to(&["tenants", t, "barriers", &id]),
            &format!("cancelled: {n} pending member(s) resolved as failed"),
        ))
    })
    .await
}
