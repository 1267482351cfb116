//! The host's own Luau helpers (a few lines each: `pcall` and `error` that clean errors,
//! `os.time` over the process clock, the invocation's `enter`, the rows iterator's wrapper),
//! compiled once per process rather than by every VM that loads them. A VM's set-up compiled
//! four of them, a large part of its instructions (BENCHMARKS.md, Figures behind the code),
//! and every tenant's first invoke pays for a VM.

use std::sync::{Mutex, OnceLock};

use mlua::chunk::{ChunkMode, Compiler};
use mlua::Lua;

use crate::fast_map::FastMap;

/// How much line information a helper keeps: `Lines` for those whose errors name a position,
/// `None` where no position must show (an entry point's `error(msg, 2)` points at its caller,
/// the host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Debug {
    /// Line numbers, as any chunk loaded from text.
    Lines,
    /// None.
    None,
}

/// `source` as a chunk named `=[native]`, compiled the first time this process asks for it.
/// Only the host's own constant sources come here: each is kept for the life of the process.
pub fn chunk<'a>(
    lua: &'a Lua,
    source: &'static str,
    debug: Debug,
) -> mlua::Result<mlua::chunk::Chunk<'a>> {
    Ok(lua
        .load(code(source, debug)?)
        .set_name("=[native]")
        .set_mode(ChunkMode::Binary))
}

/// The bytecode of `source`, compiled once per process.
fn code(source: &'static str, debug: Debug) -> mlua::Result<&'static [u8]> {
    type Compiled = FastMap<(usize, usize, Debug), &'static [u8]>;
    static COMPILED: OnceLock<Mutex<Compiled>> = OnceLock::new();
    let key = (source.as_ptr() as usize, source.len(), debug);
    let map = COMPILED.get_or_init(Default::default);
    if let Some(code) = map.lock().unwrap_or_else(|p| p.into_inner()).get(&key) {
        return Ok(code);
    }
    let level = match debug {
        Debug::Lines => 1,
        Debug::None => 0,
    };
    let code: &'static [u8] = Box::leak(
        Compiler::new()
            .set_debug_level(level)
            .compile(source)?
            .into_boxed_slice(),
    );
    map.lock()
        .unwrap_or_else(|p| p.into_inner())
        .insert(key, code);
    Ok(code)
}

#[cfg(test)]
mod tests {
    use super::{chunk, code, Debug};

    #[test]
    fn a_helper_runs_as_from_text_and_is_compiled_once() {
        // GIVEN a helper that raises, loaded twice with lines and once without
        const SRC: &str = "local x = ...\nif x then error('boom') end\nreturn 7";
        let lua = mlua::Lua::new();
        // THEN it runs, its error names the line as text would, and without lines it does not
        let run =
            |lua: &mlua::Lua, debug, raise| chunk(lua, SRC, debug).unwrap().call::<i32>(raise);
        assert_eq!(run(&lua, Debug::Lines, false).unwrap(), 7);
        let e = run(&lua, Debug::Lines, true).unwrap_err();
        assert!(e.to_string().contains("[native]:2: boom"), "{e}");
        let e = run(&lua, Debug::None, true).unwrap_err();
        assert!(!e.to_string().contains(":2:"), "{e}");
        // AND another VM runs the very same bytecode, not a compile of its own
        let other = mlua::Lua::new();
        assert_eq!(run(&other, Debug::Lines, false).unwrap(), 7);
        let (a, b) = (
            code(SRC, Debug::Lines).unwrap(),
            code(SRC, Debug::Lines).unwrap(),
        );
        assert!(std::ptr::eq(a, b));
        assert!(!std::ptr::eq(a, code(SRC, Debug::None).unwrap()));
    }
}
