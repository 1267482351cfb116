//! Compiles shim.cpp, the C face of Luau's analyzer, against the headers of
//! native-luau-analysis (which compiles Luau itself once; editing the shim recompiles only it).

fn main() {
    println!("cargo:rerun-if-changed=shim.cpp");
    let includes = std::env::var("DEP_NATIVE_LUAU_ANALYSIS_INCLUDE")
        .expect("native-luau-analysis names its include folders");
    let mut build = cc::Build::new();
    build
        .cpp(true)
        .std("c++17")
        .warnings(false)
        .debug(false)
        .define("LUA_API", "extern \"C\"")
        .file("shim.cpp");
    for dir in includes.split(',') {
        build.include(dir);
    }
    build.compile("native_luau_check_shim");
}
