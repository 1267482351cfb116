//! Query strings and form bodies (`application/x-www-form-urlencoded`), parsed by hand: the
//! router is built without axum's form and query extractors, so that every error here is the
//! console's own page.

use percent_encoding::percent_decode_str;

/// The most pairs read from one query or form.
const MAX_PAIRS: usize = 64;

/// A name or value of a form as sent: `+` is a space, `%XX` a byte.
fn decode(s: &str) -> String {
    let s = s.replace('+', " ");
    percent_decode_str(&s).decode_utf8_lossy().into_owned()
}

/// Name-value pairs, in order; the first of a name wins.
#[derive(Debug, Clone, Default)]
pub struct Form(Vec<(String, String)>);

impl Form {
    /// Parses `a=1&b=x+y` (`+` is a space, `%XX` a byte; invalid UTF-8 becomes U+FFFD).
    pub fn parse(text: &str) -> Self {
        Form(
            text.split('&')
                .filter(|p| !p.is_empty())
                .take(MAX_PAIRS)
                .map(|p| match p.split_once('=') {
                    Some((k, v)) => (decode(k), decode(v)),
                    None => (decode(p), String::new()),
                })
                .collect(),
        )
    }

    /// `query` without its pairs named `name` in any spelling (`tok%65n` is `token`), the
    /// others as they were written.
    pub fn without(query: &str, name: &str) -> String {
        query
            .split('&')
            .filter(|p| !p.is_empty() && decode(p.split_once('=').map_or(*p, |(k, _)| k)) != name)
            .collect::<Vec<_>>()
            .join("&")
    }

    /// The value of `name`, if given.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// The value of `name`, or "" when absent.
    pub fn str(&self, name: &str) -> &str {
        self.get(name).unwrap_or("")
    }

    /// A number `name`, within `1..=max`, or `default` when absent or not a number.
    pub fn limit(&self, name: &str, default: usize, max: usize) -> usize {
        self.get(name)
            .and_then(|v| v.parse::<usize>().ok())
            .map_or(default, |n| n.clamp(1, max))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_left_out_in_every_spelling() {
        for q in [
            "token=t",
            "tok%65n=t",
            "%74oken=t&",
            "t%6F%6B%65%6E=t",
            "token",
        ] {
            assert_eq!(Form::without(q, "token"), "", "{q}");
        }
        assert_eq!(Form::without("a=1&tok%65n=t&b=%20", "token"), "a=1&b=%20");
        assert_eq!(Form::without("tokens=1", "token"), "tokens=1");
    }

    #[test]
    fn pairs_decode_and_the_first_wins() {
        let f = Form::parse("a=1&b=x+y%3Cz%3E&a=2&flag&c=%FF");
        assert_eq!(f.get("a"), Some("1"));
        assert_eq!(f.get("b"), Some("x y<z>"));
        assert_eq!(f.get("flag"), Some(""));
        assert_eq!(f.get("c"), Some("\u{fffd}"));
        assert_eq!(f.get("d"), None);
        assert_eq!(Form::parse("limit=9999").limit("limit", 100, 500), 500);
        assert_eq!(Form::parse("limit=x").limit("limit", 100, 500), 100);
    }
}
