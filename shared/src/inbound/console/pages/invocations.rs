//! A tenant's recent invocations, as the processes that run a project's scripts recorded them
//! in its store (`native serve` and the verbs: [`crate::observe::recent`]): script, trigger, outcome, duration, data ops, log lines and
//! the chain each belongs to (the run at depth 0 that its work came from). Newest first, by
//! outcome, script or chain, a page at a time; one run with its log lines.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;

use super::super::html::{Href, Html};
use super::super::{render, Console, Form, Layout, PageResult, Problem};
use super::{badge, facts, load_tenant, time_cell, when};
use crate::observe::recent::{Recent, Run, RunFilter};
use crate::ports::now_ms;

const PAGE: usize = 100;

fn recent(c: &Console) -> Option<&Arc<Recent>> {
    c.rt().recent().filter(|_| c.runs_scripts())
}

fn not_here(h: &mut Html) {
    h.el_text(
        "p",
        &[("class", "empty")],
        "Invocations are recorded by the processes that run a local project's scripts (native serve, and the verbs native invoke, drain, put, partner, ...), in the project's store. A console of a deployment on AWS does not see them: query the functions' logs (CloudWatch Logs Insights, fields tenant, script, level, msg).",
    );
}

/// The run's chain: a link to its timeline ([`super::chains`]), and its depth in it.
fn chain_link(h: &mut Html, tenant: &str, run: &Run) {
    super::chains::chain_link(h, tenant, &run.chain);
    if run.depth == 0 {
        h.raw(" (root)");
    } else {
        h.text(&format!(" (depth {})", run.depth));
    }
}

/// `/console/tenants/{tenant}/invocations?failed=1&script=&chain=&after=`.
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
    let filter = RunFilter {
        chain: q.get("chain").filter(|s| !s.is_empty()).map(str::to_string),
        failed: q.get("failed").is_some_and(|v| v == "1"),
        script: q
            .get("script")
            .filter(|s| !s.is_empty())
            .map(str::to_string),
    };
    let before = match q.get("after") {
        None | Some("") => None,
        Some(a) => Some(
            a.parse::<u64>()
                .map_err(|_| Problem::bad(format!("after {a:?} is not a run number")))?,
        ),
    };
    let limit = q.limit("limit", PAGE, 500);
    let page = match recent(c) {
        Some(r) => Some((
            r.runs(&t.name, &filter, before, limit)?,
            r.last_hour(&t.name, now_ms())?,
            r.kept_in(),
        )),
        None => None,
    };
    let now = now_ms();
    let base = Href::to(&["tenants", name, "invocations"]);
    let failed = if filter.failed { "1" } else { "" };
    let chain = filter.chain.clone().unwrap_or_default();
    let script = filter.script.clone().unwrap_or_default();
    let keep = [
        ("failed", failed),
        ("chain", chain.as_str()),
        ("script", script.as_str()),
    ];
    Ok(Layout {
        title: "Invocations",
        tenant: Some(name),
        tab: "invocations",
        crumbs: vec![(Href::to(&[]), "tenants".into()), (Href::to(&["tenants", name]), name.into())],
        live: true,
        notice: None,
    }
    .render(c, |h| {
        let Some(((runs, next), (hour, errors), kept_in)) = &page else {
            not_here(h);
            return;
        };
        h.el_text("p", &[("class", "summary")], &format!("{hour} invocations in the last hour, {errors} failed. The last {} of this tenant are kept in {kept_in}.", crate::observe::recent::PER_TENANT));
        h.el("p", &[("class", "filters")], |h| {
            h.raw("Show: ");
            let all = base.clone().query(&[("chain", &chain), ("script", &script)]);
            let only_failed = base.clone().query(&[("failed", "1"), ("chain", &chain), ("script", &script)]);
            h.el_text("a", &[("href", all.as_str()), ("class", if filter.failed { "" } else { "on" })], "all");
            h.el_text("a", &[("href", only_failed.as_str()), ("class", if filter.failed { "on" } else { "" })], "failed");
            if !chain.is_empty() || !script.is_empty() {
                h.raw(" · ");
                if !chain.is_empty() {
                    h.text(&format!("chain {chain} "));
                }
                if !script.is_empty() {
                    h.text(&format!("script {script} "));
                }
                h.link(&base.clone().query(&[("failed", failed)]), "(every chain and script)");
            }
        });
        if runs.is_empty() {
            h.el_text("p", &[("class", "empty")], "No invocations here.");
        } else {
            h.open("table", &[("class", "list"), ("id", "invocations")]);
            h.raw("<thead><tr><th>#</th><th>started</th><th>script</th><th>trigger</th><th>outcome</th><th>ms</th><th>data ops</th><th>logs</th><th>chain</th></tr></thead><tbody>");
            for r in runs {
                let outcome = if r.error.is_some() { "failed" } else { "ok" };
                h.el("tr", &[("data-state", outcome)], |h| {
                    h.el("td", &[("class", "num")], |h| {
                        h.link(&Href::to(&["tenants", name, "invocations", &r.seq.to_string()]), &r.seq.to_string());
                    });
                    time_cell(h, r.started_ms, now);
                    h.el("td", &[], |h| {
                        h.link(&base.clone().query(&[("script", &r.script)]), &r.script);
                    });
                    h.el_text("td", &[], &format!("{}{}", r.trigger, if r.attempt > 1 { format!(" (attempt {})", r.attempt) } else { String::new() }));
                    h.el("td", &[("class", "detail")], |h| {
                        badge(h, outcome);
                        if let Some(e) = &r.error {
                            h.raw(" ");
                            h.el_text("span", &[("class", "error")], &crate::text::cut_text(e.clone(), 300));
                        }
                    });
                    h.el("td", &[("class", "num")], |h| {
                        h.text(&format!("{:.1}", r.duration_ms));
                    });
                    h.el("td", &[("class", "num")], |h| {
                        h.num(r.data_ops);
                    });
                    h.el("td", &[("class", "num")], |h| {
                        h.num(r.logs.len() as u64 + u64::from(r.logs_dropped));
                    });
                    h.el("td", &[], |h| chain_link(h, name, r));
                });
            }
            h.raw("</tbody></table>");
        }
        let next = next.map(|n| n.to_string());
        super::pager(h, &base, &keep, next.as_deref(), before.is_some());
    }))
}

/// `/console/tenants/{tenant}/invocations/{seq}`.
pub async fn one(
    State(c): State<Arc<Console>>,
    Path((t, seq)): Path<(String, String)>,
) -> Response {
    render(c, move |c| async move {
        let tn = load_tenant(&c, &t).await?;
        let seq: u64 = seq
            .parse()
            .map_err(|_| Problem::bad(format!("{seq:?} is not a run number")))?;
        let run = match recent(&c) {
            Some(r) => r.run(&tn.name, seq)?,
            None => None,
        }
        .ok_or_else(|| {
            Problem::new(
                StatusCode::NOT_FOUND,
                format!("run {seq} of {t:?} is not kept (any more)"),
            )
        })?;
        let title = format!("Invocation {seq}: {}", run.script);
        Ok(Layout {
            title: &title,
            tenant: Some(&t),
            tab: "invocations",
            crumbs: vec![
                (Href::to(&[]), "tenants".into()),
                (Href::to(&["tenants", &t]), t.clone()),
                (
                    Href::to(&["tenants", &t, "invocations"]),
                    "invocations".into(),
                ),
            ],
            live: false,
            notice: None,
        }
        .render(&c, |h| {
            h.el("p", &[("class", "state")], |h| {
                badge(h, if run.error.is_some() { "failed" } else { "ok" })
            });
            facts(
                h,
                &[
                    ("script", run.script.clone()),
                    ("trigger", run.trigger.to_string()),
                    ("attempt", run.attempt.to_string()),
                    ("started", when(run.started_ms)),
                    ("duration", format!("{:.1} ms", run.duration_ms)),
                    ("data ops", run.data_ops.to_string()),
                    ("depth", run.depth.to_string()),
                ],
            );
            h.el("p", &[], |h| {
                h.raw("Chain: ");
                chain_link(h, &t, &run);
            });
            if let Some(e) = &run.error {
                h.el_text("h2", &[], "Error");
                h.el_text("pre", &[("class", "error")], e);
            }
            h.el_text("h2", &[], "Log lines");
            if run.logs.is_empty() {
                h.el_text("p", &[("class", "empty")], "None.");
            }
            lines(h, &run);
        }))
    })
    .await
}

/// A run's log lines as kept, and how many more were not.
pub(crate) fn lines(h: &mut Html, run: &Run) {
    h.el("ol", &[("class", "logs")], |h| {
        for l in &run.logs {
            h.el_text("li", &[], l);
        }
    });
    if run.logs_dropped > 0 {
        h.el_text(
            "p",
            &[("class", "note")],
            &format!("{} more lines were not kept.", run.logs_dropped),
        );
    }
}
