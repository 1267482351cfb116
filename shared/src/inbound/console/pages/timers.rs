//! A tenant's pending timers, in due order: due now (a tick fires them), firing (a tick holds
//! one), waiting; what each runs and what its condition watches.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::response::Response;

use super::super::html::Href;
use super::super::{render, Console, Form, Layout, PageResult, Problem};
use super::{badge, filters, load_tenant, pager, time_cell, TOOLS};
use crate::ports::now_ms;
use crate::timer::{Info, Timers};

const PAGE: usize = 100;
/// The most timers read for one filtered page.
const MAX_SCAN: usize = 5000;

fn state(i: &Info, now: i64) -> &'static str {
    if i.firing {
        "firing"
    } else if i.at_ms <= now {
        "due"
    } else {
        "waiting"
    }
}

/// `/console/tenants/{tenant}/timers?state=&after=`.
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
        s @ ("due" | "firing" | "waiting") => s,
        other => {
            return Err(Problem::bad(format!(
                "state {other:?} is not one of all, due, firing, waiting"
            )))
        }
    };
    if let Some(a) = q.get("after").filter(|a| !a.is_empty()) {
        crate::timer::parse_id(a)?;
    }
    let limit = q.limit("limit", PAGE, 500);
    let timers = Timers {
        kv: c.rt().services.backends.kv.as_ref(),
        tenant: &t.name,
        budget: &TOOLS,
    };
    let now = now_ms();
    let mut shown = Vec::new();
    let mut after = q.get("after").filter(|a| !a.is_empty()).map(str::to_string);
    let mut scanned = 0;
    let next = loop {
        let (page, next) = timers.list(after.as_deref(), limit).await?;
        scanned += page.len();
        let mut cut = None;
        for i in page {
            if shown.len() == limit {
                cut = shown.last().map(|x: &Info| x.id.clone());
                break;
            }
            if want == "all" || state(&i, now) == want {
                shown.push(i);
            }
        }
        if cut.is_some() {
            break cut;
        }
        match next {
            Some(n) if scanned < MAX_SCAN && shown.len() < limit => after = Some(n),
            Some(n) => break Some(n),
            None => break None,
        }
    };
    let base = Href::to(&["tenants", name, "timers"]);
    Ok(Layout {
        title: "Timers",
        tenant: Some(name),
        tab: "timers",
        crumbs: vec![(Href::to(&[]), "tenants".into()), (Href::to(&["tenants", name]), name.into())],
        live: true,
        notice: None,
    }
    .render(c, |h| {
        filters(h, &base, "state", want, &["all", "due", "firing", "waiting"], &[]);
        if shown.is_empty() {
            h.el_text("p", &[("class", "empty")], "No timers here.");
        } else {
            h.open("table", &[("class", "list"), ("id", "timers")]);
            h.raw("<thead><tr><th>timer</th><th>state</th><th>due</th><th>script</th><th>watches</th><th>event</th></tr></thead><tbody>");
            for i in &shown {
                h.el("tr", &[], |h| {
                    h.el_text("td", &[("class", "id")], &i.id);
                    h.el("td", &[], |h| badge(h, state(i, now)));
                    time_cell(h, i.at_ms, now);
                    h.el_text("td", &[], &i.script);
                    h.el("td", &[], |h| {
                        for (kind, id) in &i.watches {
                            let id = id.as_str().unwrap_or_default();
                            h.text(&format!("{kind} "));
                            if kind == crate::barrier::Overdue::FIELD || kind == crate::barrier::Dispatch::FIELD {
                                h.link(&Href::to(&["tenants", name, "barriers", id]), id);
                            } else if kind == crate::batch::stale::Stale::FIELD {
                                h.link(&Href::to(&["tenants", name, "jobs", id]), id);
                            } else {
                                h.text(id);
                            }
                        }
                    });
                    let event = match &i.event {
                        serde_json::Value::Null => String::new(),
                        e => crate::text::cut_text(e.to_string(), 200),
                    };
                    h.el_text("td", &[("class", "event")], &event);
                });
            }
            h.raw("</tbody></table>");
        }
        pager(h, &base, &[("state", want)], next.as_deref(), q.get("after").is_some());
    }))
}
