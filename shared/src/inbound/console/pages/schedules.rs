//! A tenant's schedules: each one's script, slots, next slot, pause and last run, with the
//! actions `native schedules` has (pause, resume, trigger, backfill), as forms that carry the
//! session's CSRF token like the console's other forms.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Path, State};
use axum::response::Response;

use super::super::html::Href;
use super::super::{action, done, render, Console, Layout, PageResult, Problem};
use super::{badge, load_tenant, time_cell};
use crate::config::schedule::parse_instant;
use crate::ports::now_ms;
use crate::schedule::Schedules;

/// `/console/tenants/{tenant}/schedules`.
pub async fn list(State(c): State<Arc<Console>>, Path(t): Path<String>) -> Response {
    render(c, move |c| async move { list_page(&c, &t).await }).await
}

async fn list_page(c: &Console, name: &str) -> PageResult {
    let t = load_tenant(c, name).await?;
    let rt = c.rt();
    let b = &rt.services.backends;
    let infos = Schedules::new(b.kv.as_ref(), b.queue.as_ref(), &t)
        .list()
        .await?;
    let now = now_ms();
    let action = Href::to(&["tenants", name, "schedules", "act"]);
    Ok(Layout {
        title: "Schedules",
        tenant: Some(name),
        tab: "schedules",
        crumbs: vec![(Href::to(&[]), "tenants".into()), (Href::to(&["tenants", name]), name.into())],
        live: true,
        notice: None,
    }
    .render(c, |h| {
        if infos.is_empty() {
            h.el_text("p", &[("class", "empty")], "No schedules in this tenant's config.json.");
            return;
        }
        h.open("table", &[("class", "list"), ("id", "schedules")]);
        h.raw("<thead><tr><th>schedule</th><th>state</th><th>slots</th><th>script</th><th>next</th><th>last run</th><th>actions</th></tr></thead><tbody>");
        for i in &infos {
            h.el("tr", &[], |h| {
                h.el_text("td", &[("class", "id")], &i.name);
                h.el("td", &[], |h| {
                    badge(h, if i.paused || i.paused_in_config { "paused" } else { "running" })
                });
                h.el_text("td", &[], &i.when);
                h.el_text("td", &[], &i.script);
                match i.next_ms {
                    Some(n) => time_cell(h, n, now),
                    None => {
                        h.el_text("td", &[], "none");
                    }
                }
                let last = match &i.last {
                    None => String::new(),
                    Some(r) if r.ok => format!("{} ok (attempt {})", r.at_ms, r.attempt),
                    Some(r) => format!(
                        "{} failed (attempt {}): {}",
                        r.at_ms,
                        r.attempt,
                        r.error.as_deref().unwrap_or_default()
                    ),
                };
                h.el_text("td", &[("class", "event")], &last);
                h.el("td", &[], |h| {
                    let pause = if i.paused { "resume" } else { "pause" };
                    for verb in [pause, "trigger"] {
                        h.el(
                            "form",
                            &[("method", "post"), ("action", action.as_str()), ("class", "inline")],
                            |h| {
                                h.hidden("csrf", &c.csrf()).hidden("name", &i.name).hidden("do", verb);
                                h.el_text("button", &[("type", "submit")], verb);
                            },
                        );
                    }
                    h.el(
                        "form",
                        &[("method", "post"), ("action", action.as_str()), ("class", "inline")],
                        |h| {
                            h.hidden("csrf", &c.csrf()).hidden("name", &i.name).hidden("do", "backfill");
                            h.raw("<input name=\"from\" placeholder=\"from 2026-12-01T00:00:00Z\" size=\"22\">");
                            h.raw("<input name=\"to\" placeholder=\"to\" size=\"22\">");
                            h.raw("<button type=\"submit\">backfill</button>");
                        },
                    );
                });
            });
        }
        h.raw("</tbody></table>");
    }))
}

/// `POST /console/tenants/{tenant}/schedules/act`: `name` and `do` (pause, resume, trigger,
/// backfill with `from` and `to`).
pub async fn act(State(c): State<Arc<Console>>, Path(t): Path<String>, body: Body) -> Response {
    action(c, body, t, move |c, tn, form| async move {
        let t = tn.name.as_str();
        let rt = c.rt();
        let b = &rt.services.backends;
        let s = Schedules::new(b.kv.as_ref(), b.queue.as_ref(), &tn);
        let name = form.str("name");
        let notice = match form.str("do") {
            "pause" => s.pause(name).await.map(|_| format!("{name} paused"))?,
            "resume" => s.resume(name).await.map(|_| format!("{name} resumed"))?,
            "trigger" => s
                .trigger(name)
                .await
                .map(|at| format!("{name} triggered at {at}"))?,
            "backfill" => {
                let at = |f: &str| {
                    parse_instant(form.str(f)).map_err(|why| Problem::bad(format!("{f}: {why}")))
                };
                let sent = s.backfill(name, at("from")?, at("to")?).await?;
                format!("{name}: {} slot(s) backfilled", sent.len())
            }
            other => {
                return Err(Problem::bad(format!(
                    "{other:?} is not one of pause, resume, trigger, backfill"
                )))
            }
        };
        Ok(done(Href::to(&["tenants", t, "schedules"]), &notice))
    })
    .await
}
