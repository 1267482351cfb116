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

/// Compiles source to bytecode; a syntax error names the script and line.
pub fn compile(name: &str, source: &str) -> Result<Vec<u8>, String> {
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
