//! `{{vault:NAME}}` placeholders and the redaction of the values they stand for.
//!
//! Placeholders are filled by the host, in the parts of a request the script listed, after the
//! script has handed the request over: values never enter the VM. Whatever comes back (the
//! response's header names and values and body, error messages, log lines) passes through a
//! [`Redactor`] that replaces each value, in every form a server commonly echoes it in (JSON
//! string escapes included), with `[redacted:NAME]`.

use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine;
use memchr::memmem;
use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

use super::unescape;
use crate::ports::Secret;

const OPEN: &[u8] = b"{{vault:";
const CLOSE: &[u8] = b"}}";

/// The longest placeholder name looked for; a longer one is not a placeholder.
const MAX_NAME: usize = 64;

/// The names of the placeholders in `text`, in order, with repeats. A `{{vault:` whose name is
/// not valid is an error that shows the start of it.
pub fn placeholders(text: &[u8]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut at = 0;
    while let Some(i) = memmem::find(&text[at..], OPEN) {
        let start = at + i + OPEN.len();
        let end = memmem::find(&text[start..text.len().min(start + MAX_NAME + 2)], CLOSE);
        let Some(end) = end else {
            let shown = String::from_utf8_lossy(&text[at + i..text.len().min(start + 20)]);
            return Err(format!(
                "{shown:?}... is not a placeholder: write {{{{vault:NAME}}}} with a name of 1 to 64 letters, digits, '.', '-' or '_'"
            ));
        };
        let name = String::from_utf8_lossy(&text[start..start + end]).into_owned();
        crate::keys::check_secret_name(&name)?;
        out.push(name);
        at = start + end + CLOSE.len();
    }
    Ok(out)
}

/// `text` with every placeholder replaced by its value from `values` (which holds every name
/// [`placeholders`] found).
pub fn fill(text: &[u8], values: &[(String, Secret)]) -> Vec<u8> {
    fill_with(text, values, |v| v.as_bytes().to_vec())
}

/// [`fill`] for a URL: each value percent-encoded as `encodeURIComponent` does, since the
/// script that writes the URL cannot encode a value it never sees.
pub fn fill_url(text: &[u8], values: &[(String, Secret)]) -> Vec<u8> {
    fill_with(text, values, |v| {
        utf8_percent_encode(v, URI_COMPONENT)
            .to_string()
            .into_bytes()
    })
}

fn fill_with(
    text: &[u8],
    values: &[(String, Secret)],
    encode: impl Fn(&str) -> Vec<u8>,
) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    while let Some(i) = memmem::find(&text[at..], OPEN) {
        let start = at + i + OPEN.len();
        let Some(end) = memmem::find(&text[start..], CLOSE) else {
            break;
        };
        let name = &text[start..start + end];
        out.extend_from_slice(&text[at..at + i]);
        match values.iter().find(|(n, _)| n.as_bytes() == name) {
            Some((_, v)) => out.extend_from_slice(&encode(v.expose())),
            None => out.extend_from_slice(&text[at + i..start + end + CLOSE.len()]),
        }
        at = start + end + CLOSE.len();
    }
    out.extend_from_slice(&text[at..]);
    out
}

/// Characters JavaScript's `encodeURIComponent` leaves alone: another common percent form.
const URI_COMPONENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'!')
    .remove(b'~')
    .remove(b'*')
    .remove(b'\'')
    .remove(b'(')
    .remove(b')');

/// Base64 forms shorter than this are only redacted whole, not as part of a longer encoding:
/// a few characters would match by chance.
const MIN_EMBEDDED_BASE64: usize = 8;

/// Replaces secret values, in their common encodings, with `[redacted:NAME]`: every form of
/// every value in one leftmost-longest pass, so that a longer form wins over a shorter one it
/// contains and a replacement is never searched again.
#[derive(Default, Clone)]
pub struct Redactor {
    /// The automaton over every form (`None` when there is nothing to redact, or when it could
    /// not be built: then the forms are replaced one pass each).
    finder: Option<aho_corasick::AhoCorasick>,
    /// The same forms with ASCII case ignored, for header names (which arrive lower-cased).
    names: Option<aho_corasick::AhoCorasick>,
    /// Every form, longest first.
    forms: Vec<Vec<u8>>,
    /// The replacement of each form, by pattern index.
    marks: Vec<Vec<u8>>,
}

impl std::fmt::Debug for Redactor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Redactor({} forms)", self.marks.len())
    }
}

impl Redactor {
    /// A redactor for these values.
    pub fn new(values: &[(String, Secret)]) -> Self {
        let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        for (name, v) in values {
            let mark = format!("[redacted:{name}]").into_bytes();
            for form in encodings(v.expose().as_bytes()) {
                if !form.is_empty() && !pairs.iter().any(|(f, _)| *f == form) {
                    pairs.push((form, mark.clone()));
                }
            }
        }
        if pairs.is_empty() {
            return Redactor::default();
        }
        pairs.sort_by_key(|p| std::cmp::Reverse(p.0.len()));
        let (forms, marks): (Vec<_>, Vec<_>) = pairs.into_iter().unzip();
        // Building fails only past size limits far above a few dozen short patterns; should it
        // fail, `bytes` falls back to one pass per form, never to redacting nothing.
        let finder = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .build(&forms)
            .ok();
        let names = aho_corasick::AhoCorasick::builder()
            .match_kind(aho_corasick::MatchKind::LeftmostLongest)
            .ascii_case_insensitive(true)
            .build(&forms)
            .ok();
        Redactor {
            finder,
            names,
            forms,
            marks,
        }
    }

    /// Whether there is nothing to redact.
    pub fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }

    /// `data` with every form of every value replaced, also where the form is written with
    /// JSON string escapes (`\/`, `\"`, `\uXXXX` of any character, mixed with plain ones, and
    /// escaped twice over): the stretch of `data` that decodes to a form is replaced whole.
    pub fn bytes(&self, data: &[u8]) -> Vec<u8> {
        let Some(finder) = &self.finder else {
            return self.pass_per_form(data);
        };
        if memchr::memchr(b'\\', data).is_none() {
            let mut out = Vec::with_capacity(data.len());
            finder.replace_all_with_bytes(data, &mut out, |m, _, dst| {
                dst.extend_from_slice(&self.marks[m.pattern().as_usize()]);
                true
            });
            return out;
        }
        // Spans of `data` to replace: forms found as they are, and forms found in the text as
        // JSON would decode it (once, and once more for JSON inside a JSON string).
        let mut spans: Vec<(usize, usize, usize)> = finder
            .find_iter(data)
            .map(|m| (m.start(), m.end(), m.pattern().as_usize()))
            .collect();
        if let Some(once) = unescape::View::of(data) {
            for m in finder.find_iter(&once.text) {
                let (a, b) = once.span(m.start(), m.end());
                spans.push((a, b, m.pattern().as_usize()));
            }
            if let Some(twice) = unescape::View::of(&once.text) {
                for m in finder.find_iter(&twice.text) {
                    let (a, b) = twice.span(m.start(), m.end());
                    let (a, b) = once.span(a, b);
                    spans.push((a, b, m.pattern().as_usize()));
                }
            }
        }
        spans.sort_unstable_by_key(|&(a, b, _)| (a, std::cmp::Reverse(b)));
        let mut out = Vec::with_capacity(data.len());
        let mut at = 0;
        for (a, b, pattern) in spans {
            if b <= at {
                continue;
            }
            if a >= at {
                out.extend_from_slice(&data[at..a]);
                out.extend_from_slice(&self.marks[pattern]);
            }
            // A span that overlaps the one before extends what that mark covers.
            at = b;
        }
        out.extend_from_slice(&data[at..]);
        out
    }

    /// A response header's name with every form of every value replaced, ASCII case ignored
    /// (names arrive lower-cased, so a value with capitals still shows in them).
    pub fn name(&self, name: &str) -> String {
        let Some(finder) = &self.names else {
            return self.text(name);
        };
        let mut out = Vec::with_capacity(name.len());
        finder.replace_all_with_bytes(name.as_bytes(), &mut out, |m, _, dst| {
            dst.extend_from_slice(&self.marks[m.pattern().as_usize()]);
            true
        });
        String::from_utf8_lossy(&out).into_owned()
    }

    /// The fallback of [`Self::bytes`]: each form replaced in a pass of its own, longest first.
    fn pass_per_form(&self, data: &[u8]) -> Vec<u8> {
        let mut cur = data.to_vec();
        for (form, mark) in self.forms.iter().zip(&self.marks) {
            let finder = memmem::Finder::new(form);
            let mut out = Vec::with_capacity(cur.len());
            let mut at = 0;
            for i in finder.find_iter(&cur) {
                if i >= at {
                    out.extend_from_slice(&cur[at..i]);
                    out.extend_from_slice(mark);
                    at = i + form.len();
                }
            }
            out.extend_from_slice(&cur[at..]);
            cur = out;
        }
        cur
    }

    /// [`Self::bytes`] for text. Forms are whole UTF-8 values or ASCII, so text stays text.
    pub fn text(&self, s: &str) -> String {
        if self.is_empty() {
            return s.to_string();
        }
        String::from_utf8_lossy(&self.bytes(s.as_bytes())).into_owned()
    }
}

/// The forms a value is redacted in: raw; standard and URL-safe base64, padded or not, and the
/// stretch of each that stays the same wherever the value sits inside a longer base64 text
/// (`Basic base64(user:secret)`); percent-encoded (upper and lower hex, all but letters and
/// digits, or as `encodeURIComponent` does, and with `+` for spaces); hex, lower and upper.
fn encodings(v: &[u8]) -> Vec<Vec<u8>> {
    let mut out = vec![v.to_vec()];
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        out.push(engine.encode(v).into_bytes());
    }
    for engine in [&STANDARD_NO_PAD, &URL_SAFE_NO_PAD] {
        for shift in 0..3usize {
            // Encode behind `shift` bytes of filler, then keep only the characters made of the
            // value's bits alone: those are what any text with the value at that offset shows.
            let mut buf = vec![0u8; shift];
            buf.extend_from_slice(v);
            let enc = engine.encode(&buf).into_bytes();
            let skip = (shift * 8).div_ceil(6);
            let keep = (buf.len() * 8) / 6;
            if keep > skip && keep - skip >= MIN_EMBEDDED_BASE64 {
                out.push(enc[skip..keep].to_vec());
            }
        }
    }
    if let Ok(s) = std::str::from_utf8(v) {
        for set in [NON_ALPHANUMERIC, URI_COMPONENT] {
            let upper = utf8_percent_encode(s, set).to_string();
            out.push(lower_hex_escapes(&upper).into_bytes());
            out.push(upper.replace("%20", "+").into_bytes());
            out.push(upper.into_bytes());
        }
    }
    out.push(hex::encode(v).into_bytes());
    out.push(hex::encode_upper(v).into_bytes());
    out
}

/// `%2F` as `%2f`.
fn lower_hex_escapes(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        out.push(c);
        if c == '%' {
            for _ in 0..2 {
                if let Some(h) = chars.next() {
                    out.push(h.to_ascii_lowercase());
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secret(name: &str, v: &str) -> (String, Secret) {
        (name.to_string(), Secret::new(v.to_string()))
    }

    #[test]
    fn placeholders_are_found_and_filled() {
        // GIVEN a text with two placeholders, one repeated
        let t = b"Bearer {{vault:stripe.key}} and {{vault:b}} {{vault:stripe.key}}";
        // WHEN they are listed and filled THEN each is replaced by its value
        assert_eq!(
            placeholders(t).unwrap(),
            vec!["stripe.key", "b", "stripe.key"]
        );
        let v = [secret("stripe.key", "sk_1"), secret("b", "B")];
        assert_eq!(fill(t, &v), b"Bearer sk_1 and B sk_1");
        // AND a malformed one is refused, naming what to write
        let e = placeholders(b"x {{vault:bad name}}").unwrap_err();
        assert!(e.contains("not valid"), "{e}");
        let e = placeholders(b"x {{vault:unclosed").unwrap_err();
        assert!(e.contains("not a placeholder"), "{e}");
    }

    #[test]
    fn every_encoding_of_a_value_is_redacted() {
        // GIVEN a secret with characters that encodings change
        let value = "sk_live/ab+c d?=&é";
        let r = Redactor::new(&[secret("stripe.key", value)]);
        let b64 = |e: &base64::engine::GeneralPurpose, v: &[u8]| e.encode(v);
        let echoes = [
            value.to_string(),
            b64(&STANDARD, value.as_bytes()),
            b64(&URL_SAFE_NO_PAD, value.as_bytes()),
            b64(&STANDARD, format!("user:{value}").as_bytes()),
            b64(&STANDARD, format!("us:{value}").as_bytes()),
            b64(&STANDARD, format!("u:{value}").as_bytes()),
            utf8_percent_encode(value, NON_ALPHANUMERIC).to_string(),
            lower_hex_escapes(&utf8_percent_encode(value, NON_ALPHANUMERIC).to_string()),
            utf8_percent_encode(value, URI_COMPONENT).to_string(),
            hex::encode(value),
            hex::encode_upper(value),
        ];
        // WHEN a text holding each echo is redacted
        for echo in echoes {
            let out = r.text(&format!("before {echo} after"));
            // THEN the echo is gone and the mark is there
            assert!(!out.contains(&echo), "{echo} survived: {out}");
            assert!(out.contains("[redacted:stripe.key]"), "{out}");
        }
        assert_eq!(r.text("nothing secret"), "nothing secret");
        // AND the fallback, one pass per form, does the same
        let fallback = Redactor {
            finder: None,
            ..r.clone()
        };
        let echo = b64(&STANDARD, format!("user:{value}").as_bytes());
        let out = fallback.text(&format!("x {value} {echo} y"));
        assert!(!out.contains(value) && !out.contains(&echo), "{out}");
    }

    /// `v` with each character JSON-escaped as `\uXXXX` (surrogate pairs beyond the BMP), in
    /// upper or lower hex.
    fn u_escaped(v: &str, upper: bool) -> String {
        let mut out = String::new();
        for unit in v.encode_utf16() {
            if upper {
                out.push_str(&format!("\\u{unit:04X}"));
            } else {
                out.push_str(&format!("\\u{unit:04x}"));
            }
        }
        out
    }

    #[test]
    fn json_escaped_forms_of_a_value_are_redacted_whole() {
        // GIVEN a secret with a slash, a quote, a backslash, a non-ASCII and an astral character
        let value = r#"sk/li"ve\é😀x"#;
        let r = Redactor::new(&[secret("k", value)]);
        // AND the ways a server writes it inside a JSON string: serde's and PHP's escapes,
        // every character \u-escaped (both cases), every other one, escaped twice over, and
        // a base64 form with PHP's escaped slashes
        let serde = serde_json::to_string(value).unwrap();
        let serde = &serde[1..serde.len() - 1];
        let php = serde.replace('/', "\\/");
        let mut mixed = String::new();
        for (i, c) in value.chars().enumerate() {
            if i % 2 == 0 {
                mixed.push_str(&u_escaped(&c.to_string(), false));
            } else {
                let one = serde_json::to_string(&c.to_string()).unwrap();
                mixed.push_str(&one[1..one.len() - 1].replace('/', "\\/"));
            }
        }
        let twice = serde_json::to_string(&php).unwrap();
        let twice = twice[1..twice.len() - 1].to_string();
        let b64 = STANDARD.encode(format!("user:{value}")).replace('/', "\\/");
        let echoes = [
            serde.to_string(),
            php,
            u_escaped(value, false),
            u_escaped(value, true),
            mixed,
            twice,
            b64,
        ];
        for echo in echoes {
            // WHEN an answer holding it is redacted
            let doc = format!(r#"{{"echo": "before {echo} after", "n": 1}}"#);
            let out = r.text(&doc);
            // THEN the escaped stretch is replaced whole, the rest is left as it was
            assert!(out.contains("[redacted:k]"), "{echo}: {out}");
            assert!(
                out.starts_with(r#"{"echo": "before "#) && out.ends_with(r#" after", "n": 1}"#),
                "{out}"
            );
            // AND decoding the JSON (once, and again for the twice-escaped one) finds no trace
            let decoded: serde_json::Value = serde_json::from_str(&out).unwrap();
            let text = decoded["echo"].as_str().unwrap();
            assert!(!text.contains(value), "{echo}: {text}");
            assert!(!text.contains("sk/li"), "{echo}: {text}");
            if let Ok(inner) = serde_json::from_str::<String>(&format!("\"{text}\"")) {
                assert!(!inner.contains(value), "{echo}: {inner}");
            }
        }
        // AND text with backslashes but no secret is untouched
        let plain = r#"{"path": "C:\\dir\/file", "q": "\"hi\""}"#;
        assert_eq!(r.text(plain), plain);
    }

    #[test]
    fn header_names_are_redacted_whatever_their_case() {
        // GIVEN a secret with capitals, and the lower-cased header names a server could echo
        // it in (raw, hex, inside other text)
        let value = "SeCrEt-Token_42";
        let r = Redactor::new(&[secret("k", value)]);
        for name in [
            value.to_ascii_lowercase(),
            format!("x-{}-echo", value.to_ascii_lowercase()),
            hex::encode(value),
        ] {
            // WHEN the name is redacted THEN no form of the value is left in it
            let out = r.name(&name);
            assert!(out.contains("[redacted:k]"), "{name}: {out}");
            assert!(
                !out.to_ascii_lowercase()
                    .contains(&value.to_ascii_lowercase()),
                "{out}"
            );
        }
        assert_eq!(r.name("content-type"), "content-type");
    }

    #[test]
    fn a_short_secret_never_eats_the_marks_of_longer_forms() {
        // GIVEN a one-letter secret, whose hex form "65" and base64 "ZQ==" also occur
        let r = Redactor::new(&[secret("k", "e")]);
        // WHEN a text is redacted THEN every occurrence is marked once, marks left whole
        assert_eq!(
            r.text("hex 65, base64 ZQ==, here"),
            "h[redacted:k]x [redacted:k], bas[redacted:k]64 [redacted:k], h[redacted:k]r[redacted:k]"
        );
    }
}
