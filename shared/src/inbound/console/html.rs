//! A tiny HTML builder that escapes by construction: tag and attribute names are `&'static str`
//! (written in this crate, never taken from input), every text and attribute value goes through
//! [`escape`], and links are [`Href`]s, built only from the console's own root and
//! percent-encoded path segments. Nothing a tenant wrote (ids, members, errors, metadata, log
//! lines) can become markup: a member named `<script>` is shown as text.

use std::fmt::Write as _;

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Everything but unreserved characters is encoded in a path segment or a query value.
const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// `text` with `&`, `<`, `>`, `"` and `'` replaced by entities: safe in text and in a quoted
/// attribute value.
pub fn escape(text: &str, out: &mut String) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// A link inside the console: its root, then encoded segments, then an encoded query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Href(String);

impl Href {
    /// `/console/` followed by `segments`, each percent-encoded (a `/` in an id stays in its
    /// segment).
    pub fn to(segments: &[&str]) -> Self {
        let mut s = String::from(super::ROOT);
        for (i, seg) in segments.iter().enumerate() {
            if i > 0 {
                s.push('/');
            }
            s.extend(utf8_percent_encode(seg, SEGMENT));
        }
        Href(s)
    }

    /// The same link with a query of `pairs` (empty values left out), each encoded.
    pub fn query(mut self, pairs: &[(&str, &str)]) -> Self {
        let mut first = !self.0.contains('?');
        for (k, v) in pairs.iter().filter(|(_, v)| !v.is_empty()) {
            self.0.push(if first { '?' } else { '&' });
            first = false;
            self.0.extend(utf8_percent_encode(k, SEGMENT));
            self.0.push('=');
            self.0.extend(utf8_percent_encode(v, SEGMENT));
        }
        self
    }

    /// The link as text (a path and query, never a scheme).
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// An HTML document being written.
#[derive(Debug, Default)]
pub struct Html {
    out: String,
}

impl Html {
    /// An empty document.
    pub fn new() -> Self {
        Html {
            out: String::with_capacity(16 * 1024),
        }
    }

    /// Markup written in this crate: only `'static` text, never input.
    pub fn raw(&mut self, markup: &'static str) -> &mut Self {
        self.out.push_str(markup);
        self
    }

    /// Text, escaped.
    pub fn text(&mut self, text: &str) -> &mut Self {
        escape(text, &mut self.out);
        self
    }

    /// A number (or anything `Display`), escaped like text.
    pub fn num(&mut self, n: impl std::fmt::Display) -> &mut Self {
        let mut s = String::new();
        let _ = write!(s, "{n}");
        self.text(&s)
    }

    /// An opening tag with attributes whose values are escaped; an attribute with an empty
    /// value is left out (but `value` itself, which a form sends).
    pub fn open(&mut self, tag: &'static str, attrs: &[(&'static str, &str)]) -> &mut Self {
        self.out.push('<');
        self.out.push_str(tag);
        for (name, value) in attrs {
            if value.is_empty() && *name != "value" {
                continue;
            }
            self.out.push(' ');
            self.out.push_str(name);
            self.out.push_str("=\"");
            escape(value, &mut self.out);
            self.out.push('"');
        }
        self.out.push('>');
        self
    }

    /// A closing tag.
    pub fn close(&mut self, tag: &'static str) -> &mut Self {
        self.out.push_str("</");
        self.out.push_str(tag);
        self.out.push('>');
        self
    }

    /// An element whose content `body` writes.
    pub fn el(
        &mut self,
        tag: &'static str,
        attrs: &[(&'static str, &str)],
        body: impl FnOnce(&mut Html),
    ) -> &mut Self {
        self.open(tag, attrs);
        body(self);
        self.close(tag)
    }

    /// An element holding `text`, escaped.
    pub fn el_text(
        &mut self,
        tag: &'static str,
        attrs: &[(&'static str, &str)],
        text: &str,
    ) -> &mut Self {
        self.open(tag, attrs).text(text).close(tag)
    }

    /// A link to a console page, showing `text`.
    pub fn link(&mut self, href: &Href, text: &str) -> &mut Self {
        self.el_text("a", &[("href", href.as_str())], text)
    }

    /// A hidden form field.
    pub fn hidden(&mut self, name: &'static str, value: &str) -> &mut Self {
        self.open(
            "input",
            &[("type", "hidden"), ("name", name), ("value", value)],
        )
    }

    /// The document.
    pub fn finish(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_and_attributes_are_escaped_and_links_stay_in_the_console() {
        let hostile = r#"<script>alert("x")</script>' onmouseover='x"#;
        let mut h = Html::new();
        h.el_text("td", &[("title", hostile)], hostile);
        let out = h.finish();
        assert!(!out.contains("<script>"), "{out}");
        assert!(!out.contains("'"), "{out}");
        assert_eq!(
            out.matches('"').count(),
            2,
            "only the attribute's own quotes: {out}"
        );
        let href = Href::to(&["tenants", "acme", "barriers", "a/b?c#d <x>"])
            .query(&[("after", "0001#x&y"), ("state", "")]);
        assert_eq!(
            href.as_str(),
            "/console/tenants/acme/barriers/a%2Fb%3Fc%23d%20%3Cx%3E?after=0001%23x%26y"
        );
        let href = Href::to(&["javascript:alert(1)"]);
        assert!(href.as_str().starts_with("/console/javascript%3Aalert"));
    }
}
