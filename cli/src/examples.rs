//! The example projects, built into the binary so that `native init` and `native demo` work
//! from any folder.

/// A file of an example project: path relative to the project root, and content.
pub type File = (&'static str, &'static str);

macro_rules! files {
    ($base:literal: $($path:literal),* $(,)?) => {
        &[$(($path, include_str!(concat!("../../examples/", $base, "/", $path)))),*]
    };
}

/// `examples/hello`: invoke → bucket → router → queue → continuation.
pub const HELLO: &[File] = files!("hello":
    "deployment.json",
    "tenants/hello/config.json",
    "tenants/hello/scripts/start.luau",
    "tenants/hello/scripts/router.luau",
    "tenants/hello/scripts/greet.luau",
    "tenants/hello/scripts/finish.luau",
    "tenants/hello/tests/greeting.test.luau",
);

/// `examples/barrier`: the seed's sender, router, ack and finalize scripts.
pub const BARRIER: &[File] = files!("barrier":
    "deployment.json",
    "tenants/acme/config.json",
    "tenants/acme/scripts/send.luau",
    "tenants/acme/scripts/router.luau",
    "tenants/acme/scripts/default.luau",
    "tenants/acme/scripts/ack.luau",
    "tenants/acme/scripts/finalize.luau",
);

/// `examples/batch`: the seed's customers/orders flow, with partner fixtures.
pub const BATCH: &[File] = files!("batch":
    "deployment.json",
    "tenants/shop/config.json",
    "tenants/shop/scripts/request.luau",
    "tenants/shop/scripts/router.luau",
    "tenants/shop/scripts/batch-gone.luau",
    "tenants/shop/scripts/default.luau",
    "tenants/shop/scripts/settle.luau",
    "partner/customers_by_id.ndjson",
    "partner/open_orders.ndjson",
);

/// The types of the host API: what `native check` checks scripts against, and what `native
/// init` writes for editors.
pub const NATIVE_D_LUAU: &str = include_str!("../../shared/src/host/native.d.luau");

/// What `native init` adds to the example: the types of the host API for luau-lsp and `native
/// check`, and a `.luaurc` that makes strict mode the project's default. It names no globals:
/// Luau binds a `.luaurc` global to `any`, which would hide `native`'s definitions.
pub const EDITOR: &[File] = &[
    ("native.d.luau", NATIVE_D_LUAU),
    (".luaurc", "{\n  \"languageMode\": \"strict\"\n}\n"),
];

/// What a project's `.gitignore` must hold: `.native/` has the embedded backend's data, the
/// key that signs callback URLs and the vault's secrets.
pub const GITIGNORE: &str = ".native/";

/// Adds [`GITIGNORE`] to `root/.gitignore`, making it if needed; a file that already has it is
/// left alone.
pub fn ignore_state(root: &std::path::Path) -> std::io::Result<()> {
    let p = root.join(".gitignore");
    let old = match std::fs::read_to_string(&p) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
        Err(e) => return Err(e),
    };
    if old
        .lines()
        .any(|l| l.trim() == GITIGNORE || l.trim() == ".native")
    {
        return Ok(());
    }
    let sep = if old.is_empty() || old.ends_with('\n') {
        ""
    } else {
        "\n"
    };
    let note = "# native's local state: data, the callback URL key and the vault's secrets\n";
    std::fs::write(&p, format!("{old}{sep}{note}{GITIGNORE}\n"))
}

/// A file of an example made at run time (a tenant renamed): path and content.
pub type Owned = (String, String);

/// Writes an example's files under `root`, refusing to overwrite anything.
pub fn write(root: &std::path::Path, files: &[File]) -> std::io::Result<()> {
    let owned: Vec<Owned> = files
        .iter()
        .map(|(p, c)| (p.to_string(), c.to_string()))
        .collect();
    write_owned(root, &owned)
}

/// [`write`] for files made at run time.
pub fn write_owned(root: &std::path::Path, files: &[Owned]) -> std::io::Result<()> {
    for (path, content) in files {
        let p = root.join(path);
        if p.exists() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("{} already exists; not overwriting it", p.display()),
            ));
        }
        if let Some(dir) = p.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::write(&p, content)?;
    }
    Ok(())
}
