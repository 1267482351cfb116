//! The random numbers that name things: barrier, batch job, timer, invocation and chain ids.
//! They come from the thread's generator, except in a process that asked for a seeded one
//! ([`seed`]: `native test` does, per test), where every draw comes from one generator in turn,
//! so that a test that makes the same calls gets the same ids on every run and machine.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// Where numbers come from: a seeded generator when one is set, else the thread's.
struct Source {
    /// Whether `rng` holds a seeded generator (read without the lock on every draw).
    seeded: AtomicBool,
    rng: Mutex<Option<StdRng>>,
}

impl Source {
    const fn new() -> Self {
        Source {
            seeded: AtomicBool::new(false),
            rng: Mutex::new(None),
        }
    }

    fn seed(&self, seed: Option<u64>) {
        let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
        *rng = seed.map(StdRng::seed_from_u64);
        self.seeded.store(rng.is_some(), Ordering::Release);
    }

    fn draw<T>(&self, f: impl FnOnce(&mut dyn rand::RngCore) -> T) -> T {
        if self.seeded.load(Ordering::Acquire) {
            let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(r) = rng.as_mut() {
                return f(r);
            }
        }
        f(&mut rand::rng())
    }
}

/// The process's source.
static SOURCE: Source = Source::new();

/// Draws every later number of this process from a generator seeded with `seed`, or, with
/// `None`, from the thread's generator again.
pub fn seed(seed: Option<u64>) {
    SOURCE.seed(seed);
}

/// Whether this process draws from a seeded generator.
pub fn seeded() -> bool {
    SOURCE.seeded.load(Ordering::Acquire)
}

/// A random 64-bit number.
pub fn u64() -> u64 {
    SOURCE.draw(|r| r.random())
}

/// A random 128-bit number.
pub fn u128() -> u128 {
    SOURCE.draw(|r| r.random())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_seed_gives_the_same_numbers_again() {
        // GIVEN a source of its own (the process's is shared by the tests running beside)
        let s = Source::new();
        let draw = |s: &Source| {
            (
                s.draw(|r| r.random::<u64>()),
                s.draw(|r| r.random::<u128>()),
            )
        };
        // WHEN it is seeded, then seeded again with the same seed
        s.seed(Some(7));
        let first = draw(&s);
        s.seed(Some(7));
        let again = draw(&s);
        s.seed(Some(8));
        let other = draw(&s);
        // THEN it draws the same numbers, and another seed others
        assert_eq!(first, again);
        assert_ne!(first, other);
        // AND unseeded, numbers come from the thread's generator
        s.seed(None);
        assert!(!s.seeded.load(Ordering::Acquire));
        assert_ne!(draw(&s), draw(&s));
    }
}
