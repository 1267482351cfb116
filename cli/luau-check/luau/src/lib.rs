//! Luau's analyzer (the `Analysis` library of Luau 0.710 and the parts it needs: `Ast`,
//! `Compiler`, `VM`, `Config`, `Common`), compiled by build.rs from the sources beside this
//! crate, as static libraries for `native-luau-check`'s shim. No Rust API: the shim includes
//! the headers (`DEP_NATIVE_LUAU_ANALYSIS_INCLUDE`) and links these libraries.
//!
//! Built for the `native` command's type checker only. The runtime links mlua's own Luau
//! (another version, with the same C and C++ symbols), so no binary may link both: only the
//! `native-check-types` binary links this crate.
