//! A tenant's batch jobs: the list (waiting, stale, done, failed; a page at a time) and one
//! job: its request, its state, the partner's answer with each result part as stored, and on
//! request each part read through and checked against what `done.json` promised (bytes,
//! sha256, rows). For `job:http` jobs, each answer's status and headers.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::super::html::{Href, Html};
use super::super::{render, Console, Form, Layout, PageResult, Problem};
use super::{ago, badge, facts, filters, json_block, load_tenant, pager, when};
use crate::batch::inspect::{self, PartView};
use crate::ports::now_ms;

const PAGE: usize = 100;

fn no_batch(c: &Console, t: &crate::config::Tenant) -> Option<&'static str> {
    if c.rt().services.deployment.batch.is_none() {
        Some("This deployment has no batch bucket (deployment.json has no \"batch\" section).")
    } else if !t.config.batch {
        Some("This tenant has no batch jobs (\"batch\": true is not set in its config).")
    } else {
        None
    }
}

/// `/console/tenants/{tenant}/jobs?state=&after=`.
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
    let want = match q.str("state") {
        "" | "all" => "all",
        s @ ("waiting" | "stale" | "done" | "failed") => s,
        other => {
            return Err(Problem::bad(format!(
                "state {other:?} is not one of all, waiting, stale, done, failed"
            )))
        }
    };
    let limit = q.limit("limit", PAGE, 500);
    let rt = c.rt();
    let now = now_ms();
    let jobs = match no_batch(c, &t) {
        Some(_) => Vec::new(),
        None => {
            crate::batch::jobs::list(
                rt.services.backends.objects.as_ref(),
                &rt.services.deployment,
                &t.name,
                now,
            )
            .await?
        }
    };
    let after = q.get("after").unwrap_or("");
    let mut shown: Vec<_> = jobs
        .iter()
        .filter(|j| after.is_empty() || j.job.as_str() > after)
        .filter(|j| want == "all" || j.state == want)
        .take(limit + 1)
        .collect();
    let next = (shown.len() > limit).then(|| {
        shown.truncate(limit);
        shown.last().map(|j| j.job.clone())
    });
    let base = Href::to(&["tenants", name, "jobs"]);
    Ok(Layout {
        title: "Batch jobs",
        tenant: Some(name),
        tab: "jobs",
        crumbs: vec![(Href::to(&[]), "tenants".into()), (Href::to(&["tenants", name]), name.into())],
        live: true,
        notice: None,
    }
    .render(c, |h| {
        if let Some(why) = no_batch(c, &t) {
            h.el_text("p", &[("class", "empty")], why);
            return;
        }
        filters(h, &base, "state", want, &["all", "waiting", "stale", "done", "failed"], &[]);
        if shown.is_empty() {
            h.el_text("p", &[("class", "empty")], "No jobs here.");
        } else {
            h.open("table", &[("class", "list"), ("id", "jobs")]);
            h.raw("<thead><tr><th>job</th><th>state</th><th>age</th><th>stale after</th><th>error</th></tr></thead><tbody>");
            for j in &shown {
                h.el("tr", &[("data-state", j.state)], |h| {
                    h.el("td", &[("class", "id")], |h| {
                        h.link(&Href::to(&["tenants", name, "jobs", &j.job]), &j.job);
                    });
                    h.el("td", &[], |h| badge(h, j.state));
                    h.el_text("td", &[], &ago(now - j.age_s * 1000, now));
                    h.el_text("td", &[], &j.stale_after_s.map_or("—".into(), |s| format!("{s} s")));
                    h.el_text("td", &[("class", "error")], j.error.as_deref().unwrap_or(""));
                });
            }
            h.raw("</tbody></table>");
        }
        pager(h, &base, &[("state", want)], next.flatten().as_deref(), !after.is_empty());
    }))
}

/// `/console/tenants/{tenant}/jobs/{id}?check=1`.
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
    if let Some(why) = no_batch(c, &t) {
        return Err(Problem::new(StatusCode::NOT_FOUND, why));
    }
    let check = q.get("check").is_some_and(|v| v == "1");
    let rt = c.rt();
    let now = now_ms();
    let Some(v) = inspect::view(
        rt.services.backends.objects.as_ref(),
        &rt.services.deployment,
        &t.name,
        id,
        now,
        check,
    )
    .await?
    else {
        return Err(Problem::new(
            StatusCode::NOT_FOUND,
            format!("tenant {name:?} has no job {id:?}"),
        ));
    };
    let here = Href::to(&["tenants", name, "jobs", id]);
    let state = match &v.done {
        Some(Ok(d)) if d.ok => "done",
        Some(_) => "failed",
        None if v.stale => "stale",
        None => "waiting",
    };
    let title = format!("Job {id}");
    Ok(Layout {
        title: &title,
        tenant: Some(name),
        tab: "jobs",
        crumbs: vec![
            (Href::to(&[]), "tenants".into()),
            (Href::to(&["tenants", name]), name.into()),
            (Href::to(&["tenants", name, "jobs"]), "jobs".into()),
        ],
        live: !check,
        notice: None,
    }
    .render(c, |h| {
        h.el("p", &[("class", "state")], |h| badge(h, state));
        let mut rows = Vec::new();
        if let Some(at) = v.requested_ms {
            rows.push(("requested", format!("{} ({})", when(at), ago(at, now))));
        }
        if let Some(s) = &v.state {
            rows.push((
                "continuation",
                s.continue_with.clone().unwrap_or_else(|| "—".into()),
            ));
            if let Some(after) = s.stale_after_s {
                rows.push((
                    "stale after",
                    format!("{after} s{}", if v.stale { ": stale now" } else { "" }),
                ));
            }
            if let Some(o) = &s.on_stale {
                rows.push(("on stale", o.clone()));
            }
            rows.push(("queries", s.queries.join(", ")));
        }
        facts(h, &rows);
        let chain = v
            .request
            .as_ref()
            .and_then(|r| r.get("trace"))
            .and_then(|t| t.as_str());
        if let Some(chain) = chain {
            h.el("p", &[("class", "chain")], |h| {
                h.raw("Chain (the work that waits on it): ");
                super::chains::chain_link(h, &t.name, chain);
            });
        }
        match &v.done {
            None => {
                h.el_text("p", &[], "The partner has not answered (no done.json yet).");
            }
            Some(Err(e)) => {
                h.el_text("h2", &[], "done.json");
                h.el_text("p", &[("class", "error")], e);
            }
            Some(Ok(d)) => {
                h.el_text("h2", &[], "Answer (done.json)");
                if let Some(e) = &d.error {
                    h.el_text("p", &[("class", "error")], e);
                }
                for (result, set) in &d.results {
                    h.el("h3", &[], |h| {
                        h.raw("Result ").text(result);
                    });
                    let mut rows = Vec::new();
                    if let Some(r) = set.rows {
                        rows.push(("rows promised", r.to_string()));
                    }
                    if let Some(s) = set.extra.get("status") {
                        rows.push(("HTTP status", s.to_string()));
                    }
                    facts(h, &rows);
                    if let Some(hd) = set.extra.get("headers") {
                        h.el_text("h4", &[], "HTTP headers");
                        headers(h, hd);
                    }
                    let others: serde_json::Map<String, serde_json::Value> = set
                        .extra
                        .iter()
                        .filter(|(k, _)| *k != "status" && *k != "headers")
                        .map(|(k, v)| (k.clone(), v.clone()))
                        .collect();
                    if !others.is_empty() {
                        json_block(h, &serde_json::Value::Object(others), 8 * 1024);
                    }
                    parts(h, v.parts.iter().filter(|p| &p.result == result), check);
                }
                if !check && !v.parts.is_empty() {
                    h.el("p", &[], |h| {
                        h.el(
                            "a",
                            &[
                                ("href", here.clone().query(&[("check", "1")]).as_str()),
                                ("class", "button"),
                            ],
                            |h| {
                                h.raw("Read every part and check it");
                            },
                        );
                    });
                }
            }
        }
        if let Some(r) = &v.request {
            h.el_text("h2", &[], "Request (request.json)");
            json_block(h, r, 64 * 1024);
        }
        if let Some(s) = &v.state {
            if !s.state.is_null() {
                h.el_text("h2", &[], "State for the continuation");
                json_block(h, &s.state, 16 * 1024);
            }
        }
    }))
}

fn headers(h: &mut Html, v: &serde_json::Value) {
    h.open("table", &[("class", "list headers")]);
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                h.el("tr", &[], |h| {
                    h.el_text("th", &[], k);
                    h.el_text(
                        "td",
                        &[],
                        &v.as_str().map_or_else(|| v.to_string(), str::to_string),
                    );
                });
            }
        }
        other => {
            h.el("tr", &[], |h| {
                h.el_text("td", &[], &other.to_string());
            });
        }
    }
    h.close("table");
}

fn parts<'a>(h: &mut Html, parts: impl Iterator<Item = &'a PartView>, checked: bool) {
    h.open("table", &[("class", "list parts")]);
    h.raw("<thead><tr><th>part</th><th>bytes promised</th><th>stored</th><th>sha256 promised</th>");
    if checked {
        h.raw("<th>read</th>");
    }
    h.raw("</tr></thead><tbody>");
    for p in parts {
        h.el("tr", &[], |h| {
            h.el_text("td", &[("class", "id")], &p.key);
            h.el_text(
                "td",
                &[("class", "num")],
                &p.bytes.map_or("—".into(), |b| b.to_string()),
            );
            h.el("td", &[("class", "num")], |h| match p.stored {
                None => badge(h, "missing"),
                Some(s) if p.bytes.is_some_and(|b| b != s) => {
                    h.el_text("span", &[("class", "badge bad")], &format!("{s} (differs)"));
                }
                Some(s) => {
                    h.num(s);
                }
            });
            h.el_text(
                "td",
                &[("class", "hash")],
                p.sha256.as_deref().unwrap_or("—"),
            );
            if checked {
                h.el("td", &[], |h| match &p.checked {
                    None => {}
                    Some(Err(e)) => {
                        h.el_text("span", &[("class", "error")], e);
                    }
                    Some(Ok(k)) => {
                        let sha_ok = p
                            .sha256
                            .as_deref()
                            .is_none_or(|s| s.eq_ignore_ascii_case(&k.sha256));
                        let bytes_ok = p.bytes.is_none_or(|b| b == k.bytes);
                        badge(h, if sha_ok && bytes_ok { "ok" } else { "failed" });
                        h.text(&format!(
                            " {} bytes, {} rows{}, sha256 {}",
                            k.bytes,
                            k.rows,
                            if k.gzip { " (gzip)" } else { "" },
                            k.sha256
                        ));
                    }
                });
            }
        });
    }
    h.raw("</tbody></table>");
}
