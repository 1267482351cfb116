//! Per-invocation state, kept in the VM's app data while a script runs: who runs, the limits and
//! what has been used of them, the deadline, and the services to call.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::sync::Arc;
use std::time::Instant;

use mlua::Lua;

use crate::config::Tenant;
use crate::host::Services;

/// What a running script may use, and what it has used so far.
pub struct Invocation {
    /// The tenant.
    pub tenant: Arc<Tenant>,
    /// The running script's name.
    pub script: String,
    /// Unique per invocation.
    pub request_id: String,
    /// The chain the invocation belongs to (`ctx.trace`, [`crate::observe::chain`]): the id
    /// every message, continuation and object event it leads to carries on.
    pub trace: String,
    /// Deployment, backends and the log sink.
    pub services: Arc<Services>,
    /// When the invocation must end.
    pub deadline: Instant,
    /// The same deadline in ms since the epoch, as scripts see it.
    pub deadline_ms: i64,
    /// The runtime that backend calls run on.
    pub handle: tokio::runtime::Handle,
    /// Backend calls made so far.
    pub data_ops: Cell<u32>,
    /// Bytes read through streams so far.
    pub stream_bytes: Cell<u64>,
    /// The first limit breached, kept so that a script that catches the error with `pcall`
    /// still fails.
    pub breach: RefCell<Option<Breach>>,
    /// The VM's heap before the invocation began: what the script uses is measured from here.
    pub heap_base: usize,
    /// The invocation's chain depth (`ctx.depth`).
    pub depth: u32,
    /// Messages sent so far.
    pub sends: Cell<u32>,
    /// Bytes of log output written so far.
    pub log_bytes: Cell<usize>,
    /// HTTP requests made so far (`native.http`, `job:http`).
    pub http_requests: Cell<u32>,
    /// The share of its chain's width the invocation runs with (`ctx.width`).
    pub width: u32,
    /// What is left of it for the work the invocation creates ([`super::chain`]).
    pub width_left: Cell<u32>,
    /// Messages sent, to go out when the invocation succeeds ([`super::chain`]).
    pub outbox: RefCell<Vec<super::chain::Pending>>,
    /// Timers set with `native.timer.at`, written when the invocation succeeds.
    pub timers: RefCell<Vec<crate::timer::Prepared>>,
    /// The modules `require`d so far, by name, with the value each returned: a module is
    /// evaluated at most once per invocation. Empty, and never allocated, for a script that
    /// requires nothing.
    pub required: RefCell<Vec<(String, mlua::Value)>>,
    /// The modules being evaluated, outermost first, each with the file that required it: a
    /// `require` of one of them is a cycle.
    pub requiring: RefCell<Vec<String>>,
}

/// A breached limit, as [`Invocation::breach`] keeps it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breach {
    /// The limit, named as in the tenant config (`max_data_ops`).
    pub limit: &'static str,
    /// The whole message: `limit <name> exceeded: <figures and what to do>`.
    pub message: String,
}

impl Invocation {
    /// Records a breached limit (the first one wins), so that the invocation fails even if the
    /// script catches the error; returns its message, `limit <limit> exceeded: <detail>`.
    pub fn record_breach(&self, limit: &'static str, detail: impl std::fmt::Display) -> String {
        let message = format!("limit {limit} exceeded: {detail}");
        let mut b = self.breach.borrow_mut();
        if b.is_none() {
            *b = Some(Breach {
                limit,
                message: message.clone(),
            });
        }
        message
    }

    /// Records a breached limit (the first one wins) and returns the error to raise.
    pub fn breach(
        &self,
        lua: &Lua,
        limit: &'static str,
        detail: impl std::fmt::Display,
    ) -> mlua::Error {
        let message = self.record_breach(limit, detail);
        super::raise_as(lua, crate::error::Cause::Limit(limit), message)
    }

    /// Counts backend calls against `max_data_ops`; past the limit, records the breach and
    /// returns it.
    pub fn try_charge(&self, calls: u32) -> crate::Result<()> {
        let used = self.data_ops.get() + calls;
        self.data_ops.set(used);
        let max = self.tenant.config.limits.max_data_ops;
        if used > max {
            let detail = format!(
                "this invocation needs {used} backend calls and the tenant allows {max}; raise \
                 limits.max_data_ops (ceiling 10000) or split the work"
            );
            self.record_breach("max_data_ops", &detail);
            return Err(crate::Error::LimitExceeded {
                limit: "max_data_ops",
                detail,
            });
        }
        Ok(())
    }

    /// Counts bytes read through streams against `max_stream_mb`, and checks the deadline.
    pub fn stream_consumed(&self, bytes: u64) -> crate::Result<()> {
        let before = self.stream_bytes.get();
        let used = before + bytes;
        self.stream_bytes.set(used);
        let max = u64::from(self.tenant.config.limits.max_stream_mb);
        // The clock is read once per 256 KB read, not per row.
        let check_clock = used >> 18 != before >> 18;
        let (limit, detail) = if used > max * 1024 * 1024 {
            ("max_stream_mb", format!("this invocation read more than {max} MB through streams (decompressed); raise limits.max_stream_mb or read less per invocation"))
        } else if check_clock && Instant::now() >= self.deadline {
            ("timeout_s", self.timeout_detail())
        } else {
            return Ok(());
        };
        self.record_breach(limit, &detail);
        Err(crate::Error::LimitExceeded { limit, detail })
    }

    /// Counts backend calls against `max_data_ops`, raising into the script past the limit.
    pub fn charge(&self, lua: &Lua, calls: u32) -> mlua::Result<()> {
        self.try_charge(calls)
            .map_err(|e| super::raise_error(lua, e))
    }

    /// Runs a backend call to its end, or until the invocation's deadline.
    ///
    /// A call that was still waiting when the deadline came, having had at least
    /// [`BACKEND_GRACE`] of it, fails as the backend's delay
    /// ([`crate::error::Cause::Unavailable`]: retry later), not as the tenant's limit: a
    /// script whose own time ran out before it called waits less than that.
    pub fn block_on<T>(
        &self,
        lua: &Lua,
        fut: impl Future<Output = crate::Result<T>>,
    ) -> mlua::Result<T> {
        let left = self.deadline.saturating_duration_since(Instant::now());
        // A wait long enough to be the backend's ends a moment before the deadline, so that
        // its error is out of the script before the deadline's interrupt would replace it.
        let wait = match left >= BACKEND_GRACE {
            true => left - BACKEND_STOP_EARLY,
            false => left,
        };
        match crate::blocking::wait(&self.handle, tokio::time::timeout(wait, fut)) {
            Ok(Ok(v)) => Ok(v),
            Ok(Err(e)) => Err(super::raise_error(lua, e)),
            Err(_) if left >= BACKEND_GRACE => Err(super::raise_as(
                lua,
                crate::error::Cause::Unavailable,
                format!(
                    "backend unavailable: a backend call had no answer after {:.1} s, when the invocation's time ran out; nothing was lost by the wait: retry later",
                    wait.as_secs_f64()
                ),
            )),
            Err(_) => Err(self.breach(lua, "timeout_s", self.timeout_detail())),
        }
    }

    /// Counts one message sent against `max_sends`, and checks that the message, one deeper
    /// than this invocation, stays within `max_chain_depth`; a breach is recorded and raised.
    pub fn charge_send(&self, lua: &Lua, what: &str) -> mlua::Result<()> {
        let limits = &self.tenant.config.limits;
        let sent = self.sends.get() + 1;
        self.sends.set(sent);
        if sent > limits.max_sends {
            return Err(self.breach(
                lua,
                "max_sends",
                format!(
                    "{what} would be message {sent} of this invocation \
                     and the tenant allows {}; send fewer, larger messages or raise \
                     limits.max_sends in {} (ceiling {})",
                    limits.max_sends,
                    self.config_file(),
                    crate::config::CEILINGS.max_sends
                ),
            ));
        }
        if self.depth >= limits.max_chain_depth {
            return Err(self.breach(
                lua,
                "max_chain_depth",
                too_deep_detail(&self.tenant, what, self.depth + 1),
            ));
        }
        Ok(())
    }

    /// Writes a script's log record, within [`super::log::MAX_LOG_BYTES`] per invocation: past
    /// it, one record says so and the rest are dropped (logging is not worth failing for).
    pub fn write_log(&self, rec: &serde_json::Value) {
        let max = super::log::MAX_LOG_BYTES;
        let before = self.log_bytes.get();
        let after = before + super::log::encoded_len(rec);
        self.log_bytes.set(after);
        if after <= max {
            self.services.log.write(rec);
            // The console's recent runs keep the first lines (when a run is being recorded),
            // and where spans are exported, the run's span has them as events.
            crate::observe::recent::keep_line(rec);
            crate::observe::calls::event(rec);
        } else if before <= max {
            self.services.log.write(&serde_json::json!({
                "ts_ms": crate::ports::now_ms(), "level": "warn", "tenant": self.tenant.name,
                "script": self.script, "request_id": self.request_id, "trace": self.trace,
                "msg": format!("log output of this invocation reached {} MB; further records are dropped", max >> 20),
            }));
        }
    }

    /// Records a breach of `max_memory_mb`, with the figures, and returns its message.
    pub fn memory_breach(&self, lua: &Lua) -> String {
        let used = lua.used_memory().saturating_sub(self.heap_base);
        let detail = format!(
            "the script's Luau heap needed more than the {} MB the \
             tenant allows ({:.1} MB in use when an allocation was refused); keep less in memory \
             (stream with job:rows or native.ndjson.rows) or raise limits.max_memory_mb in {} \
             (ceiling {})",
            self.tenant.config.limits.max_memory_mb,
            used as f64 / (1024.0 * 1024.0),
            self.config_file(),
            crate::config::CEILINGS.max_memory_mb
        );
        self.record_breach("max_memory_mb", detail)
    }

    /// What a breach of `timeout_s` says after `limit timeout_s exceeded: `.
    pub fn timeout_detail(&self) -> String {
        format!(
            "the invocation ran past its deadline of {} s",
            self.tenant.config.limits.timeout_s
        )
    }

    /// The tenant config file, for error messages.
    pub fn config_file(&self) -> String {
        format!("tenants/{}/config.json", self.tenant.name)
    }
}

/// The least wait that makes a call's timeout the backend's delay rather than the script's own
/// time running out ([`Invocation::block_on`]).
pub const BACKEND_GRACE: std::time::Duration = std::time::Duration::from_secs(1);

/// How long before the deadline such a wait gives up ([`Invocation::block_on`]).
const BACKEND_STOP_EARLY: std::time::Duration = std::time::Duration::from_millis(100);

impl crate::budget::Budget for Invocation {
    fn spend(&self, calls: u32) -> crate::Result<()> {
        self.try_charge(calls)
    }

    fn left(&self) -> u32 {
        self.tenant
            .config
            .limits
            .max_data_ops
            .saturating_sub(self.data_ops.get())
    }

    fn depth(&self) -> u32 {
        self.depth
    }

    fn child_width(&self, what: &str) -> crate::Result<Option<u32>> {
        self.take_width(what).map(Some)
    }
}

/// The breach of work at `depth`, past the tenant's `max_chain_depth`.
pub fn too_deep(tenant: &crate::config::Tenant, what: &str, depth: u32) -> crate::Error {
    crate::Error::LimitExceeded {
        limit: "max_chain_depth",
        detail: too_deep_detail(tenant, what, depth),
    }
}

/// What [`too_deep`] says after `limit max_chain_depth exceeded: `.
fn too_deep_detail(tenant: &crate::config::Tenant, what: &str, depth: u32) -> String {
    format!(
        "{what} would run at chain depth {depth} and the tenant \
         allows {} (each message a script sends, and each event of an object a script writes, \
         runs one deeper than its sender); look for scripts that trigger each other in a loop, \
         or raise limits.max_chain_depth in tenants/{}/config.json (ceiling {})",
        tenant.config.limits.max_chain_depth,
        tenant.name,
        crate::config::CEILINGS.max_chain_depth
    )
}
