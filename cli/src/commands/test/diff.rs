//! Deep equality of Luau values and the readable difference `assert_eq` shows: both values
//! rendered as Luau tables, keys in order, one entry a line, and the lines that differ marked
//! `-` (expected) and `+` (actual).

use mlua::Value;

/// How deep values are compared and rendered (a table that holds itself stops here).
const MAX_DEPTH: usize = 32;

/// The most lines of a rendering shown.
const MAX_LINES: usize = 400;

/// Whether `a` and `b` are equal: the same primitive, or tables with equal entries (their
/// metatables aside).
pub fn equal(a: &Value, b: &Value) -> bool {
    eq(a, b, 0, &mut Default::default())
}

/// Pairs of tables being compared or found equal: met again (a table that holds itself, or
/// one held twice), a pair counts as equal, so that each pair is compared once.
type Seen = std::collections::HashSet<(usize, usize)>;

fn number(v: &Value) -> Option<f64> {
    match v {
        Value::Integer(i) => Some(*i as f64),
        Value::Number(n) => Some(*n),
        _ => None,
    }
}

fn eq(a: &Value, b: &Value, depth: usize, seen: &mut Seen) -> bool {
    if let (Some(x), Some(y)) = (number(a), number(b)) {
        return x == y;
    }
    match (a, b) {
        (Value::Table(x), Value::Table(y)) => {
            if x == y {
                return true;
            }
            if depth >= MAX_DEPTH {
                return false;
            }
            if !seen.insert((x.to_pointer() as usize, y.to_pointer() as usize)) {
                return true;
            }
            let (ex, ey) = (entries(x), entries(y));
            // Keys are looked up as Luau does (a number is a number, a table key is that
            // table), values compared deeply.
            ex.len() == ey.len()
                && ex.iter().all(|(k, v)| {
                    y.raw_get::<Value>(k.clone())
                        .is_ok_and(|v2| !v2.is_nil() && eq(v, &v2, depth + 1, seen))
                })
        }
        (Value::String(x), Value::String(y)) => x.as_bytes() == y.as_bytes(),
        _ => a == b,
    }
}

/// A table's entries, keys in a stable order: numbers first by value, then strings, then the rest.
fn entries(t: &mlua::Table) -> Vec<(Value, Value)> {
    let mut out: Vec<(Value, Value)> = t.pairs::<Value, Value>().filter_map(Result::ok).collect();
    out.sort_by_key(|(a, _)| order(a));
    out
}

fn order(k: &Value) -> (u8, i64, String) {
    match k {
        Value::Integer(i) => (0, *i, String::new()),
        Value::Number(n) => (0, *n as i64, String::new()),
        Value::String(s) => (1, 0, s.to_string_lossy()),
        other => (2, 0, format!("{other:?}")),
    }
}

/// `v` rendered as Luau, one entry a line.
pub fn render(v: &Value) -> String {
    let mut out = String::new();
    write(v, 0, &mut out, &mut Vec::new());
    out
}

/// The longest rendering, in bytes: a table held many times over is cut here.
const MAX_RENDER_BYTES: usize = 64 * 1024;

/// Writes `v` at `depth`; `path` holds the tables being written (a table inside itself is
/// written as `<cycle>`).
fn write(v: &Value, depth: usize, out: &mut String, path: &mut Vec<usize>) {
    if out.len() > MAX_RENDER_BYTES {
        return;
    }
    match v {
        Value::Nil => out.push_str("nil"),
        Value::Boolean(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Integer(i) => out.push_str(&i.to_string()),
        Value::Number(n) if n.fract() == 0.0 && n.abs() < 1e15 => {
            out.push_str(&(*n as i64).to_string())
        }
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => out.push_str(&format!("{:?}", s.to_string_lossy())),
        Value::Table(t) => {
            let items = entries(t);
            if items.is_empty() {
                out.push_str("{}");
                return;
            }
            let me = t.to_pointer() as usize;
            if path.contains(&me) {
                out.push_str("<cycle>");
                return;
            }
            if depth >= MAX_DEPTH {
                out.push_str("{...}");
                return;
            }
            path.push(me);
            let sequence = items
                .iter()
                .enumerate()
                .all(|(i, (k, _))| number(k) == Some((i + 1) as f64));
            let pad = "  ".repeat(depth + 1);
            out.push_str("{\n");
            for (k, v) in &items {
                out.push_str(&pad);
                if !sequence {
                    match k {
                        Value::String(s)
                            if {
                                let s = s.to_string_lossy();
                                !s.is_empty()
                                    && !s.starts_with(|c: char| c.is_ascii_digit())
                                    && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
                            } =>
                        {
                            out.push_str(&s.to_string_lossy())
                        }
                        other => {
                            out.push('[');
                            write(other, depth + 1, out, path);
                            out.push(']');
                        }
                    }
                    out.push_str(" = ");
                }
                write(v, depth + 1, out, path);
                out.push_str(",\n");
                if out.len() > MAX_RENDER_BYTES {
                    out.push_str(&pad);
                    out.push_str("...\n");
                    break;
                }
            }
            path.pop();
            out.push_str(&"  ".repeat(depth));
            out.push('}');
        }
        other => out.push_str(&format!("<{}>", other.type_name())),
    }
}

/// `None` when `actual` equals `expected`, else what differs: `assert_eq: ...` with the two
/// renderings' lines compared.
pub fn diff(actual: &Value, expected: &Value) -> Option<String> {
    if equal(actual, expected) {
        return None;
    }
    let (a, e) = (render(actual), render(expected));
    if !a.contains('\n') && !e.contains('\n') {
        return Some(format!("assert_eq: expected {e}, got {a}"));
    }
    let mut out = String::from("assert_eq: not equal (- expected, + actual):");
    let (el, al): (Vec<&str>, Vec<&str>) = (e.lines().collect(), a.lines().collect());
    for (shown, line) in lines(&el, &al).into_iter().enumerate() {
        if shown >= MAX_LINES {
            out.push_str("\n  ...");
            break;
        }
        out.push('\n');
        out.push_str(&line);
    }
    Some(out)
}

/// The lines of `e` and `a` merged by their longest common subsequence: common lines with two
/// spaces, expected-only with `- `, actual-only with `+ `.
fn lines(e: &[&str], a: &[&str]) -> Vec<String> {
    // Renderings are small (a test's values); beyond this, the lines are shown one after the other.
    if e.len() * a.len() > 4_000_000 {
        let mut out: Vec<String> = e.iter().map(|l| format!("- {l}")).collect();
        out.extend(a.iter().map(|l| format!("+ {l}")));
        return out;
    }
    let (n, m) = (e.len(), a.len());
    let mut lcs = vec![vec![0u32; m + 1]; n + 1];
    for i in (0..n).rev() {
        for j in (0..m).rev() {
            lcs[i][j] = if e[i] == a[j] {
                lcs[i + 1][j + 1] + 1
            } else {
                lcs[i + 1][j].max(lcs[i][j + 1])
            };
        }
    }
    let (mut i, mut j, mut out) = (0, 0, Vec::new());
    while i < n || j < m {
        if i < n && j < m && e[i] == a[j] {
            out.push(format!("  {}", e[i]));
            i += 1;
            j += 1;
        } else if i < n && (j == m || lcs[i + 1][j] >= lcs[i][j + 1]) {
            out.push(format!("- {}", e[i]));
            i += 1;
        } else {
            out.push(format!("+ {}", a[j]));
            j += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn equal_tables_have_no_diff_and_unequal_ones_mark_the_lines() {
        let lua = mlua::Lua::new();
        let v = |src: &str| lua.load(src).eval::<Value>().unwrap();
        // GIVEN two equal tables built in different orders
        let a = v("{ b = 2, a = { 1, 2 } }");
        let b = v("local t = {}; t.a = {1, 2}; t.b = 2; return t");
        // THEN they are equal
        assert!(diff(&a, &b).is_none());
        // WHEN one entry differs
        let c = v("{ b = 3, a = { 1, 2 } }");
        let d = diff(&c, &a).unwrap();
        // THEN the diff marks only that line, expected and actual
        assert!(d.contains("-   b = 2,"), "{d}");
        assert!(d.contains("+   b = 3,"), "{d}");
        assert!(d.contains("    a = {"), "{d}");
        // AND primitives say both on one line
        assert_eq!(
            diff(&v("1"), &v("'1'")).unwrap(),
            "assert_eq: expected \"1\", got 1"
        );
        // AND tables that hold themselves, many times over, compare at once
        let cyc = v("local t = {}; for i = 1, 40 do t[i] = t end; return t");
        let cyc2 = v("local t = {}; for i = 1, 40 do t[i] = t end; return t");
        assert!(equal(&cyc, &cyc2));
        assert!(!equal(&cyc, &v("{}")));
        assert!(render(&cyc).contains("<cycle>"));
        assert!(render(&cyc).len() < 2 * MAX_RENDER_BYTES);
    }
}
