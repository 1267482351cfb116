//! Compiling scripts, and the process-wide bytecode cache keyed by content hash, so that a warm
//! container never compiles a script twice.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use mlua::chunk::Compiler;

use crate::config::Script;

/// Appended to a script so that entry points declared `local function on_route` (as the seed
/// router does) are found without a `return`. A script that ends in its own `return` does not
/// compile with it and is compiled as written.
const EXPORTS: &str =
    "\nreturn { on_invoke = on_invoke, on_queue = on_queue, on_route = on_route }\n";

/// Bytecode by the sha256 of its source.
type Cache = Mutex<HashMap<[u8; 32], Arc<Vec<u8>>>>;

/// How often each source hash was compiled, for tests that prove the cache works.
fn compiles() -> &'static Mutex<HashMap<[u8; 32], u32>> {
    static COMPILES: OnceLock<Mutex<HashMap<[u8; 32], u32>>> = OnceLock::new();
    COMPILES.get_or_init(Default::default)
}

/// How many times a source was compiled in this process (0 or 1 when the cache works).
pub fn compile_count_of(source: &str) -> u32 {
    let hash: [u8; 32] = sha2::Digest::finalize(<sha2::Sha256 as sha2::Digest>::new_with_prefix(
        source.as_bytes(),
    ))
    .into();
    compiles()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&hash)
        .copied()
        .unwrap_or(0)
}

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

fn compiler() -> Compiler {
    Compiler::new().set_optimization_level(1).set_debug_level(1)
}

/// Compiles a script, or returns its cached bytecode. The key is the sha256 of the source: the
/// Luau version cannot change within a process, and the cache lives only in memory.
pub fn bytecode(script: &Script) -> Result<Arc<Vec<u8>>, String> {
    if let Some(b) = cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .get(&script.hash)
    {
        return Ok(b.clone());
    }
    let code = Arc::new(compile(&script.name, &script.source)?);
    *compiles()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .entry(script.hash)
        .or_default() += 1;
    cache()
        .lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(script.hash, code.clone());
    Ok(code)
}

/// Compiles source to bytecode; a syntax error names the script and line. A leading UTF-8 BOM
/// is ignored; a NUL byte is an error, since Luau would silently ignore everything after it.
pub fn compile(name: &str, source: &str) -> Result<Vec<u8>, String> {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    if let Some(at) = crate::config::nul_at(source) {
        return Err(format!("{name}.luau:{at}"));
    }
    let c = compiler();
    let with_exports = format!("{source}{EXPORTS}");
    if let Ok(code) = c.compile(&with_exports) {
        return Ok(code);
    }
    c.compile(source).map_err(|e| {
        let msg = match e {
            mlua::Error::SyntaxError { message, .. } => message,
            other => other.to_string(),
        };
        // Luau reports "<line>: <message>"; put the file in front.
        if msg.starts_with(':') {
            format!("{name}.luau{msg}")
        } else if msg.starts_with(|c: char| c.is_ascii_digit()) {
            format!("{name}.luau:{msg}")
        } else {
            format!("{name}.luau: {msg}")
        }
    })
}

/// How many scripts are cached (for tests and diagnostics).
pub fn cached_count() -> usize {
    cache().lock().unwrap_or_else(|p| p.into_inner()).len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bom_is_ignored_and_a_nul_byte_is_an_error_with_its_line() {
        // GIVEN a script that starts with a UTF-8 BOM
        // WHEN it is compiled THEN it compiles (Luau alone calls the BOM a syntax error)
        compile("bom", "\u{feff}function on_invoke() return 1 end").unwrap();
        // GIVEN a script with a NUL byte on line 2, and a syntax error after it
        // WHEN it is compiled THEN the NUL byte is refused with the script and line (Luau alone
        // stops reading at it and says nothing)
        let e = compile("x", "local a = 1\n--\0\nlocal = = 2").unwrap_err();
        assert!(
            e.starts_with("x.luau:2: contains a NUL byte (column 3)"),
            "{e}"
        );
    }
}
