//! Making a table and every table in it read-only, walked on Luau's stack: through mlua's
//! pairs each entry became a reference of its own (taken, pushed, given back), a large part
//! of the `native` table's making (BENCHMARKS.md, First invoke and memory per tenant).
#![allow(unsafe_code)]

use mlua::{ffi, Lua, Table};

/// Makes `t` and every table reachable through its values read-only. A table that is
/// read-only already is not walked again (so cycles end).
pub fn deep_readonly(lua: &Lua, t: &Table) -> mlua::Result<()> {
    let mut walked = true;
    // SAFETY: `exec_raw` runs the closure inside a protected call with `t` at stack index 1.
    // The walk raises no Lua error (`lua_next` on a table with a key it gave, `lua_checkstack`
    // that answers rather than raises), and leaves the stack as it found it; the closure clears
    // it so that nothing is returned.
    let ran = unsafe {
        lua.exec_raw::<()>(t, |state| {
            walked = walk(state);
            ffi::lua_settop(state, 0);
        })
    };
    ran?;
    if walked {
        Ok(())
    } else {
        Err(mlua::Error::runtime(
            "a table nests too deeply to be made read-only",
        ))
    }
}

/// The table at the top of the stack and those in it; false if the stack could not grow.
unsafe fn walk(state: *mut ffi::lua_State) -> bool {
    if ffi::lua_getreadonly(state, -1) != 0 {
        return true;
    }
    ffi::lua_setreadonly(state, -1, 1);
    if ffi::lua_checkstack(state, 3) == 0 {
        return false;
    }
    ffi::lua_pushnil(state);
    while ffi::lua_next(state, -2) != 0 {
        let ok = ffi::lua_type(state, -1) != ffi::LUA_TTABLE || walk(state);
        ffi::lua_settop(state, -2);
        if !ok {
            ffi::lua_settop(state, -2);
            return false;
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_table_within_is_read_only_and_cycles_end() {
        let lua = Lua::new();
        let t: Table = lua
            .load("local t = { a = { b = { c = {} } }, [{}] = 1, list = { {}, {} } }; t.a.b.c.up = t; return t")
            .eval()
            .unwrap();
        deep_readonly(&lua, &t).unwrap();
        let all: bool = lua
            .load(
                r#"local t = ...
                local function ro(x) return table.isfrozen(x) end
                return ro(t) and ro(t.a) and ro(t.a.b) and ro(t.a.b.c) and ro(t.list[1]) and ro(t.list[2])
                  and not pcall(function() t.a.b.c.x = 1 end)"#,
            )
            .call(t)
            .unwrap();
        assert!(all);
    }
}
