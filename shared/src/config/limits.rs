//! Per-tenant limits with defaults and ceilings.

use serde::Deserialize;

use crate::Error;

/// A tenant's limits, as in its config's `"limits"`. Every field has a default and a ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// Backend calls one invocation may make (every call counts one).
    pub max_data_ops: u32,
    /// Seconds an invocation may run.
    pub timeout_s: u32,
    /// Luau heap of an invocation, in MiB.
    pub max_memory_mb: u32,
    /// Largest object a script may read or write whole, and longest NDJSON row, in MiB.
    pub max_object_mb: u32,
    /// Bytes an invocation may read through streams, in MiB.
    pub max_stream_mb: u32,
    /// HTTP requests an invocation may make.
    pub max_http_requests: u32,
    /// Largest HTTP response body, in MiB.
    pub max_http_response_mb: u32,
    /// Messages one invocation may send (`native.queue.send`).
    pub max_sends: u32,
    /// How deep a chain of invocations may go: each message a script sends, and each event of
    /// an object a script writes, runs one deeper than its sender (`ctx.depth`); a message past
    /// this depth is refused and dead-lettered, not run.
    pub max_chain_depth: u32,
    /// Invocations of the tenant that a server (`native serve`, the Fargate server) runs at
    /// once; more are answered 429 with `Retry-After`. The Lambda functions run one invocation
    /// per sandbox and do not use it.
    pub max_concurrent: u32,
    /// How wide the tree of work that one root starts (a direct invocation, an outside message
    /// or object event) may grow: the most branches running side by side. Each message an
    /// invocation sends takes a share of its width (`ctx.width`), so the whole tree holds at
    /// most `max_chain_width x max_chain_depth` messages, and a fork bomb ends by itself.
    pub max_chain_width: u32,
    /// Rendezvous namespaces the tenant may hold (`default` not counted).
    pub max_rendezvous_namespaces: u32,
    /// Rendezvous barriers the tenant may hold, over all its namespaces.
    pub max_rendezvous_barriers: u32,
    /// `WaitAtBarrier` calls of the tenant parked at once in one server; more are refused
    /// with the limit's error (429 on the API).
    pub max_rendezvous_waits: u32,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_data_ops: 1000,
            timeout_s: 30,
            max_memory_mb: 64,
            max_object_mb: 10,
            max_stream_mb: 1024,
            max_http_requests: 20,
            max_http_response_mb: 10,
            max_sends: 100,
            max_chain_depth: 32,
            max_concurrent: 32,
            max_chain_width: 10_000,
            max_rendezvous_namespaces: 100,
            max_rendezvous_barriers: 1000,
            max_rendezvous_waits: 1000,
        }
    }
}

/// The highest value each limit may be set to.
pub const CEILINGS: Limits = Limits {
    max_data_ops: 10_000,
    timeout_s: 900,
    max_memory_mb: 1024,
    max_object_mb: 256,
    max_stream_mb: 65_536,
    max_http_requests: 1000,
    max_http_response_mb: 100,
    max_sends: 1000,
    max_chain_depth: 100,
    max_concurrent: 1000,
    max_chain_width: 1_000_000,
    max_rendezvous_namespaces: 10_000,
    max_rendezvous_barriers: 1_000_000,
    max_rendezvous_waits: 100_000,
};

impl Limits {
    /// Checks every limit against its ceiling and against zero; `file` names the config file.
    pub fn validate(&self, file: &str) -> Result<(), Error> {
        let fields = [
            ("max_data_ops", self.max_data_ops, CEILINGS.max_data_ops),
            ("timeout_s", self.timeout_s, CEILINGS.timeout_s),
            ("max_memory_mb", self.max_memory_mb, CEILINGS.max_memory_mb),
            ("max_object_mb", self.max_object_mb, CEILINGS.max_object_mb),
            ("max_stream_mb", self.max_stream_mb, CEILINGS.max_stream_mb),
            (
                "max_http_requests",
                self.max_http_requests,
                CEILINGS.max_http_requests,
            ),
            (
                "max_http_response_mb",
                self.max_http_response_mb,
                CEILINGS.max_http_response_mb,
            ),
            ("max_sends", self.max_sends, CEILINGS.max_sends),
            (
                "max_chain_depth",
                self.max_chain_depth,
                CEILINGS.max_chain_depth,
            ),
            (
                "max_concurrent",
                self.max_concurrent,
                CEILINGS.max_concurrent,
            ),
            (
                "max_chain_width",
                self.max_chain_width,
                CEILINGS.max_chain_width,
            ),
            (
                "max_rendezvous_namespaces",
                self.max_rendezvous_namespaces,
                CEILINGS.max_rendezvous_namespaces,
            ),
            (
                "max_rendezvous_barriers",
                self.max_rendezvous_barriers,
                CEILINGS.max_rendezvous_barriers,
            ),
            (
                "max_rendezvous_waits",
                self.max_rendezvous_waits,
                CEILINGS.max_rendezvous_waits,
            ),
        ];
        for (name, value, ceiling) in fields {
            if value == 0 {
                return Err(Error::config(
                    file,
                    format!("limits.{name}"),
                    "must be at least 1",
                ));
            }
            if value > ceiling {
                return Err(Error::config(
                    file,
                    format!("limits.{name}"),
                    format!("{value} is above the ceiling of {ceiling}"),
                ));
            }
        }
        Ok(())
    }
}

/// The most objects a handler's `{ delete = keys }` may name.
pub const MAX_DELETES: usize = 100;
