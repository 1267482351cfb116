//! Maps that the host looks up on every invocation (a tenant's VM pool, a script by name, a
//! source's bytecode), hashed with foldhash rather than std's SipHash-1-3: four such lookups
//! were 1 250 of a no-op invocation's 16 600 instructions in SipHash alone. foldhash's seed
//! is random per process, so keys chosen in advance (script names, sources ground for their
//! digests) cannot be aimed at one bucket.

/// A `HashMap` with foldhash's per-process random seed.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
