//! The data-ops budget: what an invocation's backend calls are charged to, against its
//! tenant's `max_data_ops`. Every primitive takes one ([`Budget`]), so that no caller can make
//! unbounded calls. (Time is [`crate::deadline`]'s, memory and places
//! [`crate::capacity`]'s.)

use crate::Result;

/// Counts backend calls against the invocation's `max_data_ops`.
pub trait Budget {
    /// Spends `calls`; fails with [`crate::Error::LimitExceeded`] past the limit.
    fn spend(&self, calls: u32) -> Result<()>;
    /// Calls left.
    fn left(&self) -> u32;
    /// The chain depth of the caller: the continuation runs one deeper. 0 outside a script.
    fn depth(&self) -> u32 {
        0
    }
    /// The width of work the caller creates now (`what`, for the error), taken from its
    /// chain's ([`crate::host::chain`]); `None` outside a script, where work starts a chain.
    fn child_width(&self, what: &str) -> Result<Option<u32>> {
        let _ = what;
        Ok(None)
    }
}
