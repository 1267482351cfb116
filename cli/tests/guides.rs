//! The guides run as written: every shell and Luau block of `README.md`, `docs/*.md` and
//! `examples/*/README.md`, in order, with the built `native` on `PATH`.
//!
//! # How a guide's blocks are treated (the convention for writers)
//!
//! - A ```` ```sh ```` (or `bash`) block is run. The blocks of one guide run in one `bash`
//!   session (`set -e`), in order, so a `cd` or a variable carries on to the next block. Each
//!   guide starts in a fresh scratch folder holding a copy of `examples/`, which stands for the
//!   repository's root; `HOME` and `TMPDIR` are inside it. Background jobs (`native serve &`) are
//!   stopped at the end.
//! - A command line that ends in `# => TEXT` is checked: its standard output must contain TEXT.
//!   It runs once, as a reader pastes it: a block whose result a background server is still
//!   making waits for it in a way the reader sees (`native get --wait 10 ...`).
//! - A ```` ```lua ```` (or `luau`) block is compiled by `native check`, as a script of its own
//!   (not linted: `--!nolint` is put before it, since a snippet names what the guide around it
//!   defines).
//! - ``File `PATH`:`` alone on the line before a block (any language) names the file the reader
//!   saves the block as: the block is written to PATH, relative to where the shell session
//!   stands at that point, instead; a Luau block written there is then run by the shell blocks
//!   that follow. (An HTML comment naming it, which readers do not see, is refused.)
//! - `<!-- not run: REASON -->` on the line before a block skips it; the reason is printed with
//!   the figures. Use it only for what cannot run here (AWS, installing software).
//!
//! Blocks of other languages (`json`, untyped) are text. The figures (blocks run, compiled and
//! marked) are printed on stderr and written to `target/tmp/guides.txt`, which `tests/run.sh`
//! shows.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use crate::support::{native_bin, root};

/// Every guide, in a stable order: the README, every `docs/*.md`, every example's README.
fn guides() -> Vec<PathBuf> {
    let mut out = vec![PathBuf::from("README.md")];
    for dir in ["docs", "examples"] {
        let mut found: Vec<PathBuf> = std::fs::read_dir(root().join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter_map(|p| {
                let rel = p.strip_prefix(root()).unwrap().to_path_buf();
                if dir == "docs" {
                    (p.extension().is_some_and(|e| e == "md")).then_some(rel)
                } else {
                    p.join("README.md").is_file().then(|| rel.join("README.md"))
                }
            })
            .collect();
        found.sort();
        out.extend(found);
    }
    out
}

/// What the line before a block asks.
#[derive(Debug, Clone, PartialEq)]
enum Mark {
    None,
    File(String),
    /// `<!-- file: PATH -->`: the reader cannot see which file it is.
    Hidden(String),
    NotRun(String),
}

/// A fenced block.
#[derive(Debug)]
struct Block {
    line: usize,
    lang: String,
    mark: Mark,
    body: String,
}

/// The fenced blocks of a markdown text (fences may be indented, as in lists).
fn blocks(text: &str) -> Vec<Block> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < lines.len() {
        let t = lines[i].trim_start();
        if let Some(lang) = t.strip_prefix("```") {
            let indent = lines[i].len() - t.len();
            let start = i;
            let mut body = String::new();
            i += 1;
            while i < lines.len() && !lines[i].trim_start().starts_with("```") {
                let l = lines[i];
                body.push_str(
                    l.get(indent.min(l.len() - l.trim_start().len())..)
                        .unwrap_or(""),
                );
                body.push('\n');
                i += 1;
            }
            let prev = if start > 0 {
                lines[start - 1].trim()
            } else {
                ""
            };
            let mark = if let Some(r) = directive(prev, "not run:") {
                Mark::NotRun(r)
            } else if let Some(f) = directive(prev, "file:") {
                Mark::Hidden(f)
            } else if let Some(f) = file_label(prev) {
                Mark::File(f)
            } else {
                Mark::None
            };
            out.push(Block {
                line: start + 1,
                lang: lang.trim().to_string(),
                mark,
                body,
            });
        }
        i += 1;
    }
    out
}

/// The path of a ``File `PATH`:`` line.
fn file_label(line: &str) -> Option<String> {
    let path = line.strip_prefix("File `")?.strip_suffix("`:")?;
    (!path.is_empty() && !path.contains('`')).then(|| path.to_string())
}

fn directive(line: &str, name: &str) -> Option<String> {
    let inner = line.strip_prefix("<!--")?.strip_suffix("-->")?.trim();
    Some(inner.strip_prefix(name)?.trim().to_string())
}

fn is_shell(lang: &str) -> bool {
    matches!(lang, "sh" | "bash" | "shell")
}

fn is_luau(lang: &str) -> bool {
    matches!(lang, "lua" | "luau")
}

/// Quotes text for bash, in single quotes.
fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

/// Turns a shell block into the script's lines: `CMD # => TEXT` becomes a checked command.
fn shell(body: &str) -> String {
    let mut out = String::new();
    for line in body.lines() {
        match line.split_once("# => ") {
            Some((cmd, want)) if !cmd.trim().is_empty() => {
                let _ = writeln!(out, "__expect {} {}", quote(want.trim()), quote(cmd.trim()));
            }
            _ => {
                out.push_str(line);
                out.push('\n');
            }
        }
    }
    out
}

/// Runs each checked command once, as a reader pastes it: no retries.
const PRELUDE: &str = r#"set -e -o pipefail
trap 'kill $(jobs -p) 2>/dev/null || true; wait 2>/dev/null || true' EXIT
__expect() {
  local want=$1 cmd=$2 out
  out=$(eval "$cmd" 2>"$TMPDIR/expect.err") || true
  echo "$out"; cat "$TMPDIR/expect.err" >&2
  case "$out" in *"$want"*) return 0 ;; esac
  echo "guide: \`$cmd\` printed no \"$want\" (the text says it does)" >&2
  return 1
}
"#;

/// What running the guides counted.
#[derive(Default)]
struct Figures {
    run: usize,
    compiled: usize,
    marked: Vec<String>,
}

/// Copies a folder tree (the examples are small).
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

/// Runs `bash script` in `dir` with `native` on PATH, for at most `limit`.
fn run_bash(dir: &Path, script: &Path, bin: &Path, limit: Duration) -> (bool, String) {
    let path = format!(
        "{}:{}",
        bin.display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let out = dir.join("output.txt");
    let file = std::fs::File::create(&out).unwrap();
    let mut child = Command::new("bash")
        .arg(script)
        .current_dir(dir)
        .env("PATH", path)
        .env("HOME", dir)
        .env("TMPDIR", &tmp)
        .stdin(Stdio::null())
        .stdout(file.try_clone().unwrap())
        .stderr(file)
        .process_group(0)
        .spawn()
        .expect("cannot run bash");
    let started = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break Some(s);
        }
        if started.elapsed() > limit {
            let _ = Command::new("kill")
                .args(["-KILL", "--", &format!("-{}", child.id())])
                .status();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    // Whatever the script left in the background goes with it.
    let _ = Command::new("kill")
        .args(["-KILL", "--", &format!("-{}", child.id())])
        .stderr(Stdio::null())
        .status();
    let text = std::fs::read_to_string(&out).unwrap_or_default();
    match status {
        Some(s) => (s.success(), text),
        None => (false, format!("{text}\n(stopped after {limit:?})")),
    }
}

use std::os::unix::process::CommandExt as _;

#[test]
fn every_guide_runs_as_written() {
    let scratch = tempfile::tempdir().unwrap();
    // `native` on PATH, as `cargo install` would put it.
    let bin = scratch.path().join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::os::unix::fs::symlink(native_bin(), bin.join("native")).unwrap();
    // Luau blocks that are not written to a file are compiled as scripts of one tenant.
    let snippets = scratch.path().join("snippets");
    std::fs::create_dir_all(snippets.join("tenants/snippets/scripts")).unwrap();
    std::fs::write(snippets.join("deployment.json"), "{}").unwrap();
    std::fs::write(snippets.join("tenants/snippets/config.json"), "{}").unwrap();
    // Snippets are fragments that use the guide's names (`ev`, `batch`): compiled, not
    // type-checked (`native check` skips type errors of `nocheck` files; lints only warn).
    std::fs::write(snippets.join(".luaurc"), r#"{ "languageMode": "nocheck" }"#).unwrap();

    let mut fig = Figures::default();
    let mut failures = Vec::new();
    for guide in guides() {
        let text = std::fs::read_to_string(root().join(&guide)).unwrap();
        let name = guide.display().to_string();
        let mut script = String::from(PRELUDE);
        let mut shell_blocks = 0;
        for (n, b) in blocks(&text).into_iter().enumerate() {
            let at = format!("{name}:{}", b.line);
            let counted = is_shell(&b.lang) || is_luau(&b.lang);
            match &b.mark {
                Mark::Hidden(path) => failures.push(format!(
                    "{at}: the block's file {path} is named only in an HTML comment, which readers \
                     do not see: put File `{path}`: on the line before the block instead"
                )),
                Mark::NotRun(why) => {
                    assert!(!why.is_empty(), "{at}: `not run:` needs a reason");
                    fig.marked.push(format!("{at}: {why}"));
                }
                Mark::File(path) => {
                    let _ = writeln!(script, "echo '== {at}' >&2");
                    let _ = writeln!(
                        script,
                        "mkdir -p \"$(dirname {p})\" && cat > {p} <<'GUIDE_BLOCK_END'\n{}GUIDE_BLOCK_END",
                        b.body,
                        p = quote(path)
                    );
                    if counted {
                        fig.run += 1;
                    }
                }
                Mark::None if is_shell(&b.lang) => {
                    let _ = writeln!(script, "echo '== {at}' >&2");
                    script.push_str(&shell(&b.body));
                    shell_blocks += 1;
                    fig.run += 1;
                }
                Mark::None if is_luau(&b.lang) => {
                    let stem: String = name
                        .chars()
                        .map(|c| if c.is_ascii_alphanumeric() { c } else { '_' })
                        .collect();
                    std::fs::write(
                        snippets.join(format!(
                            "tenants/snippets/scripts/{stem}_{}_{n}.luau",
                            b.line
                        )),
                        // Compiled, not linted: a snippet is a fragment, naming scripts and
                        // variables of the guide around it. (Its lines are one more than the
                        // block's.)
                        format!("--!nolint\n{}", b.body),
                    )
                    .unwrap();
                    fig.compiled += 1;
                }
                Mark::None => {}
            }
        }
        if shell_blocks == 0 && !script.contains("GUIDE_BLOCK_END") {
            continue;
        }
        let dir = scratch.path().join(format!("guide-{}", fig.run));
        copy_tree(&root().join("examples"), &dir.join("examples"));
        let file = dir.join("guide.sh");
        std::fs::write(&file, &script).unwrap();
        let (ok, output) = run_bash(&dir, &file, &bin, Duration::from_secs(120));
        if !ok {
            failures.push(format!(
                "{name} does not run as written (the last `== FILE:LINE` is the block):\n{output}"
            ));
        }
    }
    // The Luau snippets compile.
    let check = Command::new(native_bin())
        .args(["--project", snippets.to_str().unwrap(), "check"])
        .output()
        .unwrap();
    if !check.status.success() {
        failures.push(format!(
            "Luau blocks of the guides do not compile (scripts are named <guide>_<line>_<n>):\n{}",
            String::from_utf8_lossy(&check.stderr)
        ));
    }

    let mut report = format!(
        "guides: {} blocks run, {} Luau blocks compiled, {} marked not run\n",
        fig.run,
        fig.compiled,
        fig.marked.len()
    );
    for m in &fig.marked {
        let _ = writeln!(report, "  not run: {m}");
    }
    eprint!("{report}");
    let _ = std::fs::write(
        Path::new(env!("CARGO_TARGET_TMPDIR")).join("guides.txt"),
        &report,
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn the_convention_is_parsed_as_described() {
    let text = "x\n<!-- not run: needs AWS -->\n```sh\nsam deploy\n```\n\nFile `a/b.luau`:\n```lua\nreturn 1\n```\n  ```sh\n  native get t In k   # => hi\n  ```\n<!-- file: c.luau -->\n```lua\n```\n";
    let b = blocks(text);
    assert_eq!(b.len(), 4);
    assert_eq!(b[0].mark, Mark::NotRun("needs AWS".into()));
    assert_eq!(b[1].mark, Mark::File("a/b.luau".into()));
    assert_eq!(b[3].mark, Mark::Hidden("c.luau".into()));
    assert_eq!(b[1].body, "return 1\n");
    assert_eq!(b[2].body, "native get t In k   # => hi\n");
    assert_eq!(shell(&b[2].body), "__expect 'hi' 'native get t In k'\n");
}

#[test]
fn the_barrier_guide_shows_the_examples_finalize_as_it_is() {
    // The guide says the block is the example's continuation and writes it over the example's
    // file: pasting it must leave the example working, so it must be that file.
    let text = std::fs::read_to_string(root().join("docs/barriers.md")).unwrap();
    let path = "tenants/acme/scripts/finalize.luau";
    let block = blocks(&text)
        .into_iter()
        .find(|b| b.mark == Mark::File(path.into()))
        .expect("docs/barriers.md shows finalize.luau");
    let example = std::fs::read_to_string(root().join("examples/barrier").join(path)).unwrap();
    assert_eq!(block.body, example);
}
