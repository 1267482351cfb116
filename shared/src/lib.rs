//! native-core: the engine, host API, backend ports and their implementations, shared by the
//! Lambda functions and the `native` CLI.

pub mod config;
pub mod conformance;
pub mod embedded;
pub mod error;
pub mod events;
pub mod keys;
pub mod ports;

pub use error::{Error, Result};
