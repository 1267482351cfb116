//! Five-field cron expressions (`minute hour day-of-month month day-of-week`) and the next slot
//! after an instant in a time zone, DST included.
//!
//! Each field is `*`, a number, a range `a-b`, any of them with a step `/n`, or a list of those
//! joined by commas; months and weekdays also by their English three-letter names (`jan`,
//! `mon`); a weekday is 0 to 7, 0 and 7 both Sunday. As in Vixie cron, when both the day of
//! the month and the weekday are restricted (neither starts with `*`), a day matches either.
//!
//! Slots are wall-clock times of the zone. A time that a DST change skips (02:30 on the night
//! clocks go forward) runs at the instant the zone maps it to, shifted by the length of the gap
//! (03:30); a time the change repeats (02:30 on the night they go back) runs once, at its first
//! occurrence. Finding the next slot looks at most [`SEARCH_DAYS`] days ahead, so an expression
//! that never matches costs bounded time; [`Cron::parse`] refuses one that never matches.

use jiff::civil::Date;
use jiff::tz::TimeZone;
use jiff::Timestamp;

/// The longest expression read.
pub const MAX_LEN: usize = 200;

/// How far ahead [`Cron::next_after`] looks: 29 years, the period after which a weekday falls
/// on every date again (a February 29 that is a Monday comes back within 28 years).
pub const SEARCH_DAYS: u32 = 29 * 366;

/// A parsed five-field cron expression.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u32,
    days: u32,
    months: u16,
    weekdays: u8,
    /// Whether the day of the month, and the weekday, were given as `*...` (unrestricted).
    days_star: bool,
    weekdays_star: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

/// One field's name, its bounds and the names its values may have.
struct Field {
    name: &'static str,
    min: u32,
    max: u32,
    names: &'static [&'static str],
}

const FIELDS: [Field; 5] = [
    Field {
        name: "minute",
        min: 0,
        max: 59,
        names: &[],
    },
    Field {
        name: "hour",
        min: 0,
        max: 23,
        names: &[],
    },
    Field {
        name: "day of the month",
        min: 1,
        max: 31,
        names: &[],
    },
    Field {
        name: "month",
        min: 1,
        max: 12,
        names: &MONTHS,
    },
    Field {
        name: "weekday",
        min: 0,
        max: 7,
        names: &WEEKDAYS,
    },
];

impl Field {
    fn value(&self, s: &str) -> Result<u32, String> {
        let lower = s.to_ascii_lowercase();
        if let Some(i) = self.names.iter().position(|n| *n == lower) {
            return Ok(i as u32 + self.min);
        }
        if s.is_empty() || s.len() > 4 || !s.bytes().all(|b| b.is_ascii_digit()) {
            return Err(format!(
                "{} {:?} is not a number{}",
                self.name,
                crate::text::cut_text(s.to_string(), 20),
                if self.names.is_empty() {
                    String::new()
                } else {
                    format!(" or one of {}", self.names.join(", "))
                }
            ));
        }
        let v: u32 = s
            .parse()
            .map_err(|_| format!("{} {s:?} is not a number", self.name))?;
        if v < self.min || v > self.max {
            return Err(format!(
                "{} {v} is out of {}-{}",
                self.name, self.min, self.max
            ));
        }
        Ok(v)
    }

    /// The bits of a field's text (bit `v` for value `v`).
    fn parse(&self, text: &str) -> Result<u64, String> {
        let mut bits = 0u64;
        for part in text.split(',') {
            let (range, step) = match part.split_once('/') {
                Some((r, s)) => {
                    let step: u32 = s
                        .parse()
                        .ok()
                        .filter(|n| (1..=self.max.max(1)).contains(n) && s.len() <= 4)
                        .ok_or_else(|| {
                            format!(
                                "{} step {:?} is not a number from 1 to {}",
                                self.name,
                                crate::text::cut_text(s.to_string(), 20),
                                self.max
                            )
                        })?;
                    (r, step)
                }
                None => (part, 1),
            };
            let (lo, hi) = if range == "*" {
                (self.min, self.max)
            } else if let Some((a, b)) = range.split_once('-') {
                let (a, b) = (self.value(a)?, self.value(b)?);
                if a > b {
                    return Err(format!(
                        "{} range {a}-{b} runs backwards; write the smaller first",
                        self.name
                    ));
                }
                (a, b)
            } else {
                let v = self.value(range)?;
                // `5/15`: from 5 to the end, every 15.
                (v, if step > 1 { self.max } else { v })
            };
            let mut v = lo;
            while v <= hi {
                bits |= 1 << v;
                v += step;
            }
        }
        Ok(bits)
    }
}

impl Cron {
    /// Parses an expression, or says which field is wrong and why.
    pub fn parse(text: &str) -> Result<Cron, String> {
        if text.len() > MAX_LEN {
            return Err(format!(
                "is {} bytes long; a cron expression is at most {MAX_LEN}",
                text.len()
            ));
        }
        let fields: Vec<&str> = text.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "has {} fields; a cron expression has five: minute hour day-of-month month \
                 weekday (\"0 2 * * *\" is 02:00 every day)",
                fields.len()
            ));
        }
        let bits: Vec<u64> = FIELDS
            .iter()
            .zip(&fields)
            .map(|(f, t)| f.parse(t))
            .collect::<Result<_, _>>()?;
        // 7 is Sunday too.
        let weekdays = (bits[4] | (bits[4] >> 7)) & 0x7f;
        let cron = Cron {
            minutes: bits[0],
            hours: bits[1] as u32,
            days: bits[2] as u32,
            months: bits[3] as u16,
            weekdays: weekdays as u8,
            days_star: fields[2].starts_with('*'),
            weekdays_star: fields[4].starts_with('*'),
        };
        let from = Date::constant(2000, 1, 1);
        if cron.next_day(from).is_none() {
            return Err(format!(
                "{text:?} never matches: no month has the day of the month it names"
            ));
        }
        Ok(cron)
    }

    fn day_matches(&self, d: Date) -> bool {
        if self.months & (1 << d.month()) == 0 {
            return false;
        }
        let day = self.days & (1 << d.day()) != 0;
        let weekday = self.weekdays & (1 << d.weekday().to_sunday_zero_offset()) != 0;
        match (self.days_star, self.weekdays_star) {
            (false, false) => day || weekday,
            _ => day && weekday,
        }
    }

    /// The first day from `from` on that matches, within [`SEARCH_DAYS`].
    fn next_day(&self, from: Date) -> Option<Date> {
        let mut d = from;
        for _ in 0..SEARCH_DAYS {
            if self.day_matches(d) {
                return Some(d);
            }
            d = d.tomorrow().ok()?;
        }
        None
    }

    /// The first slot strictly after `after_ms` (ms since the epoch) in `tz`, as ms since the
    /// epoch; `None` if there is none within [`SEARCH_DAYS`].
    pub fn next_after(&self, after_ms: i64, tz: &TimeZone) -> Option<i64> {
        let at = Timestamp::from_millisecond(after_ms).ok()?;
        let wall = at.to_zoned(tz.clone()).datetime();
        let (first, hour0, minute0) = (wall.date(), wall.hour(), wall.minute());
        let mut d = first;
        let mut looked = 0u32;
        while looked < SEARCH_DAYS {
            let day = self.next_day(d)?;
            looked += (day - d).get_days().unsigned_abs() + 1;
            let today = day == first;
            for h in 0..24i8 {
                if self.hours & (1 << h) == 0 || (today && h < hour0) {
                    continue;
                }
                for m in 0..60i8 {
                    if self.minutes & (1 << m) == 0 || (today && h == hour0 && m < minute0) {
                        continue;
                    }
                    // A time the zone skips comes out later, one it repeats as its first
                    // occurrence; either way only an instant after `after_ms` is a slot.
                    let Ok(ts) = tz.to_timestamp(day.at(h, m, 0, 0)) else {
                        continue;
                    };
                    if ts.as_millisecond() > after_ms {
                        return Some(ts.as_millisecond());
                    }
                }
            }
            d = day.tomorrow().ok()?;
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(s: &str) -> i64 {
        s.parse::<Timestamp>().unwrap().as_millisecond()
    }

    fn next(c: &str, after: &str, tz: &str) -> String {
        let tz = TimeZone::get(tz).unwrap();
        let at = Cron::parse(c).unwrap().next_after(ms(after), &tz).unwrap();
        Timestamp::from_millisecond(at).unwrap().to_string()
    }

    #[test]
    fn next_slots_in_utc_and_across_dst() {
        // Paris goes from 02:00 to 03:00 on 2026-03-29 and back from 03:00 to 02:00 on
        // 2026-10-25: 02:30 in the gap runs at 03:30 CEST (01:30Z), 02:30 in the fold once.
        for (cron, after, tz, want) in [
            (
                "0 2 * * *",
                "2026-01-01T02:00:00Z",
                "UTC",
                "2026-01-02T02:00:00Z",
            ),
            (
                "*/15 * * * *",
                "2026-01-01T02:07:31Z",
                "UTC",
                "2026-01-01T02:15:00Z",
            ),
            (
                "30 9 * * mon-fri",
                "2026-01-02T10:00:00Z",
                "UTC",
                "2026-01-05T09:30:00Z",
            ),
            // Both day fields restricted: either matches (the 13th, or a Friday).
            (
                "0 0 13 * 5",
                "2026-01-01T00:00:00Z",
                "UTC",
                "2026-01-02T00:00:00Z",
            ),
            (
                "0 0 29 2 *",
                "2026-03-01T00:00:00Z",
                "UTC",
                "2028-02-29T00:00:00Z",
            ),
            (
                "5 0 * * 7",
                "2026-01-01T00:00:00Z",
                "UTC",
                "2026-01-04T00:05:00Z",
            ),
            (
                "30 2 * * *",
                "2026-03-28T12:00:00Z",
                "Europe/Paris",
                "2026-03-29T01:30:00Z",
            ),
            (
                "30 2 * * *",
                "2026-03-29T01:30:00Z",
                "Europe/Paris",
                "2026-03-30T00:30:00Z",
            ),
            (
                "30 2 * * *",
                "2026-10-24T12:00:00Z",
                "Europe/Paris",
                "2026-10-25T00:30:00Z",
            ),
            (
                "30 2 * * *",
                "2026-10-25T00:30:00Z",
                "Europe/Paris",
                "2026-10-26T01:30:00Z",
            ),
            // An every-hour cron steps over the hour that does not exist.
            (
                "0 * * * *",
                "2026-03-29T00:30:00Z",
                "Europe/Paris",
                "2026-03-29T01:00:00Z",
            ),
        ] {
            assert_eq!(next(cron, after, tz), want, "{cron} after {after} in {tz}");
        }
    }

    #[test]
    fn hostile_expressions_are_refused_with_the_field() {
        for (text, why) in [
            ("61 * * * *", "minute 61 is out of 0-59"),
            ("* 24 * * *", "hour 24 is out of 0-23"),
            ("* * 0 * *", "day of the month 0 is out of 1-31"),
            ("* * * 13 *", "month 13 is out of 1-12"),
            ("* * * * 8", "weekday 8 is out of 0-7"),
            ("* * * *", "has 4 fields"),
            (
                "*/0 * * * *",
                "minute step \"0\" is not a number from 1 to 59",
            ),
            ("5-1 * * * *", "minute range 5-1 runs backwards"),
            ("x * * * *", "minute \"x\" is not a number"),
            ("* * * foo *", "month \"foo\" is not a number or one of jan"),
            ("0 0 31 2 *", "never matches"),
            ("0 0 30 feb *", "never matches"),
            ("99999999999 * * * *", "is not a number"),
        ] {
            let e = Cron::parse(text).unwrap_err();
            assert!(e.contains(why), "{text}: {e}");
        }
        assert!(Cron::parse(&"* ".repeat(500))
            .unwrap_err()
            .contains("at most 200"));
    }

    #[test]
    fn a_search_that_finds_nothing_ends() {
        // GIVEN an expression that no day matches (February 31, which parse refuses)
        let c = Cron {
            days: 1 << 31,
            months: 1 << 2,
            days_star: false,
            weekdays_star: true,
            ..Cron::parse("0 0 * * *").unwrap()
        };
        // WHEN the next slot is looked for THEN the search ends with none, quickly
        let t = std::time::Instant::now();
        assert_eq!(c.next_after(0, &TimeZone::UTC), None);
        assert!(t.elapsed() < std::time::Duration::from_secs(1));
    }
}
