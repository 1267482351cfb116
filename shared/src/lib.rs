//! native-core: the engine, host API, backend ports and their implementations, shared by the
//! Lambda functions and the `native` CLI.

pub mod api_keys;
#[cfg(feature = "aws")]
pub mod aws;
pub mod barrier;
pub mod batch;
pub mod budget;
pub mod callback;
pub mod clock;
pub mod config;
pub mod conformance;
pub mod embedded;
pub mod engine;
pub mod error;
pub mod events;
pub mod host;
pub mod inbound;
pub mod keys;
pub mod local;
pub mod observe;
pub mod outbound;
pub mod ports;
pub mod rendezvous;
pub mod replay;
pub mod runtime;
pub mod tenants;
pub mod timer;

pub use error::{Error, Result};
