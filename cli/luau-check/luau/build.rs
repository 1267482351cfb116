//! Compiles the vendored Luau sources (see src/lib.rs) into one static library.
//!
//! Flags chosen for the test command's time on 2 cores: the profile's optimisation (cc reads
//! it: -O0 in debug builds, which compile about 30% less CPU time than -O1 and still check a
//! project in well under a second; -O3 in release), no debug info, no Luau asserts.

use std::path::{Path, PathBuf};

/// The libraries compiled, each `<dir>/src/*.cpp` with `<dir>/include` on the include path.
const LIBS: &[&str] = &["Common", "Ast", "Compiler", "VM", "Config", "Analysis"];

/// Sources that the checker's binary does not link (editor features, debugging output, the
/// VM's libraries that type functions do not open): left out so that the build compiles less
/// (a tenth of the lines, more of the time: autocomplete is template-heavy). Found by listing
/// the objects none of whose symbols are in `native-check-types`; a shim that needs one of
/// them fails to link, naming the symbol.
const SKIP: &[&str] = &[
    "AstJsonEncoder.cpp",
    "AstQuery.cpp",
    "Autocomplete.cpp",
    "AutocompleteCore.cpp",
    "FileResolver.cpp",
    "FragmentAutocomplete.cpp",
    "IostreamHelpers.cpp",
    "ToDot.cpp",
    "TypeAttach.cpp",
    "TypeOrPack.cpp",
    "LuauConfig.cpp",
    "lcode.cpp",
    "lcorolib.cpp",
    "ldblib.cpp",
    "lgcdebug.cpp",
    "loslib.cpp",
    "lveclib.cpp",
    "PrettyPrinter.cpp",
];

fn main() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    println!("cargo:rerun-if-changed=build.rs");
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        .warnings(false)
        .debug(false)
        .define("LUAI_MAXCSTACK", "1000000")
        .define("LUA_VECTOR_SIZE", "3")
        .define("LUA_API", "extern \"C\"")
        .define("LUACODE_API", "extern \"C\"");
    for lib in LIBS {
        let dir = root.join(lib);
        println!("cargo:rerun-if-changed={}", dir.display());
        build.include(dir.join("include"));
        for src in sources(&dir.join("src")) {
            build.file(src);
        }
    }
    build.compile("native_luau_analysis");
    // The shim's build script reads this as DEP_NATIVE_LUAU_ANALYSIS_INCLUDE.
    let includes: Vec<String> = LIBS
        .iter()
        .map(|l| root.join(l).join("include").display().to_string())
        .collect();
    println!("cargo:include={}", includes.join(","));
}

/// The `.cpp` files of `dir` in name order, less [`SKIP`].
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("a directory entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "cpp"))
        .filter(|p| !SKIP.iter().any(|s| p.ends_with(s)))
        .collect();
    out.sort();
    out
}
