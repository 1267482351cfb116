//! A light Luau tokenizer for `native check`'s lints: names, strings, numbers and symbols with
//! their line and column, comments dropped. It does not judge the source (the compiler does):
//! on text it cannot read it goes on with the next character.

/// What a token is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A name or keyword.
    Name,
    /// A string literal; the token's text is its value when it has no escapes or
    /// interpolation (else [`Kind::Other`]).
    Str,
    /// A number.
    Number,
    /// A symbol (`.`, `(`, `==`, `->`, ...).
    Symbol,
    /// A string whose value is not plain (escapes, interpolation).
    Other,
}

/// One token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tok {
    /// Its kind.
    pub kind: Kind,
    /// Its text (a string's value, without quotes).
    pub text: String,
    /// Line, from 1.
    pub line: usize,
    /// Column in characters, from 1.
    pub col: usize,
}

impl Tok {
    /// Whether it is the symbol or keyword `s`.
    pub fn is(&self, s: &str) -> bool {
        matches!(self.kind, Kind::Name | Kind::Symbol) && self.text == s
    }
}

/// Luau's keywords: names that are never variables.
pub const KEYWORDS: [&str; 22] = [
    "and", "break", "do", "else", "elseif", "end", "false", "for", "function", "if", "in", "local",
    "nil", "not", "or", "repeat", "return", "then", "true", "until", "while", "continue",
];

/// Symbols of more than one character, longest first.
const LONG: [&str; 14] = [
    "...", "==", "~=", "<=", ">=", "..", "->", "::", "+=", "-=", "*=", "/=", "%=", "^=",
];

/// The tokens of `src`.
pub fn lex(src: &str) -> Vec<Tok> {
    let chars: Vec<char> = src.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line, mut col) = (0, 1, 1);
    // Advances over `n` characters, counting lines.
    let step = |i: &mut usize, line: &mut usize, col: &mut usize, n: usize| {
        for _ in 0..n {
            if *i < chars.len() {
                if chars[*i] == '\n' {
                    *line += 1;
                    *col = 1;
                } else {
                    *col += 1;
                }
                *i += 1;
            }
        }
    };
    while i < chars.len() {
        let c = chars[i];
        let (l0, c0) = (line, col);
        let rest = |k: usize| chars.get(i + k).copied();
        if c.is_whitespace() {
            step(&mut i, &mut line, &mut col, 1);
        } else if c == '-' && rest(1) == Some('-') {
            step(&mut i, &mut line, &mut col, 2);
            if let Some(level) = long_open(&chars, i) {
                let n = long_len(&chars, i, level);
                step(&mut i, &mut line, &mut col, n);
            } else {
                while i < chars.len() && chars[i] != '\n' {
                    step(&mut i, &mut line, &mut col, 1);
                }
            }
        } else if c == '[' && long_open(&chars, i).is_some() {
            let level = long_open(&chars, i).unwrap_or(0);
            let n = long_len(&chars, i, level);
            let open = level + 2;
            let body: String = chars[i + open..(i + n).saturating_sub(open).max(i + open)]
                .iter()
                .collect();
            let body = body.strip_prefix('\n').map(str::to_string).unwrap_or(body);
            step(&mut i, &mut line, &mut col, n);
            out.push(Tok {
                kind: Kind::Str,
                text: body,
                line: l0,
                col: c0,
            });
        } else if c == '"' || c == '\'' || c == '`' {
            let mut j = i + 1;
            let mut plain = true;
            let mut text = String::new();
            while j < chars.len() && chars[j] != c && chars[j] != '\n' {
                if chars[j] == '\\' {
                    plain = false;
                    j += 1;
                } else if c == '`' && chars[j] == '{' {
                    plain = false;
                }
                if j < chars.len() {
                    text.push(chars[j]);
                }
                j += 1;
            }
            let n = (j + 1).min(chars.len()) - i;
            step(&mut i, &mut line, &mut col, n);
            let kind = if plain { Kind::Str } else { Kind::Other };
            out.push(Tok {
                kind,
                text,
                line: l0,
                col: c0,
            });
        } else if c.is_alphabetic() || c == '_' {
            let mut j = i;
            while j < chars.len() && (chars[j].is_alphanumeric() || chars[j] == '_') {
                j += 1;
            }
            let text: String = chars[i..j].iter().collect();
            let n = j - i;
            step(&mut i, &mut line, &mut col, n);
            out.push(Tok {
                kind: Kind::Name,
                text,
                line: l0,
                col: c0,
            });
        } else if c.is_ascii_digit() || (c == '.' && rest(1).is_some_and(|d| d.is_ascii_digit())) {
            let mut j = i;
            while j < chars.len()
                && (chars[j].is_alphanumeric()
                    || chars[j] == '.'
                    || chars[j] == '_'
                    || ((chars[j] == '+' || chars[j] == '-')
                        && matches!(chars[j - 1], 'e' | 'E')
                        && !chars[i..j].iter().any(|c| *c == 'x' || *c == 'X')))
            {
                j += 1;
            }
            let text: String = chars[i..j].iter().collect();
            let n = j - i;
            step(&mut i, &mut line, &mut col, n);
            out.push(Tok {
                kind: Kind::Number,
                text,
                line: l0,
                col: c0,
            });
        } else {
            let long = LONG.iter().find(|s| {
                s.chars()
                    .enumerate()
                    .all(|(k, sc)| chars.get(i + k) == Some(&sc))
            });
            let text = long.map_or_else(|| c.to_string(), |s| s.to_string());
            let n = text.chars().count();
            step(&mut i, &mut line, &mut col, n);
            out.push(Tok {
                kind: Kind::Symbol,
                text,
                line: l0,
                col: c0,
            });
        }
    }
    out
}

/// The level of a long bracket opening at `i` (`[[` is 0, `[==[` is 2), if one does.
fn long_open(chars: &[char], i: usize) -> Option<usize> {
    if chars.get(i) != Some(&'[') {
        return None;
    }
    let mut j = i + 1;
    while chars.get(j) == Some(&'=') {
        j += 1;
    }
    (chars.get(j) == Some(&'[')).then_some(j - i - 1)
}

/// The length of the long bracket at `i` of `level`, through its close (or the end).
fn long_len(chars: &[char], i: usize, level: usize) -> usize {
    let mut j = i + level + 2;
    while j < chars.len() {
        if chars[j] == ']'
            && chars.get(j + level + 1) == Some(&']')
            && (1..=level).all(|k| chars.get(j + k) == Some(&'='))
        {
            return j + level + 2 - i;
        }
        j += 1;
    }
    chars.len() - i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_with_positions_comments_and_strings() {
        let toks =
            lex("local x = 'a' -- c\n--[[ long\n]] nativ.log(\"hi\", [[raw]], `i{x}`, 1e-3)");
        let shown: Vec<(Kind, &str, usize, usize)> = toks
            .iter()
            .map(|t| (t.kind, t.text.as_str(), t.line, t.col))
            .collect();
        assert_eq!(
            shown,
            [
                (Kind::Name, "local", 1, 1),
                (Kind::Name, "x", 1, 7),
                (Kind::Symbol, "=", 1, 9),
                (Kind::Str, "a", 1, 11),
                (Kind::Name, "nativ", 3, 4),
                (Kind::Symbol, ".", 3, 9),
                (Kind::Name, "log", 3, 10),
                (Kind::Symbol, "(", 3, 13),
                (Kind::Str, "hi", 3, 14),
                (Kind::Symbol, ",", 3, 18),
                (Kind::Str, "raw", 3, 20),
                (Kind::Symbol, ",", 3, 27),
                (Kind::Other, "i{x}", 3, 29),
                (Kind::Symbol, ",", 3, 35),
                (Kind::Number, "1e-3", 3, 37),
                (Kind::Symbol, ")", 3, 41),
            ]
        );
    }
}
