//! W3C Trace Context (<https://www.w3.org/TR/trace-context/>): a chain id is a W3C trace id,
//! so that a caller's `traceparent` names the chain its request joins, and every answer names
//! the chain that served it.
//!
//! A caller's header is hostile input: it is read only for its trace id, and only when it is
//! well formed (version, trace id, parent id and flags in their lower-case hex, neither id all
//! zeros, at most [`MAX_HEADER_BYTES`]); anything else is ignored and the request starts a
//! chain of its own, as the specification asks. Nothing else of it (flags, tracestate) is
//! used or echoed.
//!
//! Chains made before chain ids were 32 digits are 16: as a trace id they are left-padded with
//! zeros, as the specification says of 8-byte ids, and a trace id of 16 leading zeros names the
//! 16-digit chain again, so that `native logs --trace` finds it by either spelling.

/// The longest `traceparent` value read; a longer one is ignored.
pub const MAX_HEADER_BYTES: usize = 512;

/// The chain a `traceparent` header value names, and the caller's span (its parent id), if it
/// is well formed.
pub fn parse(value: &[u8]) -> Option<(String, u64)> {
    if value.len() > MAX_HEADER_BYTES {
        return None;
    }
    let v = std::str::from_utf8(value).ok()?.trim_matches([' ', '\t']);
    let b = v.as_bytes();
    if b.len() < 55 || b[2] != b'-' || b[35] != b'-' || b[52] != b'-' {
        return None;
    }
    let (version, trace, parent, flags) = (&v[..2], &v[3..35], &v[36..52], &v[53..55]);
    let hex = |s: &str| s.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    let zero = |s: &str| s.bytes().all(|c| c == b'0');
    if !(hex(version) && hex(trace) && hex(parent) && hex(flags)) || version == "ff" {
        return None;
    }
    // Version 00 is exactly this long; a later version may add fields after a dash.
    if (version == "00" && b.len() != 55) || (b.len() > 55 && b[55] != b'-') {
        return None;
    }
    if zero(trace) || zero(parent) {
        return None;
    }
    let chain = match trace.strip_prefix("0000000000000000") {
        Some(short) => short.to_string(),
        None => trace.to_string(),
    };
    Some((chain, u64::from_str_radix(parent, 16).ok()?))
}

/// Whether `chain` can be a trace id: 1 to 32 lower-case hex digits, not all zeros.
fn traceable(chain: &str) -> bool {
    let b = chain.as_bytes();
    if b.is_empty() || b.len() > 32 {
        return false;
    }
    let mut nonzero = false;
    for &c in b {
        match c {
            b'0' => {}
            b'1'..=b'9' | b'a'..=b'f' => nonzero = true,
            _ => return false,
        }
    }
    nonzero
}

/// Writes the low `out.len()` hex digits of `n` into `out`, lower-case, the most significant
/// first (zeros past the 32 a `u128` has): what every request's trace id and answer header are
/// made of, without the formatting machinery or a `char` at a time.
pub(crate) fn write_hex(n: u128, out: &mut [u8]) {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let last = out.len().saturating_sub(1);
    for (i, at) in out.iter_mut().enumerate() {
        let shift = u32::try_from(4 * (last - i)).unwrap_or(u32::MAX);
        *at = DIGITS[(n.checked_shr(shift).unwrap_or(0) & 0xf) as usize];
    }
}

/// `chain` as a W3C trace id (32 lower-case hex digits), if it is one or a 16-digit chain
/// (left-padded); None for a chain of another form (one that came from a queue's writer).
pub fn trace_id(chain: &str) -> Option<String> {
    if !traceable(chain) {
        return None;
    }
    let mut id = String::with_capacity(32);
    id.extend(std::iter::repeat_n('0', 32 - chain.len()));
    id.push_str(chain);
    Some(id)
}

/// [`trace_id`] as its 16 bytes, read without a string in between (every exported span names
/// its trace).
pub fn trace_id_bytes(chain: &str) -> Option<[u8; 16]> {
    if !traceable(chain) {
        return None;
    }
    let mut n: u128 = 0;
    for &c in chain.as_bytes() {
        let digit = if c.is_ascii_digit() {
            c - b'0'
        } else {
            c - b'a' + 10
        };
        n = (n << 4) | u128::from(digit);
    }
    Some(n.to_be_bytes())
}

/// The length of a `traceparent` value of version 00.
pub const HEADER_BYTES: usize = 55;

/// The `traceparent` value of `chain` with parent id `span` (sampled), if the chain is a trace
/// id ([`trace_id`]): written in place, as every answer carries one.
pub fn header_bytes(chain: &str, span: u64) -> Option<[u8; HEADER_BYTES]> {
    if !traceable(chain) {
        return None;
    }
    let mut h = [b'0'; HEADER_BYTES];
    h[2] = b'-';
    h[35 - chain.len()..35].copy_from_slice(chain.as_bytes());
    h[35] = b'-';
    write_hex(u128::from(span.max(1)), &mut h[36..52]);
    h[52] = b'-';
    h[54] = b'1';
    Some(h)
}

/// A new span id: a random non-zero 64-bit number.
pub fn new_span() -> u64 {
    crate::random::u64().max(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// [`header_bytes`] as text.
    fn header(chain: &str, span: u64) -> Option<String> {
        header_bytes(chain, span).map(|h| String::from_utf8(h.to_vec()).unwrap())
    }

    const ID: &str = "4bf92f3577b34da6a3ce929d0e0e4736";

    #[test]
    fn a_well_formed_traceparent_names_its_trace() {
        let v = format!("00-{ID}-00f067aa0ba902b7-01");
        assert_eq!(
            parse(v.as_bytes()),
            Some((ID.to_string(), 0x00f0_67aa_0ba9_02b7))
        );
        let id = |v: &str| parse(v.as_bytes()).map(|(c, _)| c);
        // Spaces and tabs around it are no part of it; a later version may add fields.
        assert_eq!(id(&format!(" \t{v} ")).as_deref(), Some(ID));
        let later = format!("cc-{ID}-00f067aa0ba902b7-01-what-comes-next");
        assert_eq!(id(&later).as_deref(), Some(ID));
        // A 16-digit chain, padded, is named in its own form again.
        let short = "a3ce929d0e0e4736";
        let h = header(short, 7).unwrap();
        assert_eq!(h, format!("00-0000000000000000{short}-0000000000000007-01"));
        assert_eq!(id(&h).as_deref(), Some(short));
        assert_eq!(
            header(ID, 0).unwrap(),
            format!("00-{ID}-0000000000000001-01")
        );
    }

    #[test]
    fn hex_digits_are_written_in_place_and_zero_past_a_u128() {
        let mut b = [0u8; 36];
        write_hex(0xabc, &mut b[..4]);
        assert_eq!(&b[..4], b"0abc");
        write_hex(u128::MAX, &mut b);
        assert_eq!(&b[..4], b"0000");
        assert_eq!(&b[4..], "f".repeat(32).as_bytes());
    }

    #[test]
    fn a_trace_ids_bytes_are_its_digits() {
        for c in [ID, "a3ce929d0e0e4736", "1", &"f".repeat(32), "00ab"] {
            let want = hex::decode(trace_id(c).unwrap()).unwrap();
            assert_eq!(trace_id_bytes(c).unwrap().to_vec(), want, "{c}");
        }
        for c in ["my-chain", "", &"a".repeat(33), &"0".repeat(16), "ABCD"] {
            assert_eq!(trace_id_bytes(c), None, "{c:?}");
        }
    }

    #[test]
    fn hostile_traceparents_are_ignored() {
        let long = format!("cc-{ID}-00f067aa0ba902b7-01-{}", "x".repeat(600));
        let bad = [
            String::new(),
            "garbage".into(),
            format!("00-{}-00f067aa0ba902b7-01", ID.to_uppercase()),
            format!("00-{}-00f067aa0ba902b7-01", "0".repeat(32)),
            format!("00-{ID}-0000000000000000-01"),
            format!("ff-{ID}-00f067aa0ba902b7-01"),
            format!("00-{ID}-00f067aa0ba902b7-01-extra"),
            format!("cc-{ID}-00f067aa0ba902b7-01x"),
            format!("0g-{ID}-00f067aa0ba902b7-01"),
            format!("00_{ID}_00f067aa0ba902b7_01"),
            format!("00-{}-00f067aa0ba902b7-01", &ID[..31]),
            format!("00-{ID}\n-00f067aa0ba902b-01"),
            format!("00-{}é-00f067aa0ba902b7-01", &ID[..30]),
            long,
        ];
        for v in bad {
            assert_eq!(parse(v.as_bytes()), None, "{v:?}");
        }
        assert_eq!(parse(&[0xff; 55]), None);
        // A chain that is no trace id has no header.
        for c in ["my-chain", "", &"a".repeat(33), &"0".repeat(16)] {
            assert_eq!(header(c, 1), None, "{c:?}");
        }
    }
}
