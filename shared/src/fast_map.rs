//! Maps that the host looks up on every invocation (a tenant's VM pool, a script by name, a
//! source's bytecode), hashed with foldhash rather than std's SipHash-1-3: SipHash alone in
//! four such lookups was a large share of a no-op invocation (BENCHMARKS.md, The engine's warm
//! invoke). foldhash's seed
//! is random per process, so keys chosen in advance (script names, sources ground for their
//! digests) cannot be aimed at one bucket.

/// A `HashMap` with foldhash's per-process random seed.
pub type FastMap<K, V> = std::collections::HashMap<K, V, foldhash::fast::RandomState>;
