//! `--junit FILE`: the run as JUnit XML, which CI systems read (one `testsuite`, a `testcase`
//! per test with its file as the class, a `failure` with the message of each that failed).

use std::fmt::Write as _;
use std::time::Duration;

use super::Ran;

/// Text made safe for an XML attribute or element (control characters other than tab and
/// line breaks are dropped: XML 1.0 cannot hold them).
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// The XML of a run.
pub fn xml(ran: &[Ran], elapsed: Duration) -> String {
    let failures = ran.iter().filter(|r| r.failure.is_some()).count();
    let mut out = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        out,
        "<testsuites tests=\"{}\" failures=\"{failures}\" time=\"{:.3}\">",
        ran.len(),
        elapsed.as_secs_f64()
    );
    let _ = writeln!(
        out,
        "  <testsuite name=\"native test\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" time=\"{:.3}\">",
        ran.len(),
        elapsed.as_secs_f64()
    );
    for r in ran {
        let _ = write!(
            out,
            "    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3}\"",
            escape(&r.file),
            escape(&r.name),
            r.time.as_secs_f64()
        );
        match &r.failure {
            None => out.push_str("/>\n"),
            Some(f) => {
                let first = f.lines().next().unwrap_or("");
                let _ = writeln!(
                    out,
                    ">\n      <failure message=\"{}\">{}</failure>\n    </testcase>",
                    escape(first),
                    escape(f)
                );
            }
        }
    }
    out.push_str("  </testsuite>\n</testsuites>\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failures_are_escaped_and_counted() {
        let ran = vec![
            Ran {
                file: "tenants/a/tests/x.test.luau".into(),
                name: "ok one".into(),
                failure: None,
                time: Duration::from_millis(5),
            },
            Ran {
                file: "tenants/a/tests/x.test.luau".into(),
                name: "<bad> & \"quoted\"".into(),
                failure: Some("x.test.luau:3: expected 1\u{1}, got 2\nmore".into()),
                time: Duration::ZERO,
            },
        ];
        let x = xml(&ran, Duration::from_secs(1));
        assert!(x.contains("tests=\"2\" failures=\"1\""), "{x}");
        assert!(
            x.contains("name=\"&lt;bad&gt; &amp; &quot;quoted&quot;\""),
            "{x}"
        );
        assert!(
            x.contains("<failure message=\"x.test.luau:3: expected 1, got 2\">"),
            "{x}"
        );
        assert!(!x.contains('\u{1}'));
    }
}
