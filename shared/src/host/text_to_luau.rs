//! JSON text straight into Luau values: the hot path of `job:rows` and `native.ndjson.rows`.
//!
//! Building a row through mlua's safe API costs a protected call per field (every `raw_set`
//! may raise a memory error); at a million rows that is most of the time. Here one protected
//! call per batch of rows (`Lua::exec_raw`) parses the lines with a small parser of our own and
//! pushes the values with the raw C API, which inside that protected call may raise freely.
//!
//! Rows of one dataset mostly share a shape, which the parser uses as V8's JSON parser uses
//! hidden classes: the n-th key of a row is compared with the n-th key of the row before, and
//! when the bytes are equal the string already interned is pushed again (no hashing, no string
//! table lookup); the n-th table of a row is created with the size the n-th table of the row
//! before ended with (no rehashing while it fills). An object whose keys turn out to be those of
//! the same object of the row before is a copy of that table (one allocation and a `memcpy`
//! of its hash part, `lua_clonetable`) whose values are overwritten, so that no key is inserted
//! anew; an object of another shape has the keys it did not set cleared again. A short string
//! value equal to the same (n-th) string of the row before is pushed again from its slot (an
//! enum or a flag column costs no interning), until a column shows that its values differ.
//! The elements of an array are read the same way, each against the element before: an
//! order's line items, an event's records (one document of more than [`SHAPES_FROM`] bytes, as
//! an HTTP invoke's body, is read with the shapes too).
//!
//! Same mapping as [`super::to_lua`]: objects and arrays become tables, arrays carry mlua's array
//! metatable so that they encode back as arrays, `null` is nil. What it accepts is exactly
//! RFC 8259 JSON, as serde_json does (nesting limited to the same 127 levels); when it refuses a
//! text, serde_json parses it again to give its error message, so messages name the line and
//! column as before.
#![allow(unsafe_code)]

use std::os::raw::c_int;

// Strings are pushed with `lua_pushlstring_`, Luau's own: mlua-sys's `lua_pushlstring` also
// asks `lua_tolstring` for the pushed string's address (Lua 5.4's signature), which costs a
// call per string and which nothing here reads.
use mlua::ffi::{self, lua_State};
use mlua::{Lua, LuaSerdeExt, Table};
use serde::de;

/// Deepest nesting of arrays and objects (serde_json's limit, so that it also refuses what we
/// refuse and can name the reason).
const MAX_DEPTH: u32 = 127;
/// Keys remembered per row shape, and tables whose size is remembered.
const SHAPE_KEYS: usize = 64;
const SHAPE_TABLES: usize = 32;
/// String values remembered per row shape, and the longest one remembered.
const SHAPE_STRS: usize = 32;
const MAX_SHAPE_STR: usize = 64;
/// Misses in a row after which a string column stops being compared (until the next batch).
const STR_MISSES: u8 = 4;
/// Nesting levels whose stack space is reserved once per batch rather than at each level.
const ROOMY: u32 = 8;
/// Stack slots one nesting level needs: its table, a key, a value and a spare.
const LEVEL_SLOTS: c_int = 4;
/// Shortest text that [`parse_value`] reads with shapes (an array of records shares its keys
/// as rows do); a shorter one is not worth filling the shapes' stack slots for.
const SHAPES_FROM: usize = 256;
/// Largest size hint given to a new table, whatever the row before held.
const MAX_HINT: u32 = 64;
/// The first stack slot of the interned keys in `parse_rows`; the remembered string values
/// and the objects of the row before follow them.
const KEY_SLOTS: c_int = 3;
const STR_SLOTS: c_int = KEY_SLOTS + SHAPE_KEYS as c_int;
const TABLE_SLOTS: c_int = STR_SLOTS + SHAPE_STRS as c_int;
/// Every slot `parse_rows` keeps: keys, strings, objects.
const SHAPE_SLOTS: c_int = (SHAPE_KEYS + SHAPE_STRS + SHAPE_TABLES) as c_int;

/// Parses one JSON line per span of `data` into `buf[1..]`, in one protected call. Returns how
/// many rows it stored and, if a line is not JSON, that line's number and the parse error (the
/// rows before it are stored). A `null` row is stored as `native.json.null`.
pub fn parse_rows(
    lua: &Lua,
    buf: &Table,
    data: &[u8],
    spans: &[(usize, usize, u64)],
) -> mlua::Result<(usize, Option<(u64, String)>)> {
    let mut stored = 0usize;
    let mut failed: Option<(u64, &[u8])> = None;
    let mut shapes = Shapes::take();
    let mut full = false;
    let array_mt = lua.array_metatable();
    // SAFETY: `exec_raw` runs the closure inside a protected call with the array metatable at
    // stack index 1 and the buffer at 2, and restores the stack afterwards. The closure keeps
    // the interned keys in slots 3.., pushes values (stack space reserved for ROOMY levels,
    // checked at each level past them), stores each row into the buffer with `lua_rawseti`
    // and clears the stack. A Lua error (out of
    // memory) raised by a push unwinds to the protected call; the buffers it may leave behind
    // are owned outside the closure, so nothing leaks.
    let done = unsafe {
        lua.exec_raw::<()>((array_mt, buf), |state| {
            // The interned keys, remembered strings and the objects of the row before live in
            // stack slots 3.. (pushing one again is a copy of a slot).
            if ffi::lua_checkstack(state, SHAPE_SLOTS + 8 + LEVEL_SLOTS * ROOMY as c_int) == 0 {
                full = true;
                return;
            }
            ffi::lua_settop(state, KEY_SLOTS + SHAPE_SLOTS - 1);
            for (i, &(start, end, line)) in spans.iter().enumerate() {
                let text = &data[start..end];
                let mut p = Parser::new(text, state, 1, KEY_SLOTS, ROOMY, &mut shapes);
                if p.document().is_err() {
                    failed = Some((line, text));
                    break;
                }
                if ffi::lua_type(state, -1) == ffi::LUA_TNIL {
                    ffi::lua_pop(state, 1);
                    ffi::lua_pushlightuserdata(state, std::ptr::null_mut());
                }
                ffi::lua_rawseti(state, 2, (i + 1) as ffi::lua_Integer);
                stored = i + 1;
            }
            ffi::lua_settop(state, 0);
        })
    };
    shapes.give_back();
    done?;
    if full {
        return Err(mlua::Error::runtime(
            "the Lua stack is full: rows cannot be read this deep in recursion",
        ));
    }
    Ok((stored, failed.map(|(line, text)| (line, why(text)))))
}

/// Parses one JSON text straight into a Luau value, in one protected call: nothing of the value
/// is built on the host, so a large text costs the script's heap (and its `max_memory_mb`), not
/// the host's. `Err` holds the parse error.
pub fn parse_value(lua: &Lua, data: &[u8]) -> mlua::Result<Result<mlua::Value, String>> {
    let array_mt = lua.array_metatable();
    let mut shapes = Shapes::take();
    let mut ok = false;
    // SAFETY: as in `parse_rows`: the closure runs inside a protected call with the array
    // metatable at stack index 1; it keeps the shapes' slots at 3.. (slot 2 unused) when the
    // text is long enough to hold an array of records, pushes one value, then moves it to slot
    // 1 and drops the rest so that the value alone is returned, or on a parse error clears the
    // stack.
    let v = unsafe {
        lua.exec_raw::<mlua::Value>(array_mt, |state| {
            let levels = 8 + LEVEL_SLOTS * ROOMY as c_int;
            let cache = if data.len() >= SHAPES_FROM
                && ffi::lua_checkstack(state, 1 + SHAPE_SLOTS + levels) != 0
            {
                ffi::lua_settop(state, KEY_SLOTS + SHAPE_SLOTS - 1);
                KEY_SLOTS
            } else {
                0
            };
            let roomy = if cache != 0 || ffi::lua_checkstack(state, levels) != 0 {
                ROOMY
            } else {
                0
            };
            let mut p = Parser::new(data, state, 1, cache, roomy, &mut shapes);
            if p.document().is_ok() {
                ok = true;
                ffi::lua_replace(state, 1);
                ffi::lua_settop(state, 1);
            } else {
                ffi::lua_settop(state, 0);
            }
        })
    };
    shapes.give_back();
    let v = v?;
    Ok(if ok { Ok(v) } else { Err(why(data)) })
}

/// A short JSON text (under [`SHAPES_FROM`] bytes: an invocation's usual event) read onto the stack
/// inside a protected call that is already running, an invocation's frame (`crate::engine::frame`),
/// rather than in a protected call of its own: [`parse_value`]'s call, its lookup of the array
/// metatable and its reference to the value cost a no-op invocation measurably (BENCHMARKS.md,
/// Figures behind the code). The thread's shapes are taken when it is made and given back when it
/// is dropped, outside that call.
pub struct Short<'a> {
    data: &'a [u8],
    /// Only [`Short::push`] reaches them, once, from inside the protected call; no reference
    /// of them lives across a raise.
    shapes: std::cell::UnsafeCell<Option<Box<Shapes>>>,
    failed: std::cell::Cell<bool>,
}

impl<'a> Short<'a> {
    /// `data` as a short text, or `None` when it is long enough for [`parse_value`]'s shapes.
    pub fn of(data: &'a [u8]) -> Option<Self> {
        (data.len() < SHAPES_FROM).then(|| Short {
            data,
            shapes: std::cell::UnsafeCell::new(Some(Shapes::take())),
            failed: std::cell::Cell::new(false),
        })
    }

    /// Pushes the value onto the stack and returns `true`; `false` when the text is not JSON,
    /// having pushed nothing that counts ([`Short::failed`] says so after the call, and
    /// [`Short::why`] why). `mt` is the absolute stack index of mlua's array metatable.
    ///
    /// # Safety
    /// Only inside a protected call, once per `Short`: a push may raise a memory error, which
    /// unwinds to that call; nothing owned lives in this frame.
    pub unsafe fn push(&self, state: *mut lua_State, mt: c_int) -> bool {
        // SAFETY: the only reference to the shapes, made once (the caller's promise), and not
        // kept past this call.
        let Some(shapes) = (unsafe { &mut *self.shapes.get() }).as_deref_mut() else {
            return false;
        };
        let levels = 8 + LEVEL_SLOTS * ROOMY as c_int;
        // SAFETY: the caller's; the parser pushes one value on success.
        unsafe {
            let roomy = if ffi::lua_checkstack(state, levels) != 0 {
                ROOMY
            } else {
                0
            };
            let ok = Parser::new(self.data, state, mt, 0, roomy, shapes)
                .document()
                .is_ok();
            self.failed.set(!ok);
            ok
        }
    }

    /// Whether [`Short::push`] found the text not to be JSON.
    pub fn failed(&self) -> bool {
        self.failed.get()
    }

    /// Why the text is not JSON, in serde_json's words.
    pub fn why(&self) -> String {
        why(self.data)
    }
}

impl Drop for Short<'_> {
    fn drop(&mut self) {
        if let Some(shapes) = self.shapes.get_mut().take() {
            shapes.give_back();
        }
    }
}

/// Why `text` is not JSON, in serde_json's words (line, column and reason).
fn why(text: &[u8]) -> String {
    let mut de = serde_json::Deserializer::from_slice(text);
    match de::DeserializeSeed::deserialize(Check, &mut de).and_then(|()| de.end()) {
        Err(e) => e.to_string(),
        // Only a disagreement between the two parsers lands here (the differential test below
        // looks for one).
        Ok(()) => "not valid JSON".into(),
    }
}

/// Reads a JSON text with serde_json, checking all it checks (nesting, escapes, UTF-8,
/// numbers) while keeping nothing: `IgnoredAny` would skip strings and nesting unchecked, and
/// a `serde_json::Value` would cost the host many times the text.
#[derive(Clone, Copy)]
struct Check;

impl<'de> de::DeserializeSeed<'de> for Check {
    type Value = ();

    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> de::Visitor<'de> for Check {
    type Value = ();

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
    fn visit_seq<A: de::SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        while seq.next_element_seed(Check)?.is_some() {}
        Ok(())
    }
    fn visit_map<A: de::MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        while map.next_key_seed(Check)?.is_some() {
            map.next_value_seed(Check)?;
        }
        Ok(())
    }
}

/// What the parser remembers from one row to the next (see the module's header). One per
/// thread is kept between parses ([`Shapes::take`]), forgotten but for its buffers and the
/// sizes its VM's last parse left, so that a request's body costs no allocation here.
#[derive(Default)]
struct Shapes {
    /// The n-th key of the last row when it had no escapes; the string itself is in stack
    /// slot `cache + n`.
    keys: Vec<Key>,
    /// The size the n-th table of the last row ended with. Kept from one parse to the next of the
    /// same VM (`sizes_of`), so that a request's body like the last one makes its tables at their
    /// size rather than growing them key by key (an order of 1.7 KB rehashed its tables at every
    /// request: BENCHMARKS.md, Figures behind the code). A hint only: a wrong one sizes a table
    /// wrongly, at most [`MAX_HINT`] entries, and never shows in its contents (a list with `null`
    /// elements is made again at its exact size: see [`Parser::array`]).
    sizes: Vec<u32>,
    /// The VM (its main thread's address) whose parse left `sizes`; another's clears them, so
    /// that a tenant's bodies do not size another's tables (a VM made later at a dropped one's
    /// address may start from its sizes: hints, bounded as above, nothing of their contents).
    sizes_of: usize,
    /// The n-th short string value of the last row (the string is in slot `STR_SLOTS + n`).
    strs: Vec<Column>,
    /// The n-th table of the last row, when it was an object (the table itself is in slot
    /// `TABLE_SLOTS + n`).
    objects: Vec<Object>,
    /// The keys set so far by the objects being read, innermost last.
    set: Vec<*const std::ffi::c_void>,
    /// Unescaped string bytes.
    scratch: Vec<u8>,
}

/// A string column: the n-th short string value of the last row, and how many rows in a row
/// it differed.
#[derive(Clone, Default)]
struct Column {
    bytes: Vec<u8>,
    known: bool,
    misses: u8,
}

/// The keys (interned strings, by address) an object of the last row set; `known` when there
/// was one of at most [`MAX_HINT`] keys.
#[derive(Clone, Default)]
struct Object {
    keys: Vec<*const std::ffi::c_void>,
    known: bool,
}

/// Largest buffers a thread's [`Shapes`] keeps between parses, for a key and for the rest; a
/// larger one (a long key or escaped string, a very wide object) is freed. A thread keeps at
/// most some 40 KB.
const KEEP_KEY: usize = 256;
const KEEP_BYTES: usize = 4 * 1024;

thread_local! {
    static SHAPES: std::cell::Cell<Option<Box<Shapes>>> = const { std::cell::Cell::new(None) };
}

impl Shapes {
    /// This thread's shapes, forgotten (nothing of another parse is known), or new ones.
    fn take() -> Box<Shapes> {
        let mut s = SHAPES.take().unwrap_or_default();
        let small = |cap: usize, each: usize| cap * each <= KEEP_BYTES;
        for k in &mut s.keys {
            k.at = std::ptr::null();
            if k.quoted.capacity() > KEEP_KEY {
                k.quoted = Vec::new();
            }
        }
        for c in &mut s.strs {
            (c.known, c.misses) = (false, 0);
        }
        for o in &mut s.objects {
            o.known = false;
        }
        s.set.clear();
        s.scratch.clear();
        if !small(s.set.capacity(), 8) {
            s.set = Vec::new();
        }
        if !small(s.scratch.capacity(), 1) {
            s.scratch = Vec::new();
        }
        s
    }

    /// Keeps these shapes for this thread's next parse.
    fn give_back(self: Box<Self>) {
        SHAPES.set(Some(self));
    }
}

/// A mask with the high bit set in the lowest byte of `w` (little-endian) that is a quote, a
/// backslash, a control byte or past ASCII (bytes above that one may be flagged falsely: a
/// borrow only runs upwards, so the lowest flag is exact).
#[inline]
fn special(w: u64) -> u64 {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let zero = |x: u64| x.wrapping_sub(LO) & !x & HI;
    zero(w ^ (LO * u64::from(b'"')))
        | zero(w ^ (LO * u64::from(b'\\')))
        | (w.wrapping_sub(LO * 0x20) & !w & HI)
        | (w & HI)
}

/// A remembered key: its text with the closing quote (`name"`), which the same key of the
/// next row is compared with in place, and the address of its interned string (null when
/// none is remembered).
#[derive(Clone)]
struct Key {
    quoted: Vec<u8>,
    at: *const std::ffi::c_void,
}

impl Default for Key {
    fn default() -> Self {
        Key {
            quoted: Vec::new(),
            at: std::ptr::null(),
        }
    }
}

/// Whether `s[at..]` starts with `pat`, compared a word at a time without a call (keys are
/// short, and `memcmp`'s call and set-up cost more than the compare).
#[inline(always)]
fn has_at(s: &[u8], at: usize, pat: &[u8]) -> bool {
    let n = pat.len();
    let Some(t) = s.get(at..at + n) else {
        return false;
    };
    let w8 = |b: &[u8], i: usize| u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
    let w4 = |b: &[u8], i: usize| u32::from_le_bytes(b[i..i + 4].try_into().expect("4 bytes"));
    let w2 = |b: &[u8], i: usize| u16::from_le_bytes(b[i..i + 2].try_into().expect("2 bytes"));
    match n {
        // Two overlapping words cover lengths up to twice their size.
        8..=16 => w8(t, 0) == w8(pat, 0) && w8(t, n - 8) == w8(pat, n - 8),
        4..=7 => w4(t, 0) == w4(pat, 0) && w4(t, n - 4) == w4(pat, n - 4),
        2..=3 => w2(t, 0) == w2(pat, 0) && w2(t, n - 2) == w2(pat, n - 2),
        1 => t[0] == pat[0],
        _ => t == pat,
    }
}

/// The length of the run of ASCII digits at `s[i..]`, whose value is accumulated onto `m`
/// (wrapping: exact while the whole number has at most 19 digits, which is all it is used for).
#[inline(always)]
fn digit_run(s: &[u8], from: usize, m: &mut u64) -> usize {
    let mut i = from;
    while let Some(&c) = s.get(i) {
        let d = c.wrapping_sub(b'0');
        if d > 9 {
            break;
        }
        *m = m.wrapping_mul(10).wrapping_add(u64::from(d));
        i += 1;
    }
    i - from
}

/// The n-th entry of a shape's list, grown with `empty` up to it.
fn nth<T: Clone>(list: &mut Vec<T>, no: usize, empty: T) -> &mut T {
    if list.len() <= no {
        list.resize(no + 1, empty);
    }
    &mut list[no]
}

/// Keeps a copy of the value on top of the stack in `slot`, leaving the stack as it was.
unsafe fn keep_top(state: *mut lua_State, slot: c_int) {
    ffi::lua_pushvalue(state, -1);
    ffi::lua_replace(state, slot);
}

/// Not JSON: the message is serde_json's (see [`why`]).
struct Bad;

type Parsed = Result<(), Bad>;

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
    state: *mut lua_State,
    /// Stack index of the array metatable.
    mt: c_int,
    /// Stack index of the first interned key (see `Shapes::keys`), 0 for none.
    cache: c_int,
    shapes: &'a mut Shapes,
    /// Nesting levels whose stack space the caller reserved (each level past them checks).
    roomy: u32,
    /// Ordinals of the next key, the next table and the next string value in this document.
    key_no: usize,
    table_no: usize,
    str_no: usize,
    depth: u32,
}

/// Where a string's bytes are: in the text (no escapes) or in the scratch buffer.
enum Str {
    Text(usize, usize),
    Scratch,
}

impl<'a> Parser<'a> {
    /// # Safety
    /// `state` is a live Luau thread.
    unsafe fn new(
        s: &'a [u8],
        state: *mut lua_State,
        mt: c_int,
        cache: c_int,
        roomy: u32,
        shapes: &'a mut Shapes,
    ) -> Self {
        let vm = ffi::lua_mainthread(state) as usize;
        if shapes.sizes_of != vm {
            shapes.sizes.clear();
            shapes.sizes_of = vm;
        }
        Parser {
            s,
            i: 0,
            state,
            mt,
            cache,
            roomy,
            shapes,
            key_no: 0,
            table_no: 0,
            str_no: 0,
            depth: 0,
        }
    }

    /// One value and nothing after it but whitespace; pushes the value.
    unsafe fn document(&mut self) -> Parsed {
        self.value()?;
        self.ws();
        if self.i == self.s.len() {
            Ok(())
        } else {
            Err(Bad)
        }
    }

    /// The next byte that is not whitespace, skipping the whitespace before it (compact JSON
    /// has none, so one compare decides).
    #[inline(always)]
    fn peek(&mut self) -> Option<u8> {
        let b = *self.s.get(self.i)?;
        if b > b' ' {
            return Some(b);
        }
        self.ws();
        self.s.get(self.i).copied()
    }

    #[inline]
    fn ws(&mut self) {
        while let Some(b' ' | b'\n' | b'\r' | b'\t') = self.s.get(self.i) {
            self.i += 1;
        }
    }

    #[inline]
    fn eat(&mut self, word: &[u8]) -> Parsed {
        if self.s[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else {
            Err(Bad)
        }
    }

    /// One value, pushed. Inlined where it is read, so that a scalar member costs no call:
    /// only objects and arrays recurse.
    #[inline(always)]
    unsafe fn value(&mut self) -> Parsed {
        let state = self.state;
        match self.peek() {
            Some(b'{') => self.object(),
            Some(b'[') => self.array(),
            Some(b'"') => self.string_value(),
            Some(b't') => {
                self.eat(b"true")?;
                ffi::lua_pushboolean(state, 1);
                Ok(())
            }
            Some(b'f') => {
                self.eat(b"false")?;
                ffi::lua_pushboolean(state, 0);
                Ok(())
            }
            Some(b'n') => {
                self.eat(b"null")?;
                ffi::lua_pushnil(state);
                Ok(())
            }
            Some(b'-' | b'0'..=b'9') => {
                let v = self.number()?;
                ffi::lua_pushnumber(state, v);
                Ok(())
            }
            _ => Err(Bad),
        }
    }

    /// Enters an array or object: depth and stack space for its key, value and copies.
    unsafe fn enter(&mut self) -> Result<(u32, usize), Bad> {
        self.depth += 1;
        if self.depth > MAX_DEPTH
            || (self.depth > self.roomy && ffi::lua_checkstack(self.state, LEVEL_SLOTS) == 0)
        {
            return Err(Bad);
        }
        self.i += 1;
        let no = self.table_no;
        self.table_no += 1;
        Ok((self.shapes.sizes.get(no).copied().unwrap_or(0), no))
    }

    fn leave(&mut self, no: usize, size: u32) {
        self.depth -= 1;
        if no < SHAPE_TABLES {
            *nth(&mut self.shapes.sizes, no, 0) = size.min(MAX_HINT);
        }
    }

    /// Pushes a new table for object `no`: a copy of the same object of the row before when
    /// there is one (its keys are then overwritten rather than inserted), else an empty table
    /// sized by the hint. Returns whether it is a copy.
    unsafe fn new_object(&mut self, no: usize, hint: u32) -> bool {
        let state = self.state;
        let copy = self.cache != 0 && self.shapes.objects.get(no).is_some_and(|o| o.known);
        if copy {
            ffi::lua_clonetable(state, TABLE_SLOTS + no as c_int);
        } else {
            ffi::lua_createtable(state, 0, hint as c_int);
        }
        copy
    }

    /// Ends object `no` (on top of the stack), whose keys are `shapes.set[base..]`: clears in
    /// a copy the keys of the row before that this row did not set, and remembers this object
    /// for the next row.
    unsafe fn end_object(&mut self, no: usize, base: usize, copy: bool) {
        let state = self.state;
        if self.cache == 0 {
            return;
        }
        let set = &self.shapes.set[base..];
        if copy {
            let before = &self.shapes.objects[no].keys[..];
            if before == set {
                // The same keys as the table it copies, which stays the next row's template:
                // a copy of either has these keys in the same places, and every value is set
                // again (remembering this one instead cost an order's 33 items more:
                // BENCHMARKS.md, Figures behind the code).
                self.shapes.set.truncate(base);
                return;
            }
            if ffi::lua_checkstack(state, 4) != 0 {
                // Another shape: a key of the copy that this row did not set goes. A key with a
                // value is a live string, so its address is not one a string of this row that
                // was collected since could have had.
                ffi::lua_pushnil(state);
                while ffi::lua_next(state, -2) != 0 {
                    ffi::lua_pop(state, 1);
                    if !set.contains(&ffi::lua_topointer(state, -1)) {
                        ffi::lua_pushvalue(state, -1);
                        ffi::lua_pushnil(state);
                        ffi::lua_rawset(state, -4);
                    }
                }
            }
        }
        // A copy is as large as what it copies: only objects of at most MAX_HINT keys are
        // copied, so that one wide row cannot make every row after it as wide.
        if no < SHAPE_TABLES {
            let Shapes { objects, set, .. } = &mut *self.shapes;
            let before = nth(objects, no, Object::default());
            before.known = set.len() - base <= MAX_HINT as usize;
            if before.known {
                before.keys.clear();
                before.keys.extend_from_slice(&set[base..]);
                keep_top(state, TABLE_SLOTS + no as c_int);
            }
        }
        self.shapes.set.truncate(base);
    }

    #[inline(never)]
    unsafe fn object(&mut self) -> Parsed {
        let (hint, no) = self.enter()?;
        let state = self.state;
        let copy = self.new_object(no, hint);
        let base = self.shapes.set.len();
        let mut n = 0u32;
        if self.peek() == Some(b'}') {
            self.i += 1;
        } else {
            loop {
                if self.peek() != Some(b'"') {
                    return Err(Bad);
                }
                let key = self.key()?;
                if self.cache != 0 {
                    self.shapes.set.push(key);
                }
                if self.s.get(self.i) == Some(&b':') {
                    self.i += 1;
                } else {
                    self.ws();
                    self.eat(b":")?;
                }
                self.value()?;
                // A nil value sets nothing: the key is absent, as for `null` elsewhere (in a
                // copy, it clears the key the row before set).
                ffi::lua_rawset(state, -3);
                n += 1;
                match self.peek() {
                    Some(b',') => self.i += 1,
                    Some(b'}') => {
                        self.i += 1;
                        break;
                    }
                    _ => return Err(Bad),
                }
            }
        }
        self.end_object(no, base, copy);
        self.leave(no, n);
        Ok(())
    }

    #[inline(never)]
    unsafe fn array(&mut self) -> Parsed {
        let (hint, no) = self.enter()?;
        let state = self.state;
        // The size the same list of the last element or body had (an order's 34 items made at
        // 4 and regrown four times: BENCHMARKS.md, Figures behind the code); room for a few saves
        // the first regrowths of a small list seen first.
        let hint = if hint == 0 { 4 } else { hint };
        ffi::lua_createtable(state, hint as c_int, 0);
        let mut n = 0u32;
        let mut holes = false;
        // Each element is read as a row is: its n-th key, table and string compared with those
        // of the element before (an array of records shares one shape as rows do). What follows
        // the array takes up the ordinals after the widest element.
        let at = (self.key_no, self.table_no, self.str_no);
        let mut widest = at;
        if self.peek() == Some(b']') {
            self.i += 1;
        } else {
            loop {
                (self.key_no, self.table_no, self.str_no) = at;
                self.value()?;
                widest = (
                    widest.0.max(self.key_no),
                    widest.1.max(self.table_no),
                    widest.2.max(self.str_no),
                );
                n += 1;
                holes |= ffi::lua_type(state, -1) == ffi::LUA_TNIL;
                ffi::lua_rawseti(state, -2, ffi::lua_Integer::from(n));
                match self.peek() {
                    Some(b',') => self.i += 1,
                    Some(b']') => {
                        self.i += 1;
                        break;
                    }
                    _ => return Err(Bad),
                }
            }
        }
        (self.key_no, self.table_no, self.str_no) = widest;
        if holes && hint != n {
            // A `null` element is a nil, and where Luau finds the end of a list with nils (its
            // `#`, a border) depends on how large its array part was made: from the size of the
            // element before, it would depend on that element (`[[1],[null,5]]`: 0, where
            // `[null,5]` alone is 2). Made again at exactly its size, it depends on its own
            // elements only. Its level's key and value slots are free for the copy.
            ffi::lua_createtable(state, n as c_int, 0);
            for k in 1..=ffi::lua_Integer::from(n) {
                ffi::lua_rawgeti(state, -2, k);
                ffi::lua_rawseti(state, -2, k);
            }
            ffi::lua_replace(state, -2);
        }
        ffi::lua_pushvalue(state, self.mt);
        ffi::lua_setmetatable(state, -2);
        self.leave(no, n);
        Ok(())
    }

    /// Pushes a key: the string interned for the same key of the row before when the bytes are
    /// the same, else a new one, remembered for the next row. Returns the string's address.
    unsafe fn key(&mut self) -> Result<*const std::ffi::c_void, Bad> {
        let state = self.state;
        let no = self.key_no;
        self.key_no += 1;
        let remember = self.cache != 0 && no < SHAPE_KEYS;
        if remember {
            // The same key as the row before, read without scanning: a remembered key was read
            // without escapes, so it holds no quote, backslash or control byte, and the same
            // bytes followed by a quote are that whole key again.
            if let Some(k) = self.shapes.keys.get(no).filter(|k| !k.at.is_null()) {
                if has_at(self.s, self.i + 1, &k.quoted) {
                    self.i += 1 + k.quoted.len();
                    ffi::lua_pushvalue(state, self.cache + no as c_int);
                    return Ok(k.at);
                }
            }
        }
        let at = self.string()?;
        let (p, n) = self.bytes(&at);
        ffi::lua_pushlstring_(state, p.cast(), n);
        let addr = ffi::lua_topointer(state, -1);
        if !remember {
            return Ok(addr);
        }
        keep_top(state, self.cache + no as c_int);
        let k = nth(&mut self.shapes.keys, no, Key::default());
        match at {
            Str::Text(..) => {
                k.quoted.clear();
                k.quoted.extend_from_slice(std::slice::from_raw_parts(p, n));
                k.quoted.push(b'"');
                k.at = addr;
            }
            // Its unescaped bytes are not its text: not remembered.
            Str::Scratch => k.at = std::ptr::null(),
        }
        Ok(addr)
    }

    fn bytes(&self, at: &Str) -> (*const u8, usize) {
        match *at {
            Str::Text(a, b) => (self.s[a..b].as_ptr(), b - a),
            Str::Scratch => (self.shapes.scratch.as_ptr(), self.shapes.scratch.len()),
        }
    }

    /// Pushes a string value: the string of the row before at the same ordinal when the bytes
    /// are the same, else a new one (remembered when short, while the column repeats itself).
    unsafe fn string_value(&mut self) -> Parsed {
        let state = self.state;
        let at = self.string()?;
        let (p, n) = self.bytes(&at);
        let no = self.str_no;
        self.str_no += 1;
        if self.cache == 0 || no >= SHAPE_STRS || n > MAX_SHAPE_STR {
            ffi::lua_pushlstring_(state, p.cast(), n);
            return Ok(());
        }
        let column = nth(&mut self.shapes.strs, no, Column::default());
        let text = std::slice::from_raw_parts(p, n);
        if column.misses >= STR_MISSES {
            ffi::lua_pushlstring_(state, p.cast(), n);
            return Ok(());
        }
        let slot = STR_SLOTS + no as c_int;
        if column.known && column.bytes.len() == n && has_at(text, 0, &column.bytes) {
            column.misses = 0;
            ffi::lua_pushvalue(state, slot);
            return Ok(());
        }
        column.misses += u8::from(column.known);
        column.bytes.clear();
        column.bytes.extend_from_slice(text);
        column.known = true;
        ffi::lua_pushlstring_(state, p.cast(), n);
        keep_top(state, slot);
        Ok(())
    }

    /// Reads a string (at its opening quote): unescaped, UTF-8 checked. ASCII text is scanned
    /// eight bytes at a time for the closing quote, a backslash, a control byte or a byte
    /// past ASCII (which is then checked as UTF-8).
    #[inline(always)]
    fn string(&mut self) -> Result<Str, Bad> {
        self.i += 1;
        let start = self.i;
        let s = self.s;
        let mut i = start;
        let mut ascii = true;
        while let Some(word) = s.get(i..i + 8) {
            let w = u64::from_le_bytes(word.try_into().expect("eight bytes"));
            let hit = special(w);
            if hit != 0 {
                i += (hit.trailing_zeros() / 8) as usize;
                if s[i] < 0x80 {
                    return self.string_end(start, i, true);
                }
                ascii = false;
                break;
            }
            i += 8;
        }
        let rest = &s[i..];
        let Some(n) = rest
            .iter()
            .position(|&b| matches!(b, b'"' | b'\\' | 0..=0x1f))
        else {
            return Err(Bad);
        };
        self.string_end(start, i + n, ascii && rest[..n].is_ascii())
    }

    /// A string from `start` whose first quote, backslash or control byte is at `at`; `ascii`
    /// when every byte before it is known to be ASCII.
    #[inline(always)]
    fn string_end(&mut self, start: usize, at: usize, ascii: bool) -> Result<Str, Bad> {
        self.i = at;
        match self.s[at] {
            b'"' => {}
            b'\\' => return self.escaped(start),
            _ => return Err(Bad),
        }
        self.i += 1;
        let text = &self.s[start..at];
        if !ascii && std::str::from_utf8(text).is_err() {
            return Err(Bad);
        }
        Ok(Str::Text(start, at))
    }

    /// The rest of a string that has escapes, from `start`, into the scratch buffer.
    fn escaped(&mut self, start: usize) -> Result<Str, Bad> {
        let s = self.s;
        self.shapes.scratch.clear();
        self.shapes.scratch.extend_from_slice(&s[start..self.i]);
        loop {
            let Some(&b) = s.get(self.i) else {
                return Err(Bad);
            };
            self.i += 1;
            match b {
                b'"' => break,
                0..=0x1f => return Err(Bad),
                b'\\' => {
                    let Some(&e) = s.get(self.i) else {
                        return Err(Bad);
                    };
                    self.i += 1;
                    let c = match e {
                        b'"' => b'"',
                        b'\\' => b'\\',
                        b'/' => b'/',
                        b'b' => 8,
                        b'f' => 12,
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'u' => {
                            let c = self.unicode()?;
                            let mut utf8 = [0u8; 4];
                            self.shapes
                                .scratch
                                .extend_from_slice(c.encode_utf8(&mut utf8).as_bytes());
                            continue;
                        }
                        _ => return Err(Bad),
                    };
                    self.shapes.scratch.push(c);
                }
                _ => self.shapes.scratch.push(b),
            }
        }
        // Escapes write whole characters, so checking the result checks the raw bytes too.
        if std::str::from_utf8(&self.shapes.scratch[..]).is_err() {
            return Err(Bad);
        }
        Ok(Str::Scratch)
    }

    fn hex4(&mut self) -> Result<u32, Bad> {
        let d = self.s.get(self.i..self.i + 4).ok_or(Bad)?;
        let mut v = 0u32;
        for &c in d {
            v = v * 16 + (c as char).to_digit(16).ok_or(Bad)?;
        }
        self.i += 4;
        Ok(v)
    }

    /// A `\u` escape (after the `u`), with its low surrogate when it is a high one; lone
    /// surrogates are refused, as serde_json refuses them.
    fn unicode(&mut self) -> Result<char, Bad> {
        let hi = self.hex4()?;
        let code = match hi {
            0xD800..=0xDBFF => {
                self.eat(b"\\u")?;
                let lo = self.hex4()?;
                if !(0xDC00..=0xDFFF).contains(&lo) {
                    return Err(Bad);
                }
                0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
            }
            0xDC00..=0xDFFF => return Err(Bad),
            c => c,
        };
        char::from_u32(code).ok_or(Bad)
    }

    /// A number as a double: exact for integers up to 2^64 and for short decimals, correctly
    /// rounded (the standard library's parser) for the rest; out of range is refused.
    fn number(&mut self) -> Result<f64, Bad> {
        const POW10: [f64; 23] = [
            1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
            1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22,
        ];
        let s = self.s;
        let start = self.i;
        let mut i = start;
        let neg = s.get(i) == Some(&b'-');
        i += usize::from(neg);
        // The digits of the integer and the fraction, accumulated as they are read.
        let mut m = 0u64;
        let int_len = match s.get(i) {
            // A leading zero stands alone ("01" is two tokens, refused by the caller).
            Some(b'0') => 1,
            Some(b'1'..=b'9') => digit_run(s, i, &mut m),
            _ => return Err(Bad),
        };
        i += int_len;
        let mut frac_len = 0;
        if s.get(i) == Some(&b'.') {
            frac_len = digit_run(s, i + 1, &mut m);
            if frac_len == 0 {
                return Err(Bad);
            }
            i += 1 + frac_len;
        }
        let mut exp = false;
        if let Some(b'e' | b'E') = s.get(i) {
            exp = true;
            i += 1;
            if let Some(b'+' | b'-') = s.get(i) {
                i += 1;
            }
            let n = digit_run(s, i, &mut 0);
            if n == 0 {
                return Err(Bad);
            }
            i += n;
        }
        self.i = i;
        // Up to 19 digits fit a u64 whatever they are (past that, `m` wrapped and is unused).
        let fast = match frac_len {
            _ if exp || int_len + frac_len > 19 => None,
            0 => Some(m as f64),
            n if m <= 1 << 53 && n <= 22 => Some(m as f64 / POW10[n]),
            _ => None,
        };
        let v = match fast {
            Some(v) => v,
            None => {
                // SAFETY: the bytes were checked above to be an ASCII JSON number, which is
                // also the syntax the standard library's float parser reads.
                let text =
                    unsafe { std::str::from_utf8_unchecked(&s[start + usize::from(neg)..self.i]) };
                text.parse::<f64>().map_err(|_| Bad)?
            }
        };
        if !v.is_finite() {
            return Err(Bad);
        }
        Ok(if neg { -v } else { v })
    }
}

#[cfg(test)]
mod tests {
    //! Differential tests: our parser against serde_json, on generated documents and on
    //! mutations of them, for what is accepted and for the values that come out.
    use super::*;

    use serde_json::Value;

    /// A small deterministic generator (xorshift), so that a failure can be replayed.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: u64) -> u64 {
            self.next() % n
        }
    }

    const PIECES: &[&str] = &[
        "0",
        "-0",
        "1",
        "-1",
        "12.5",
        "1e3",
        "1E-3",
        "-2.5e+2",
        "0.1",
        "123456789012345678",
        "18446744073709551615",
        "18446744073709551616",
        "9007199254740993",
        "1.7976931348623157e308",
        "5e-324",
        "1e400",
        "-1e400",
        "1.0000000000000002",
        "3.14159265358979323846264338",
        "true",
        "false",
        "null",
        "\"\"",
        "\"a\"",
        "\"caf\u{e9}\"",
        "\"\\u00e9\\n\\t\\\"\\\\\\/\"",
        "\"\\ud83d\\ude00\"",
        "\"\\ud83d\"",
        "\"\\ude00\"",
        "\"\\u12\"",
        "\"a\\qb\"",
        "01",
        "1.",
        ".5",
        "+1",
        "-",
        "1e",
        "tru",
        "nul",
        "\"\u{1F600}\"",
        "[]",
        "{}",
        "[1,]",
        "{\"a\":}",
        "{\"a\" 1}",
        "[1 2]",
        "\"\t\"",
    ];

    fn gen(r: &mut Rng, depth: u32, out: &mut String) {
        match if depth > 4 { 0 } else { r.below(4) } {
            0 | 1 => out.push_str(PIECES[r.below(PIECES.len() as u64) as usize]),
            2 => {
                out.push('[');
                for i in 0..r.below(4) {
                    if i > 0 {
                        out.push(',');
                    }
                    gen(r, depth + 1, out);
                }
                out.push(']');
            }
            _ => {
                out.push('{');
                for i in 0..r.below(4) {
                    if i > 0 {
                        out.push_str(" , ");
                    }
                    let keys = ["\"id\"", "\"name\"", "\"a\\u0062\"", "\"\"", "\"id\""];
                    out.push_str(keys[r.below(keys.len() as u64) as usize]);
                    out.push(':');
                    gen(r, depth + 1, out);
                }
                out.push('}');
            }
        }
    }

    /// What serde_json makes of `text`, mapped as ours maps it (numbers as doubles).
    fn theirs(text: &[u8]) -> Option<Value> {
        let v: Value = serde_json::from_slice(text).ok()?;
        Some(doubles(v))
    }

    fn doubles(v: Value) -> Value {
        match v {
            Value::Number(n) => serde_json::json!(n.as_f64().unwrap()),
            // A null in a list is a hole in the table, which may or may not count in its
            // length: compare lists without them.
            Value::Array(a) => Value::Array(
                a.into_iter()
                    .filter(|v| !v.is_null())
                    .map(doubles)
                    .collect(),
            ),
            Value::Object(o) => Value::Object(
                o.into_iter()
                    .filter(|(_, v)| !v.is_null())
                    .map(|(k, v)| (k, doubles(v)))
                    .collect(),
            ),
            v => v,
        }
    }

    fn ours(lua: &Lua, text: &[u8]) -> Option<Value> {
        let v = parse_value(lua, text).unwrap().ok()?;
        Some(doubles(lua.from_value(v).unwrap()))
    }

    /// Equal, but for floats that serde_json (without its exact-rounding feature) may round one
    /// unit in the last place differently from the correctly rounded result we give.
    fn same(a: &Value, b: &Value) -> bool {
        match (a, b) {
            (Value::Number(x), Value::Number(y)) => {
                let (x, y) = (x.as_f64().unwrap(), y.as_f64().unwrap());
                x == y || (x.to_bits().abs_diff(y.to_bits()) <= 1 && x.signum() == y.signum())
            }
            (Value::Array(x), Value::Array(y)) => {
                x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
            }
            (Value::Object(x), Value::Object(y)) => {
                x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same(v, w)))
            }
            (a, b) => a == b,
        }
    }

    #[test]
    fn agrees_with_serde_json_on_generated_and_mutated_documents() {
        // GIVEN documents built from valid and invalid pieces, and one-byte mutations of them
        let lua = Lua::new();
        let mut r = Rng(0x9e37_79b9_7f4a_7c15);
        let (mut accepted, mut refused) = (0, 0);
        for round in 0..20_000 {
            let mut text = String::new();
            gen(&mut r, 0, &mut text);
            let mut bytes = text.into_bytes();
            if round % 2 == 1 && !bytes.is_empty() {
                let at = r.below(bytes.len() as u64) as usize;
                let pool = b"{}[]\",:\\ 0-.eE\x01\xff\xc3a";
                let to = pool[r.below(pool.len() as u64) as usize];
                bytes[at] = to;
            }
            // WHEN both parse it (ours also with whitespace before it, long enough to read an
            // array's elements with shapes)
            let (a, b) = (theirs(&bytes), ours(&lua, &bytes));
            let padded = [&[b' '; SHAPES_FROM][..], &bytes].concat();
            let c = ours(&lua, &padded);
            assert_eq!(
                b.is_some(),
                c.is_some(),
                "{:?}",
                String::from_utf8_lossy(&bytes)
            );
            if let (Some(b), Some(c)) = (&b, &c) {
                assert!(same(b, c), "{:?}", String::from_utf8_lossy(&bytes));
            }
            // THEN both accept it with the same value, or both refuse it (a number beyond the
            // doubles is refused by both)
            match (&a, &b) {
                (Some(a), Some(b)) => {
                    assert!(
                        same(a, b),
                        "{:?}: serde {a} ours {b}",
                        String::from_utf8_lossy(&bytes)
                    );
                    accepted += 1;
                }
                (None, None) => refused += 1,
                _ => panic!(
                    "{:?}: serde {a:?}, ours {b:?}",
                    String::from_utf8_lossy(&bytes)
                ),
            }
        }
        assert!(
            accepted > 5_000 && refused > 5_000,
            "{accepted} accepted, {refused} refused"
        );
    }

    #[test]
    fn rows_in_batches_agree_with_serde_json() {
        // GIVEN batches of 16 generated rows (so that rows of other shapes follow each other
        // and the remembered keys and sizes are wrong as often as right)
        let lua = Lua::new();
        let mut r = Rng(0x2545_f491_4f6c_dd1d);
        let mut checked = 0;
        for _ in 0..3_000 {
            let mut data = Vec::new();
            let mut spans = Vec::new();
            for line in 1..=16u64 {
                let mut text = String::new();
                gen(&mut r, 0, &mut text);
                let start = data.len();
                data.extend_from_slice(text.as_bytes());
                spans.push((start, data.len(), line));
            }
            // WHEN they are parsed as rows
            let buf = lua.create_table().unwrap();
            let (n, bad) = parse_rows(&lua, &buf, &data, &spans).unwrap();
            // THEN every row stored is serde_json's value, and the first refused row is one that
            // serde_json refuses too
            for (i, &(a, b, _)) in spans.iter().enumerate().take(n) {
                let want = theirs(&data[a..b]).expect("serde_json accepts a row we stored");
                let v: mlua::Value = buf.get(i + 1).unwrap();
                let got = if v.is_light_userdata() {
                    Value::Null
                } else {
                    doubles(lua.from_value(v).unwrap())
                };
                assert!(same(&want, &got), "{want} != {got}");
                checked += 1;
            }
            if let Some((line, _)) = bad {
                let (a, b, _) = spans[line as usize - 1];
                assert!(theirs(&data[a..b]).is_none(), "line {line} refused");
            }
        }
        assert!(checked > 3_000, "{checked} rows checked");
    }

    #[test]
    fn rows_of_changing_shapes_keep_only_their_own_keys_and_elements() {
        // GIVEN rows whose objects are copies of the row before's: the same keys, fewer, more,
        // reordered, with nulls, duplicated, nested, and a wide one; and arrays likewise
        let wide: String = (0..100).map(|i| format!(r#""k{i}":{i},"#)).collect();
        let texts = [
            r#"{"a":1,"b":{"x":1,"y":2},"c":"s"}"#.to_string(),
            r#"{"a":2,"b":{"x":3,"y":4},"c":"s"}"#.into(),
            r#"{"a":3,"b":{"y":5},"c":"t"}"#.into(),
            r#"{"c":"u","a":4}"#.into(),
            r#"{"a":null,"c":null,"d":[1,{"z":1}]}"#.into(),
            r#"{"a":5,"a":6}"#.into(),
            r#"{"a":7,"b":{"x":1,"y":2},"c":"s"}"#.into(),
            format!(r#"{{{wide}"last":true}}"#),
            r#"{"k1":1}"#.into(),
            r#"{}"#.into(),
            r#"{"a":"\u0041","b":{"x":1,"y":2}}"#.into(),
            r#"[{"a":1}]"#.into(),
            r#"{"a":1,"b":{"x":1,"y":2},"c":"s"}"#.into(),
            // Arrays sized by the row before's: longer, shorter, empty, with nulls, nested,
            // turned into an object and back, and one longer than any size hint
            r#"{"t":[1,2,3],"u":[[1],[2,3]]}"#.into(),
            r#"{"t":[4],"u":[[],[5]]}"#.into(),
            r#"{"t":[],"u":[[6,7,8]]}"#.into(),
            r#"{"t":[9,null,10,null],"u":[]}"#.into(),
            r#"{"t":[11,12,13,14,15],"u":{"x":[1]}}"#.into(),
            r#"{"t":{"0":1},"u":[[16]]}"#.into(),
            format!(
                "[{}]",
                (0..100)
                    .map(|i| i.to_string())
                    .collect::<Vec<_>>()
                    .join(",")
            ),
            r#"[1,2]"#.into(),
        ];
        let mut data = Vec::new();
        let mut spans = Vec::new();
        for (i, t) in texts.iter().enumerate() {
            let start = data.len();
            data.extend_from_slice(t.as_bytes());
            spans.push((start, data.len(), i as u64 + 1));
        }
        let lua = Lua::new();
        let buf = lua.create_table().unwrap();
        // WHEN they are parsed in one batch
        let (n, bad) = parse_rows(&lua, &buf, &data, &spans).unwrap();
        // THEN each row is exactly serde_json's value: no key of the row before survives
        assert_eq!((n, bad), (texts.len(), None));
        for (i, t) in texts.iter().enumerate() {
            let got = doubles(lua.from_value(buf.get(i + 1).unwrap()).unwrap());
            let want = theirs(t.as_bytes()).unwrap();
            assert!(same(&want, &got), "row {}: {want} != {got}", i + 1);
        }
    }

    #[test]
    fn elements_of_changing_shapes_keep_only_their_own_keys_and_values() {
        // GIVEN one document whose arrays hold records like an order's lines, then elements of
        // other shapes: fewer keys, more, reordered, nulls, nested records and arrays, scalars,
        // an escaped key, a wide record, and keys after the array
        let wide: String = (0..100).map(|i| format!(r#""k{i}":{i},"#)).collect();
        let lines: String = (0..40)
            .map(|i| format!(r#"{{"sku":"SKU-{i}","qty":{},"price":{i}.5}},"#, i % 4))
            .collect();
        let text = format!(
            r#"{{"id":"o-1","items":[{lines}
            {{"sku":"x","qty":1}},{{"qty":2,"sku":"y","price":3}},{{"sku":null,"qty":4}},
            {{"sku":"z","tags":["a","b"],"ship":{{"to":"GB","by":"air"}}}},
            {{"sku":"z","tags":[],"ship":{{"to":"FR"}}}},{{}},[1,2],7,"sku",null,
            {{"s\u0041ku":1,"sku":"e\n"}},{{{wide}"last":true}},{{"k1":1}},{{"sku":"q","sku":"r"}}],
            "rows":[[1,2,3],[4],[],[5,[6,{{"a":1}}]],[7,[8,{{"b":2}}]]],
            "after":{{"sku":"after","qty":0}},"currency":"EUR"}}"#
        );
        assert!(text.len() > SHAPES_FROM);
        let lua = Lua::new();
        // WHEN it is parsed
        let got = ours(&lua, text.as_bytes()).expect("accepted");
        // THEN it is exactly serde_json's value: no key or value of an element before survives
        let want = theirs(text.as_bytes()).unwrap();
        assert!(same(&want, &got), "{want}\n!=\n{got}");
    }

    #[test]
    fn a_thread_keeps_small_buffers_between_parses_and_nothing_it_read() {
        // GIVEN a document with a 1 MB key, a 1 MB escaped string and 10 000 keys in one object
        let lua = Lua::new();
        let long = "k".repeat(1 << 20);
        let wide: String = (0..10_000).map(|i| format!(r#","w{i}":{i}"#)).collect();
        let text = format!(
            r#"[{{"{long}":1,"s":"{}\n"{wide}}},{{"{long}":2}}]"#,
            "e".repeat(1 << 20)
        );
        // WHEN it is parsed, then a document of another shape on the same thread
        assert!(parse_value(&lua, text.as_bytes()).unwrap().is_ok());
        let next = format!(
            r#"[{{"k":1}},{{"k":2,"s":"t"}}]{}"#,
            " ".repeat(SHAPES_FROM)
        );
        let got = ours(&lua, next.as_bytes()).unwrap();
        // THEN the second is read as itself, and the thread keeps no buffer past its bounds
        assert_eq!(
            got,
            serde_json::json!([{ "k": 1.0 }, { "k": 2.0, "s": "t" }])
        );
        let kept = Shapes::take();
        assert!(kept.keys.iter().all(|k| k.quoted.capacity() <= KEEP_KEY));
        assert!(kept.set.capacity() * 8 <= KEEP_BYTES && kept.scratch.capacity() <= KEEP_BYTES);
        assert!(kept.keys.iter().all(|k| k.at.is_null()));
        assert!(kept.strs.iter().all(|c| !c.known && c.misses == 0));
        assert!(kept.objects.iter().all(|o| !o.known));
        // (the sizes its VM's tables ended with are kept, each at most MAX_HINT)
        assert!(kept.sizes.len() <= SHAPE_TABLES && kept.sizes.iter().all(|&n| n <= MAX_HINT));
    }

    #[test]
    fn a_vm_s_next_body_is_sized_from_its_last_and_never_from_another_vm_s() {
        // GIVEN a VM that parsed a document of three tables (the widest object of 5 keys)
        let (a, b) = (Lua::new(), Lua::new());
        let doc = r#"{"x":{"a":1,"b":2,"c":3,"d":4,"e":5},"y":[1,2]}"#;
        assert!(parse_value(&a, doc.as_bytes()).unwrap().is_ok());
        let kept = Shapes::take();
        assert_eq!(kept.sizes, [2, 5, 2]);
        kept.give_back();
        // WHEN the same VM parses another body: its tables are sized from the last one's
        // (the sizes of this parse replace them as it goes)
        assert!(parse_value(&a, br#"{"x":{"a":1}}"#).unwrap().is_ok());
        let kept = Shapes::take();
        assert_eq!(
            kept.sizes,
            [1, 1, 2],
            "the third is the last body's, carried"
        );
        kept.give_back();
        // WHEN another VM parses on this thread: nothing of the first VM's sizes is used
        assert!(parse_value(&b, br#"{"z":1}"#).unwrap().is_ok());
        let kept = Shapes::take();
        assert_eq!(kept.sizes, [1]);
        // AND where Luau finds the end of a list with `null` (nil) elements does not depend on
        // the size the body before left
        for before in [&br#"[1]"#[..], br#"[1,2,3,4,5,6,7,8]"#] {
            assert!(parse_value(&b, before).unwrap().is_ok());
            let after = ours(&b, br#"[null,5]"#).unwrap();
            assert_eq!(after, ours(&Lua::new(), br#"[null,5]"#).unwrap());
            let v = parse_value(&b, br#"[null,5]"#).unwrap().unwrap();
            let list: mlua::Table = b.unpack(v).unwrap();
            assert_eq!(
                list.raw_len(),
                2,
                "after {}",
                String::from_utf8_lossy(before)
            );
        }
    }

    #[test]
    fn strings_of_every_length_are_scanned_as_serde_json_reads_them() {
        // GIVEN strings of 0 to 24 bytes with a quote, a backslash escape, a control byte, a
        // UTF-8 character or a byte that is not UTF-8 at every position
        let lua = Lua::new();
        let mut checked = 0;
        for len in 0..24usize {
            for at in 0..=len {
                for odd in ["\"", "\\n", "\u{1}", "é", "\u{ff}", "\u{7f}", "\u{1F600}"] {
                    let mut body: String = "abcdefghijklmnopqrstuvwxyz"[..len].to_string();
                    body.insert_str(at, odd);
                    let mut bytes = format!("[\"{body}\", \"{body}\"]").into_bytes();
                    if odd == "\u{ff}" {
                        // a lone continuation byte: not UTF-8
                        let i = bytes.iter().position(|&b| b == 0xc3).unwrap();
                        bytes.remove(i);
                    }
                    // WHEN both parse it
                    let (a, b) = (theirs(&bytes), ours(&lua, &bytes));
                    // THEN they agree on whether it is JSON and on its value
                    assert_eq!(a, b, "{:?}", String::from_utf8_lossy(&bytes));
                    checked += 1;
                }
            }
        }
        assert!(checked > 2_000);
    }

    #[test]
    fn nesting_is_limited_where_serde_json_limits_it() {
        let lua = Lua::new();
        for n in [126usize, 127, 128, 129] {
            let text = format!("{}{}", "[".repeat(n), "]".repeat(n));
            let (a, b) = (theirs(text.as_bytes()), ours(&lua, text.as_bytes()));
            assert_eq!(a.is_some(), b.is_some(), "{n} levels");
        }
        let deep = "[".repeat(100_000);
        let e = parse_value(&lua, deep.as_bytes()).unwrap().unwrap_err();
        assert!(e.contains("recursion limit"), "{e}");
    }

    #[test]
    fn rows_share_interned_keys_and_keep_their_own_values() {
        // GIVEN rows of one shape, then a row whose second key differs, then a bad row
        let lua = Lua::new();
        let buf = lua.create_table().unwrap();
        let data = br#"{"id":1,"name":"a"}{"id":2,"name":"b"}{"id":3,"nome":"c"}{"id":4,"name":"d"}{"id":}"#;
        let spans = [
            (0, 19, 1),
            (19, 38, 2),
            (38, 57, 3),
            (57, 76, 4),
            (76, 83, 5),
        ];
        // WHEN they are parsed in one batch
        let (n, bad) = parse_rows(&lua, &buf, data, &spans).unwrap();
        // THEN each row has its own keys and values, and the bad row is named with serde's words
        assert_eq!(n, 4);
        let (line, why) = bad.unwrap();
        assert_eq!(line, 5);
        assert!(why.contains("expected value at line 1 column 7"), "{why}");
        let rows: Vec<Value> = (1..=4)
            .map(|i| lua.from_value(buf.get(i).unwrap()).unwrap())
            .collect();
        assert_eq!(rows[1], serde_json::json!({ "id": 2, "name": "b" }));
        assert_eq!(rows[2], serde_json::json!({ "id": 3, "nome": "c" }));
        assert_eq!(rows[3], serde_json::json!({ "id": 4, "name": "d" }));
    }

    #[test]
    fn a_list_with_nulls_has_the_same_length_wherever_it_is_read() {
        // GIVEN lists with `null` elements (nils), alone and after elements of other sizes
        let lua = Lua::new();
        let len = |text: &str, path: &[mlua::Value]| -> usize {
            let v = parse_value(&lua, text.as_bytes()).unwrap().unwrap();
            let mut t: mlua::Table = lua.unpack(v).unwrap();
            for k in path {
                t = t.raw_get(k).unwrap();
            }
            t.raw_len()
        };
        let (two, l) = (
            mlua::Value::Integer(2),
            mlua::Value::String(lua.create_string("l").unwrap()),
        );
        for (list, want) in [
            ("[null,5]", 2),
            ("[null,null,5]", 3),
            ("[1,null,null,null,null,6]", 6),
        ] {
            // WHEN each is read alone, after a shorter and after a longer list, and as rows
            // after a row with a shorter list
            let alone = len(list, &[]);
            let after_short = len(&format!("[[1],{list}]"), std::slice::from_ref(&two));
            let after_long = len(
                &format!("[[1,2,3,4,5,6,7,8,9],{list}]"),
                std::slice::from_ref(&two),
            );
            let rows = format!(r#"[{{"l":[1]}},{{"l":{list}}}]"#);
            let rows = format!("{rows}{}", " ".repeat(SHAPES_FROM));
            let as_rows = len(&rows, &[two.clone(), l.clone()]);
            // THEN its length (`#`, a border) is the same everywhere, and ends at its last
            // element
            assert_eq!(
                [alone, after_short, after_long, as_rows],
                [want; 4],
                "{list}"
            );
        }
    }
}
