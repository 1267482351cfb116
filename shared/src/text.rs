//! Text helpers every floor may use: cutting what callers, partners and scripts hand us to a
//! size that is safe to echo in an error or a log line, and suggesting the name meant.

pub mod suggest;

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
