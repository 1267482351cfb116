//! The globals a native script does not have, and the sentence that says so.
//!
//! They are nil, as in Luau's own sandbox, so that `type(load)` is `"nil"` and `if load then`
//! takes the branch a script author expects. Calling or indexing one fails with Luau's
//! `attempt to call a nil value` or `attempt to index nil with 'open'`, which names no global:
//! [`explain`] finds the removed name on the failing line of the script and adds
//! ``` `dofile` is not available in native scripts``` and what to use instead.

/// Globals that load code, reach other environments or the process, with what to do instead.
pub const GLOBALS: [(&str, &str); 9] = [
    ("loadstring", "; scripts cannot load code"),
    ("load", "; scripts cannot load code"),
    (
        "dofile",
        "; use require(\"./lib/name\") for a module of scripts/",
    ),
    ("getfenv", "; use _G for the invocation's globals"),
    ("setfenv", "; use _G for the invocation's globals"),
    ("module", "; return a table of entry points instead"),
    (
        "io",
        "; use native.bucket for objects and native.log or print for output",
    ),
    ("debug", ""),
    (
        "package",
        "; require(\"./lib/name\") loads a module of scripts/",
    ),
];

/// Functions of `os` beyond `clock`, `date`, `difftime` and `time` that Lua users may try.
pub const OS: [(&str, &str); 7] = [
    ("execute", ""),
    ("exit", "; return from the entry point, or raise an error"),
    ("getenv", "; read the tenant's settings from native.config"),
    ("remove", "; use native.bucket.<Name>.delete"),
    ("rename", ""),
    ("tmpname", ""),
    ("setlocale", ""),
];

/// The error message `message` of script `script` (`<script>.luau:<line>: ...`), with a
/// sentence added when it is Luau's error for calling or indexing nil and the failing line of
/// `source` uses a removed global there; `None` when there is nothing to add.
pub fn explain(message: &str, script: &str, source: &str) -> Option<String> {
    let rest = message.strip_prefix(script)?.strip_prefix(".luau:")?;
    let (line, what) = rest.split_once(": ")?;
    let line: usize = line.parse().ok()?;
    let indexed = what.strip_prefix("attempt to index nil with '");
    if what != "attempt to call a nil value" && indexed.is_none() {
        return None;
    }
    let text = source.lines().nth(line.checked_sub(1)?)?;
    let (name, hint) = used_on(text)?;
    Some(format!(
        "{message}: `{name}` is not available in native scripts{hint}"
    ))
}

/// The first removed global (or `os.<function>`) that `line` uses as a free name, with its hint.
fn used_on(line: &str) -> Option<(String, &'static str)> {
    let code = line.split("--").next().unwrap_or(line);
    for (at, _) in code.char_indices() {
        let before = code[..at].chars().next_back();
        if before.is_some_and(|c| c.is_alphanumeric() || c == '_' || c == '.' || c == ':') {
            continue;
        }
        let tail = &code[at..];
        let word_end = tail
            .find(|c: char| !(c.is_alphanumeric() || c == '_'))
            .unwrap_or(tail.len());
        let word = &tail[..word_end];
        if let Some((name, hint)) = GLOBALS.iter().find(|(n, _)| *n == word) {
            return Some((name.to_string(), hint));
        }
        let field = (word == "os")
            .then(|| tail[word_end..].trim_start().strip_prefix('.'))
            .flatten()
            .map(str::trim_start);
        if let Some(field) = field {
            let end = field
                .find(|c: char| !(c.is_alphanumeric() || c == '_'))
                .unwrap_or(field.len());
            if let Some((f, hint)) = OS.iter().find(|(n, _)| *n == &field[..end]) {
                return Some((format!("os.{f}"), hint));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_or_index_of_a_removed_global_is_explained() {
        let src =
            "local x = 1\n  local m = dofile(\"m\")\nlocal f = io.open('x')\nos.execute('ls')\n";
        assert_eq!(
            explain("s.luau:2: attempt to call a nil value", "s", src).unwrap(),
            "s.luau:2: attempt to call a nil value: `dofile` is not available in native scripts; \
             use require(\"./lib/name\") for a module of scripts/"
        );
        assert!(
            explain("s.luau:3: attempt to index nil with 'open'", "s", src)
                .unwrap()
                .ends_with("`io` is not available in native scripts; use native.bucket for objects and native.log or print for output")
        );
        assert!(explain("s.luau:4: attempt to call a nil value", "s", src)
            .unwrap()
            .ends_with("`os.execute` is not available in native scripts"));
    }

    #[test]
    fn other_errors_and_other_names_are_left_alone() {
        let src = "local t = {}\nt.dofile(1)\nlocal x = my_io.open()\nerror('x')\nfoo()\n";
        for (msg, why) in [
            (
                "s.luau:2: attempt to call a nil value",
                "a field named dofile",
            ),
            (
                "s.luau:3: attempt to index nil with 'open'",
                "a longer name",
            ),
            ("s.luau:4: x", "not a nil call"),
            ("s.luau:5: attempt to call a nil value", "no removed name"),
            ("s.luau:99: attempt to call a nil value", "no such line"),
            (
                "other.luau:2: attempt to call a nil value",
                "another script",
            ),
        ] {
            assert_eq!(explain(msg, "s", src), None, "{why}");
        }
    }
}
