//! Text helpers every floor may use: cutting what callers, partners and scripts hand us to a
//! size that is safe to echo in an error or a log line, and suggesting the name meant.

pub mod suggest;

/// The most bytes of a caller's input (a path, a method name) that an error answer or a log
/// record echoes.
pub const MAX_ECHO_BYTES: usize = 200;

/// `input` as an error may echo it: cut to [`MAX_ECHO_BYTES`] (noting its full length),
/// without copying the rest.
pub fn echo(input: &str) -> String {
    let mut end = input.len().min(MAX_ECHO_BYTES);
    while !input.is_char_boundary(end) {
        end -= 1;
    }
    if end == input.len() {
        return input.to_string();
    }
    format!("{} [cut: {} bytes in all]", &input[..end], input.len())
}

/// `text` cut to at most `max` bytes (on a character boundary), noting its full length.
pub fn cut_text(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let total = text.len();
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    text.push_str(&format!(" [cut: {total} bytes in all]"));
    text
}

#[cfg(test)]
mod tests {
    use super::{echo, MAX_ECHO_BYTES};

    #[test]
    fn an_echo_is_cut_on_a_character_and_says_how_long_the_input_was() {
        assert_eq!(echo("/v1/x"), "/v1/x");
        let long = format!("/{}", "é".repeat(40_000));
        let e = echo(&long);
        assert!(e.len() < MAX_ECHO_BYTES + 40, "{} bytes", e.len());
        assert!(e.ends_with(" [cut: 80001 bytes in all]"), "{e}");
    }
}
