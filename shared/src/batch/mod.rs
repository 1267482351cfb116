//! `native.batch`: partner jobs through the batch bucket. A script writes a request (and inputs)
//! into `jobs/<job>/`, the partner answers with result parts and `done.json` last, and the
//! `done.json` notification runs the continuation, which reads the results verified.

pub mod contract;
pub mod default_route;
pub mod inspect;
pub mod jobs;
pub mod manifest;
pub mod partner;
pub mod reader;
pub mod stale;
