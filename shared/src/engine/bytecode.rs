//! Compiling scripts, and the process-wide bytecode cache keyed by content hash, so that a warm
//! container never compiles a script twice.

use std::sync::{Arc, Mutex, OnceLock};

use mlua::chunk::Compiler;

use crate::config::Script;
use crate::fast_map::FastMap;

/// Appended to a script so that entry points declared `local function on_route` (as the seed
/// router does) are found without a `return`. A script that ends in its own `return` does not
/// compile with it and is compiled as written.
const EXPORTS: &str =
    "\nreturn { on_invoke = on_invoke, on_queue = on_queue, on_route = on_route }\n";

/// A source's sha256 as a map key, for the maps every invocation looks scripts up in: hashed
/// by its first eight bytes only, compared whole. The maps' own hasher is keyed at random, so
/// a tenant that grinds sources for chosen digests still cannot aim them at one bucket; and
/// hashing 8 bytes rather than 32 (and a length) halves the cost of each lookup.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct SourceKey(pub [u8; 32]);

impl std::hash::Hash for SourceKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let [a, b, c, d, e, f, g, h, ..] = self.0;
        state.write_u64(u64::from_le_bytes([a, b, c, d, e, f, g, h]));
    }
}

/// What the process keeps of compiled scripts, by the sha256 of their source: the bytecode, and
/// how often each source was compiled (which tests read to prove the cache works).
#[derive(Default)]
struct Cache {
    code: FastMap<SourceKey, Arc<Vec<u8>>>,
    compiles: FastMap<SourceKey, u32>,
    /// The bytecode's bytes, and [`ENTRY_BYTES`] for each entry.
    bytes: usize,
}

/// The most the cache holds, in bytes. A server runs for as long as its tenants deploy new
/// versions of their scripts, and every distinct source compiled would otherwise stay; past the
/// bound the cache starts again, and each script compiles once more on its next run (a few
/// milliseconds for a large one).
const MAX_CACHED_BYTES: usize = 64 * 1024 * 1024;

/// What an entry costs beside its bytecode (two map slots, the `Arc`), counted against the
/// bound so that many tiny scripts count too.
const ENTRY_BYTES: usize = 128;

impl Cache {
    fn insert(&mut self, key: SourceKey, code: Arc<Vec<u8>>, max_bytes: usize) {
        let size = code.len() + ENTRY_BYTES;
        // Two threads may compile one source at once: the second replaces the first.
        if let Some(old) = self.code.remove(&key) {
            self.bytes -= old.len() + ENTRY_BYTES;
        }
        if self.bytes + size > max_bytes {
            self.code.clear();
            self.compiles.clear();
            self.bytes = 0;
        }
        *self.compiles.entry(key).or_default() += 1;
        self.bytes += size;
        self.code.insert(key, code);
    }
}

/// How many times a source was compiled in this process (0 or 1 when the cache works).
pub fn compile_count_of(source: &str) -> u32 {
    let hash: [u8; 32] = sha2::Digest::finalize(<sha2::Sha256 as sha2::Digest>::new_with_prefix(
        source.as_bytes(),
    ))
    .into();
    cache().compiles.get(&SourceKey(hash)).copied().unwrap_or(0)
}

fn cache() -> std::sync::MutexGuard<'static, Cache> {
    static CACHE: OnceLock<Mutex<Cache>> = OnceLock::new();
    CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

fn compiler() -> Compiler {
    Compiler::new().set_optimization_level(1).set_debug_level(1)
}

/// Compiles a script, or returns its cached bytecode. The key is the sha256 of the source: the
/// Luau version cannot change within a process, and the cache lives only in memory.
pub fn bytecode(script: &Script) -> Result<Arc<Vec<u8>>, String> {
    cached(script, compile)
}

/// The bytecode of `script` from the cache, else compiled by `make` and kept.
fn cached(
    script: &Script,
    make: fn(&str, &str) -> Result<Vec<u8>, String>,
) -> Result<Arc<Vec<u8>>, String> {
    if let Some(b) = cache().code.get(&SourceKey(script.hash)) {
        return Ok(b.clone());
    }
    let code = Arc::new(make(&script.name, &script.source)?);
    cache().insert(SourceKey(script.hash), code.clone(), MAX_CACHED_BYTES);
    Ok(code)
}

/// Compiles a module, or returns its cached bytecode (a module's hash differs from a script's
/// of the same text: [`Script::module`]).
pub fn module_bytecode(module: &Script) -> Result<Arc<Vec<u8>>, String> {
    cached(module, compile_module)
}

/// Compiles a module's source as written (a module returns its value itself; nothing is
/// appended); a syntax error names the file and line, as [`compile`]'s.
pub fn compile_module(name: &str, source: &str) -> Result<Vec<u8>, String> {
    let source = source.strip_prefix('\u{feff}').unwrap_or(source);
    if let Some(at) = crate::config::nul_at(source) {
        return Err(format!("{name}.luau:{at}"));
    }
    compiler().compile(source).map_err(|e| located(name, e))
}

/// A compile error as `<name>.luau:<line>: <message>`.
fn located(name: &str, e: mlua::Error) -> String {
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
    c.compile(source).map_err(|e| located(name, e))
}

/// How many scripts are cached (for tests and diagnostics).
pub fn cached_count() -> usize {
    cache().code.len()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cache_starts_again_past_its_bound() {
        // GIVEN a cache bounded at 1 000 bytes
        let mut cache = Cache::default();
        let key = |n: u8| SourceKey([n; 32]);
        let code = || Arc::new(vec![0u8; 300]);
        // WHEN two scripts of 300 bytes (428 with their entries) are compiled
        cache.insert(key(1), code(), 1_000);
        cache.insert(key(2), code(), 1_000);
        // THEN both are kept
        assert_eq!((cache.code.len(), cache.bytes), (2, 856));
        // WHEN the same source is put again THEN it counts once, compiled twice
        cache.insert(key(2), code(), 1_000);
        assert_eq!(
            (cache.code.len(), cache.bytes, cache.compiles[&key(2)]),
            (2, 856, 2)
        );
        // WHEN a third would pass the bound THEN the cache holds only the third
        cache.insert(key(3), code(), 1_000);
        assert_eq!((cache.code.len(), cache.bytes), (1, 428));
        assert!(cache.code.contains_key(&key(3)) && !cache.compiles.contains_key(&key(1)));
    }

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
