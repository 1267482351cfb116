//! `native check`'s lints: what would fail only when a script runs and the compiler cannot
//! see. Unknown globals (`nativ.log`), names of the host API that do not exist
//! (`native.db.gett`) and buckets the deployment does not have (`native.bucket.Outt`), read
//! against the names a real VM has ([`native_core::engine::names::reachable`]); script names
//! given as literals to `native.queue.send`, `native.timer.at`, `continue_with`, `on_overdue`,
//! `on_stale` and returned by a router, that are no script (or are a module); a batch tenant
//! whose router never calls `native.batch.route`.
//!
//! A file whose header (the comments before its code) has Luau's `--!nolint` is not linted.
//!
//! Each lint leans to silence: a name declared anywhere in the file counts as declared, and
//! only names used as the base of a field, call or index are looked at, so a lint never fires
//! on code that runs (a missed mistake is the type checker's to find).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use native_core::config::{Router, Tenant};

use super::lex::{lex, Kind, Tok, KEYWORDS};

/// How bad a diagnostic is: errors fail `native check` (exit 2), warnings are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Will fail when it runs.
    Error,
    /// Probably wrong.
    Warning,
}

/// One finding, shown as `path:line:col: error: message`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Diagnostic {
    /// The file, relative to the project.
    pub file: String,
    /// Line, from 1.
    pub line: usize,
    /// Column, from 1.
    pub col: usize,
    /// Error or warning.
    pub severity: Severity,
    /// What is wrong and what to do.
    pub message: String,
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        write!(
            f,
            "{}:{}:{}: {what}: {}",
            self.file, self.line, self.col, self.message
        )
    }
}

/// The names every script has besides the VM's globals: its entry points.
const ENTRIES: [&str; 3] = ["on_invoke", "on_queue", "on_route"];

/// Lints every script and module of `t`; `api` is every name a VM reaches, with whether it
/// is a table.
pub fn tenant(t: &Tenant, api: &BTreeMap<String, bool>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    let router = match t.router() {
        Router::Script(name) => Some(name),
        Router::BuiltIn => None,
    };
    let files = t
        .scripts
        .values()
        .map(|s| (s, false))
        .chain(t.modules.values().map(|m| (m, true)));
    for (s, _module) in files {
        if nolint(&s.source) {
            continue;
        }
        let file = format!("tenants/{}/scripts/{}.luau", t.name, s.name);
        let toks = lex(&s.source);
        let mut lint = Lint {
            file: &file,
            toks: &toks,
            declared: declared(&toks),
            api,
            tenant: t,
            out: &mut out,
        };
        lint.globals_and_api();
        lint.script_names(router == Some(s.name.as_str()));
        if t.config.batch && router == Some(s.name.as_str()) && !calls(&toks, "native.batch.route")
        {
            out.push(Diagnostic {
                file: file.clone(),
                line: 1,
                col: 1,
                severity: Severity::Warning,
                message: format!(
                    "tenant {:?} has \"batch\": true, but its router never calls native.batch.route: \
                     its batch jobs' done.json would not reach their continuations; start on_route with \
                     `local routed = native.batch.route(event) if routed then return routed end`",
                    t.name
                ),
            });
        }
    }
    out.sort();
    out
}

/// Whether the header of `source` (its leading comments and blank lines) has `--!nolint`, as
/// Luau reads it.
fn nolint(source: &str) -> bool {
    source
        .lines()
        .map(str::trim)
        .take_while(|l| l.is_empty() || l.starts_with("--"))
        .any(|l| l == "--!nolint" || l.starts_with("--!nolint "))
}

/// A script name that `t` does not have as a script, with why, or `None` when it has it.
pub fn missing_script(t: &Tenant, name: &str) -> Option<String> {
    if t.scripts.contains_key(name) {
        return None;
    }
    if t.modules.contains_key(name) {
        return Some(format!(
            "{name:?} is a module (scripts/{name}.luau), not a script: modules are required, never run; name a script of scripts/"
        ));
    }
    Some(format!(
        "there is no script {name:?} (scripts/{name}.luau) in tenant {:?}; {}its scripts: {}",
        t.name,
        native_core::text::suggest::did_you_mean(name, t.scripts.keys().map(String::as_str)),
        t.scripts.keys().cloned().collect::<Vec<_>>().join(", ")
    ))
}

/// Every name the file declares anywhere: locals, parameters, loop variables, functions, and
/// names assigned to (globals, table fields). More than the truth on purpose: a lint must
/// never call a declared name unknown.
fn declared(toks: &[Tok]) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut i = 0;
    while i < toks.len() {
        let t = &toks[i];
        let next = toks.get(i + 1);
        if t.is("local") || t.is("for") {
            // Every name to the `=`, `in` or the end of the line.
            let line = t.line;
            let mut j = i + 1;
            while let Some(n) = toks.get(j) {
                if n.is("=") || n.is("in") || n.line != line {
                    break;
                }
                if n.kind == Kind::Name {
                    out.insert(n.text.clone());
                }
                j += 1;
            }
        } else if t.is("function") {
            // The function's name (its first part), then every name of its parameters.
            let mut j = i + 1;
            if let Some(n) = toks.get(j).filter(|n| n.kind == Kind::Name) {
                out.insert(n.text.clone());
                j += 1;
            }
            while toks.get(j).is_some_and(|n| !n.is("(")) && j < i + 40 {
                j += 1;
            }
            let mut depth = 0;
            while let Some(n) = toks.get(j) {
                if n.is("(") {
                    depth += 1;
                } else if n.is(")") {
                    depth -= 1;
                    if depth == 0 {
                        break;
                    }
                } else if n.kind == Kind::Name {
                    out.insert(n.text.clone());
                }
                j += 1;
            }
        } else if t.kind == Kind::Name && next.is_some_and(|n| n.is("=") || n.is(",")) {
            out.insert(t.text.clone());
        } else if t.is("type") && next.is_some_and(|n| n.kind == Kind::Name) {
            out.insert(toks[i + 1].text.clone());
        }
        i += 1;
    }
    out
}

/// Whether the tokens use the dotted `path` (`native.batch.route`).
fn calls(toks: &[Tok], path: &str) -> bool {
    let parts: Vec<&str> = path.split('.').collect();
    toks.windows(parts.len() * 2 - 1).any(|w| {
        w.iter().enumerate().all(|(k, t)| {
            if k % 2 == 0 {
                t.kind == Kind::Name && t.text == parts[k / 2]
            } else {
                t.is(".")
            }
        })
    })
}

struct Lint<'a> {
    file: &'a str,
    toks: &'a [Tok],
    declared: BTreeSet<String>,
    api: &'a BTreeMap<String, bool>,
    tenant: &'a Tenant,
    out: &'a mut Vec<Diagnostic>,
}

impl Lint<'_> {
    fn push(&mut self, at: &Tok, severity: Severity, message: String) {
        self.out.push(Diagnostic {
            file: self.file.to_string(),
            line: at.line,
            col: at.col,
            severity,
            message,
        });
    }

    /// Unknown globals, and members of the VM's tables that do not exist.
    fn globals_and_api(&mut self) {
        let toks = self.toks;
        for (i, t) in toks.iter().enumerate() {
            if t.kind != Kind::Name || KEYWORDS.contains(&t.text.as_str()) {
                continue;
            }
            let prev = i.checked_sub(1).map(|p| &toks[p]);
            if prev.is_some_and(|p| p.is(".") || p.is(":") || p.is("::")) {
                continue;
            }
            let Some(next) = toks.get(i + 1) else {
                continue;
            };
            let method = next.is(":")
                && toks.get(i + 2).is_some_and(|n| n.kind == Kind::Name)
                && toks
                    .get(i + 3)
                    .is_some_and(|n| n.is("(") || n.is("{") || n.kind == Kind::Str);
            let used = next.is(".")
                || next.is("(")
                || next.is("[")
                || next.is("{")
                || matches!(next.kind, Kind::Str | Kind::Other)
                || method;
            // A name on the same line as `(` of a function type, a generic or a cast is
            // not a value; calls are on one line with their name.
            if !used || (next.is("(") && next.line != t.line) {
                continue;
            }
            let name = t.text.as_str();
            if self.declared.contains(name) || ENTRIES.contains(&name) {
                continue;
            }
            match self.api.get(name) {
                None => {
                    let known: Vec<&str> = self
                        .api
                        .keys()
                        .filter(|k| !k.contains('.'))
                        .map(String::as_str)
                        .chain(self.declared.iter().map(String::as_str))
                        .collect();
                    let hint = native_core::text::suggest::did_you_mean(name, known);
                    self.push(
                        t,
                        Severity::Error,
                        format!(
                            "unknown global `{name}`: {}it is neither a local nor a global of native scripts, and is nil when this runs",
                            hint
                        ),
                    );
                }
                Some(true) => self.members(i),
                Some(false) => {}
            }
        }
    }

    /// Follows `a.b.c` from the table at `i` and says where it stops existing.
    fn members(&mut self, i: usize) {
        let toks = self.toks;
        let mut path = toks[i].text.clone();
        let mut j = i + 1;
        while toks.get(j).is_some_and(|d| d.is(".")) {
            let Some(field) = toks.get(j + 1).filter(|f| f.kind == Kind::Name) else {
                return;
            };
            let next = format!("{path}.{}", field.text);
            match self.api.get(&next) {
                Some(true) => {}
                Some(false) => return,
                None => {
                    let members: Vec<&str> = self
                        .api
                        .keys()
                        .filter_map(|k| k.strip_prefix(&format!("{path}.")))
                        .filter(|k| !k.contains('.'))
                        .collect();
                    let message = if path == "native.bucket" {
                        format!(
                            "unknown bucket `{}`: deployment.json maps no bucket of that name; {}its buckets: {}",
                            field.text,
                            native_core::text::suggest::did_you_mean(&field.text, members.iter().copied()),
                            members.join(", ")
                        )
                    } else {
                        format!(
                            "`{next}` does not exist: {}{path} has {}",
                            native_core::text::suggest::did_you_mean(
                                &field.text,
                                members.iter().copied()
                            ),
                            members.join(", ")
                        )
                    };
                    self.push(field, Severity::Error, message);
                    return;
                }
            }
            path = next;
            j += 2;
        }
    }

    /// Script names given as literals where a script is named.
    fn script_names(&mut self, is_router: bool) {
        let toks = self.toks;
        let named_at = |i: usize| -> Option<&Tok> {
            // `f("name"` or `f "name"`.
            match toks.get(i) {
                Some(t) if t.is("(") => toks.get(i + 1).filter(|s| s.kind == Kind::Str),
                Some(t) if t.kind == Kind::Str => Some(t),
                _ => None,
            }
        };
        let mut found: Vec<(usize, String)> = Vec::new();
        for (i, t) in toks.iter().enumerate() {
            let native = !self.declared.contains("native");
            if native && t.is("native") && i.checked_sub(1).is_none_or(|p| !toks[p].is(".")) {
                if chain(toks, i, &["native", "queue", "send"]) {
                    if let Some(s) = named_at(i + 5) {
                        found.push((index_of(toks, s), s.text.clone()));
                    }
                }
                if chain(toks, i, &["native", "timer", "at"])
                    && toks.get(i + 5).is_some_and(|p| p.is("("))
                {
                    // The second argument: past the first `,` outside brackets.
                    let mut depth = 0;
                    let mut j = i + 5;
                    while let Some(n) = toks.get(j) {
                        if n.is("(") || n.is("{") || n.is("[") {
                            depth += 1;
                        } else if n.is(")") || n.is("}") || n.is("]") {
                            depth -= 1;
                            if depth == 0 {
                                break;
                            }
                        } else if n.is(",") && depth == 1 {
                            if let Some(s) = toks.get(j + 1).filter(|s| s.kind == Kind::Str) {
                                if toks.get(j + 2).is_some_and(|e| e.is(",") || e.is(")")) {
                                    found.push((j + 1, s.text.clone()));
                                }
                            }
                            break;
                        }
                        j += 1;
                    }
                }
            }
            let field = ["continue_with", "on_overdue", "on_stale"].contains(&t.text.as_str())
                || (is_router && t.text == "script");
            if t.kind == Kind::Name && field {
                let prev_dot = i.checked_sub(1).is_some_and(|p| toks[p].is("."));
                if !prev_dot && toks.get(i + 1).is_some_and(|e| e.is("=")) {
                    if let Some(s) = toks.get(i + 2).filter(|s| s.kind == Kind::Str) {
                        if !toks.get(i + 3).is_some_and(|c| c.is("..")) {
                            found.push((i + 2, s.text.clone()));
                        }
                    }
                }
                let prev_colon = i.checked_sub(1).is_some_and(|p| toks[p].is(":"));
                if prev_colon && t.text == "continue_with" {
                    if let Some(s) = named_at(i + 1) {
                        found.push((index_of(toks, s), s.text.clone()));
                    }
                }
            }
            if is_router && t.is("return") {
                if let Some(s) = toks.get(i + 1).filter(|s| s.kind == Kind::Str) {
                    if !toks.get(i + 2).is_some_and(|c| c.is("..")) {
                        found.push((i + 1, s.text.clone()));
                    }
                }
            }
        }
        for (at, name) in found {
            if let Some(why) = missing_script(self.tenant, &name) {
                let tok = &toks[at];
                self.push(tok, Severity::Error, why);
            }
        }
    }
}

/// Whether `path` starts at `i` as `a.b.c`.
fn chain(toks: &[Tok], i: usize, path: &[&str]) -> bool {
    path.iter().enumerate().all(|(k, p)| {
        toks.get(i + 2 * k)
            .is_some_and(|t| t.kind == Kind::Name && t.text == *p)
            && (k == 0 || toks.get(i + 2 * k - 1).is_some_and(|d| d.is(".")))
    })
}

fn index_of(toks: &[Tok], t: &Tok) -> usize {
    toks.iter()
        .position(|x| std::ptr::eq(x, t))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use native_core::config::{Script, TenantConfig};

    fn api() -> BTreeMap<String, bool> {
        let d = native_core::config::Deployment::from_json(
            "deployment.json",
            r#"{ "buckets": { "map": { "In": "b-in", "Out": "b-out" } } }"#,
        )
        .unwrap();
        native_core::engine::names::reachable(&d).unwrap()
    }

    fn lint(scripts: &[(&str, &str)], batch: bool) -> Vec<String> {
        let config = TenantConfig {
            batch,
            ..TenantConfig::default()
        };
        let (scripts, modules): (Vec<_>, Vec<_>) =
            scripts.iter().partition(|(n, _)| !n.contains('/'));
        let t = Tenant::with_modules(
            "acme",
            config,
            scripts.iter().map(|(n, s)| Script::new(*n, *s)).collect(),
            modules
                .iter()
                .map(|(n, s)| Script::module(*n, *s))
                .collect(),
            Default::default(),
        )
        .unwrap();
        tenant(&t, &api()).iter().map(ToString::to_string).collect()
    }

    #[test]
    fn catches_what_fails_at_run_time() {
        // GIVEN a script with a mistyped global, host function, bucket and script name
        let src = "--!strict\nfunction on_invoke(ctx, ev)\n  nativ.log('info', 'x')\n  \
                   native.db.gett('p', 'k')\n  native.bucket.Outt.put('k', 'v')\n  \
                   native.queue.send(\"finsh\", {})\n  native.timer.at({ in_s = 5 }, 'lib/util', {})\n  \
                   native.barrier.create({ members = {'a'}, continue_with = 'finish' })\nend";
        let found = lint(
            &[("s", src), ("finish", ""), ("lib/util", "return {}")],
            false,
        );
        // THEN each is an error at its line and column
        assert_eq!(found.len(), 5, "{found:#?}");
        let f = "tenants/acme/scripts/s.luau";
        assert!(
            found[0].starts_with(&format!(
                "{f}:3:3: error: unknown global `nativ`: did you mean \"native\"?"
            )),
            "{}",
            found[0]
        );
        assert!(
            found[1].starts_with(&format!(
                "{f}:4:13: error: `native.db.gett` does not exist: did you mean \"get\"?"
            )),
            "{}",
            found[1]
        );
        assert!(
            found[2].starts_with(&format!("{f}:5:17: error: unknown bucket `Outt`"))
                && found[2].contains("its buckets: In, Out"),
            "{}",
            found[2]
        );
        assert!(
            found[3].starts_with(&format!("{f}:6:21: error: there is no script \"finsh\""))
                && found[3].contains("did you mean \"finish\"?"),
            "{}",
            found[3]
        );
        assert!(
            found[4].starts_with(&format!("{f}:7:33: error: \"lib/util\" is a module")),
            "{}",
            found[4]
        );
    }

    #[test]
    fn declared_names_types_and_fields_are_not_flagged() {
        let src = r#"--!strict
type Order = { id: string, lines: { number } }
local orders = require("./lib/orders")
local function total(o: Order): number
  local sum = 0
  for _, n in o.lines do sum += n end
  return sum
end
helper = function(x: number) return x end
function on_invoke(ctx: any, ev: { name: string })
  local t = { fn = function() end }
  t.fn()
  local s = (ev :: any).name
  local v = string.format("%d", total({ id = "a", lines = { 1 } })) .. s
  native.log("info", `hello {ev.name}`, { n = helper(1) })
  local cb: (string) -> () = print
  cb("x")
  return orders.place(v, native.config.anything, native.bucket.In.get("k"))
end
"#;
        assert_eq!(
            lint(&[("s", src), ("lib/orders", "return {}")], false),
            Vec::<String>::new()
        );
    }

    #[test]
    fn a_nolint_header_turns_the_lints_off_for_its_file() {
        let src = "nativ.log('x')";
        assert_eq!(lint(&[("s", src)], false).len(), 1);
        let off = format!("-- a snippet\n--!nolint\n{src}");
        assert_eq!(lint(&[("s", &off)], false), Vec::<String>::new());
        let late = format!("{src}\n--!nolint");
        assert_eq!(
            lint(&[("s", &late)], false).len(),
            1,
            "only the header counts"
        );
    }

    #[test]
    fn a_batch_router_that_never_routes_jobs_is_warned() {
        let router = "function on_route(ctx, event)\n  return 'handle'\nend";
        let found = lint(&[("router", router), ("handle", "")], true);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(found[0].starts_with(
            "tenants/acme/scripts/router.luau:1:1: warning: tenant \"acme\" has \"batch\": true"
        ));
        let router = "function on_route(ctx, event)\n  local r = native.batch.route(event)\n  \
                      if r then return r end\n  return 'nope'\nend";
        let found = lint(&[("router", router)], true);
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(
            found[0].contains("router.luau:4:10: error: there is no script \"nope\""),
            "{found:?}"
        );
    }
}
