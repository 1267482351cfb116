//! Everything the `native` command prints goes through here, so that a reader that goes away
//! (`native barrier status acme b1 | head -1`) is not a failure: `println!` panics when stdout
//! is a closed pipe (Rust ignores SIGPIPE, so the write fails with `EPIPE` instead of killing
//! the process). Once a stream is found closed, further output to it is dropped silently and
//! the verb finishes its work (a drain after `invoke` still runs) with its usual exit code.
//! Any other write error (a full disk behind a redirect) is remembered and fails the command.
//!
//! The crate denies `clippy::print_stdout` and `clippy::print_stderr` outside this module, so
//! no verb can print around it.

use std::io::{self, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

/// stdout was found closed by its reader.
static OUT_CLOSED: AtomicBool = AtomicBool::new(false);
/// stderr was found closed by its reader.
static ERR_CLOSED: AtomicBool = AtomicBool::new(false);
/// The first write error that was not a closed pipe.
static FAILED: Mutex<Option<String>> = Mutex::new(None);

/// Writes `bytes` to a stream unless it was found closed before; a closed pipe marks it closed,
/// another error is remembered for [`take_error`].
fn write_to(mut w: impl Write, closed: &AtomicBool, what: &str, bytes: &[u8]) {
    if closed.load(Ordering::Relaxed) {
        return;
    }
    if let Err(e) = w.write_all(bytes).and_then(|()| w.flush()) {
        if e.kind() == io::ErrorKind::BrokenPipe {
            closed.store(true, Ordering::Relaxed);
        } else if let Ok(mut f) = FAILED.lock() {
            f.get_or_insert_with(|| format!("cannot write to {what}: {e}"));
        }
    }
}

/// Writes bytes to stdout as they are.
pub fn bytes(bytes: &[u8]) {
    write_to(io::stdout().lock(), &OUT_CLOSED, "standard output", bytes);
}

/// Writes a line to stdout.
pub fn line(args: std::fmt::Arguments<'_>) {
    let mut s = args.to_string();
    s.push('\n');
    bytes(s.as_bytes());
}

/// Writes bytes to stderr as they are.
pub fn err_bytes(bytes: &[u8]) {
    write_to(io::stderr().lock(), &ERR_CLOSED, "standard error", bytes);
}

/// Writes a line to stderr.
pub fn err_line(args: std::fmt::Arguments<'_>) {
    let mut s = args.to_string();
    s.push('\n');
    write_to(
        io::stderr().lock(),
        &ERR_CLOSED,
        "standard error",
        s.as_bytes(),
    );
}

/// Whether stdout's reader went away: a verb that prints a long listing may stop early.
pub fn stdout_closed() -> bool {
    OUT_CLOSED.load(Ordering::Relaxed)
}

/// The first write error other than a closed pipe, once.
pub fn take_error() -> Option<String> {
    FAILED.lock().ok().and_then(|mut f| f.take())
}

/// `println!` for the `native` command: see the module docs.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::out::line(format_args!($($arg)*))
    };
}

/// `eprintln!` for the `native` command: see the module docs.
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::out::err_line(format_args!($($arg)*))
    };
}

pub(crate) use {errln, outln};
