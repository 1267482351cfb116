//! Compiles the crash-simulating VFS against the header of the SQLite that libsqlite3-sys
//! bundles (it exports its folder as `DEP_SQLITE3_INCLUDE`), and the fault layer `faultfs.c`
//! into a shared object for LD_PRELOAD, whose path the crate gets as `NATIVE_FAULTFS_SO`.

fn main() {
    let include = std::env::var("DEP_SQLITE3_INCLUDE")
        .expect("libsqlite3-sys (bundled) names its include folder");
    println!("cargo:rerun-if-changed=src/crashsim.c");
    println!("cargo:rerun-if-changed=src/faultfs.c");
    cc::Build::new()
        .file("src/crashsim.c")
        .include(include)
        .warnings(true)
        .compile("crashsim");
    let out = std::path::PathBuf::from(std::env::var("OUT_DIR").expect("cargo sets OUT_DIR"));
    let so = out.join("libnative_faultfs.so");
    // A shared object, which `cc::Build` does not make: its compiler, called by hand.
    let status = cc::Build::new()
        .get_compiler()
        .to_command()
        .args(["-shared", "-fPIC", "-O2", "-Wall", "-o"])
        .arg(&so)
        .arg("src/faultfs.c")
        .arg("-ldl")
        .status()
        .expect("the C compiler runs");
    assert!(status.success(), "compiling src/faultfs.c failed: {status}");
    println!("cargo:rustc-env=NATIVE_FAULTFS_SO={}", so.display());
}
