//! The random numbers that name things: barrier, batch job, timer, invocation and chain ids.
//! They come from the thread's generator, except in a process that asked for a seeded one
//! ([`seed`]: `native test` does, per test), where every draw comes from one generator in turn,
//! so that a test that makes the same calls gets the same ids on every run and machine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Whether [`RNG`] holds a seeded generator (read without the lock on every draw).
static SEEDED: AtomicBool = AtomicBool::new(false);
static RNG: Mutex<Option<StdRng>> = Mutex::new(None);

/// Draws every later number of this process from a generator seeded with `seed`, or, with
/// `None`, from the thread's generator again.
pub fn seed(seed: Option<u64>) {
    let mut rng = RNG.lock().unwrap_or_else(|p| p.into_inner());
    *rng = seed.map(StdRng::seed_from_u64);
    SEEDED.store(rng.is_some(), Ordering::Release);
}

/// Whether this process draws from a seeded generator.
pub fn seeded() -> bool {
    SEEDED.load(Ordering::Acquire)
}

fn draw<T>(f: impl FnOnce(&mut dyn rand::RngCore) -> T) -> T {
    if seeded() {
        let mut rng = RNG.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(r) = rng.as_mut() {
            return f(r);
        }
    }
    f(&mut rand::rng())
}

/// A random 64-bit number.
pub fn u64() -> u64 {
    draw(|r| r.random())
}

/// A random 128-bit number.
pub fn u128() -> u128 {
    draw(|r| r.random())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_numbers_again() {
        // GIVEN a seeded generator WHEN it is seeded again with the same seed
        seed(Some(7));
        let first = (u64(), u128());
        seed(Some(7));
        let again = (u64(), u128());
        seed(Some(8));
        let other = u64();
        seed(None);
        // THEN it draws the same numbers, and another seed others
        assert_eq!(first, again);
        assert_ne!(first.0, other);
        assert!(!seeded());
    }
}
