//! The console's pages, one module per kind of thing, and what they share: the tenant a URL
//! names, times as people read them, filters and the pager.

pub mod barriers;
pub mod chains;
pub mod dlq;
pub mod invocations;
pub mod jobs;
pub mod overview;
pub mod rendezvous;
pub mod schedules;
pub mod timers;

use std::sync::Arc;

use axum::http::StatusCode;

use super::html::{Href, Html};
use super::{Console, Problem};
use crate::config::Tenant;
use crate::rendezvous::Unlimited;

/// The tenant a URL names, or a 404 page.
pub(crate) async fn load_tenant(c: &Console, name: &str) -> Result<Arc<Tenant>, Problem> {
    crate::keys::check_name("tenant", name).map_err(|e| Problem::new(StatusCode::NOT_FOUND, e))?;
    Ok(c.rt().tenants.load(name).await?)
}

/// The console's calls are an operator's, like the CLI's: no data-ops limit.
pub(crate) const TOOLS: Unlimited = Unlimited;

/// The barriers of a tenant through the runtime's backends.
pub(crate) fn barriers_of<'a>(c: &'a Console, t: &'a Tenant) -> crate::barrier::Barriers<'a> {
    let b = &c.rt().services.backends;
    crate::barrier::Barriers {
        kv: b.kv.as_ref(),
        queue: b.queue.as_ref(),
        tenant: &t.name,
        queue_enabled: t.config.queue,
        budget: &TOOLS,
    }
}

/// `ms` since the epoch as `YYYY-MM-DD HH:MM:SS` (UTC).
pub(crate) fn when(ms: i64) -> String {
    let s = ms.div_euclid(1000);
    let (days, secs) = (s.div_euclid(86_400), s.rem_euclid(86_400));
    // Howard Hinnant's days-to-civil.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02}:{:02}",
        secs / 3600,
        secs / 60 % 60,
        secs % 60
    )
}

/// How long ago (or ahead) `ms` is from `now`, roughly: `42 s ago`, `in 3 min`.
pub(crate) fn ago(ms: i64, now: i64) -> String {
    let d = (now - ms).abs() / 1000;
    let span = match d {
        0..60 => format!("{d} s"),
        60..3600 => format!("{} min", d / 60),
        3600..86_400 => format!("{} h", d / 3600),
        _ => format!("{} d", d / 86_400),
    };
    if ms <= now {
        format!("{span} ago")
    } else {
        format!("in {span}")
    }
}

/// A time cell: the time, with how long ago as its title.
pub(crate) fn time_cell(h: &mut Html, ms: i64, now: i64) {
    h.el("td", &[("class", "time")], |h| {
        h.el_text("time", &[("title", &when(ms))], &ago(ms, now));
    });
}

/// A state badge.
pub(crate) fn badge(h: &mut Html, state: &str) {
    let class = match state {
        "ok" | "complete" | "done" | "sent" | "tripped" => "badge good",
        "failed" | "overdue" | "stale" | "error" => "badge bad",
        _ => "badge",
    };
    h.el_text("span", &[("class", class)], state);
}

/// Filter links: `param=value` for each of `values` on `base`, the current one marked.
pub(crate) fn filters(
    h: &mut Html,
    base: &Href,
    param: &str,
    current: &str,
    values: &[&str],
    keep: &[(&str, &str)],
) {
    h.el("p", &[("class", "filters")], |h| {
        h.raw("Show: ");
        for v in values {
            let mut pairs: Vec<(&str, &str)> = keep.to_vec();
            pairs.push((param, v));
            let href = base.clone().query(&pairs);
            let class = if *v == current { "on" } else { "" };
            h.el_text("a", &[("href", href.as_str()), ("class", class)], v);
        }
    });
}

/// The pager under a list: back to the first page when this is not it, and the next page
/// when there is one.
pub(crate) fn pager(
    h: &mut Html,
    base: &Href,
    keep: &[(&str, &str)],
    next: Option<&str>,
    paged: bool,
) {
    h.el("nav", &[("class", "pager")], |h| {
        if paged {
            h.el(
                "a",
                &[
                    ("href", base.clone().query(keep).as_str()),
                    ("rel", "first"),
                ],
                |h| {
                    h.raw("« first page");
                },
            );
        }
        match next {
            Some(n) => {
                let mut pairs = keep.to_vec();
                pairs.push(("after", n));
                h.el(
                    "a",
                    &[
                        ("href", base.clone().query(&pairs).as_str()),
                        ("rel", "next"),
                    ],
                    |h| {
                        h.raw("next page »");
                    },
                );
            }
            None => {
                h.el_text("span", &[("class", "end")], "end of the list");
            }
        }
    });
}

/// JSON, pretty and cut to `max` bytes, in a `<pre>`.
pub(crate) fn json_block(h: &mut Html, v: &serde_json::Value, max: usize) {
    let text = serde_json::to_string_pretty(v).unwrap_or_default();
    h.el_text(
        "pre",
        &[("class", "json")],
        &crate::text::cut_text(text, max),
    );
}

/// A definition list of label and value pairs.
pub(crate) fn facts(h: &mut Html, rows: &[(&str, String)]) {
    h.el("dl", &[("class", "facts")], |h| {
        for (k, v) in rows {
            h.el_text("dt", &[], k);
            h.el_text("dd", &[], v);
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_dates_and_spans() {
        assert_eq!(when(0), "1970-01-01 00:00:00");
        assert_eq!(when(1_764_559_200_000), "2025-12-01 03:20:00");
        assert_eq!(when(951_782_400_000), "2000-02-29 00:00:00");
        assert_eq!(ago(1_000, 43_000), "42 s ago");
        assert_eq!(ago(200_000, 20_000), "in 3 min");
    }
}
