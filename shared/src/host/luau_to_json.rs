//! Bounded conversion of Luau values into host values: JSON text or a `serde_json::Value`.
//!
//! Every path that turns a script's value into something the host holds (return values,
//! `native.json.encode`, queue messages, `native.db` items, log fields, barrier and batch state)
//! goes through one walker. A script controls the shape of what it hands over, and a few MB of
//! Luau heap can describe gigabytes of JSON (the same 1 MB string five thousand times, a table
//! that holds the same subtable at every level), so the walker counts as it goes and stops at a
//! [`Allowance`]: the encoded size (`max_object_mb`), the memory the host value takes, and the
//! invocation's deadline. Shared subtables count each time they appear, as they would be
//! written. The host therefore never allocates more than a fixed multiple of the allowance for one
//! conversion, whatever the script does.

use std::time::Instant;

use mlua::{Lua, LuaSerdeExt, LuaString, Table, Value};

mod stack;

/// Nesting deeper than this is refused (JSON readers elsewhere stop near here too).
pub const MAX_DEPTH: usize = 128;

/// How many values are converted between two looks at the clock.
const CLOCK_EVERY: u32 = 1024;

/// The host memory one `serde_json::Value` node takes, roughly: the enum itself, and for an
/// object entry its key and index slot.
const NODE_BYTES: usize = 32;
const ENTRY_BYTES: usize = 48;

/// How much one conversion may produce.
#[derive(Debug, Clone, Copy)]
pub struct Allowance {
    /// Most bytes of JSON text (exact for text, estimated for values).
    pub max_bytes: usize,
    /// Most host memory a built value may take (values only).
    pub max_memory: usize,
    /// When the invocation must end.
    pub deadline: Option<Instant>,
}

impl Allowance {
    /// The budget of one value under `max_object_mb`: that many MB of JSON, and four times
    /// that of host memory for a built value (a JSON number takes 2 bytes as text and 32 as
    /// a value).
    pub fn object_mb(max_object_mb: u32, deadline: Option<Instant>) -> Allowance {
        let mb = max_object_mb as usize * 1024 * 1024;
        Allowance {
            max_bytes: mb,
            max_memory: mb * 4,
            deadline,
        }
    }
}

/// Why a conversion stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Stop {
    /// The value has no JSON form (a function, a cycle, a mixed table, NaN); the text names
    /// where, as a path from `value`.
    Shape(String),
    /// The value is larger than the budget allows; the text gives the figures.
    TooBig(String),
    /// The deadline passed during the conversion.
    Deadline,
}

/// Where a walk writes to.
trait Sink {
    fn null(&mut self);
    fn bool(&mut self, b: bool);
    fn int(&mut self, i: i64);
    fn float(&mut self, f: f64);
    fn str(&mut self, s: &str);
    fn begin_array(&mut self, len: usize);
    fn begin_object(&mut self, len: usize);
    /// Before each element (`first` for the first one).
    fn element(&mut self, first: bool);
    fn key(&mut self, first: bool, k: &str);
    fn end_array(&mut self, empty: bool);
    fn end_object(&mut self, empty: bool);
    /// Bytes written or estimated so far, and host memory taken.
    fn used(&self) -> (usize, usize);
}

/// Counts what the walk produced against the budget.
struct Walk<'a, S> {
    lua: &'a Lua,
    sink: S,
    budget: Allowance,
    seen: Vec<*const std::ffi::c_void>,
    ticks: u32,
    /// Host memory held by the entry lists of the tables being walked (sorting needs them).
    scratch: usize,
}

/// What one collected table entry holds on the host while its table is walked.
const SCRATCH_BYTES: usize = 40;

/// A path segment, prepended to the error path as the walk unwinds: the segment is only
/// formatted for an error, so the path costs nothing when the value converts.
fn at(stop: Stop, seg: impl FnOnce() -> String) -> Stop {
    match stop {
        Stop::Shape(m) => Stop::Shape(format!("{}{m}", seg())),
        other => other,
    }
}

impl<S: Sink> Walk<'_, S> {
    fn check(&mut self) -> Result<(), Stop> {
        let (bytes, memory) = self.sink.used();
        let memory = memory + self.scratch;
        if bytes > self.budget.max_bytes {
            return Err(Stop::TooBig(format!(
                "is more than {} as JSON",
                figure(self.budget.max_bytes)
            )));
        }
        if memory > self.budget.max_memory {
            return Err(Stop::TooBig(format!(
                "would take more than {} of host memory (about {} as JSON)",
                figure(self.budget.max_memory),
                figure(bytes)
            )));
        }
        self.ticks += 1;
        if self.ticks >= CLOCK_EVERY {
            self.ticks = 0;
            if self.budget.deadline.is_some_and(|d| Instant::now() >= d) {
                return Err(Stop::Deadline);
            }
        }
        Ok(())
    }

    fn value(&mut self, v: &Value, depth: usize) -> Result<(), Stop> {
        match v {
            Value::Nil => self.sink.null(),
            Value::LightUserData(u) if u.0.is_null() => self.sink.null(),
            Value::Boolean(b) => self.sink.bool(*b),
            Value::Integer(i) => self.sink.int(*i),
            Value::Number(n) => {
                if n.fract() == 0.0 && n.abs() < 9.007_199_254_740_992e15 {
                    self.sink.int(*n as i64)
                } else if n.is_finite() {
                    self.sink.float(*n)
                } else {
                    return Err(Stop::Shape(format!(" is {n}")));
                }
            }
            Value::String(s) => {
                let (bytes, _) = self.sink.used();
                let len = s.as_bytes().len();
                if bytes + len > self.budget.max_bytes {
                    // Refused before the host copies it.
                    return Err(Stop::TooBig(format!(
                        "is more than {} as JSON (a string of {} alone)",
                        figure(self.budget.max_bytes),
                        figure(len)
                    )));
                }
                let s = s
                    .to_str()
                    .map_err(|_| Stop::Shape(" is not valid UTF-8".into()))?;
                self.sink.str(&s);
            }
            Value::Table(t) => {
                if depth >= MAX_DEPTH {
                    return Err(Stop::Shape(format!(
                        " is nested more than {MAX_DEPTH} deep"
                    )));
                }
                let ptr = t.to_pointer();
                if self.seen.contains(&ptr) {
                    return Err(Stop::Shape(" contains itself".into()));
                }
                self.seen.push(ptr);
                let out = self.table(t, depth);
                self.seen.pop();
                out?;
            }
            other => return Err(Stop::Shape(format!(" is a {}", other.type_name()))),
        }
        self.check()
    }

    fn table(&mut self, t: &Table, depth: usize) -> Result<(), Stop> {
        if self.list(t, depth)? {
            return Ok(());
        }
        let held = self.scratch;
        let out = self.collected(t, depth);
        self.scratch = held;
        out
    }

    /// A table whose keys are exactly 1..n (the common list) is walked by index, without
    /// collecting its entries on the host. `false` when the table is anything else.
    fn list(&mut self, t: &Table, depth: usize) -> Result<bool, Stop> {
        let n = t.raw_len();
        if n == 0 {
            return Ok(false);
        }
        let mut count = 0usize;
        for pair in t.pairs::<Value, Value>() {
            let (k, _) = pair.map_err(|e| Stop::Shape(format!(": {e}")))?;
            let index = match k {
                Value::Integer(i) => i as f64,
                Value::Number(x) => x,
                _ => return Ok(false),
            };
            if !(index >= 1.0 && index <= n as f64 && index.fract() == 0.0) {
                return Ok(false);
            }
            count += 1;
            if count.is_multiple_of(1024) {
                self.check()?;
            }
        }
        if count != n {
            return Ok(false);
        }
        self.sink.begin_array(n);
        for i in 1..=n {
            let v: Value = t
                .raw_get(i)
                .map_err(|e| Stop::Shape(format!("[{i}]: {e}")))?;
            self.sink.element(i == 1);
            self.value(&v, depth + 1)
                .map_err(|e| at(e, || format!("[{i}]")))?;
        }
        self.sink.end_array(false);
        Ok(true)
    }

    /// Any other table: its entries collected (and counted against the budget), then written
    /// as a list with holes or an object with sorted keys.
    fn collected(&mut self, t: &Table, depth: usize) -> Result<(), Stop> {
        let mut ints: Vec<(usize, Value)> = Vec::new();
        let mut named: Vec<(LuaString, Value)> = Vec::new();
        for pair in t.pairs::<Value, Value>() {
            let (k, v) = pair.map_err(|e| Stop::Shape(format!(": {e}")))?;
            self.scratch += SCRATCH_BYTES;
            if self.scratch.is_multiple_of(SCRATCH_BYTES * 1024) {
                self.check()?;
            }
            match k {
                Value::Integer(i) if i >= 1 => ints.push((i as usize, v)),
                Value::Number(n) if n >= 1.0 && n.fract() == 0.0 && n < 9.0e15 => {
                    ints.push((n as usize, v))
                }
                Value::String(s) => named.push((s, v)),
                other => {
                    return Err(Stop::Shape(format!(
                        " has a key of type {} ({}); JSON keys are strings",
                        other.type_name(),
                        other.to_string().unwrap_or_default()
                    )))
                }
            }
        }
        if !ints.is_empty() && !named.is_empty() {
            return Err(Stop::Shape(format!(
                " mixes list entries (1, 2, ...) with named keys ({:?}, ...); JSON holds one or the other",
                named[0].0.to_string_lossy()
            )));
        }
        let is_array = t
            .metatable()
            .is_some_and(|m| m == self.lua.array_metatable());
        if !ints.is_empty() || (is_array && named.is_empty()) {
            ints.sort_unstable_by_key(|(i, _)| *i);
            let max = ints.last().map_or(0, |(i, _)| *i);
            if max >= 10 && ints.len() * 2 < max {
                return Err(Stop::Shape(format!(
                    " is a list with {} entries spread up to index {max}; too sparse for a JSON array",
                    ints.len()
                )));
            }
            self.sink.begin_array(max);
            let mut next = 1;
            for (i, v) in &ints {
                // Holes are nulls.
                while next < *i {
                    self.sink.element(next == 1);
                    self.sink.null();
                    next += 1;
                    self.check()?;
                }
                self.sink.element(next == 1);
                self.value(v, depth + 1)
                    .map_err(|e| at(e, || format!("[{i}]")))?;
                next += 1;
            }
            self.sink.end_array(max == 0);
            return Ok(());
        }
        let mut keys = Vec::with_capacity(named.len());
        for (k, v) in named {
            // A JSON null (native.json.null) in a table is an absent key.
            if matches!(v, Value::LightUserData(u) if u.0.is_null()) {
                continue;
            }
            let name = k
                .to_str()
                .map_err(|_| Stop::Shape(" has a key that is not UTF-8".into()))?
                .to_string();
            keys.push((name, v));
        }
        keys.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        self.sink.begin_object(keys.len());
        for (n, (k, v)) in keys.iter().enumerate() {
            self.sink.key(n == 0, k);
            self.value(v, depth + 1)
                .map_err(|e| at(e, || format!(".{k}")))?;
        }
        self.sink.end_object(keys.is_empty());
        Ok(())
    }
}

/// A size for people: bytes, KB or MB.
pub fn figure(bytes: usize) -> String {
    if bytes >= 1024 * 1024 {
        format!("{} MB", bytes / (1024 * 1024))
    } else if bytes >= 1024 {
        format!("{} KB", bytes / 1024)
    } else {
        format!("{bytes} bytes")
    }
}

/// JSON text, compact or indented as serde_json's pretty printer does.
struct Text {
    out: Vec<u8>,
    indent: Option<usize>,
}

impl Text {
    fn newline(&mut self) {
        if let Some(level) = self.indent {
            self.out.push(b'\n');
            self.out.resize(self.out.len() + level * 2, b' ');
        }
    }
}

impl Sink for Text {
    fn null(&mut self) {
        self.out.extend_from_slice(b"null");
    }
    fn bool(&mut self, b: bool) {
        self.out
            .extend_from_slice(if b { b"true" as &[u8] } else { b"false" });
    }
    fn int(&mut self, i: i64) {
        let _ = serde_json::to_writer(&mut self.out, &i);
    }
    fn float(&mut self, f: f64) {
        let _ = serde_json::to_writer(&mut self.out, &f);
    }
    fn str(&mut self, s: &str) {
        let _ = serde_json::to_writer(&mut self.out, s);
    }
    fn begin_array(&mut self, _: usize) {
        self.out.push(b'[');
        self.indent = self.indent.map(|l| l + 1);
    }
    fn begin_object(&mut self, _: usize) {
        self.out.push(b'{');
        self.indent = self.indent.map(|l| l + 1);
    }
    fn element(&mut self, first: bool) {
        if !first {
            self.out.push(b',');
        }
        self.newline();
    }
    fn key(&mut self, first: bool, k: &str) {
        self.element(first);
        self.str(k);
        self.out.push(b':');
        if self.indent.is_some() {
            self.out.push(b' ');
        }
    }
    fn end_array(&mut self, empty: bool) {
        self.indent = self.indent.map(|l| l - 1);
        if !empty {
            self.newline();
        }
        self.out.push(b']');
    }
    fn end_object(&mut self, empty: bool) {
        self.indent = self.indent.map(|l| l - 1);
        if !empty {
            self.newline();
        }
        self.out.push(b'}');
    }
    fn used(&self) -> (usize, usize) {
        (self.out.len(), self.out.len())
    }
}

/// A `serde_json::Value` built bottom-up on a stack, with its size estimated as it grows.
#[derive(Default)]
struct Build {
    stack: Vec<Frame>,
    done: Option<serde_json::Value>,
    bytes: usize,
    memory: usize,
    /// The most nodes the budget allows: containers are sized exactly, up to this.
    max_nodes: usize,
}

enum Frame {
    Array(Vec<serde_json::Value>),
    Object(serde_json::Map<String, serde_json::Value>, Option<String>),
}

impl Build {
    fn put(&mut self, v: serde_json::Value) {
        self.memory += NODE_BYTES;
        match self.stack.last_mut() {
            Some(Frame::Array(a)) => a.push(v),
            Some(Frame::Object(m, k)) => {
                if let Some(k) = k.take() {
                    m.insert(k, v);
                }
            }
            None => self.done = Some(v),
        }
    }
}

impl Sink for Build {
    fn null(&mut self) {
        self.bytes += 4;
        self.put(serde_json::Value::Null);
    }
    fn bool(&mut self, b: bool) {
        self.bytes += 5;
        self.put(serde_json::Value::Bool(b));
    }
    fn int(&mut self, i: i64) {
        self.bytes += digits(i);
        self.put(serde_json::Value::from(i));
    }
    fn float(&mut self, f: f64) {
        self.bytes += 17;
        self.put(serde_json::Number::from_f64(f).map_or(serde_json::Value::Null, Into::into));
    }
    fn str(&mut self, s: &str) {
        self.bytes += s.len() + 2;
        self.memory += s.len();
        self.put(serde_json::Value::String(s.to_string()));
    }
    fn begin_array(&mut self, len: usize) {
        self.bytes += 2;
        self.stack
            .push(Frame::Array(Vec::with_capacity(len.min(self.max_nodes))));
    }
    fn begin_object(&mut self, len: usize) {
        self.bytes += 2;
        self.stack.push(Frame::Object(
            serde_json::Map::with_capacity(len.min(self.max_nodes)),
            None,
        ));
    }
    fn element(&mut self, first: bool) {
        self.bytes += usize::from(!first);
    }
    fn key(&mut self, first: bool, k: &str) {
        self.bytes += k.len() + 3 + usize::from(!first);
        self.memory += k.len() + ENTRY_BYTES;
        if let Some(Frame::Object(_, slot)) = self.stack.last_mut() {
            *slot = Some(k.to_string());
        }
    }
    fn end_array(&mut self, _: bool) {
        if let Some(Frame::Array(a)) = self.stack.pop() {
            self.put(serde_json::Value::Array(a));
        }
    }
    fn end_object(&mut self, _: bool) {
        if let Some(Frame::Object(m, _)) = self.stack.pop() {
            self.put(serde_json::Value::Object(m));
        }
    }
    fn used(&self) -> (usize, usize) {
        (self.bytes, self.memory)
    }
}

fn digits(i: i64) -> usize {
    let mut n = i.unsigned_abs();
    let mut d = usize::from(i < 0) + 1;
    while n >= 10 {
        n /= 10;
        d += 1;
    }
    d
}

fn walk<S: Sink>(lua: &Lua, v: &Value, sink: S, budget: Allowance) -> Result<S, Stop> {
    let mut w = Walk {
        lua,
        sink,
        budget,
        seen: Vec::new(),
        ticks: 0,
        scratch: 0,
    };
    w.value(v, 0).map_err(|s| match s {
        Stop::Shape(m) => Stop::Shape(format!("value{m}")),
        other => other,
    })?;
    Ok(w.sink)
}

/// A Luau value as JSON text, within `budget`. `pretty` indents as `serde_json` does.
pub fn text(lua: &Lua, v: &Value, pretty: bool, budget: Allowance) -> Result<Vec<u8>, Stop> {
    // Room for a usual answer, rather than a buffer grown from empty (four reallocations).
    let mut sink = Text {
        out: Vec::with_capacity(128),
        indent: pretty.then_some(0),
    };
    // A small table on Luau's stack ([`stack`]); what that walk does not take, the walker
    // writes from the start.
    if let Value::Table(t) = v {
        if stack::write(lua, t, &mut sink, budget.max_bytes) {
            return Ok(sink.out);
        }
        sink.out.clear();
        sink.indent = pretty.then_some(0);
    }
    walk(lua, v, sink, budget).map(|t| t.out)
}

/// A Luau value as a `serde_json::Value`, within `budget`.
pub fn value(lua: &Lua, v: &Value, budget: Allowance) -> Result<serde_json::Value, Stop> {
    let sink = Build {
        max_nodes: budget.max_memory / NODE_BYTES,
        ..Build::default()
    };
    walk(lua, v, sink, budget).map(|b| b.done.unwrap_or(serde_json::Value::Null))
}
