//! The invocation deadline, enforced inside Luau code. Luau calls the interrupt at every loop
//! back-edge and call, so it must cost next to nothing: a thread-local load compared with a
//! coarse clock that a background thread advances every few milliseconds. mlua's own
//! `set_interrupt` runs a Rust closure through its error-handling wrapper on every call, which
//! cost several percent of a tight row loop; this installs a raw Luau callback instead.
//!
//! The same check moves a script that runs inline on a tokio worker off that worker's queue
//! once it has run for [`crate::blocking::SLICE`], so that no loop holds a
//! worker (and the I/O and timers it drives) for its whole deadline.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::CString;
use std::os::raw::c_int;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use mlua::ffi::{self, lua_State};
use mlua::Lua;

/// How often the coarse clock advances; deadlines are enforced this precisely.
const TICK: Duration = Duration::from_millis(2);

static NOW_MS: AtomicU64 = AtomicU64::new(0);
static EPOCH: OnceLock<Instant> = OnceLock::new();

/// Milliseconds since this process's epoch, precise to [`TICK`].
pub fn coarse_now_ms() -> u64 {
    NOW_MS.load(Ordering::Relaxed)
}

fn start_clock() {
    static STARTED: OnceLock<()> = OnceLock::new();
    STARTED.get_or_init(|| {
        let epoch = *EPOCH.get_or_init(Instant::now);
        let _ = std::thread::Builder::new()
            .name("native-clock".into())
            .spawn(move || loop {
                NOW_MS.store(epoch.elapsed().as_millis() as u64, Ordering::Relaxed);
                std::thread::sleep(TICK);
            });
    });
}

/// A deadline on the coarse clock, `at` from now.
pub fn deadline_in(at: Duration) -> u64 {
    start_clock();
    let epoch = *EPOCH.get_or_init(Instant::now);
    (epoch.elapsed() + at).as_millis() as u64
}

/// What a timed-out invocation is told: its deadline, and why it was that long. The text is
/// made only when the deadline is met, not for every invocation.
#[derive(Debug, Clone, Copy)]
pub struct Timeout {
    /// The tenant's `timeout_s`.
    pub timeout_s: u32,
    /// The shorter deadline the invocation got instead (what was left of a Lambda's time less
    /// the margin), if it was shorter.
    pub capped_to: Option<Duration>,
}

impl Timeout {
    /// The breach's text, starting `limit timeout_s exceeded:`.
    pub fn message(&self) -> String {
        match self.capped_to {
            Some(left) => format!(
                "limit timeout_s exceeded: the invocation ran past its deadline of {:.1} s, what was left of the function's time less {} s (the tenant's timeout_s is {} s); raise the function's timeout or split the work",
                left.as_secs_f64(),
                crate::deadline::MARGIN.as_secs(),
                self.timeout_s
            ),
            None => format!(
                "limit timeout_s exceeded: the invocation ran past its deadline of {} s",
                self.timeout_s
            ),
        }
    }
}

struct Armed {
    deadline_ms: u64,
    /// The earlier of the deadline and [`Armed::move_at_ms`]: the one compare the interrupt
    /// makes on every call.
    next_ms: Cell<u64>,
    /// When a script running inline on a worker is moved off it next (`u64::MAX`: not inline,
    /// or moved off already).
    move_at_ms: Cell<u64>,
    /// How often it was moved off: each try waits twice as long as the one before, since a
    /// move that the worker took back cannot be seen from here.
    moves: Cell<u32>,
    timeout: Timeout,
    /// [`Timeout::message`] as a C string, made the first time the interrupt raises it.
    message: std::cell::OnceCell<CString>,
}

thread_local! {
    /// The deadline of the invocation running on this thread, if any. A VM runs on one thread
    /// at a time, so the thread's deadline is the running invocation's.
    static ARMED: Cell<Option<&'static Armed>> = const { Cell::new(None) };
}

/// Enforces `deadline_ms` (from [`deadline_in`]) on this thread until the guard is dropped;
/// a script running past it gets `timeout`'s message as its error.
pub fn arm(deadline_ms: u64, timeout: Timeout) -> Guard {
    let move_at_ms = if crate::blocking::inline() {
        coarse_now_ms().saturating_add(crate::blocking::SLICE.as_millis() as u64)
    } else {
        u64::MAX
    };
    let armed: &'static Armed = Box::leak(Box::new(Armed {
        deadline_ms,
        next_ms: Cell::new(deadline_ms.min(move_at_ms)),
        move_at_ms: Cell::new(move_at_ms),
        moves: Cell::new(0),
        timeout,
        message: std::cell::OnceCell::new(),
    }));
    ARMED.with(|a| a.set(Some(armed)));
    Guard(armed)
}

/// Moves the script off its worker (see [`crate::blocking::move_off`]) and sets when to try
/// again: twice the slice after the first try, four times after the second, and so on. A
/// script that waited meanwhile was moved by its wait: nothing more to do.
fn move_off(armed: &Armed, now: u64) {
    let at = if crate::blocking::inline() {
        // A panic must not unwind through Luau's frames; a failed move is tried again later.
        let _ = std::panic::catch_unwind(crate::blocking::move_off);
        let moves = armed.moves.get().saturating_add(1).min(16);
        armed.moves.set(moves);
        let slice = crate::blocking::SLICE.as_millis() as u64;
        now.saturating_add(slice << moves)
    } else {
        u64::MAX
    };
    armed.move_at_ms.set(at);
    armed.next_ms.set(armed.deadline_ms.min(at));
}

/// Disarms on drop.
pub struct Guard(&'static Armed);

impl Guard {
    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        coarse_now_ms() >= self.0.deadline_ms
    }

    /// The breach's text (see [`Timeout::message`]).
    pub fn message(&self) -> String {
        self.0.timeout.message()
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        ARMED.with(|a| a.set(None));
        // SAFETY: the box was leaked in `arm` for this guard alone, and the thread-local that
        // also pointed at it was cleared above, so nothing refers to it any more.
        unsafe { drop(Box::from_raw(self.0 as *const Armed as *mut Armed)) };
    }
}

unsafe extern "C-unwind" fn interrupt(state: *mut lua_State, gc: c_int) {
    if gc >= 0 {
        return; // a GC step, not a safepoint of the script
    }
    let Some(armed) = ARMED.with(Cell::get) else {
        return;
    };
    let now = NOW_MS.load(Ordering::Relaxed);
    if now < armed.next_ms.get() {
        return;
    }
    if now < armed.deadline_ms {
        move_off(armed, now);
        return;
    }
    // Made here, once, and kept in `armed` (freed with its guard): the raise below unwinds
    // past this frame, so nothing owned may live in it.
    let message = armed
        .message
        .get_or_init(|| CString::new(armed.timeout.message()).unwrap_or_default());
    // The position of the running function (level 0 here: no C function is between the
    // interrupt and the script), so that the error names the line the script was on.
    // SAFETY: Luau calls the interrupt at safepoints where raising an error is allowed;
    // the message is a NUL-terminated string that Luau copies; the two strings pushed are
    // concatenated and raised, and nothing of this frame is owned.
    unsafe {
        ffi::luaL_where(state, 0);
        ffi::lua_pushstring_(state, message.as_ptr());
        ffi::lua_concat(state, 2);
        ffi::lua_error(state)
    };
}

/// Installs the interrupt on a VM (all its threads share the callbacks).
pub fn install(lua: &Lua) -> mlua::Result<()> {
    start_clock();
    // SAFETY: only sets a field of the VM's callbacks table, inside a protected call.
    unsafe {
        lua.exec_raw::<()>((), |state| {
            (*ffi::lua_callbacks(state)).interrupt = Some(interrupt);
        })
    }
}
