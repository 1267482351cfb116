//! Text that came from a script or its data, made safe for a terminal. A script's error, log line,
//! return value or dead letter is printed to the operator's terminal: an escape sequence in it
//! could clear the screen, retitle the window or move the cursor, and a carriage return or
//! newline could forge a line that seems to come from `native` itself. Every print path of such
//! text goes through this module.
//!
//! What is escaped: C0 controls (ESC, CR, BEL, ...), DEL, C1 controls (which some terminals act
//! on in UTF-8 too, e.g. U+009B CSI) and the bidirectional overrides that reorder what is shown.

use std::borrow::Cow;
use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use native_core::observe::LogSink;

/// Whether `s` is printable ASCII only (no control, nothing to escape): most lines are, and
/// this test runs eight bytes at a time, where [`unsafe_char`] decodes and classifies each
/// char (a served request's access record, ~200 bytes, was checked a byte at a time:
/// BENCHMARKS.md, Figures behind the code).
fn printable_ascii(s: &str) -> bool {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = s.as_bytes().chunks_exact(8);
    for word in &mut words {
        let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
        // A byte below 0x20 borrows into its own high bit; a byte of 0x7f or more has its
        // high bit set once 1 is added (or already). A flag may spill into the bytes above a
        // flagged one, never into a word with none.
        let below = w.wrapping_sub(ONES * 0x20) & !w & HIGH;
        let above = (w.wrapping_add(ONES) | w) & HIGH;
        if below | above != 0 {
            return false;
        }
    }
    words.remainder().iter().all(|b| (0x20..0x7f).contains(b))
}

/// Whether `c` must not reach a terminal raw.
fn unsafe_char(c: char) -> bool {
    c.is_control() // C0, DEL and C1
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}')
}

/// Escapes `s` for a terminal; `keep` lists controls that are our own formatting and stay.
fn escape_with<'a>(s: &'a str, keep: &[char]) -> Cow<'a, str> {
    if printable_ascii(s) || !s.chars().any(|c| unsafe_char(c) && !keep.contains(&c)) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        if !unsafe_char(c) || keep.contains(&c) {
            out.push(c);
            continue;
        }
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
        }
    }
    Cow::Owned(out)
}

/// One piece of script text for a line of ours (an error, a field): every control escaped,
/// newlines included, so it cannot start a line of its own.
pub fn text(s: &str) -> Cow<'_, str> {
    escape_with(s, &[])
}

/// A message of ours, whose newlines and tabs are our formatting and whose script parts were
/// escaped with [`text`] (or are escaped here): everything else is escaped.
pub fn lines(s: &str) -> Cow<'_, str> {
    escape_with(s, &['\n', '\t'])
}

/// JSON text from serde_json, which escapes C0 controls but writes DEL, C1 controls and the
/// bidirectional overrides raw: those become `\uXXXX` escapes. They can only be inside strings,
/// so the result is the same JSON.
pub fn json(s: &str) -> Cow<'_, str> {
    if printable_ascii(s) || !s.chars().any(unsafe_char) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 16);
    for c in s.chars() {
        // Newlines and indents of pretty JSON are outside strings; inside, serde escaped them.
        if unsafe_char(c) && !matches!(c, '\n' | '\t' | ' ') {
            out.push_str(&format!("\\u{:04x}", c as u32));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// An object's bytes for stdout: exact when stdout is a file or a pipe (`native get ... > f`),
/// and with controls escaped (lines and tabs kept) and a final newline when it is a terminal,
/// so that the prompt starts on a line of its own.
pub fn bytes(data: &[u8]) {
    if std::io::stdout().is_terminal() {
        let mut text = lines(&String::from_utf8_lossy(data)).into_owned();
        if !text.is_empty() && !text.ends_with('\n') {
            text.push('\n');
        }
        crate::out::bytes(text.as_bytes())
    } else {
        crate::out::bytes(data)
    }
}

/// `native -v`: the runtime logs what it ran.
static VERBOSE: AtomicBool = AtomicBool::new(false);

/// Sets `-v` for this process.
pub fn set_verbose(on: bool) {
    VERBOSE.store(on, Ordering::Relaxed);
}

/// Script and runtime logs on stderr: one JSON object a line, escaped with [`json`], or, when
/// stderr is a terminal, one readable line each ([`readable`]). `NATIVE_LOG_FORMAT=json` or
/// `text` chooses either way.
#[derive(Debug)]
pub struct TerminalLog {
    readable: bool,
}

impl Default for TerminalLog {
    fn default() -> Self {
        let readable = match std::env::var("NATIVE_LOG_FORMAT").as_deref() {
            Ok("json") => false,
            Ok("text") => true,
            _ => std::io::stderr().is_terminal(),
        };
        TerminalLog { readable }
    }
}

impl TerminalLog {
    /// One JSON object a line, whatever stderr is.
    #[cfg(test)]
    pub(crate) fn json() -> Self {
        TerminalLog { readable: false }
    }

    /// One readable line a record, whatever stderr is.
    #[cfg(test)]
    pub(crate) fn text() -> Self {
        TerminalLog { readable: true }
    }

    /// The record as this sink writes it, newline included.
    pub fn line(&self, record: &serde_json::Value) -> String {
        self.line_of(|| Cow::Borrowed(record), || Cow::Owned(record.to_string()))
    }

    /// [`Self::line`] of a record given by its value (`record`) and its JSON (`text`), each
    /// made only if this sink's form needs it: the readable form reads the value's fields, the
    /// JSON form escapes the text.
    pub fn line_of<'r, 't>(
        &self,
        record: impl FnOnce() -> Cow<'r, serde_json::Value>,
        text: impl FnOnce() -> Cow<'t, str>,
    ) -> String {
        let mut line = if self.readable {
            readable(&record())
        } else {
            json(&text()).into_owned()
        };
        line.push('\n');
        line
    }
}

impl LogSink for TerminalLog {
    fn write(&self, record: &serde_json::Value) {
        crate::out::err_bytes(self.line(record).as_bytes());
    }
}

/// A log record as one line for people: time (UTC, on the project clock), level, where,
/// message, then the other fields as `name=value`; every part escaped with [`text`].
pub fn readable(record: &serde_json::Value) -> String {
    use serde_json::Value;
    let Value::Object(m) = record else {
        return text(&record.to_string()).into_owned();
    };
    let str_of = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("");
    let mut out = match m.get("ts_ms").and_then(Value::as_i64) {
        Some(ms) => {
            let s = ms.div_euclid(1000).rem_euclid(86_400);
            format!(
                "{:02}:{:02}:{:02}.{:03}Z ",
                s / 3600,
                s % 3600 / 60,
                s % 60,
                ms.rem_euclid(1000)
            )
        }
        None => String::new(),
    };
    out.push_str(&format!("{:<5} ", str_of("level").to_uppercase()));
    let (tenant, script) = (str_of("tenant"), str_of("script"));
    match (tenant, script) {
        ("", _) => {}
        (t, "") => out.push_str(&format!("{} ", text(t))),
        (t, s) => out.push_str(&format!("{}/{} ", text(t), text(s))),
    }
    out.push_str(&text(str_of("msg")));
    for (k, v) in m {
        if matches!(
            k.as_str(),
            "ts_ms" | "level" | "msg" | "tenant" | "script" | "request_id"
        ) {
            continue;
        }
        let v = match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        out.push_str(&format!(" {}={}", text(k), text(&v)));
    }
    out
}

/// `n` with its noun, singular for one: "1 query", "4 rows".
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// Logs, as one record of the verb's log (stderr and the log file), the chain a verb started:
/// `msg` (`invoked`, `sent`) with the tenant, the script and the `trace` that
/// `native logs --trace` finds.
pub fn started_chain(
    rt: &native_core::runtime::Runtime,
    msg: &str,
    tenant: &str,
    script: &str,
    trace: &str,
) {
    rt.services.log.write(&serde_json::json!({
        "ts_ms": native_core::ports::now_ms(), "level": "info", "msg": msg,
        "tenant": tenant, "script": script, "trace": trace,
    }));
}

/// A runtime over the project whose script logs go through [`TerminalLog`] and into the
/// project's log file ([`crate::logfile`], what `native logs` reads), and whose runs are kept
/// in the project's store for the console of `native serve` (`Project::recent`).
pub fn runtime(p: &native_core::local::Project) -> Arc<native_core::runtime::Runtime> {
    let file = crate::logfile::LogFile::new(&p.root.join(".native"));
    Arc::new(
        dressed(
            p.runtime(),
            Arc::new(crate::logfile::Both(TerminalLog::default(), file)),
        )
        .with_recent(Arc::new(p.recent(false))),
    )
}

/// [`runtime`] for `native serve` on `addr`: callback URLs name the address served, and the log
/// is written in batches ([`crate::served_log`]; flush it before exiting).
pub fn served_runtime(
    p: &native_core::local::Project,
    addr: std::net::SocketAddr,
) -> (native_core::runtime::Runtime, crate::served_log::ServedLog) {
    let file = crate::logfile::LogFile::new(&p.root.join(".native"));
    let log = crate::served_log::ServedLog::new(TerminalLog::default(), file);
    let rt = dressed(p.runtime_served_at(addr), Arc::new(log.clone()));
    (rt, log)
}

/// The CLI's log and `-v`; the CLI outlives its invocations, so it performs job:http itself
/// (and waits for it).
fn dressed(
    rt: native_core::runtime::Runtime,
    log: Arc<dyn native_core::observe::LogSink>,
) -> native_core::runtime::Runtime {
    let rt = rt.with_log(log).with_http_jobs();
    if VERBOSE.load(Ordering::Relaxed) {
        rt.with_run_log()
    } else {
        rt
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped_and_plain_text_is_untouched() {
        // GIVEN text with a screen clear, a carriage return, a bell, a forged line, DEL, CSI
        // (C1) and a right-to-left override
        let nasty = "a\u{1b}[2Jb\rc\u{7}d\nerror: forged\u{7f}\u{9b}31m\u{202e}x\ty";
        // WHEN it is escaped as a piece of text
        // THEN no control is left, and each shows as an escape
        assert_eq!(
            text(nasty),
            "a\\u{1b}[2Jb\\rc\\u{7}d\\nerror: forged\\u{7f}\\u{9b}31m\\u{202e}x\\ty"
        );
        // AND as our own lines, newlines and tabs stay
        assert_eq!(
            lines(nasty),
            "a\\u{1b}[2Jb\\rc\\u{7}d\nerror: forged\\u{7f}\\u{9b}31m\\u{202e}x\ty"
        );
        // AND plain text is not copied
        assert!(matches!(text("plain ünïcode"), Cow::Borrowed(_)));
    }

    #[test]
    fn readable_lines_show_time_level_where_message_and_fields() {
        // GIVEN a script's log record with a field holding an escape sequence
        let rec = serde_json::json!({
            "ts_ms": 3_723_004i64, "level": "info", "tenant": "hello", "script": "greet",
            "request_id": "abc", "msg": "document written", "key": "a\u{1b}[2Jb", "n": 2,
        });
        // WHEN it is shown for a terminal
        // THEN it is one line of time, level, tenant/script, message and fields, escaped
        assert_eq!(
            readable(&rec),
            "01:02:03.004Z INFO  hello/greet document written key=a\\u{1b}[2Jb n=2"
        );
    }

    #[test]
    fn printable_ascii_is_the_byte_rule_for_every_byte_anywhere() {
        // GIVEN lines of printable ASCII of every length up to three words, each with one byte
        // of every value put at every position (and none)
        let byte_rule = |s: &[u8]| s.iter().all(|b| (0x20..0x7f).contains(b));
        for len in 0..=24 {
            let line: Vec<u8> = (0..len).map(|i| b' ' + (i * 7 % 95) as u8).collect();
            let text = String::from_utf8(line.clone()).unwrap();
            assert!(printable_ascii(&text), "{text:?}");
            for at in 0..len {
                for b in 0..=0x7fu8 {
                    let mut l = line.clone();
                    l[at] = b;
                    let text = String::from_utf8(l.clone()).unwrap();
                    // THEN the word-at-a-time check agrees with the byte rule
                    assert_eq!(printable_ascii(&text), byte_rule(&l), "{text:?}");
                }
                // (and a byte past ASCII, as a two-byte character, is never printable ASCII)
                let mut l = line.clone();
                l.splice(at..=at, "é".bytes());
                assert!(!printable_ascii(&String::from_utf8(l).unwrap()));
            }
        }
    }

    #[test]
    fn json_stays_json_without_raw_controls() {
        // GIVEN a value whose strings hold every kind of control
        let v = serde_json::json!({ "k\u{9b}": "\u{1b}[2J\u{7f}\u{9b}\u{202e}\n" });
        for s in [v.to_string(), serde_json::to_string_pretty(&v).unwrap()] {
            // WHEN its JSON text is escaped
            let out = json(&s);
            // THEN it parses to the same value, and holds no control but layout
            assert_eq!(serde_json::from_str::<serde_json::Value>(&out).unwrap(), v);
            assert!(!out.chars().any(|c| unsafe_char(c) && c != '\n'), "{out}");
        }
    }
}
