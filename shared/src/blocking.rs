//! How synchronous script code waits for async work (a backend call, an HTTP request, the next
//! chunk of an object) without stalling a tokio worker.
//!
//! On a multi-threaded runtime a script runs inline, on the worker thread that polls its caller
//! ([`run_inline`]): a script that neither waits nor runs long costs no thread hop (a hop is 3
//! to 4 context switches, more than the script itself). Two things move the worker's other
//! tasks off that thread, so that nothing else waits behind the script:
//!
//! - the first time the script **waits** ([`wait`]), the wait runs under
//!   `tokio::task::block_in_place`, which hands the worker's queue to another thread and lets
//!   this one block;
//! - a script that **runs long** without waiting is moved the same way ([`move_off`]) by the
//!   engine's deadline interrupt after [`SLICE`] inline, so that a loop cannot hold a worker,
//!   and with it the server's I/O and timers, for its whole deadline.
//!
//! The threads that scripts then hold are bounded by the runtime's admission limits
//! ([`crate::capacity::Admission`]).

use std::cell::Cell;
use std::future::Future;
use std::time::Duration;

use tokio::runtime::Handle;

/// How long a script runs inline on a worker thread before its worker's other tasks are moved
/// to another thread.
pub const SLICE: Duration = Duration::from_millis(10);

thread_local! {
    /// Whether the script running on this thread runs inline on a tokio worker that may still
    /// hold the worker's queue (so that blocking here would stall other tasks).
    static INLINE: Cell<bool> = const { Cell::new(false) };
    /// Whether this thread is inside [`wait`]: blocking here stalls only the script that waits.
    static WAITING: Cell<bool> = const { Cell::new(false) };
}

/// Whether the code running here may block its thread without stalling anything but the
/// script that waits for it: true inside [`wait`] (a script's backend call), where a backend
/// may do its blocking work on this thread rather than hand it to another and wait.
pub fn may_block() -> bool {
    WAITING.with(Cell::get)
}

/// Runs `f` inline on this worker thread, marked so that [`wait`] and [`move_off`] know to move
/// the worker's other tasks away first.
pub fn run_inline<T>(f: impl FnOnce() -> T) -> T {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            INLINE.with(|i| i.set(self.0));
        }
    }
    let _restore = Restore(INLINE.with(|i| i.replace(true)));
    f()
}

/// Whether a script runs inline here on a worker that it has not been moved off yet.
pub fn inline() -> bool {
    INLINE.with(Cell::get)
}

/// Waits for `fut` on this thread, from synchronous code. On a worker thread the worker's other
/// tasks go to another thread first (once per script run: later waits of the same run find the
/// worker gone and just block). Outside a worker (a blocking thread, a `block_on` of the
/// runtime) it only blocks.
pub fn wait<F: Future>(handle: &Handle, fut: F) -> F::Output {
    struct Restore(bool);
    impl Drop for Restore {
        fn drop(&mut self) {
            WAITING.with(|w| w.set(self.0));
        }
    }
    INLINE.with(|i| i.set(false));
    tokio::task::block_in_place(|| {
        let _restore = Restore(WAITING.with(|w| w.replace(true)));
        handle.block_on(fut)
    })
}

/// Moves the worker's other tasks off this thread, for a script that has run inline for
/// [`SLICE`]: `block_in_place` offers the worker to a new thread while its closure runs, and
/// the pause lets that thread take it before this one would take it back. A move that the
/// worker took back is not seen here: the caller tries again later.
pub fn move_off() {
    tokio::task::block_in_place(|| std::thread::sleep(Duration::from_micros(200)));
}
