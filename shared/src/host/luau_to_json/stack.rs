//! A small table as JSON text, walked on Luau's stack with the raw C API in one protected call:
//! what an invocation answers, a message a script sends, `native.json.encode` of a record.
//!
//! The walker of [`super`] reads a table through mlua's safe API: every step of `pairs` is a
//! protected call, every key and value it yields a reference of its own, every key copied into
//! a host `String` to be sorted. For the answer of a no-op invocation (`{ ok = true }`) that
//! was a measurable share of the request's CPU, more for a summary of five fields
//! (BENCHMARKS.md, Figures behind the code).
//!
//! This walk writes into the same [`super::Text`] sink, in the same order, with the same rules,
//! so that its text is the walker's byte for byte; but it only takes the common case: at most
//! [`MOST_VALUES`] values, [`MOST_KEYS`] keys a table, [`MOST_DEPTH`] levels, numbers below
//! 2^53, and nothing the walker would refuse. Anything else (a function, a cycle, a key that is
//! not a string, a sparse list, a string that is not UTF-8, an empty table with a metatable,
//! text over the budget) makes it give up, and the walker encodes the value from the start,
//! with its errors and its messages. Below those caps the walker never looks at the clock, so
//! giving up changes no outcome.
#![allow(unsafe_code)]

use std::ffi::c_void;
use std::os::raw::c_int;

use mlua::ffi::{self, lua_State};
use mlua::{Lua, Table};

use super::{Sink, Text, SCRATCH_BYTES};

/// Values (and an object's keys) one walk takes: below the walker's clock interval.
pub(super) const MOST_VALUES: usize = 1000;

/// Keys of one table this walk keeps on the stack at once.
pub(super) const MOST_KEYS: usize = 64;

/// Nesting this walk takes (the walker refuses past [`super::MAX_DEPTH`]).
pub(super) const MOST_DEPTH: usize = 32;

/// Keys kept at once, those of a table and of the tables it is inside: the walk allocates
/// nothing of its own.
const KEPT_KEYS: usize = 2 * MOST_KEYS;

/// A kept key: its value's stack slot and its bytes (pinned by the key string on the stack).
type Kept = (c_int, *const u8, usize);

/// Integers at and past this magnitude are left to the walker, which tells mlua's integers from
/// its floats there.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// What one walk keeps: the sink, the budget and the counts against the caps.
struct Walk<'a> {
    text: &'a mut Text,
    max_bytes: usize,
    /// Values and keys seen.
    values: usize,
    /// The walker's host-memory estimate of what it collected (its `scratch`), for all tables.
    scratch: usize,
    /// Tables being written, to give up on a cycle.
    seen: [*const c_void; MOST_DEPTH],
    /// The keys of the objects being written, `kept` of them.
    keys: [Kept; KEPT_KEYS],
    kept: usize,
}

/// Writes `t` as JSON into `text` and returns `true`; `false` when the value is not one this
/// walk takes, leaving `text` to be cleared.
pub(super) fn write(lua: &Lua, t: &Table, text: &mut Text, max_bytes: usize) -> bool {
    let mut w = Walk {
        text,
        max_bytes,
        values: 0,
        scratch: 0,
        seen: [std::ptr::null(); MOST_DEPTH],
        keys: [(0, std::ptr::null(), 0); KEPT_KEYS],
        kept: 0,
    };
    let mut done = false;
    // SAFETY: `exec_raw` runs the closure inside a protected call with `t` at stack index 1; the
    // walk leaves the stack as it found it (every table restores the top), and the closure
    // clears it so that nothing is returned. A Lua error (the stack cannot grow) unwinds to that
    // call: the frames between hold only borrowed and `Copy` data, so nothing is leaked.
    let ran = unsafe {
        lua.exec_raw::<()>(t, |state| {
            done = w.value(state, 1, 0);
            ffi::lua_settop(state, 0);
        })
    };
    ran.is_ok() && done
}

impl Walk<'_> {
    /// Counts one value or key against the caps.
    fn count(&mut self) -> bool {
        self.values += 1;
        self.values <= MOST_VALUES && self.text.out.len() + self.scratch <= self.max_bytes
    }

    /// Writes the value at stack slot `idx` (absolute).
    unsafe fn value(&mut self, state: *mut lua_State, idx: c_int, depth: usize) -> bool {
        // SAFETY: the caller's: `idx` is a live slot of `state`, inside a protected call.
        unsafe {
            match ffi::lua_type(state, idx) {
                ffi::LUA_TNIL => self.text.null(),
                ffi::LUA_TBOOLEAN => self.text.bool(ffi::lua_toboolean(state, idx) != 0),
                ffi::LUA_TLIGHTUSERDATA if ffi::lua_touserdata(state, idx).is_null() => {
                    self.text.null()
                }
                ffi::LUA_TNUMBER => {
                    let n = ffi::lua_tonumber(state, idx);
                    if !n.is_finite() || n.abs() >= EXACT {
                        return false;
                    }
                    if n.fract() == 0.0 {
                        self.text.int(n as i64);
                    } else {
                        self.text.float(n);
                    }
                }
                ffi::LUA_TSTRING => {
                    let Some(s) = utf8(state, idx) else {
                        return false;
                    };
                    if self.text.out.len() + s.len() > self.max_bytes {
                        return false;
                    }
                    self.text.str(s);
                }
                ffi::LUA_TTABLE => {
                    if !self.table(state, idx, depth) {
                        return false;
                    }
                }
                _ => return false,
            }
        }
        self.count()
    }

    /// Writes the table at `idx` as an array (keys 1..n, every one) or an object (string keys
    /// only), restoring the stack's top.
    unsafe fn table(&mut self, state: *mut lua_State, idx: c_int, depth: usize) -> bool {
        if depth >= MOST_DEPTH {
            return false;
        }
        // SAFETY: the caller's.
        unsafe {
            let ptr = ffi::lua_topointer(state, idx);
            if self.seen[..depth].contains(&ptr) || ffi::lua_checkstack(state, 4) == 0 {
                return false;
            }
            self.seen[depth] = ptr;
            let top = ffi::lua_gettop(state);
            let n = ffi::lua_objlen(state, idx);
            let ok = if n > 0 {
                self.list(state, idx, n, depth)
            } else {
                self.object(state, idx, depth)
            };
            ffi::lua_settop(state, top);
            ok
        }
    }

    /// A table with a border `n`: an array when its keys are exactly 1..=n.
    unsafe fn list(&mut self, state: *mut lua_State, idx: c_int, n: usize, depth: usize) -> bool {
        if n > MOST_VALUES {
            return false;
        }
        // SAFETY: the caller's; `lua_next` is given the key it returned, unchanged.
        unsafe {
            let mut count = 0;
            ffi::lua_pushnil(state);
            while ffi::lua_next(state, idx) != 0 {
                if ffi::lua_type(state, -2) != ffi::LUA_TNUMBER {
                    return false;
                }
                let k = ffi::lua_tonumber(state, -2);
                if !(k >= 1.0 && k <= n as f64 && k.fract() == 0.0) {
                    return false;
                }
                count += 1;
                ffi::lua_settop(state, -2);
            }
            if count != n {
                return false;
            }
            self.text.begin_array(n);
            for i in 1..=n {
                ffi::lua_rawgeti_(state, idx, i as c_int);
                self.text.element(i == 1);
                let ok = self.value(state, ffi::lua_gettop(state), depth + 1);
                ffi::lua_settop(state, -2);
                if !ok {
                    return false;
                }
            }
            self.text.end_array(false);
        }
        true
    }

    /// A table without a border: its string keys sorted, each with its value, the keys whose
    /// value is `native.json.null` left out; no keys at all is `{}` (without a metatable).
    unsafe fn object(&mut self, state: *mut lua_State, idx: c_int, depth: usize) -> bool {
        let base = self.kept;
        let mut named = 0;
        // SAFETY: the caller's. Each pair the walk keeps stays on the stack (key, then value)
        // with a copy of the key above for `lua_next`; the kept key pins the bytes recorded.
        unsafe {
            ffi::lua_pushnil(state);
            while ffi::lua_next(state, idx) != 0 {
                if ffi::lua_type(state, -2) != ffi::LUA_TSTRING {
                    return false;
                }
                named += 1;
                self.scratch += SCRATCH_BYTES;
                if named > MOST_KEYS || !self.count() {
                    return false;
                }
                let v = ffi::lua_gettop(state);
                if ffi::lua_type(state, v) == ffi::LUA_TLIGHTUSERDATA
                    && ffi::lua_touserdata(state, v).is_null()
                {
                    ffi::lua_settop(state, -2);
                    continue;
                }
                let Some(k) = utf8(state, v - 1) else {
                    return false;
                };
                if self.kept == KEPT_KEYS || ffi::lua_checkstack(state, 3) == 0 {
                    return false;
                }
                self.keys[self.kept] = (v, k.as_ptr(), k.len());
                self.kept += 1;
                ffi::lua_pushvalue(state, v - 1);
            }
            if named == 0 {
                // `{}`, unless it has a metatable: the walker tells an empty array (mlua's
                // array metatable, which this walk does not look up) from an empty object.
                if ffi::lua_getmetatable(state, idx) != 0 {
                    return false;
                }
                self.text.begin_object(0);
                self.text.end_object(true);
                return true;
            }
            let end = self.kept;
            self.keys[base..end].sort_unstable_by(|a, b| bytes(a).cmp(bytes(b)));
            self.text.begin_object(end - base);
            for i in base..end {
                let (v, k) = (self.keys[i].0, bytes(&self.keys[i]));
                // Checked as UTF-8 when it was kept.
                self.text.key(i == base, std::str::from_utf8_unchecked(k));
                if !self.value(state, v, depth + 1) {
                    return false;
                }
            }
            self.text.end_object(end == base);
            self.kept = base;
        }
        true
    }
}

/// The bytes of a kept key.
fn bytes<'a>(key: &Kept) -> &'a [u8] {
    // SAFETY: the key string stays on the stack, pinning these bytes, until its object is
    // written (`Walk::object`).
    unsafe { std::slice::from_raw_parts(key.1, key.2) }
}

/// The string at `idx` when it is UTF-8.
///
/// # Safety
/// `idx` holds a string; the slice lives as long as it stays there.
unsafe fn utf8<'a>(state: *mut lua_State, idx: c_int) -> Option<&'a str> {
    let mut len = 0usize;
    // SAFETY: a string's `lua_tolstring` converts nothing and allocates nothing.
    let p = unsafe { ffi::lua_tolstring(state, idx, &mut len) };
    if p.is_null() {
        return None;
    }
    // SAFETY: Luau's string of `len` bytes at `p`, alive while it is on the stack.
    std::str::from_utf8(unsafe { std::slice::from_raw_parts(p.cast::<u8>(), len) }).ok()
}

#[cfg(test)]
mod tests {
    use mlua::{Lua, LuaSerdeExt, Value};

    use super::super::{text, walk, Allowance, Text};

    /// The walker alone, as `text` was before this walk.
    fn walked(
        lua: &Lua,
        v: &Value,
        pretty: bool,
        budget: Allowance,
    ) -> Result<Vec<u8>, super::super::Stop> {
        let sink = Text {
            out: Vec::new(),
            indent: pretty.then_some(0),
        };
        walk(lua, v, sink, budget).map(|t| t.out)
    }

    /// Whether this walk takes `v` (a table), and its text.
    fn taken(lua: &Lua, v: &Value, pretty: bool) -> Option<Vec<u8>> {
        let Value::Table(t) = v else { return None };
        let mut sink = Text {
            out: Vec::new(),
            indent: pretty.then_some(0),
        };
        super::write(lua, t, &mut sink, 1 << 20).then_some(sink.out)
    }

    fn lua() -> Lua {
        let lua = Lua::new();
        lua.globals().set("null", lua.null()).unwrap();
        lua.globals()
            .set("array_mt", lua.array_metatable())
            .unwrap();
        lua
    }

    const TAKEN: &[&str] = &[
        "{ ok = true }",
        "{}",
        "setmetatable({ a = 1 }, array_mt)",
        "{ a = {}, b = { {}, {} } }",
        "{ 1, 2, 3 }",
        "{ z = 1, a = 2, m = { 3, 'x', false }, b = {} }",
        "{ a = { b = { c = { d = {} } } } }",
        "{ n = 0, neg = -0.0, half = 1.5, big = 2^52, small = -2^52, tenth = 0.1, third = 1/3, tiny = -1e-7, e = 12345678.25 }",
        "{ s = 'a\"b\\\\c\\n\\t\\0\\1\\31', u = 'é€😀', empty = '' }",
        "{ a = null, b = 1 }",
        "{ a = null }",
        "{ null, 2 }",
        "{ ['with space'] = 1, ['ünï'] = 2, ['A'] = 3, ['a'] = 4, [''] = 5 }",
        "(function() local s = { 1 } return { a = s, b = s, c = { s, s } } end)()",
        "{ order = 'ord-1', currency = 'EUR', lines = 30, quantity = 90, total = 4126.7 }",
        "(function() local t = {} for i = 1, 64 do t['k' .. i] = i end return t end)()",
        "(function() local t = {} for i = 1, 999 do t[i] = i end return t end)()",
        "(function() local t = {} for i = 1, 31 do t = { t } end return t end)()",
    ];

    const LEFT: &[&str] = &[
        "setmetatable({}, array_mt)",
        "{ a = setmetatable({}, array_mt) }",
        "setmetatable({}, {})",
        "{ 1, nil, 3 }",
        "{ [2] = 1 }",
        "{ [1] = 1, [3] = 3 }",
        "{ 1, 2, x = 1 }",
        "{ [true] = 1 }",
        "{ [1.5] = 1 }",
        "{ [0] = 1 }",
        "{ [-1] = 'x' }",
        "{ big = 2^53 }",
        "{ huge = 2^60 }",
        "{ far = 1e300 }",
        "{ inf = math.huge }",
        "{ nan = 0/0 }",
        "{ bad = '\\255' }",
        "{ ['\\255'] = 1 }",
        "{ f = print }",
        "(function() local t = {} t.self = t return t end)()",
        "(function() local t = {} for i = 1, 65 do t['k' .. i] = i end return t end)()",
        "(function() local t = {} for i = 1, 2000 do t[i] = i end return t end)()",
        "(function() local t = {} for i = 1, 40 do t = { t } end return t end)()",
        "(function() local t = {} for i = 1, 140 do t = { t } end return t end)()",
        "{ v = vector.create(1, 2, 3) }",
    ];

    #[test]
    fn its_text_is_the_walkers_byte_for_byte() {
        let lua = lua();
        let budget = Allowance::object_mb(1, None);
        for (cases, take) in [(TAKEN, true), (LEFT, false)] {
            for src in cases {
                let v: Value = lua.load(format!("return {src}")).eval().unwrap();
                for pretty in [false, true] {
                    let ours = taken(&lua, &v, pretty);
                    assert_eq!(ours.is_some(), take, "{src} (pretty {pretty}): taken");
                    let want = walked(&lua, &v, pretty, budget);
                    let got = text(&lua, &v, pretty, budget);
                    assert_eq!(got, want, "{src} (pretty {pretty})");
                    if let Some(ours) = ours {
                        assert_eq!(
                            Ok(ours),
                            want,
                            "{src} (pretty {pretty}): this walk's own text"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn over_the_budget_it_leaves_the_value_to_the_walker_and_its_error() {
        let lua = lua();
        let budget = Allowance::object_mb(1, None);
        let v: Value = lua
            .load("return { a = string.rep('x', 1024 * 1024) }")
            .eval()
            .unwrap();
        let Value::Table(t) = &v else { unreachable!() };
        let mut sink = Text {
            out: Vec::new(),
            indent: None,
        };
        assert!(!super::write(&lua, t, &mut sink, budget.max_bytes));
        let got = text(&lua, &v, false, budget);
        assert_eq!(got, walked(&lua, &v, false, budget));
        assert!(matches!(got, Err(super::super::Stop::TooBig(_))), "{got:?}");
    }
}
