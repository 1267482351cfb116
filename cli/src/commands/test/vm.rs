//! The Luau VM a test file runs in: its own, not a tenant's sandbox. It has `test(name, fn)`,
//! the assertions (`assert_eq`, `assert_ne`, and `assert` and `error` as usual, each failure
//! at the test file's `path:line`), `json.encode`/`json.decode`, and hands each test's function
//! the world `t`, whose methods call into [`World`].

use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use mlua::{Function, Lua, LuaSerdeExt, MultiValue, Table, Value as Lv};
use serde_json::Value;

use super::diff;
use super::world::World;
use native_core::outbound::Response;

/// The Luau side of the harness: the globals, and the world's methods, which raise their
/// failures at the caller's line.
const PRELUDE: &str = r#"
local register, diff, same, now_s = ...
-- The test's own os.time and os.date read the world's clock, as the scripts' do.
local time, date = os.time, os.date
os.time = function(t)
  if t == nil then return now_s() end
  return time(t)
end
os.date = function(fmt, t)
  return date(fmt, if t == nil then now_s() else t)
end
function test(name, fn)
  if type(name) ~= "string" or type(fn) ~= "function" then
    error("test(name, fn): give the test's name (a string) and its function", 2)
  end
  register(name, fn)
end
function assert(v, msg, ...)
  if not v then
    error(if msg == nil then "assertion failed!" else msg, 2)
  end
  return v, msg, ...
end
function assert_eq(actual, expected, msg)
  local d = diff(actual, expected)
  if d then
    error((if msg ~= nil then tostring(msg) .. ": " else "") .. d, 2)
  end
end
function assert_ne(actual, unexpected, msg)
  if same(actual, unexpected) then
    error((if msg ~= nil then tostring(msg) .. ": " else "") .. "assert_ne: both are " .. diff.render(actual), 2)
  end
end
return function(host)
  local t = {}
  for name, f in host do
    t[name] = function(self, ...)
      if self ~= t then
        error("call t:" .. name .. "(...) with a colon", 2)
      end
      local r = table.pack(f(...))
      if not r[1] then
        error(r[2], 2)
      end
      return table.unpack(r, 2, r.n)
    end
  end
  return table.freeze(t)
end
"#;

/// The most memory a test file's VM may hold.
const MAX_MEMORY_BYTES: usize = 512 << 20;

/// A test file's VM and the tests it registered.
pub struct FileVm {
    lua: Lua,
    /// When the running test (or the file's loading) is out of time.
    deadline: Arc<Mutex<Instant>>,
    /// How long a test's own Luau may run (the scripts it runs have their own deadlines): a
    /// test that loops forever fails instead of holding the run.
    timeout: Duration,
    make_world: Function,
    /// The tests in the order the file declared them.
    pub tests: Vec<(String, Function)>,
}

fn to_lua(lua: &Lua, v: &Value) -> mlua::Result<Lv> {
    let opts = mlua::serde::SerializeOptions::new()
        .serialize_none_to_null(false)
        .serialize_unit_to_null(false)
        .set_array_metatable(false);
    lua.to_value_with(v, opts)
}

fn from_lua(lua: &Lua, v: Lv) -> Result<Value, String> {
    lua.from_value(v).map_err(|e| format!("not JSON: {e}"))
}

/// A body given as a string (as it is), or any other value (as JSON).
fn body(lua: &Lua, v: Lv) -> Result<Vec<u8>, String> {
    match v {
        Lv::Nil => Ok(Vec::new()),
        Lv::String(s) => Ok(s.as_bytes().to_vec()),
        other => Ok(from_lua(lua, other)?.to_string().into_bytes()),
    }
}

impl FileVm {
    /// Loads and runs the test file `source`, named `name` (its path in the project), which
    /// registers its tests.
    /// Its `require` loads `tenant`'s modules.
    pub fn load(
        name: &str,
        source: &str,
        tenant: Arc<native_core::config::Tenant>,
        timeout: Duration,
    ) -> Result<FileVm, String> {
        let lua = Lua::new();
        let deadline = Arc::new(Mutex::new(Instant::now() + timeout));
        let until = deadline.clone();
        lua.set_interrupt(move |lua| {
            if Instant::now() > *until.lock().unwrap_or_else(|p| p.into_inner()) {
                // Where it was running: the test file's path:line.
                let at = (0..4)
                    .filter_map(|level| {
                        lua.inspect_stack(level, |d| {
                            let src = d.source().short_src?.into_owned();
                            let line = d.current_line()?;
                            Some(format!("{src}:{line}: "))
                        })
                        .flatten()
                    })
                    .next()
                    .unwrap_or_default();
                return Err(mlua::Error::runtime(format!(
                    "{at}the test ran for more than {} s (--timeout)",
                    timeout.as_secs()
                )));
            }
            Ok(mlua::VmState::Continue)
        });
        let _ = lua.set_memory_limit(MAX_MEMORY_BYTES);
        let tests: Arc<Mutex<Vec<(String, Function)>>> = Arc::default();
        let setup = || -> mlua::Result<Function> {
            let json = lua.create_table()?;
            json.set(
                "encode",
                lua.create_function(|lua, v: Lv| {
                    from_lua(lua, v)
                        .map(|j| j.to_string())
                        .map_err(mlua::Error::runtime)
                })?,
            )?;
            json.set(
                "decode",
                lua.create_function(|lua, s: String| {
                    let v: Value = serde_json::from_str(&s)
                        .map_err(|e| mlua::Error::runtime(format!("json.decode: {e}")))?;
                    to_lua(lua, &v)
                })?,
            )?;
            lua.globals().set("json", json)?;
            super::require::install(&lua, tenant, name)?;
            let registered = tests.clone();
            let register = lua.create_function(move |_, (n, f): (String, Function)| {
                registered
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .push((n, f));
                Ok(())
            })?;
            let diff_t = lua.create_table()?;
            diff_t.set(
                "render",
                lua.create_function(|_, v: Lv| Ok(diff::render(&v)))?,
            )?;
            let mt = lua.create_table()?;
            mt.set(
                "__call",
                lua.create_function(|_, (_, a, e): (Lv, Lv, Lv)| Ok(diff::diff(&a, &e)))?,
            )?;
            diff_t.set_metatable(Some(mt))?;
            let now_s =
                lua.create_function(|_, ()| Ok(native_core::ports::now_ms().div_euclid(1000)))?;
            let same = lua.create_function(|_, (a, e): (Lv, Lv)| Ok(diff::equal(&a, &e)))?;
            lua.load(PRELUDE)
                .set_name("=native test")
                .call::<Function>((register, diff_t, same, now_s))
        };
        let make_world = setup().map_err(|e| format!("cannot set up the test VM: {e}"))?;
        lua.load(source)
            .set_name(format!("={name}"))
            .exec()
            .map_err(|e| message(&e))?;
        let tests = std::mem::take(&mut *tests.lock().unwrap_or_else(|p| p.into_inner()));
        Ok(FileVm {
            lua,
            deadline,
            timeout,
            make_world,
            tests,
        })
    }

    /// Runs one test's function with `world` as `t`: `Err` with the failure's message.
    pub fn run(&self, f: &Function, world: &Arc<World>) -> Result<(), String> {
        *self.deadline.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now() + self.timeout;
        // The test's own math.random draws from its seed (the world seeded the generator).
        let randomseed = self
            .lua
            .globals()
            .get::<Table>("math")
            .and_then(|m| m.get::<Function>("randomseed"));
        if let Ok(seed) = randomseed {
            let _ = seed.call::<()>((native_core::random::u64() >> 33) as i32);
        }
        let host = self.host(Arc::downgrade(world)).map_err(|e| message(&e))?;
        let t: Table = self.make_world.call(host).map_err(|e| message(&e))?;
        f.call::<()>(t).map_err(|e| message(&e))
    }

    /// The world's methods, each returning `true, ...` or `false, message`.
    /// They hold the world weakly: it ends with its test even when the file keeps `t`.
    fn host(&self, w: Weak<World>) -> mlua::Result<Table> {
        let lua = &self.lua;
        let host = lua.create_table()?;
        macro_rules! method {
            ($name:literal, |$lua:ident, $w:ident, $args:tt : $ty:ty| $body:expr) => {{
                let weak = w.clone();
                host.set(
                    $name,
                    lua.create_function(move |$lua, $args: $ty| {
                        let out: Result<Lv, String> = (|| {
                            let $w = weak.upgrade().ok_or_else(|| {
                                "the world of this test is gone: t was kept after its test ended"
                                    .to_string()
                            })?;
                            $body
                        })();
                        Ok(match out {
                            Ok(v) => MultiValue::from_vec(vec![Lv::Boolean(true), v]),
                            Err(e) => MultiValue::from_vec(vec![
                                Lv::Boolean(false),
                                Lv::String($lua.create_string(format!("t:{}: {e}", $name))?),
                            ]),
                        })
                    })?,
                )?;
            }};
        }
        fn lv<T>(r: mlua::Result<T>) -> Result<T, String> {
            r.map_err(|e| e.to_string())
        }
        method!("invoke", |lua, w, (script, event): (String, Lv)| {
            let event = match event {
                Lv::Nil => Value::Object(Default::default()),
                e => from_lua(lua, e)?,
            };
            let out = w.invoke(&script, event)?;
            lv(to_lua(lua, &out))
        });
        method!("send", |lua,
                         w,
                         (script, event, opts): (
            String,
            Lv,
            Option<Table>
        )| {
            let event = match event {
                Lv::Nil => Value::Object(Default::default()),
                e => from_lua(lua, e)?,
            };
            let delay: u32 = match &opts {
                Some(o) => lv(o.get::<Option<u32>>("delay_s"))?.unwrap_or(0),
                None => 0,
            };
            w.send(&script, event, delay)?;
            Ok(Lv::Nil)
        });
        method!(
            "put",
            |lua, w, (bucket, key, data): (String, String, Lv)| {
                w.put(&bucket, &key, body(lua, data)?)?;
                Ok(Lv::Nil)
            }
        );
        method!("get", |lua, w, (bucket, key): (String, String)| {
            match w.get(&bucket, &key)? {
                Some(data) => Ok(Lv::String(lv(lua.create_string(&data))?)),
                None => Ok(Lv::Nil),
            }
        });
        method!(
            "list",
            |lua, w, (bucket, prefix): (String, Option<String>)| {
                let keys = w.list(&bucket, prefix.as_deref().unwrap_or(""))?;
                lv(to_lua(lua, &Value::from(keys)))
            }
        );
        method!("drain", |lua, w, opts: Option<Table>| {
            let report = w.drain()?;
            let allow = match &opts {
                Some(o) => lv(o.get::<Option<bool>>("allow_failures"))?.unwrap_or(false),
                None => false,
            };
            let failures = report["failures"].as_array().cloned().unwrap_or_default();
            if !allow && !failures.is_empty() {
                let lines: Vec<String> = failures
                    .iter()
                    .map(|f| {
                        format!(
                            "  {} queue, attempt {}: {}",
                            f["queue"].as_str().unwrap_or(""),
                            f["attempt"],
                            f["error"].as_str().unwrap_or("")
                        )
                    })
                    .collect();
                return Err(format!(
                    "{} message(s) failed (pass {{ allow_failures = true }} to expect it):\n{}",
                    failures.len(),
                    lines.join("\n")
                ));
            }
            lv(to_lua(lua, &report))
        });
        method!("advance", |_lua, w, by: String| {
            Ok(Lv::Number(w.advance(&by)? as f64))
        });
        method!("now", |_lua, _w, (): ()| {
            Ok(Lv::Number(native_core::ports::now_ms() as f64))
        });
        method!("http", |lua,
                         w,
                         (method, path, data, headers): (
            String,
            String,
            Lv,
            Option<Table>
        )| {
            let mut hs = Vec::new();
            if let Some(h) = headers {
                for pair in h.pairs::<String, String>() {
                    hs.push(lv(pair)?);
                }
            }
            let out = w.http(&method.to_ascii_uppercase(), &path, body(lua, data)?, hs)?;
            lv(to_lua(lua, &out))
        });
        method!("partner", |lua, w, opts: Option<Table>| {
            partner(lua, &w, opts)
        });
        method!(
            "stub",
            |lua, w, (host, path, resp): (String, String, Table)| {
                let status: u16 = lv(resp.get::<Option<u16>>("status"))?.unwrap_or(200);
                let mut headers = Vec::new();
                if let Some(h) = lv(resp.get::<Option<Table>>("headers"))? {
                    for pair in h.pairs::<String, String>() {
                        let (k, v) = lv(pair)?;
                        headers.push((k.to_ascii_lowercase(), v.into_bytes()));
                    }
                }
                let body = body(lua, lv(resp.get::<Lv>("body"))?)?;
                w.stub(
                    &host,
                    &path,
                    Response {
                        status,
                        headers,
                        body,
                    },
                );
                Ok(Lv::Nil)
            }
        );
        method!("requests", |lua, w, host: Option<String>| {
            lv(to_lua(lua, &Value::from(w.requests(host.as_deref()))))
        });
        method!("vault", |_lua, w, (name, value): (String, String)| {
            w.vault(&name, &value)?;
            Ok(Lv::Nil)
        });
        method!("db", |lua, w, (partition, key): (String, String)| {
            match w.db(&partition, &key)? {
                Some(v) => lv(to_lua(lua, &v)),
                None => Ok(Lv::Nil),
            }
        });
        method!("barrier", |lua, w, id: String| {
            match w.barrier(&id)? {
                Some(v) => lv(to_lua(lua, &v)),
                None => Ok(Lv::Nil),
            }
        });
        method!("jobs", |lua, w, (): ()| {
            lv(to_lua(lua, &Value::from(w.jobs()?)))
        });
        method!("job", |lua, w, id: String| {
            let found = w.jobs()?.into_iter().find(|j| j["job"] == id.as_str());
            match found {
                Some(v) => lv(to_lua(lua, &v)),
                None => Ok(Lv::Nil),
            }
        });
        method!("timers", |lua, w, (): ()| {
            lv(to_lua(lua, &Value::from(w.timers()?)))
        });
        method!("dead_letters", |lua, w, (): ()| {
            lv(to_lua(lua, &Value::from(w.dead_letters()?)))
        });
        method!("logs", |lua, w, filter: Option<Table>| {
            let mut logs = w.logs();
            if let Some(f) = filter {
                for pair in f.pairs::<String, Lv>() {
                    let (k, v) = lv(pair)?;
                    let want = from_lua(lua, v)?;
                    logs.retain(|r| r[&k] == want);
                }
            }
            lv(to_lua(lua, &Value::from(logs)))
        });
        Ok(host)
    }
}

/// `t:partner(opts)`: answers the tenant's pending batch requests, each from
/// `opts.fixtures` (a folder of the project), `opts.rows` (a table of rows by query name, or a
/// function of the query returning its rows) or `opts.fail` (the error every query fails
/// with); `opts.job` answers only that job. The answers, in job order.
fn partner(lua: &Lua, w: &World, opts: Option<Table>) -> Result<Lv, String> {
    use native_core::batch::partner::Source;
    let err = |e: mlua::Error| e.to_string();
    let Some(opts) = opts else {
        return Err(
            "give { fixtures = DIR }, { rows = ... } or { fail = WHY }: where the rows come from"
                .into(),
        );
    };
    let fixtures: Option<String> = opts.get("fixtures").map_err(err)?;
    let rows: Lv = opts.get("rows").map_err(err)?;
    let fail: Option<String> = opts.get("fail").map_err(err)?;
    let only: Option<String> = opts.get("job").map_err(err)?;
    let mut answers = Vec::new();
    let pending = w.pending()?;
    if let Some(job) = &only {
        if !pending.iter().any(|r| r.job == *job) {
            let ids: Vec<&str> = pending.iter().map(|r| r.job.as_str()).collect();
            return Err(format!(
                "no pending request of job {job:?} (pending: {})",
                if ids.is_empty() {
                    "none".to_string()
                } else {
                    ids.join(", ")
                }
            ));
        }
    }
    for request in pending
        .iter()
        .filter(|r| only.as_ref().is_none_or(|j| r.job == *j))
    {
        let source = match (&fixtures, &rows, &fail) {
            (Some(dir), Lv::Nil, None) => {
                let path = w.project_path(dir);
                if !path.is_dir() {
                    return Err(format!("fixtures {dir:?}: not a folder of the project"));
                }
                Source::Fixtures(path)
            }
            (None, Lv::Nil, Some(why)) => Source::Given(
                request
                    .queries
                    .iter()
                    .map(|q| (q.name.clone(), Err(why.clone())))
                    .collect(),
            ),
            (None, given, None) if !given.is_nil() => {
                let mut out = std::collections::BTreeMap::new();
                for q in &request.queries {
                    let rows = match given {
                        Lv::Function(f) => {
                            let query = serde_json::json!({
                                "job": request.job, "name": q.name,
                                "query": q.query, "params": q.params,
                            });
                            f.call::<Lv>(to_lua(lua, &query).map_err(err)?)
                                .map_err(|e| message(&e))?
                        }
                        Lv::Table(t) => t.get::<Lv>(q.name.as_str()).map_err(err)?,
                        _ => return Err("rows must be a table or a function".into()),
                    };
                    let text = match rows {
                        Lv::Nil => continue,
                        Lv::String(s) => s.to_string_lossy(),
                        other => match from_lua(lua, other)? {
                            Value::Array(items) => {
                                items.iter().map(|r| format!("{r}\n")).collect::<String>()
                            }
                            _ => {
                                return Err(format!(
                                    "the rows of query {}: give a list of rows or NDJSON text",
                                    q.name
                                ))
                            }
                        },
                    };
                    out.insert(q.name.clone(), Ok(text));
                }
                Source::Given(out)
            }
            _ => {
                return Err(
                    "give exactly one of fixtures = DIR, rows = ... or fail = WHY".to_string(),
                )
            }
        };
        answers.push(w.answer(request, source)?);
    }
    to_lua(lua, &Value::from(answers)).map_err(err)
}

/// The message of a Luau error: a callback's own cause, without mlua's wrapping or the
/// harness's own frames of the traceback.
pub fn message(e: &mlua::Error) -> String {
    let text = match native_core::engine::root_error(e) {
        mlua::Error::RuntimeError(m) | mlua::Error::SyntaxError { message: m, .. } => m.clone(),
        other => other.to_string(),
    };
    match text.split_once("\nstack traceback:") {
        Some((m, _)) => m.to_string(),
        None => text,
    }
}
