//! One chain as a timeline (issue 55): its runs (script, entry point, outcome, duration, log
//! lines folded per run) and its linked steps (acks, a partner's `done.json`, operators'
//! actions, with their origin and the chain they link), in time order, a page at a time, as
//! the processes that run a project's scripts kept them ([`crate::observe::recent`]).
//!
//! Reached from every run, barrier, job and dead letter that names its chain
//! ([`chain_link`]). The chain in the URL is a W3C trace id (32 lower-case hex digits) and is
//! looked up in the URL's tenant only: another tenant's chain reads as unknown.

use std::sync::Arc;

use axum::extract::{Path, RawQuery, State};
use axum::http::StatusCode;
use axum::response::Response;
use serde_json::Value;

use super::super::html::{Href, Html};
use super::super::{render, Console, Form, Layout, PageResult, Problem};
use super::{badge, load_tenant, time_cell};
use crate::observe::recent::{Entry, Place, Run, Step};
use crate::ports::now_ms;

/// Entries per page unless `limit` says otherwise.
pub const PAGE: usize = 200;
/// The most entries a page shows.
pub const MAX_PAGE: usize = 1_000;

/// Whether `id` is a chain id as chains are made: a W3C trace id, 32 lower-case hex digits,
/// not all zero.
pub fn is_chain(id: &str) -> bool {
    id.len() == 32
        && id.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
        && id.bytes().any(|b| b != b'0')
}

/// The page of `tenant`'s chain `chain`.
pub fn href(tenant: &str, chain: &str) -> Href {
    Href::to(&["tenants", tenant, "chains", chain])
}

/// A link to `tenant`'s chain `chain` labelled with the id, or the id as text when it is not
/// a chain's (an older form, or damaged).
pub fn chain_link(h: &mut Html, tenant: &str, chain: &str) {
    if is_chain(chain) {
        h.el_text(
            "a",
            &[("href", href(tenant, chain).as_str()), ("class", "chain")],
            chain,
        );
    } else {
        h.el_text("code", &[], chain);
    }
}

/// The entry point a run's trigger ran.
fn entry_point(trigger: &str) -> &'static str {
    match trigger {
        "invoke" => "on_invoke",
        "route" => "on_route",
        "queue" | "object" => "on_queue",
        _ => "?",
    }
}

/// `/console/tenants/{tenant}/chains/{chain}?after=&limit=`.
pub async fn one(
    State(c): State<Arc<Console>>,
    Path((t, chain)): Path<(String, String)>,
    RawQuery(q): RawQuery,
) -> Response {
    let q = Form::parse(q.as_deref().unwrap_or(""));
    render(c, move |c| async move { page(&c, &t, &chain, &q).await }).await
}

async fn page(c: &Console, name: &str, chain: &str, q: &Form) -> PageResult {
    let t = load_tenant(c, name).await?;
    if !is_chain(chain) {
        return Err(Problem::bad(format!(
            "{} is not a chain id: a chain is a W3C trace id, 32 lower-case hex digits (ctx.trace, a log line's trace)",
            crate::text::echo(chain)
        )));
    }
    let after = match q.get("after") {
        None | Some("") => None,
        Some(a) => Some(Place::parse(a).ok_or_else(|| {
            Problem::bad(format!(
                "after {} is not a place in a timeline (take the next page's link)",
                crate::text::echo(a)
            ))
        })?),
    };
    let limit = q.limit("limit", PAGE, MAX_PAGE);
    let Some(recent) = c.rt().recent().filter(|_| c.runs_scripts()) else {
        // The chain is 32 hex digits (checked above): safe inside the query's quotes.
        return Err(Problem::new(
            StatusCode::NOT_FOUND,
            format!("chains are recorded by the processes that run a local project's scripts (native serve and the verbs); a console of a deployment on AWS does not see them. Query the functions' log groups with CloudWatch Logs Insights: fields @timestamp, level, script, msg, origin.by | filter trace = \"{chain}\" or link = \"{chain}\" | sort @timestamp asc"),
        ));
    };
    let (entries, next) = recent.chain(&t.name, chain, after.as_ref(), limit)?;
    if entries.is_empty() && after.is_none() {
        return Err(Problem::new(
            StatusCode::NOT_FOUND,
            format!(
                "no run or step of chain {chain} of tenant {name:?} is kept (the last {} runs and {} steps of each tenant are)",
                crate::observe::recent::PER_TENANT,
                crate::observe::recent::STEPS_PER_TENANT
            ),
        ));
    }
    let now = now_ms();
    let title = format!("Chain {chain}");
    let base = href(name, chain);
    let limit_text = if limit == PAGE {
        String::new()
    } else {
        limit.to_string()
    };
    Ok(Layout {
        title: &title,
        tenant: Some(name),
        tab: "invocations",
        crumbs: vec![
            (Href::to(&[]), "tenants".into()),
            (Href::to(&["tenants", name]), name.into()),
            (
                Href::to(&["tenants", name, "invocations"]).query(&[("chain", chain)]),
                "runs of the chain".into(),
            ),
        ],
        live: false,
        notice: None,
    }
    .render(c, |h| {
        h.el_text(
            "p",
            &[("class", "summary")],
            &format!(
                "The chain's runs and the steps that moved it (acks, callbacks, operators, partners' done.json), oldest first; {} here. `native logs --trace {chain}` shows its log lines.",
                entries.len()
            ),
        );
        h.open("table", &[("class", "list"), ("id", "timeline")]);
        h.raw("<thead><tr><th>when</th><th>what</th><th>detail</th><th>origin</th></tr></thead><tbody>");
        for e in &entries {
            match e {
                Entry::Run(r) => run_row(h, name, r, now),
                Entry::Step(s) => step_row(h, name, chain, s, now),
            }
        }
        h.raw("</tbody></table>");
        let next = next.map(|p| p.cursor());
        super::pager(
            h,
            &base,
            &[("limit", limit_text.as_str())],
            next.as_deref(),
            after.is_some(),
        );
    }))
}

fn run_row(h: &mut Html, tenant: &str, r: &Run, now: i64) {
    let outcome = if r.error.is_some() { "failed" } else { "ok" };
    h.el("tr", &[("class", "run"), ("data-state", outcome)], |h| {
        time_cell(h, r.started_ms, now);
        h.el("td", &[], |h| {
            h.el_text("span", &[("class", "badge")], "run");
            h.raw(" ");
            h.link(
                &Href::to(&["tenants", tenant, "invocations", &r.seq.to_string()]),
                &r.script,
            );
            h.raw(" ");
            h.el_text("code", &[], entry_point(r.trigger));
        });
        h.el("td", &[("class", "detail")], |h| {
            badge(h, outcome);
            h.text(&format!(
                " {:.1} ms, {} data ops{}",
                r.duration_ms,
                r.data_ops,
                if r.attempt > 1 {
                    format!(", attempt {}", r.attempt)
                } else {
                    String::new()
                }
            ));
            if let Some(e) = &r.error {
                h.el_text(
                    "p",
                    &[("class", "error")],
                    &crate::text::cut_text(e.clone(), 300),
                );
            }
            let lines = r.logs.len() as u64 + u64::from(r.logs_dropped);
            if lines > 0 {
                h.el("details", &[("class", "logs")], |h| {
                    h.el_text("summary", &[], &format!("{lines} log line(s)"));
                    super::invocations::lines(h, r);
                });
            }
        });
        h.el_text("td", &[], &format!("{} (depth {})", r.trigger, r.depth));
    });
}

/// A field of a step's record as text, if it is a string.
fn text<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

fn step_row(h: &mut Html, tenant: &str, chain: &str, s: &Step, now: i64) {
    // A record cut past its bound no longer parses: its text is shown as it is.
    let rec: Value = serde_json::from_str(&s.record).unwrap_or(Value::Null);
    let by = rec.get("origin").and_then(|o| text(o, "by")).unwrap_or("?");
    h.el("tr", &[("class", "step"), ("data-by", by)], |h| {
        time_cell(h, s.at_ms, now);
        h.el("td", &[], |h| {
            let kind = match (by, rec.get("wait")) {
                (_, Some(_)) => "wait",
                ("operator", _) => "operator",
                _ => "step",
            };
            h.el_text("span", &[("class", "badge")], kind);
            h.raw(" ");
            h.text(text(&rec, "msg").unwrap_or("(a step whose record was cut)"));
        });
        h.el("td", &[("class", "detail")], |h| {
            if rec.is_null() {
                h.el_text("code", &[], &s.record);
                return;
            }
            if let Some(b) = text(&rec, "barrier") {
                h.raw("barrier ");
                h.link(&Href::to(&["tenants", tenant, "barriers", b]), b);
                h.raw(" ");
            }
            if let Some(j) = text(&rec, "job") {
                h.raw("job ");
                h.link(&Href::to(&["tenants", tenant, "jobs", j]), j);
                h.raw(" ");
            }
            if let (Some(ns), Some(b)) = (text(&rec, "namespace"), text(&rec, "rendezvous")) {
                h.raw("rendezvous barrier ");
                h.link(
                    &Href::to(&["tenants", tenant, "rendezvous", ns, b]),
                    &format!("{ns}/{b}"),
                );
                h.raw(" ");
            }
            if let Some(n) = rec.get("expected_processes").and_then(Value::as_u64) {
                h.text(&format!("of {n} peers "));
            }
            if let Some(n) = rec.get("parts").and_then(Value::as_u64) {
                h.text(&format!(
                    "{n} part(s) {} ",
                    if text(&rec, "via") == Some("http") {
                        "fetched by job:http"
                    } else {
                        "for its partner"
                    }
                ));
            }
            if let Some(c) = text(&rec, "continue_with") {
                h.text(&format!("then {c} "));
            }
            if let Some(due) = rec.get("due_ms").and_then(Value::as_i64) {
                h.text(&format!(
                    "{} for {} due {} ",
                    text(&rec, "timer").unwrap_or("?"),
                    text(&rec, "script").unwrap_or("?"),
                    super::when(due)
                ));
            }
            if let Some(n) = rec.get("members").and_then(Value::as_u64) {
                h.text(&format!("{n} member(s) "));
            }
            if let Some(m) = text(&rec, "member") {
                h.text(&format!("member {m} "));
            }
            if let Some(ok) = rec.get("ok").and_then(Value::as_bool) {
                badge(h, if ok { "ok" } else { "failed" });
                h.raw(" ");
            }
            if rec.get("complete") == Some(&Value::Bool(true)) {
                h.el_text("span", &[("class", "badge good")], "released the wait");
                h.raw(" ");
            }
            if let Some(r) = text(&rec, "reason") {
                h.text(&format!("reason: {r}"));
            }
        });
        h.el("td", &[("class", "origin")], |h| {
            let o = rec.get("origin").cloned().unwrap_or(Value::Null);
            match by {
                "script" => {
                    h.text(&format!("script {}", text(&o, "script").unwrap_or("?")));
                    if let Some(cause) = text(&o, "cause") {
                        h.text(&format!(", run by {cause}"));
                    }
                }
                "callback" => {
                    h.raw("a partner's POST to its callback URL");
                }
                "operator" => {
                    h.text(&format!(
                        "an operator through the {}{}",
                        text(&o, "via").unwrap_or("?"),
                        text(&o, "who")
                            .map(|w| format!(" ({w})"))
                            .unwrap_or_default()
                    ));
                }
                "object" => {
                    h.text(&format!(
                        "object {}/{}",
                        text(&o, "bucket").unwrap_or("?"),
                        text(&o, "key").unwrap_or("?")
                    ));
                }
                _ => {
                    h.raw("?");
                }
            }
            if let Some(link) = text(&rec, "link").filter(|l| *l != chain) {
                h.raw(" · from chain ");
                chain_link(h, tenant, link);
            }
        });
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_trace_ids_are_chains() {
        assert!(is_chain("4bf92f3577b34da6a3ce929d0e0e4736"));
        for bad in [
            "",
            "4BF92F3577B34DA6A3CE929D0E0E4736",
            "00000000000000000000000000000000",
            "4bf92f3577b34da6a3ce929d0e0e473",
            "4bf92f3577b34da6a3ce929d0e0e47361",
            "4bf92f3577b34da6a3ce929d0e0e473g",
            "../../../etc/passwd000000000000",
            "4bf92f3577b34da6a3ce929d0e0e47<>",
        ] {
            assert!(!is_chain(bad), "{bad:?}");
        }
    }

    #[test]
    fn places_read_back_from_their_cursor_and_nothing_else_does() {
        for p in [
            Place {
                at_ms: 0,
                rank: Place::RUN,
                seq: 0,
            },
            Place {
                at_ms: 1_764_559_200_000,
                rank: Place::OUTSIDE,
                seq: 42,
            },
            Place {
                at_ms: -5,
                rank: Place::INSIDE,
                seq: i64::MAX as u64,
            },
        ] {
            assert_eq!(Place::parse(&p.cursor()), Some(p));
        }
        for bad in [
            "",
            "r",
            "1r",
            "r1",
            "1x2",
            "1r2r3",
            "1r-2",
            "99999999999999999999r1",
            "1 r2",
        ] {
            assert_eq!(Place::parse(bad), None, "{bad:?}");
        }
    }
}
