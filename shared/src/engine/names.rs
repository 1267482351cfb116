//! The names a script can reach, read from a VM as scripts get it: every global and the
//! members of its tables (`string.format`, `native.db.get`, `native.bucket.In.put`), for
//! `native check`'s lints. A name a script uses that is not here fails when the script runs.

use std::collections::BTreeMap;

use mlua::{Table, Value};

use crate::config::Deployment;

/// How deep tables are walked: `native.bucket.In.put` is four names.
const DEPTH: usize = 4;

/// Every name reachable from a VM's globals for `deployment`, as a dotted path, with whether
/// it is a table (whose members are listed too). `native.config` is the tenant's, and is
/// listed as not a table: its members are the tenant's settings.
pub fn reachable(deployment: &Deployment) -> Result<BTreeMap<String, bool>, String> {
    let blank = super::Blank::new(deployment).map_err(|e| e.to_string())?;
    let mut out = BTreeMap::new();
    walk(&blank.globals, "", 0, &mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

fn walk(
    t: &Table,
    prefix: &str,
    depth: usize,
    out: &mut BTreeMap<String, bool>,
) -> mlua::Result<()> {
    for pair in t.clone().pairs::<Value, Value>() {
        let (k, v) = pair?;
        let Value::String(k) = k else { continue };
        let path = format!("{prefix}{}", k.to_string_lossy());
        let table = match &v {
            Value::Table(inner) if path != "_G" && depth + 1 < DEPTH => {
                walk(inner, &format!("{path}."), depth + 1, out)?;
                true
            }
            Value::Table(_) => true,
            _ => false,
        };
        out.insert(path, table);
    }
    Ok(())
}
