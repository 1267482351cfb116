//! Text as a JSON string would decode it, with the way back: each decoded byte knows the
//! stretch of the original that it came from. The vault's redaction searches a server's answer
//! this way too, so that a secret echoed with JSON escapes (`\/` as PHP writes it, `\"`,
//! `\u0073` for any character, plain and escaped characters mixed) is found and the whole
//! escaped stretch is replaced.
//!
//! Every backslash escape JSON defines is decoded wherever it stands, whether or not the text is
//! JSON (a false decode can only find a secret where its characters really are, escaped); a
//! backslash that starts no valid escape stays as it is. Only escapes cost memory: the mapping
//! keeps one entry per escape, not per byte.

/// One escape: where its decoded bytes are, and the original bytes they came from.
#[derive(Debug, Clone, Copy)]
struct Escape {
    /// Offset of its first decoded byte in [`View::text`].
    at: usize,
    /// How many decoded bytes it gave.
    len: usize,
    /// Offset of the backslash in the original.
    from: usize,
    /// How many original bytes it took (`\n` 2, `\u00e9` 6, a surrogate pair 12).
    from_len: usize,
}

/// The decoded text of an original, with the way back.
#[derive(Debug)]
pub struct View {
    /// The decoded text.
    pub text: Vec<u8>,
    escapes: Vec<Escape>,
}

impl View {
    /// The decoded form of `src`, or `None` when it holds no escape (so there is nothing more
    /// to search).
    pub fn of(src: &[u8]) -> Option<View> {
        let mut text = Vec::with_capacity(src.len());
        let mut escapes = Vec::new();
        let mut i = 0;
        while let Some(k) = memchr::memchr(b'\\', &src[i..]) {
            text.extend_from_slice(&src[i..i + k]);
            i += k;
            match escape_at(src, i) {
                Some((decoded, took)) => {
                    let at = text.len();
                    let mut buf = [0u8; 4];
                    let bytes = decoded.encode_utf8(&mut buf).as_bytes();
                    text.extend_from_slice(bytes);
                    escapes.push(Escape {
                        at,
                        len: bytes.len(),
                        from: i,
                        from_len: took,
                    });
                    i += took;
                }
                None => {
                    text.push(b'\\');
                    i += 1;
                }
            }
        }
        text.extend_from_slice(&src[i..]);
        (!escapes.is_empty()).then_some(View { text, escapes })
    }

    /// The stretch of the original that the decoded bytes `start..end` (not empty) came from:
    /// an escape cut by either end is taken whole.
    pub fn span(&self, start: usize, end: usize) -> (usize, usize) {
        (self.back(start).0, self.back(end - 1).1)
    }

    /// The original bytes decoded byte `at` came from.
    fn back(&self, at: usize) -> (usize, usize) {
        let i = self.escapes.partition_point(|e| e.at <= at);
        let Some(e) = i.checked_sub(1).map(|i| self.escapes[i]) else {
            return (at, at + 1);
        };
        if at < e.at + e.len {
            return (e.from, e.from + e.from_len);
        }
        // Plain text after the escape: offsets move together.
        let orig = e.from + e.from_len + (at - (e.at + e.len));
        (orig, orig + 1)
    }
}

/// The character the escape at `src[i]` (a backslash) stands for, and how many bytes it
/// takes; `None` when it is no JSON escape.
fn escape_at(src: &[u8], i: usize) -> Option<(char, usize)> {
    let c = match *src.get(i + 1)? {
        b'"' => '"',
        b'\\' => '\\',
        b'/' => '/',
        b'b' => '\u{8}',
        b'f' => '\u{c}',
        b'n' => '\n',
        b'r' => '\r',
        b't' => '\t',
        b'u' => {
            let hi = hex4(src, i + 2)?;
            if (0xd800..0xdc00).contains(&hi) {
                // A high surrogate: a character beyond the BMP when a low one follows.
                if src.get(i + 6) == Some(&b'\\') && src.get(i + 7) == Some(&b'u') {
                    if let Some(lo) = hex4(src, i + 8).filter(|lo| (0xdc00..0xe000).contains(lo)) {
                        let c = 0x10000 + ((hi - 0xd800) << 10) + (lo - 0xdc00);
                        return Some((char::from_u32(c)?, 12));
                    }
                }
                return Some((char::REPLACEMENT_CHARACTER, 6));
            }
            return Some((char::from_u32(hi).unwrap_or(char::REPLACEMENT_CHARACTER), 6));
        }
        _ => return None,
    };
    Some((c, 2))
}

/// The 4 hex digits at `src[i..]`, either case.
fn hex4(src: &[u8], i: usize) -> Option<u32> {
    let digits = src.get(i..i + 4)?;
    digits
        .iter()
        .try_fold(0u32, |acc, d| Some(acc * 16 + char::from(*d).to_digit(16)?))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_json_escape_decodes_and_maps_back_to_its_stretch() {
        // GIVEN text with short escapes, \u in both cases, a surrogate pair, a lone surrogate,
        // a backslash that starts no escape, and plain text between them
        let src = br#"a\/b\"c\u0041\u00e9\uD83D\uDE00d\ud800e\qf\\g\n"#;
        // WHEN it is decoded
        let v = View::of(src).unwrap();
        // THEN the text is what JSON makes of it (the unknown escape kept)
        assert_eq!(
            String::from_utf8(v.text.clone()).unwrap(),
            "a/b\"cAé😀d\u{fffd}e\\qf\\g\n"
        );
        // AND each decoded stretch maps back to the original bytes it came from
        let t = &v.text;
        let find = |needle: &str| {
            let n = needle.as_bytes();
            let at = t.windows(n.len()).position(|w| w == n).unwrap();
            let (a, b) = v.span(at, at + n.len());
            String::from_utf8_lossy(&src[a..b]).into_owned()
        };
        assert_eq!(find("/b\""), r#"\/b\""#);
        assert_eq!(find("cA"), r#"c\u0041"#);
        assert_eq!(find("é😀d"), r#"\u00e9\uD83D\uDE00d"#);
        assert_eq!(find("\\qf"), r#"\qf"#);
        assert_eq!(find("g\n"), r#"g\n"#);
        assert_eq!(find("a"), "a");
        // AND text without escapes has no view
        assert!(View::of(b"plain \\ text").is_none());
    }
}
