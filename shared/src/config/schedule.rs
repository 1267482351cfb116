//! A tenant's schedules (`"schedules"` in its `config.json`): a script's `on_queue` run every
//! interval or on a cron, and when each slot falls. What fires them is `crate::schedule`.

use std::collections::BTreeMap;

use jiff::tz::TimeZone;
use serde::Deserialize;
use serde_json::Value;

use super::cron::Cron;
use crate::keys::check_name;

/// The most schedules a tenant may have.
pub const MAX_SCHEDULES: usize = 100;
/// The largest `event` a schedule hands its runs, as JSON.
pub const MAX_EVENT_BYTES: usize = 16 * 1024;
/// The shortest interval of `every`: the tick on AWS runs every minute.
pub const MIN_EVERY_MS: i64 = 60_000;
/// The longest interval of `every`.
pub const MAX_EVERY_MS: i64 = 366 * 86_400_000;

/// Whether slots missed while nothing ticked run once (with their count) or each.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CatchUp {
    /// One run for the latest missed slot, carrying how many were missed (the default).
    #[default]
    Latest,
    /// A run for each missed slot, at most the tenant's `max_sends` per tick.
    All,
}

/// Whether a slot runs while the previous slot's run is still retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overlap {
    /// Skip it; the next run counts it in `missed` (the default).
    #[default]
    Skip,
    /// Run it all the same.
    Allow,
}

/// When a schedule's slots fall.
#[derive(Debug, Clone, PartialEq)]
pub enum When {
    /// Every so many ms, at the multiples of it since the epoch (`"every": "5m"` at :00, :05,
    /// ... UTC).
    Every(i64),
    /// A cron expression in a time zone.
    Cron {
        /// The expression.
        cron: Cron,
        /// Its zone.
        tz: TimeZone,
    },
}

impl Default for When {
    fn default() -> Self {
        When::Every(MIN_EVERY_MS)
    }
}

impl When {
    /// The first slot strictly after `after_ms`, or `None` when a cron finds none within its
    /// search ([`super::cron::SEARCH_DAYS`]).
    pub fn next_after(&self, after_ms: i64) -> Option<i64> {
        match self {
            When::Every(every) => {
                let n = after_ms.div_euclid(*every).checked_add(1)?;
                n.checked_mul(*every)
            }
            When::Cron { cron, tz } => cron.next_after(after_ms, tz),
        }
    }
}

/// One schedule, as `config.json` gives it; [`Schedule::when`] is filled by validation.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Schedule {
    /// The script whose `on_queue` runs.
    pub script: String,
    /// `"5m"`, `"1h"`, `"1d"`: an interval.
    #[serde(default)]
    pub every: Option<String>,
    /// A five-field cron expression.
    #[serde(default)]
    pub cron: Option<String>,
    /// The cron's time zone (IANA name); UTC when left out.
    #[serde(default)]
    pub tz: Option<String>,
    /// Handed to every run as `ev.event`.
    #[serde(default)]
    pub event: Value,
    /// Paused in the config: no slot runs until it is removed (an operator's pause is kept in
    /// the key-value table instead, see `crate::schedule`).
    #[serde(default)]
    pub paused: bool,
    /// What runs for slots missed while nothing ticked.
    #[serde(default)]
    pub catch_up: CatchUp,
    /// Whether a slot runs while the previous one's run still retries.
    #[serde(default)]
    pub overlap: Overlap,
    /// When the slots fall, from `every` or `cron` and `tz`.
    #[serde(skip)]
    pub when: When,
}

impl Schedule {
    /// What the slots are computed from, as text: when it changes (an edited config), the
    /// schedule starts again from the next slot rather than catch up on the old one's.
    pub fn spec(&self) -> String {
        match (&self.every, &self.cron) {
            (Some(e), _) => format!("every {e}"),
            (_, Some(c)) => format!("cron {c} tz {}", self.tz.as_deref().unwrap_or("UTC")),
            _ => String::new(),
        }
    }
}

/// Parses `"5m"`, `"2h"`, `"1d"` (also `"90m"`) to ms.
pub fn parse_every(text: &str) -> Result<i64, String> {
    let bad = || {
        format!(
            "{:?} is not an interval: write a number and m, h or d (\"5m\", \"1h\", \"1d\")",
            crate::text::cut_text(text.to_string(), 40)
        )
    };
    let unit = match text.chars().last() {
        Some('m') => 60_000,
        Some('h') => 3_600_000,
        Some('d') => 86_400_000,
        _ => return Err(bad()),
    };
    let digits = &text[..text.len() - 1];
    if digits.is_empty() || digits.len() > 6 || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let ms = digits.parse::<i64>().map_err(|_| bad())? * unit;
    if !(MIN_EVERY_MS..=MAX_EVERY_MS).contains(&ms) {
        return Err(format!(
            "{text:?} is outside 1m to 366d, the intervals a schedule may have"
        ));
    }
    Ok(ms)
}

/// Parses an instant given by people: ms since the epoch, or RFC 3339
/// (`2026-12-01T02:00:00Z`, `2026-12-01T03:00:00+01:00`).
pub fn parse_instant(text: &str) -> Result<i64, String> {
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    text.parse::<jiff::Timestamp>()
        .map(|t| t.as_millisecond())
        .map_err(|_| {
            format!(
                "{:?} is neither ms since the epoch nor a time like 2026-12-01T02:00:00Z",
                crate::text::cut_text(text.to_string(), 60)
            )
        })
}

/// Checks every schedule of a config and fills in its [`Schedule::when`]; the error is the
/// field (`schedules.NAME.cron`) and why.
pub fn validate(schedules: &mut BTreeMap<String, Schedule>) -> Result<(), (String, String)> {
    if schedules.len() > MAX_SCHEDULES {
        return Err((
            "schedules".into(),
            format!(
                "{} schedules; a tenant has at most {MAX_SCHEDULES}",
                schedules.len()
            ),
        ));
    }
    for (name, s) in schedules.iter_mut() {
        let field = |f: &str| format!("schedules.{name}{}{f}", if f.is_empty() { "" } else { "." });
        check_name("schedule", name).map_err(|why| (field(""), why))?;
        check_name("script", &s.script).map_err(|why| (field("script"), why))?;
        s.when = match (&s.every, &s.cron) {
            (Some(_), Some(_)) => {
                return Err((field("cron"), "give either every or cron, not both".into()))
            }
            (None, None) => {
                return Err((
                    field(""),
                    "needs every (\"5m\") or cron (\"0 2 * * *\")".into(),
                ))
            }
            (Some(every), None) => {
                if s.tz.is_some() {
                    return Err((
                        field("tz"),
                        "applies to cron only; every counts from the epoch in UTC".into(),
                    ));
                }
                When::Every(parse_every(every).map_err(|why| (field("every"), why))?)
            }
            (None, Some(cron)) => {
                let cron = Cron::parse(cron).map_err(|why| (field("cron"), why))?;
                let tz = match &s.tz {
                    None => TimeZone::UTC,
                    Some(name) => TimeZone::get(name).map_err(|_| {
                        (
                            field("tz"),
                            format!(
                                "{:?} is not a time zone of the IANA database (\"Europe/Paris\", \"UTC\")",
                                crate::text::cut_text(name.clone(), 60)
                            ),
                        )
                    })?,
                };
                When::Cron { cron, tz }
            }
        };
        let size = serde_json::to_string(&s.event).map_or(0, |t| t.len());
        if size > MAX_EVENT_BYTES {
            return Err((
                field("event"),
                format!("is {size} bytes of JSON; at most {MAX_EVENT_BYTES}"),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(json: &str) -> Result<BTreeMap<String, Schedule>, (String, String)> {
        let mut s: BTreeMap<String, Schedule> = serde_json::from_str(json).unwrap();
        validate(&mut s).map(|_| s)
    }

    #[test]
    fn every_slots_are_multiples_of_the_interval() {
        let s = parse(r#"{"r": {"script": "report", "every": "5m"}}"#).unwrap();
        let w = &s["r"].when;
        assert_eq!(w.next_after(0), Some(300_000));
        assert_eq!(w.next_after(299_999), Some(300_000));
        assert_eq!(w.next_after(300_000), Some(600_000));
    }

    #[test]
    fn errors_name_the_schedule_and_field() {
        for (json, field, why) in [
            (
                r#"{"r": {"script": "x", "cron": "61 * * * *"}}"#,
                "schedules.r.cron",
                "minute 61",
            ),
            (
                r#"{"r": {"script": "x", "cron": "* * * * *", "tz": "Mars/Base"}}"#,
                "schedules.r.tz",
                "not a time zone",
            ),
            (
                r#"{"r": {"script": "x", "every": "30s"}}"#,
                "schedules.r.every",
                "not an interval",
            ),
            (
                r#"{"r": {"script": "x", "every": "0m"}}"#,
                "schedules.r.every",
                "outside 1m",
            ),
            (
                r#"{"r": {"script": "x", "every": "5m", "tz": "UTC"}}"#,
                "schedules.r.tz",
                "cron only",
            ),
            (r#"{"r": {"script": "x"}}"#, "schedules.r", "needs every"),
            (
                r#"{"r": {"script": "x", "every": "5m", "cron": "* * * * *"}}"#,
                "schedules.r.cron",
                "not both",
            ),
            (
                r#"{"r": {"script": "../x", "every": "5m"}}"#,
                "schedules.r.script",
                "",
            ),
            (
                r#"{"a b": {"script": "x", "every": "5m"}}"#,
                "schedules.a b",
                "",
            ),
        ] {
            let (f, w) = parse(json).unwrap_err();
            assert_eq!(f, field, "{json}");
            assert!(w.contains(why), "{json}: {w}");
        }
    }
}
