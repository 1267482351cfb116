//! Compiles the crash-simulating VFS against the header of the SQLite that libsqlite3-sys
//! bundles (it exports its folder as `DEP_SQLITE3_INCLUDE`).

fn main() {
    let include = std::env::var("DEP_SQLITE3_INCLUDE")
        .expect("libsqlite3-sys (bundled) names its include folder");
    println!("cargo:rerun-if-changed=src/crashsim.c");
    cc::Build::new()
        .file("src/crashsim.c")
        .include(include)
        .warnings(true)
        .compile("crashsim");
}
