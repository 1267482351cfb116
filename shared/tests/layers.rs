//! The core's layering, kept true: every `crate::` path outside test code must point to a
//! module on a floor below the module that names it. The floors are the `// Floor N` headings
//! of `src/lib.rs`, stated there once; `ARCHITECTURE.md` explains them and must map every
//! module. A failure names the file, the line, the path and both floors.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Pairs that never meet, whatever their floors: what callers reach (inbound HTTP) and what
/// scripts call (outbound HTTP, the vault) are different rooms.
const NEVER: &[(&str, &str)] = &[("inbound", "outbound"), ("outbound", "inbound")];

#[test]
fn every_module_uses_only_the_floors_below_its_own() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let floors = floors_of(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
    assert!(
        floors.len() > 10,
        "src/lib.rs declares too few modules under `// Floor N` headings: {floors:?}"
    );
    let mut wrong = Vec::new();
    let mut files = 0;
    for file in core_files(&src) {
        let rel = file
            .strip_prefix(&src)
            .unwrap()
            .to_string_lossy()
            .replace('\\', "/");
        let text = std::fs::read_to_string(&file).unwrap();
        wrong.extend(check_file(&rel, &text, &floors));
        files += 1;
    }
    assert!(files > 50, "only {files} files of the core were read");
    assert!(
        wrong.is_empty(),
        "{} import(s) point up or sideways (a module may use only floors below its own; move \
         the shared name down to a floor below all of its users, see ARCHITECTURE.md):\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

#[test]
fn architecture_md_maps_every_module() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let floors = floors_of(&std::fs::read_to_string(root.join("shared/src/lib.rs")).unwrap());
    let doc = std::fs::read_to_string(root.join("ARCHITECTURE.md")).unwrap();
    let missing: Vec<&String> = floors
        .keys()
        .filter(|m| !doc.contains(&format!("`{m}`")))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md's code map does not name these modules of shared/src/lib.rs: {missing:?}"
    );
}

#[test]
fn the_check_catches_a_planted_back_edge() {
    // GIVEN floors where `barrier` sits above `timer`
    let floors = floors_of(
        "// Floor 0\npub mod error;\n// Floor 3\npub mod timer;\n// Floor 4\npub mod barrier;\n\
         pub mod batch;\n// Floor 6\npub mod outbound;\n// Floor 10\npub mod inbound;\n",
    );
    // WHEN the timer names the barrier, in a use, a brace group and a path in code
    let planted = "use crate::error::Error;\nuse crate::{barrier::Meta, error};\n\
                   fn f() { crate::barrier::check_id(\"x\"); }\n";
    let wrong = check_file("timer/mod.rs", planted, &floors);
    // THEN each is named with its file, line and both floors
    assert_eq!(wrong.len(), 2, "{wrong:?}");
    assert!(wrong[0].starts_with("shared/src/timer/mod.rs:2: `crate::barrier`"));
    assert!(wrong[0].contains("`timer` (floor 3) uses `barrier` (floor 4)"));
    assert!(wrong[1].starts_with("shared/src/timer/mod.rs:3:"));
    // AND a module beside its own floor is refused too, as are the pairs that never meet
    assert_eq!(
        check_file("batch/x.rs", "use crate::barrier;", &floors).len(),
        1
    );
    assert_eq!(
        check_file("inbound/x.rs", "use crate::outbound::X;", &floors).len(),
        1
    );
    // AND comments, strings, `$crate`, and test code do not count
    let quiet = "// crate::barrier\n/* crate::barrier */ fn g() { let _ = \"crate::barrier\"; }\n\
                 macro_rules! m { () => { $crate::barrier::x() } }\n\
                 #[cfg(test)]\nmod tests { use crate::barrier::Meta; }\n\
                 fn h<'a>(c: char) -> bool { c == '{' }\n";
    assert!(check_file("timer/mod.rs", quiet, &floors).is_empty());
}

/// Each module of `lib.rs` and its floor, from the `// Floor N` heading above it.
fn floors_of(lib: &str) -> BTreeMap<String, u32> {
    let mut floor = None;
    let mut out = BTreeMap::new();
    for line in lib.lines().map(str::trim) {
        if let Some(rest) = line.strip_prefix("// Floor ") {
            let n: String = rest.chars().take_while(char::is_ascii_digit).collect();
            floor = n.parse().ok();
        } else if let Some(name) = line
            .strip_prefix("pub mod ")
            .or_else(|| line.strip_prefix("mod "))
            .and_then(|r| r.strip_suffix(';'))
        {
            let floor = floor.unwrap_or_else(|| {
                panic!("src/lib.rs: module `{name}` is declared before any `// Floor N` heading")
            });
            out.insert(name.to_string(), floor);
        }
    }
    out
}

/// Every `.rs` file of the core but `lib.rs` and the files only tests compile.
fn core_files(src: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs")
                && path != src.join("lib.rs")
                && !test_only(&path)
            {
                out.push(path);
            }
        }
    }
    out.sort();
    out
}

/// Whether the parent module declares this file under `#[cfg(test)]`.
fn test_only(path: &Path) -> bool {
    let stem = path.file_stem().unwrap().to_string_lossy().into_owned();
    let dir = path.parent().unwrap();
    // The parent is `dir.rs` beside the folder, `dir/mod.rs`, or `mod.rs`/`lib.rs` of this dir.
    let candidates = [
        dir.with_extension("rs"),
        dir.join("mod.rs"),
        dir.join("lib.rs"),
    ];
    candidates.iter().filter(|p| p.as_path() != path).any(|p| {
        std::fs::read_to_string(p).is_ok_and(|text| {
            let lines: Vec<&str> = text.lines().map(str::trim).collect();
            lines.windows(2).any(|w| {
                w[0] == "#[cfg(test)]"
                    && (w[1] == format!("mod {stem};") || w[1] == format!("pub mod {stem};"))
            })
        })
    })
}

/// The wrong `crate::` paths of one file (`rel`, relative to `src/`), one line each.
fn check_file(rel: &str, text: &str, floors: &BTreeMap<String, u32>) -> Vec<String> {
    let own = rel
        .split('/')
        .next()
        .unwrap()
        .trim_end_matches(".rs")
        .to_string();
    let Some(&own_floor) = floors.get(&own) else {
        return vec![format!(
            "shared/src/{rel}: module `{own}` has no floor in src/lib.rs"
        )];
    };
    let code = without_tests(&code_only(text));
    let mut wrong = Vec::new();
    for (line, used) in crate_paths(&code) {
        if used == own {
            continue;
        }
        let Some(&floor) = floors.get(&used) else {
            continue; // a re-export of lib.rs (`Error`, `Result`)
        };
        let never = NEVER.iter().any(|&(a, b)| a == own && b == used);
        if floor >= own_floor || never {
            let why = if never {
                format!("`{own}` and `{used}` never meet")
            } else {
                format!("`{own}` (floor {own_floor}) uses `{used}` (floor {floor})")
            };
            wrong.push(format!("shared/src/{rel}:{line}: `crate::{used}`: {why}"));
        }
    }
    wrong
}

/// The first segment of every `crate::` path, with its line; `crate::{a::b, c}` gives a and c.
fn crate_paths(code: &str) -> Vec<(usize, String)> {
    let bytes = code.as_bytes();
    let mut out = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::").map(|i| i + from) {
        from = at + "crate::".len();
        let before = at.checked_sub(1).map(|i| bytes[i]);
        if before.is_some_and(|b| b == b'$' || b == b'_' || b.is_ascii_alphanumeric()) {
            continue;
        }
        let line = code[..at].matches('\n').count() + 1;
        let rest = &code[from..];
        if let Some(group) = rest.strip_prefix('{') {
            let mut depth = 0;
            let mut segment_start = true;
            for (i, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => segment_start = true,
                    c if segment_start && (c.is_alphabetic() || c == '_') => {
                        out.push((line, ident_at(&group[i..])));
                        segment_start = false;
                    }
                    _ => {}
                }
            }
        } else {
            out.push((line, ident_at(rest)));
        }
    }
    out
}

fn ident_at(s: &str) -> String {
    s.chars()
        .take_while(|c| c.is_alphanumeric() || *c == '_')
        .collect()
}

/// `text` with comments and the insides of string and character literals blanked (line breaks
/// kept, so that line numbers stay).
fn code_only(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                out.push(' ');
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && (next == Some('#') || next == Some('"')) && !ident_before(&chars, i) {
            // A raw string: r"..." or r#"..."#.
            let mut j = i + 1;
            let mut hashes = 0;
            while chars.get(j) == Some(&'#') {
                hashes += 1;
                j += 1;
            }
            if chars.get(j) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close: Vec<char> = std::iter::once('"')
                .chain(std::iter::repeat_n('#', hashes))
                .collect();
            out.extend(std::iter::repeat_n(' ', j + 1 - i));
            i = j + 1;
            while i < chars.len() && !chars[i..].starts_with(&close) {
                out.push(blank(chars[i]));
                i += 1;
            }
            out.extend(std::iter::repeat_n(' ', close.len()));
            i += close.len();
        } else if c == '"' {
            out.push(' ');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push(' ');
            i += 1;
        } else if c == '\'' {
            // A character literal ('x', '\n', '\u{..}'), or a lifetime ('a), left as it is.
            let end = if next == Some('\\') {
                chars[i + 2..]
                    .iter()
                    .position(|&c| c == '\'')
                    .map(|p| i + 2 + p)
            } else if chars.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            match end {
                Some(end) => {
                    out.extend(std::iter::repeat_n(' ', end + 1 - i));
                    i = end + 1;
                }
                None => {
                    out.push(c);
                    i += 1;
                }
            }
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn ident_before(chars: &[char], i: usize) -> bool {
    i > 0 && (chars[i - 1].is_alphanumeric() || chars[i - 1] == '_')
}

/// `code` (comments and literals already blanked) without the items under `#[cfg(test)]`.
fn without_tests(code: &str) -> String {
    let mut out = code.to_string();
    let mut from = 0;
    while let Some(at) = out[from..].find("#[cfg(test)]").map(|i| i + from) {
        let bytes = out.as_bytes();
        let mut i = at + "#[cfg(test)]".len();
        let mut depth = 0usize;
        let end = loop {
            match bytes.get(i) {
                None => break bytes.len(),
                Some(b';') if depth == 0 => break i + 1,
                Some(b'{') => depth += 1,
                Some(b'}') => {
                    depth -= 1;
                    if depth == 0 {
                        break i + 1;
                    }
                }
                _ => {}
            }
            i += 1;
        };
        let blanked: String = out[at..end]
            .chars()
            .map(|c| if c == '\n' { '\n' } else { ' ' })
            .collect();
        out.replace_range(at..end, &blanked);
        from = end;
    }
    out
}
