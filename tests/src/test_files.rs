//! The integration-test binaries' module lists kept whole: each crate's tests are one binary
//! (`autotests = false`) whose `main.rs` declares every file of its folder as a module, beside the
//! few that are binaries of their own (a `[[test]]` of the crate's `Cargo.toml`), so a file that
//! is neither would compile into nothing and never run. [`undeclared`] finds such files.

use std::collections::BTreeSet;
use std::path::Path;

/// The test files in `dir` (the crate's `tests/`) that `main`, the text of `dir/main.rs`, does
/// not declare and `cargo_toml`, the crate's manifest, does not make a binary of their own: each
/// `NAME.rs` beside `main.rs` and each `NAME/mod.rs` must be named by a `mod NAME;` line (or by
/// the `#[path = "..."]` before one), or by a `path = "tests/NAME.rs"` line. Sorted, as paths
/// relative to `dir`.
pub fn undeclared(dir: &Path, main: &str, cargo_toml: &str) -> Vec<String> {
    let mut declared: BTreeSet<String> = cargo_toml
        .lines()
        .filter_map(|l| l.trim().strip_prefix("path = \"tests/"))
        .filter_map(|l| l.strip_suffix('"'))
        .map(str::to_string)
        .collect();
    let mut path = None;
    for line in main.lines().map(str::trim) {
        if let Some(p) = line
            .strip_prefix("#[path = \"")
            .and_then(|r| r.strip_suffix("\"]"))
        {
            path = Some(p.to_string());
            continue;
        }
        let decl = line.strip_prefix("pub ").unwrap_or(line);
        if let Some(name) = decl.strip_prefix("mod ").and_then(|r| r.strip_suffix(';')) {
            match path.take() {
                Some(p) => declared.insert(p),
                None => {
                    declared.insert(format!("{name}.rs"));
                    declared.insert(format!("{name}/mod.rs"))
                }
            };
        } else if !line.starts_with("#[") && !line.starts_with("//") {
            path = None;
        }
    }
    let mut missing = Vec::new();
    let entries = std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    for entry in entries {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        let file = if entry.file_type().unwrap().is_dir() {
            if !entry.path().join("mod.rs").exists() {
                continue;
            }
            format!("{name}/mod.rs")
        } else if name.ends_with(".rs") && name != "main.rs" {
            name
        } else {
            continue;
        };
        if !declared.contains(&file) {
            missing.push(file);
        }
    }
    missing.sort();
    missing
}

#[cfg(test)]
mod tests {
    use super::undeclared;

    #[test]
    fn a_file_that_main_does_not_declare_is_named() {
        let dir = tempfile::tempdir().unwrap();
        for f in ["a.rs", "b.rs", "c.rs", "renamed.rs", "notes.md"] {
            std::fs::write(dir.path().join(f), "").unwrap();
        }
        std::fs::create_dir(dir.path().join("helpers")).unwrap();
        std::fs::write(dir.path().join("helpers/mod.rs"), "").unwrap();
        std::fs::create_dir(dir.path().join("data")).unwrap();
        let main = "//! Tests.\nmod a;\n#[cfg(feature = \"aws\")]\npub mod helpers;\n\
                    #[path = \"renamed.rs\"]\nmod other;\nfn main() {}\n";
        std::fs::write(dir.path().join("main.rs"), main).unwrap();
        assert_eq!(undeclared(dir.path(), main, ""), ["b.rs", "c.rs"]);
        let all = format!("{main}mod b;\n");
        let toml = "[[test]]\nname = \"c\"\npath = \"tests/c.rs\"\n";
        assert_eq!(undeclared(dir.path(), &all, ""), ["c.rs"]);
        assert!(undeclared(dir.path(), &all, toml).is_empty());
    }
}
