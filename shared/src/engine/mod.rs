//! The script engine: runs one entry point of one script for one invocation, sandboxed, within
//! the tenant's limits. VMs are pooled per tenant (never shared between tenants) and each
//! invocation gets fresh globals; bytecode is cached by content hash.

mod bytecode;
mod frame;
pub mod handoff;
mod interrupt;
pub mod names;
mod removed;
pub mod require;
mod sandbox;
mod spare;

pub use crate::host::root_error;
pub use bytecode::{bytecode, cached_count, compile, compile_count_of, compile_module};
pub use sandbox::{Blank, Vm};

use std::cell::{Cell, RefCell};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use mlua::Value;

use crate::config::Tenant;
use crate::error::Cause;
use crate::host::Services;
use crate::host::{self, Invocation};
use crate::Error;
use frame::Given;

/// The entry points a script can have.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// `on_invoke(ctx, ev)`: a direct invocation.
    Invoke,
    /// `on_queue(ctx, ev)`: a queue message or a routed object event.
    Queue,
    /// `on_route(ctx, event)`: the router.
    Route,
}

impl Entry {
    /// The function's name.
    pub fn name(self) -> &'static str {
        match self {
            Entry::Invoke => "on_invoke",
            Entry::Queue => "on_queue",
            Entry::Route => "on_route",
        }
    }
}

/// One call of a script.
#[derive(Debug, Clone)]
pub struct Call {
    /// The tenant.
    pub tenant: Arc<Tenant>,
    /// The script to run.
    pub script: String,
    /// Which entry point.
    pub entry: Entry,
    /// The event, passed as the second argument.
    pub event: Event,
    /// Whether the caller wants the return value as JSON text ([`Answer::Json`]) rather than a
    /// value: an HTTP answer, encoded straight from the VM.
    pub json_answer: bool,
    /// 1 on first delivery.
    pub attempt: u32,
    /// The chain depth: 0 for a direct invocation or an outside object event, one more than
    /// the sender for a message or an object a script wrote.
    pub depth: u32,
    /// The share of its chain's width the script runs with (`ctx.width`); `None` for a root,
    /// which gets the tenant's `max_chain_width` ([`crate::host::chain`]).
    pub width: Option<u32>,
}

/// An invocation's event.
#[derive(Debug, Clone)]
pub enum Event {
    /// A value the host holds (a queue message's event, an object event).
    Value(serde_json::Value),
    /// JSON text as it arrived (an HTTP body), parsed straight onto the VM's heap: nothing of
    /// it is built on the host, and its size counts against the script's `max_memory_mb`.
    Json(bytes::Bytes),
}

impl From<serde_json::Value> for Event {
    fn from(v: serde_json::Value) -> Self {
        Event::Value(v)
    }
}

/// What an entry point returned.
#[derive(Debug, Clone, PartialEq)]
pub enum Answer {
    /// As a value (`null` for nothing).
    Value(serde_json::Value),
    /// As JSON text, for a call with [`Call::json_answer`].
    Json(Vec<u8>),
    /// An HTTP answer the script chose with `native.response`.
    Reply(host::Reply),
}

impl Answer {
    /// The answer as a value (JSON text parsed again).
    pub fn into_value(self) -> Result<serde_json::Value, Error> {
        match self {
            Answer::Value(v) => Ok(v),
            Answer::Json(text) => serde_json::from_slice(&text)
                .map_err(|e| Error::InvalidInput(format!("the answer is not JSON: {e}"))),
            Answer::Reply(r) => Ok(r.body_value()),
        }
    }
}

const POOL_PER_TENANT: usize = 8;

/// Garbage a VM may keep when it goes back to the pool; more is collected first.
const POOLED_GARBAGE_BYTES: usize = 1024 * 1024;

/// The longest error message of a script that the host keeps, in bytes.
pub const MAX_ERROR_BYTES: usize = 16 * 1024;

/// Idle VMs of one tenant, with the tenant version they were built for, each with the thread
/// it last ran on.
type Pool = ([u8; 32], Vec<(Vm, ThreadId)>);

/// Takes from `idle` the VM that last ran on this thread, else the last one given back. A
/// thread that serves a tenant's requests one after another (an HTTP lane) then keeps using
/// the VM whose heap is in its core's cache, rather than the one another core used last.
fn take_near<T>(idle: &mut Vec<(T, ThreadId)>) -> Option<T> {
    let me = std::thread::current().id();
    let at = idle.iter().rposition(|(_, t)| *t == me)?;
    Some(idle.swap_remove(at).0)
}

/// Runs scripts. One per process; cheap to share.
#[derive(Default)]
pub struct Engine {
    pools: Mutex<crate::fast_map::FastMap<String, Pool>>,
    /// The blank VM kept ready for a tenant's first invoke (servers only).
    spare: Option<Arc<spare::Spare>>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Engine")
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if let Some(spare) = &self.spare {
            spare.close();
        }
    }
}

impl Engine {
    /// A new engine with empty pools.
    pub fn new() -> Self {
        Self::default()
    }

    /// A new engine that keeps a blank VM ready for the next tenant's first invoke, made by a
    /// thread at the idle priority after each one is taken ([`spare`]): for servers, whose
    /// tenants' first invokes come while they serve others.
    pub fn with_spare_vm() -> Self {
        Engine {
            pools: Default::default(),
            spare: Some(Default::default()),
        }
    }

    /// How many first invokes took the blank VM made ahead, and how many were made (none
    /// without [`Engine::with_spare_vm`]).
    pub fn spare_counts(&self) -> (u64, u64) {
        self.spare.as_ref().map_or((0, 0), |s| s.counts())
    }

    /// How many idle VMs the tenant has in the pool, for its current config: a VM that ended
    /// in a limit breach is not among them.
    pub fn idle_vms(&self, tenant: &Tenant) -> usize {
        let pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        pools
            .get(&tenant.name)
            .filter(|(version, _)| *version == tenant.version)
            .map_or(0, |(_, vms)| vms.len())
    }

    fn take_vm(&self, tenant: &Tenant, services: &Services) -> Result<Vm, Error> {
        {
            let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
            if let Some((version, vms)) = pools.get_mut(&tenant.name) {
                if *version == tenant.version {
                    if let Some(vm) = take_near(vms).or_else(|| vms.pop().map(|(vm, _)| vm)) {
                        return Ok(vm);
                    }
                }
            }
        }
        let blank = self
            .spare
            .as_ref()
            .and_then(|s| s.take(&services.deployment));
        let made = match blank {
            Some(blank) => Vm::for_tenant(blank, tenant),
            None => Vm::new(tenant, &services.deployment),
        };
        made.map_err(|e| {
            Error::script(
                &tenant.name,
                "-",
                format!("cannot set up the script VM: {}", host::message_of(&e)),
            )
        })
    }

    fn give_back(&self, tenant: &Tenant, vm: Vm) {
        let vm = (vm, std::thread::current().id());
        let mut pools = self.pools.lock().unwrap_or_else(|p| p.into_inner());
        // Not `entry(name.clone())`: that copies the name on every invocation to find a pool
        // that is nearly always there.
        let Some(entry) = pools.get_mut(&tenant.name) else {
            pools.insert(tenant.name.clone(), (tenant.version, vec![vm]));
            return;
        };
        if entry.0 != tenant.version {
            // The tenant changed: VMs built for the old config go.
            *entry = (tenant.version, Vec::new());
        }
        if entry.1.len() < POOL_PER_TENANT {
            entry.1.push(vm);
        }
    }

    /// Runs a call to its end on the current thread, blocking on backend calls through
    /// `handle`. Returns the entry point's return value (`null` for nothing).
    pub fn run(
        &self,
        services: &Arc<Services>,
        handle: &tokio::runtime::Handle,
        call: &Call,
    ) -> Result<Answer, Error> {
        self.run_until(services, handle, call, None)
    }

    /// [`Engine::run`], with the deadline brought forward to `not_after` when that comes
    /// before the tenant's `timeout_s` (what is left of a Lambda's time; see
    /// [`crate::budget`]).
    pub fn run_until(
        &self,
        services: &Arc<Services>,
        handle: &tokio::runtime::Handle,
        call: &Call,
        not_after: Option<Instant>,
    ) -> Result<Answer, Error> {
        self.run_measured(services, handle, call, not_after).0
    }

    /// [`Engine::run_until`], also giving the backend calls the script made (`max_data_ops`'
    /// count), for metrics.
    pub fn run_measured(
        &self,
        services: &Arc<Services>,
        handle: &tokio::runtime::Handle,
        call: &Call,
        not_after: Option<Instant>,
    ) -> (Result<Answer, Error>, u32) {
        let data_ops = Cell::new(0);
        let out = self.run_inner(services, handle, call, not_after, &data_ops);
        (out, data_ops.get())
    }

    fn run_inner(
        &self,
        services: &Arc<Services>,
        handle: &tokio::runtime::Handle,
        call: &Call,
        not_after: Option<Instant>,
        data_ops: &Cell<u32>,
    ) -> Result<Answer, Error> {
        let tenant = &call.tenant;
        let script = tenant.script(&call.script)?;
        // A script's error text reaches logs, terminals and callers: `error(string.rep(...))`
        // must not make every one of them carry megabytes.
        let fail = |cause: Cause, message: String| Error::Script {
            tenant: tenant.name.clone(),
            script: call.script.clone(),
            message: crate::text::cut_text(message, MAX_ERROR_BYTES),
            cause,
        };
        let code = bytecode(script).map_err(|m| fail(Cause::Raised, m))?;
        let vm = self.take_vm(tenant, services)?;
        let limits = tenant.config.limits;
        let full = Duration::from_secs(u64::from(limits.timeout_s));
        let left = not_after.map(|end| end.saturating_duration_since(Instant::now()));
        let timeout = left.map_or(full, |left| left.min(full));
        let request_id = request_id();
        // The chain the runtime set for this run ([`crate::observe::chain`]); a call made
        // without one (the engine alone) is a chain of its own, named after itself.
        let trace = crate::observe::chain().unwrap_or_else(|| request_id.clone());
        let deadline_ms = crate::ports::now_ms() + timeout.as_millis() as i64;
        let base = vm.lua.used_memory();
        let width = host::chain::width_of(call.width, limits.max_chain_width);
        vm.lua.set_app_data(Invocation {
            tenant: tenant.clone(),
            script: call.script.clone(),
            request_id: request_id.clone(),
            trace: trace.clone(),
            services: services.clone(),
            deadline: Instant::now() + timeout,
            deadline_ms,
            handle: handle.clone(),
            data_ops: Cell::new(0),
            stream_bytes: Cell::new(0),
            breach: RefCell::new(None),
            heap_base: base,
            depth: call.depth,
            sends: Cell::new(0),
            log_bytes: Cell::new(0),
            http_requests: Cell::new(0),
            width,
            width_left: Cell::new(width),
            outbox: RefCell::new(Vec::new()),
            timers: RefCell::new(Vec::new()),
            required: RefCell::new(Vec::new()),
            requiring: RefCell::new(Vec::new()),
        });
        // Under `native test` the script's math.random draws from the test's seed too.
        if crate::random::seeded() {
            seed_math(&vm.lua, crate::random::u64());
        }
        let armed = interrupt::arm(
            interrupt::deadline_in(timeout),
            interrupt::Timeout {
                timeout_s: limits.timeout_s,
                capped_to: (timeout < full).then_some(timeout),
            },
        );
        let _ = vm
            .lua
            .set_memory_limit(base + limits.max_memory_mb as usize * 1024 * 1024);

        let ctx = sandbox::Ctx {
            script: &call.script,
            request_id: &request_id,
            trace: &trace,
            attempt: call.attempt,
            depth: call.depth,
            width,
            deadline_ms,
        };
        let result = run_in(&vm, call, ctx, &script.hash, &code);
        // A memory error that reached the top: the breach, with its figures.
        if let Err(e) = &result {
            if let (mlua::Error::MemoryError(_), Some(inv)) =
                (root_error(e), vm.lua.app_data_ref::<Invocation>())
            {
                inv.memory_breach(&vm.lua);
            }
        }
        // The interrupt's error names the line the script was on: keep it.
        let expired = armed.expired().then(|| {
            let limit = armed.message();
            let message = match &result {
                Err(e) => Some(host::message_of(e))
                    .filter(|m| m.ends_with(&limit))
                    .unwrap_or(limit),
                Ok(_) => limit,
            };
            host::Breach {
                limit: "timeout_s",
                message,
            }
        });
        drop(armed);
        let inv = vm.lua.remove_app_data::<Invocation>();
        if let Some(i) = &inv {
            data_ops.set(i.data_ops.get());
        }
        // A script that caught the timeout error and returned still timed out.
        let breach = inv.as_ref().and_then(|i| i.breach.take()).or(expired);
        let _ = vm.lua.set_memory_limit(0);
        let out = match (result, breach) {
            (_, Some(b)) => Err(fail(Cause::Limit(b.limit), b.message)),
            (Ok(v), None) => Ok(v),
            (Err(mlua::Error::ExternalError(e)), None) if e.is::<BadEvent>() => {
                Err(Error::InvalidInput(e.to_string()))
            }
            (Err(e), None) => {
                let m = host::message_of(&e);
                Err(fail(
                    host::cause_of(&e),
                    removed::explain(&m, &call.script, &script.source).unwrap_or(m),
                ))
            }
        };
        // Messages the script sent and timers it set waited for it to succeed (host::chain).
        let out = match (out, &inv) {
            (Ok(v), Some(i)) if !i.outbox.borrow().is_empty() || !i.timers.borrow().is_empty() => {
                let (queue, kv) = (&services.backends.queue, &services.backends.kv);
                let within = host::chain::send_within(i.deadline, not_after);
                let (timers, outbox) = (i.timers.take(), i.take_outbox());
                let work = async {
                    crate::timer::write_prepared(kv.as_ref(), timers).await?;
                    host::chain::send_outbox(queue, outbox).await
                };
                crate::blocking::wait(handle, tokio::time::timeout(within, work))
                    .unwrap_or_else(|_| {
                        Err(Error::Timeout(format!(
                            "the messages and timers {} set did not reach the backend within {:.1} s",
                            call.script,
                            within.as_secs_f64()
                        )))
                    })
                    .map_err(|e| match e {
                        // The backend's own error does not know whose messages they were.
                        Error::Backend {
                            backend,
                            message,
                            source,
                        } => Error::Backend {
                            backend,
                            message: format!(
                                "the messages and timers script {:?} of tenant {:?} set could not be written: {message}",
                                call.script, call.tenant.name
                            ),
                            source,
                        },
                        e => e,
                    })
                    .map(|()| v)
            }
            (other, _) => other,
        };
        // A VM that hit a limit may hold a half-built heap: let it go rather than reuse it.
        if out.is_ok()
            || matches!(&out, Err(Error::InvalidInput(_)))
            || matches!(&out, Err(Error::Script { cause, .. }) if !matches!(cause, Cause::Limit(_)))
        {
            // A pooled VM keeps its garbage until the next collection: up to eight of them
            // per tenant must not hold megabytes each between invocations.
            if vm.lua.used_memory() > base + POOLED_GARBAGE_BYTES {
                let _ = vm.lua.gc_collect();
            }
            self.give_back(tenant, vm);
        }
        out
    }
}

fn run_in(
    vm: &Vm,
    call: &Call,
    ctx: sandbox::Ctx<'_>,
    hash: &[u8; 32],
    code: &[u8],
) -> mlua::Result<Answer> {
    let lua = &vm.lua;
    // A short text is read by the frame, inside the call's own protected call; a longer one
    // with the shapes of its rows first (`host::parse_json`).
    let short = match &call.event {
        Event::Json(text) => host::ShortJson::of(text),
        Event::Value(_) => None,
    };
    let given = match (&call.event, &short) {
        (Event::Value(v), _) => Given::Host(v),
        (Event::Json(_), Some(s)) => Given::Short(s),
        (Event::Json(text), None) => match host::parse_json(lua, text)? {
            Ok(v) => Given::Made(v),
            Err(why) => return Err(mlua::Error::external(BadEvent(why))),
        },
    };
    let name = call.entry.name();
    let called = vm.call(hash, code, ctx, call.entry, given);
    if let Some(short) = short.as_ref().filter(|s| s.failed()) {
        return Err(mlua::Error::external(BadEvent(short.why())));
    }
    let (found, out) = called?;
    if !found {
        return Err(mlua::Error::RuntimeError(match out {
            Value::Nil => format!(
                "{}.luau has no {name}(ctx, ev): define it as a global function or return it in a table",
                call.script
            ),
            other => {
                // Luau's word for it: a script has no integers, only numbers.
                let what = match other {
                    Value::Integer(_) | Value::Number(_) => "number",
                    v => v.type_name(),
                };
                let a = if what.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
                format!(
                    "{}.luau's {name} is {a} {what}, not a function: define it as function {name}(ctx, ev)",
                    call.script
                )
            }
        }));
    }
    // `native.response(...)`: the answer the script chose, for any caller.
    if let Value::UserData(ud) = &out {
        if let Ok(reply) = ud.borrow::<host::Reply>() {
            return Ok(Answer::Reply(reply.clone()));
        }
    }
    if call.json_answer {
        let what = format_args!("the value {name} returned");
        return host::to_json_text(lua, out, false, &what).map(Answer::Json);
    }
    if out.is_nil() {
        return Ok(Answer::Value(serde_json::Value::Null));
    }
    host::from_lua(lua, out, &format!("the value {name} returned")).map(Answer::Value)
}

/// An event given as JSON text that is not JSON: the caller's fault, not the script's.
#[derive(Debug)]
struct BadEvent(String);

impl std::fmt::Display for BadEvent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "request body is not JSON: {}; send the event as a JSON value, e.g. {{\"name\": \"x\"}}",
            self.0
        )
    }
}

impl std::error::Error for BadEvent {}

/// A new invocation id: 32 lower-case hex digits of a random 128-bit number (written here
/// rather than through `format!`, and into an array rather than collected digit by digit: each
/// cost a no-op invocation measurably, BENCHMARKS.md, Figures behind the code).
fn request_id() -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut digits = [0u8; 32];
    for (pair, byte) in digits
        .chunks_exact_mut(2)
        .zip(crate::random::u128().to_be_bytes())
    {
        pair[0] = HEX[usize::from(byte >> 4)];
        pair[1] = HEX[usize::from(byte & 0xf)];
    }
    // Hex digits are ASCII: checked in a few word-sized steps (a lossy conversion walks it in
    // UTF-8 chunks: BENCHMARKS.md, Figures behind the code).
    std::str::from_utf8(&digits)
        .expect("hex digits are ASCII")
        .to_owned()
}

/// Seeds the VM's `math.random` (Luau seeds it from the VM's address and the time).
fn seed_math(lua: &mlua::Lua, seed: u64) {
    let randomseed = lua
        .globals()
        .get::<mlua::Table>("math")
        .and_then(|m| m.get::<mlua::Function>("randomseed"));
    if let Ok(f) = randomseed {
        // Luau's randomseed takes an int.
        let _ = f.call::<()>((seed >> 33) as i32);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_takes_back_the_vm_it_last_ran_and_another_the_last_given() {
        // GIVEN VMs given back by this thread (1), another (2), then this thread again (3)
        let other = std::thread::spawn(|| std::thread::current().id())
            .join()
            .unwrap();
        let me = std::thread::current().id();
        let mut idle = vec![(1, me), (2, other), (3, me), (4, other)];
        // WHEN this thread takes VMs
        // THEN it gets its own, the latest first, and none of the other thread's
        assert_eq!(take_near(&mut idle), Some(3));
        assert_eq!(take_near(&mut idle), Some(1));
        assert_eq!(take_near(&mut idle), None);
        assert_eq!(idle.len(), 2);
    }
}
