//! The calls into shim.cpp, behind a safe [`Checker`].

use std::ffi::{c_char, c_int, c_void};

use crate::{Diagnostic, Severity};

// Linked for its static libraries (Luau), which the shim calls.
use native_luau_analysis as _;

#[repr(C)]
struct RawChecker {
    _private: [u8; 0],
}

type DiagnosticFn = unsafe extern "C" fn(
    user: *mut c_void,
    module: *const c_char,
    module_len: usize,
    line: u32,
    col: u32,
    kind: u32,
    msg: *const c_char,
    msg_len: usize,
);

type ResolveFn = unsafe extern "C" fn(
    user: *mut c_void,
    from: *const c_char,
    from_len: usize,
    path: *const c_char,
    path_len: usize,
    line: u32,
    col: u32,
    out: *mut c_void,
) -> c_int;

type AliasFn = unsafe extern "C" fn(
    user: *mut c_void,
    name: *const c_char,
    name_len: usize,
    value: *const c_char,
    value_len: usize,
);

type TextFn = unsafe extern "C" fn(user: *mut c_void, text: *const c_char, len: usize);

extern "C" {
    fn nlc_new() -> *mut RawChecker;
    fn nlc_free(c: *mut RawChecker);
    fn nlc_set_string(out: *mut c_void, s: *const c_char, len: usize);
    fn nlc_load_definitions(
        c: *mut RawChecker,
        name: *const c_char,
        name_len: usize,
        src: *const c_char,
        src_len: usize,
        diag: DiagnosticFn,
        user: *mut c_void,
    ) -> c_int;
    fn nlc_parse_config(
        text: *const c_char,
        len: usize,
        mode: *mut u32,
        alias: AliasFn,
        err: TextFn,
        user: *mut c_void,
    ) -> c_int;
    fn nlc_add_source(
        c: *mut RawChecker,
        name: *const c_char,
        name_len: usize,
        src: *const c_char,
        src_len: usize,
        mode: u32,
    );
    fn nlc_check(
        c: *mut RawChecker,
        name: *const c_char,
        name_len: usize,
        module_time_limit_s: f64,
        resolve: ResolveFn,
        diag: DiagnosticFn,
        user: *mut c_void,
    );
}

/// A module's type-checking mode, as Luau's `.luaurc` `languageMode` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// `nocheck`: no type errors.
    NoCheck = 0,
    /// `nonstrict`: Luau's default; only what would surely fail at run time.
    Nonstrict = 1,
    /// `strict`: everything.
    Strict = 2,
}

impl Mode {
    fn from_u32(m: u32) -> Mode {
        match m {
            0 => Mode::NoCheck,
            2 => Mode::Strict,
            _ => Mode::Nonstrict,
        }
    }
}

/// A `.luaurc` as Luau's own parser reads it, over the mode of the folder above.
pub struct Parsed {
    /// Its `languageMode`, or the mode it was given.
    pub mode: Mode,
    /// Its aliases: name as written, value.
    pub aliases: Vec<(String, String)>,
}

/// Parses `.luaurc` text over `mode`; the parser's error otherwise.
pub fn parse_config(text: &str, mode: Mode) -> Result<Parsed, String> {
    #[derive(Default)]
    struct Out {
        aliases: Vec<(String, String)>,
        error: String,
    }
    unsafe extern "C" fn alias(
        user: *mut c_void,
        name: *const c_char,
        name_len: usize,
        value: *const c_char,
        value_len: usize,
    ) {
        // SAFETY: `user` is the Out below, alive for the call; the strings are the shim's,
        // valid for this callback.
        let out = unsafe { &mut *(user as *mut Out) };
        out.aliases
            .push(unsafe { (from_c(name, name_len), from_c(value, value_len)) });
    }
    unsafe extern "C" fn error(user: *mut c_void, s: *const c_char, len: usize) {
        // SAFETY: as above.
        let out = unsafe { &mut *(user as *mut Out) };
        out.error = unsafe { from_c(s, len) };
    }
    let mut out = Out::default();
    let mut m = mode as u32;
    // SAFETY: pointers and lengths of live Rust values; the callbacks get `out` back.
    let ok = unsafe {
        nlc_parse_config(
            text.as_ptr().cast(),
            text.len(),
            &mut m,
            alias,
            error,
            (&mut out as *mut Out).cast(),
        )
    };
    if ok == 1 {
        Ok(Parsed {
            mode: Mode::from_u32(m),
            aliases: out.aliases,
        })
    } else {
        Err(out.error)
    }
}

/// The shim's bytes as a Rust string (lossy: Luau's messages quote source text).
///
/// # Safety
/// `s` must be valid for `len` bytes (or null with `len` 0).
unsafe fn from_c(s: *const c_char, len: usize) -> String {
    if s.is_null() || len == 0 {
        return String::new();
    }
    // SAFETY: the caller's promise.
    String::from_utf8_lossy(unsafe { std::slice::from_raw_parts(s.cast::<u8>(), len) }).into_owned()
}

/// Resolves a require: (requiring module, path, 0-based line, column) to the module's name,
/// or the diagnostic that says why not.
pub type Resolver<'a> = dyn FnMut(&str, &str, u32, u32) -> Result<String, Diagnostic> + 'a;

/// What a check call hands its callbacks: the sink for diagnostics and the resolver.
struct Calls<'a> {
    sink: &'a mut dyn FnMut(Diagnostic),
    resolve: Option<&'a mut Resolver<'a>>,
}

unsafe extern "C" fn on_diagnostic(
    user: *mut c_void,
    module: *const c_char,
    module_len: usize,
    line: u32,
    col: u32,
    kind: u32,
    msg: *const c_char,
    msg_len: usize,
) {
    // SAFETY: `user` is the Calls of the running call; the strings are valid for this call.
    let calls = unsafe { &mut *(user as *mut Calls) };
    let (path, message) = unsafe { (from_c(module, module_len), from_c(msg, msg_len)) };
    (calls.sink)(Diagnostic {
        path,
        line: line.saturating_add(1),
        col: col.saturating_add(1),
        severity: if kind == 2 {
            Severity::Warning
        } else {
            Severity::Error
        },
        message,
    });
}

unsafe extern "C" fn on_resolve(
    user: *mut c_void,
    from: *const c_char,
    from_len: usize,
    path: *const c_char,
    path_len: usize,
    line: u32,
    col: u32,
    out: *mut c_void,
) -> c_int {
    // SAFETY: as in on_diagnostic; `out` is the shim's std::string, written by nlc_set_string.
    let calls = unsafe { &mut *(user as *mut Calls) };
    let (from, path) = unsafe { (from_c(from, from_len), from_c(path, path_len)) };
    let Some(resolve) = calls.resolve.as_mut() else {
        return 0;
    };
    match resolve(&from, &path, line, col) {
        Ok(module) => {
            // SAFETY: `out` is valid for this call; the bytes are a live String's.
            unsafe { nlc_set_string(out, module.as_ptr().cast(), module.len()) };
            1
        }
        Err(d) => {
            (calls.sink)(d);
            0
        }
    }
}

/// Luau's Frontend with the host definitions and the project's sources.
pub struct Checker(*mut RawChecker);

impl Checker {
    /// A checker with Luau's builtin globals; `None` if it could not be made.
    pub fn new() -> Option<Checker> {
        // SAFETY: no arguments; a null result is handled.
        let c = unsafe { nlc_new() };
        (!c.is_null()).then_some(Checker(c))
    }

    /// Loads a definitions file into the global scope; false (having reported why) if it has
    /// errors.
    pub fn load_definitions(
        &mut self,
        name: &str,
        text: &str,
        sink: &mut dyn FnMut(Diagnostic),
    ) -> bool {
        let mut calls = Calls {
            sink,
            resolve: None,
        };
        // SAFETY: live pointers and lengths; `calls` outlives the call.
        unsafe {
            nlc_load_definitions(
                self.0,
                name.as_ptr().cast(),
                name.len(),
                text.as_ptr().cast(),
                text.len(),
                on_diagnostic,
                (&mut calls as *mut Calls).cast(),
            ) == 1
        }
    }

    /// Adds a module (its project-relative path, its text) with the mode of its `.luaurc`.
    pub fn add_source(&mut self, name: &str, text: &str, mode: Mode) {
        // SAFETY: live pointers and lengths; the shim copies them.
        unsafe {
            nlc_add_source(
                self.0,
                name.as_ptr().cast(),
                name.len(),
                text.as_ptr().cast(),
                text.len(),
                mode as u32,
            )
        }
    }

    /// Checks module `name` (and, once, what it requires).
    pub fn check(
        &mut self,
        name: &str,
        module_time_s: f64,
        resolve: &mut Resolver<'_>,
        sink: &mut dyn FnMut(Diagnostic),
    ) {
        let mut calls = Calls {
            sink,
            resolve: Some(resolve),
        };
        // SAFETY: live pointers and lengths; `calls` outlives the call.
        unsafe {
            nlc_check(
                self.0,
                name.as_ptr().cast(),
                name.len(),
                module_time_s,
                on_resolve,
                on_diagnostic,
                (&mut calls as *mut Calls).cast(),
            )
        }
    }
}

impl Drop for Checker {
    fn drop(&mut self) {
        // SAFETY: made by nlc_new, freed once.
        unsafe { nlc_free(self.0) }
    }
}
