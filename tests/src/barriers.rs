//! Barrier test kit: a budget that counts the store calls spent from it, and the barriers of
//! the tenant `acme` over given backends.

use std::cell::Cell;

use native_core::barrier::Barriers;
use native_core::budget::Budget;
use native_core::ports::{KvStore, Queue};
use native_core::Result;

/// A budget that never runs out and counts the store calls spent from it (`.0.get()`).
#[derive(Debug, Default)]
pub struct Count(pub Cell<u32>);

impl Budget for Count {
    fn spend(&self, calls: u32) -> Result<()> {
        self.0.set(self.0.get() + calls);
        Ok(())
    }
    fn left(&self) -> u32 {
        u32::MAX
    }
}

/// The barriers of the tenant `acme` over `kv` and `q`, with the queue on, spending from
/// `budget`.
pub fn barriers<'a>(kv: &'a dyn KvStore, q: &'a dyn Queue, budget: &'a Count) -> Barriers<'a> {
    Barriers {
        kv,
        queue: q,
        tenant: "acme",
        queue_enabled: true,
        budget,
    }
}
