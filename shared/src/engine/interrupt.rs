//! The invocation deadline, enforced inside Luau code. Luau calls the interrupt at every loop
//! back-edge and call, so it must cost next to nothing: a thread-local load compared with a
//! coarse clock that a background thread advances every few milliseconds. mlua's own
//! `set_interrupt` runs a Rust closure through its error-handling wrapper on every call, which
//! cost several percent of a tight row loop; this installs a raw Luau callback instead.
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

struct Armed {
    deadline_ms: u64,
    message: CString,
}

thread_local! {
    /// The deadline of the invocation running on this thread, if any. A VM runs on one thread
    /// at a time, so the thread's deadline is the running invocation's.
    static ARMED: Cell<Option<&'static Armed>> = const { Cell::new(None) };
}

/// Enforces `deadline_ms` (from [`deadline_in`]) on this thread until the guard is dropped;
/// a script running past it gets `message` as its error.
pub fn arm(deadline_ms: u64, message: &str) -> Guard {
    let armed: &'static Armed = Box::leak(Box::new(Armed {
        deadline_ms,
        message: CString::new(message.replace('%', "%%")).unwrap_or_default(),
    }));
    ARMED.with(|a| a.set(Some(armed)));
    Guard(armed)
}

/// Disarms on drop.
pub struct Guard(&'static Armed);

impl Guard {
    /// Whether the deadline has passed.
    pub fn expired(&self) -> bool {
        coarse_now_ms() >= self.0.deadline_ms
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
    if NOW_MS.load(Ordering::Relaxed) >= armed.deadline_ms {
        // SAFETY: Luau calls the interrupt at safepoints where raising an error is allowed;
        // the message is a NUL-terminated string with every '%' escaped.
        unsafe { ffi::luaL_error(state, c"%s".as_ptr(), armed.message.as_ptr()) };
    }
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
