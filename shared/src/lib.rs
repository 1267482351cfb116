//! native-core: the engine, host API, backend ports and their implementations, shared by the
//! Lambda functions and the `native` CLI.
//!
//! The modules are declared floor by floor, from the ground up: a module uses only modules on
//! floors below its own, never one beside or above it (`ARCHITECTURE.md` says why, and
//! `tests/layers.rs` keeps it true).

// Floor 0, the ground: what everything may use.
pub mod deadline;
pub mod error;
pub mod every;
pub mod fast_map;
pub mod keys;
pub mod random;
pub mod text;

// Floor 1: what people configure, and what the core needs from storage and messaging.
pub mod config;
pub mod ports;

// Floor 2: services beside the ports.
pub mod api_keys;
pub mod blocking;
pub mod budget;
pub mod capacity;
pub mod clock;
pub mod events;
pub mod observe;
pub mod once;
pub mod tenants;

// Floor 3: mechanisms the primitives build on.
pub mod replay;
pub mod schedule;
pub mod timer;

// Floor 4: the coordination primitives.
pub mod barrier;
pub mod batch;
pub mod rendezvous;

// Floor 5: signed callback URLs to barrier members.
pub mod callback;

// Floor 6: what scripts call out to (outbound HTTP, the vault's secrets).
pub mod outbound;

// Floor 7: the host API scripts see.
pub mod host;

// Floor 8: the engine that runs scripts.
pub mod engine;

// Floor 9: what each trigger does.
pub mod runtime;

// Floor 10, the edges: inbound HTTP, the backends, the suite that holds them to one contract.
#[cfg(feature = "aws")]
pub mod aws;
pub mod conformance;
pub mod embedded;
pub mod inbound;

// Floor 11: the local runtime that wires the embedded backend to the runtime.
pub mod local;

pub use error::{Error, Result};
