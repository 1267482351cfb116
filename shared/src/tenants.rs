//! Where tenants come from: a project folder (`tenants/<tenant>/...`) locally, the scripts bucket
//! on AWS. Both give a [`Tenant`] with its config and every script.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;

use crate::config::modules::{module_name, MAX_DEPTH};
use crate::config::{Luaurc, Script, Tenant, TenantConfig};
use crate::keys::check_name;
use crate::{Error, Result};

mod watch;

/// A source of tenants.
#[async_trait]
pub trait TenantSource: std::fmt::Debug + Send + Sync {
    /// Loads a tenant; [`Error::NotFound`] when there is none of that name.
    async fn load(&self, tenant: &str) -> Result<Arc<Tenant>>;

    /// The names of the tenants there are, sorted (for people: the operator's console). A
    /// source that cannot tell says so.
    async fn list(&self) -> Result<Vec<String>> {
        Err(Error::InvalidInput(
            "this tenant source cannot list its tenants".into(),
        ))
    }
}

/// The files of a tenant folder that make the tenant, by their path in the folder:
/// `config.json`, `.luaurc`, `scripts/<name>.luau` (scripts) and `scripts/<folders>/<name>.luau`
/// (modules). Other files are not part of it.
pub fn is_tenant_file(rel: &str) -> bool {
    rel == "config.json"
        || rel == ".luaurc"
        || rel
            .strip_prefix("scripts/")
            .is_some_and(|n| n.ends_with(".luau"))
}

/// The most files a tenant may have (its scripts, modules and two configs).
pub const MAX_FILES: usize = 5000;

/// Builds a tenant from its files' paths in the folder and texts (see [`is_tenant_file`]);
/// `shown` is what errors put before a path (`tenants/acme/`, `s3://b/acme/`). The one place
/// that says what each file is, for the project folder and the scripts bucket alike.
pub fn assemble(tenant: &str, shown: &str, files: Vec<(String, String)>) -> Result<Tenant> {
    let mut config = TenantConfig::default();
    let mut luaurc = Luaurc::default();
    let mut scripts = Vec::new();
    let mut modules = Vec::new();
    for (rel, text) in files {
        let file = format!("{shown}{rel}");
        if rel == "config.json" {
            config = TenantConfig::from_json(&file, &text)?;
        } else if rel == ".luaurc" {
            luaurc = Luaurc::from_json(&file, &text)?;
        } else if let Some(path) = rel.strip_prefix("scripts/") {
            match path.strip_suffix(".luau") {
                Some(name) if !name.contains('/') => {
                    check_name("script", name).map_err(|why| Error::config(&file, "-", why))?;
                    scripts.push(Script::from_file(&file, name, &text)?);
                }
                _ => match module_name(path) {
                    Some(Ok(name)) => modules.push(Script::module_from_file(&file, &name, &text)?),
                    Some(Err(why)) => return Err(Error::config(&file, "-", why)),
                    None => {}
                },
            }
        }
    }
    let t = Tenant::with_modules(tenant, config, scripts, modules, luaurc)?;
    check_schedules(&t, &format!("{shown}config.json"))?;
    Ok(t)
}

/// Refuses a schedule whose script the tenant does not have, or whose script has no
/// `on_queue` for its runs; `file` names the config in the error.
pub fn check_schedules(t: &Tenant, file: &str) -> Result<()> {
    for (name, s) in &t.config.schedules {
        let field = format!("schedules.{name}.script");
        match t.scripts.get(&s.script) {
            None => {
                let why = t.script(&s.script).err().map(|e| e.to_string());
                return Err(Error::config(file, field, why.unwrap_or_default()));
            }
            Some(script) if !script.mentions("on_queue") => {
                return Err(Error::config(
                    file,
                    field,
                    format!(
                        "script {:?} has no on_queue, which each run of the schedule calls; \
                         define function on_queue(ctx, ev) in scripts/{}.luau",
                        s.script, s.script
                    ),
                ))
            }
            Some(_) => {}
        }
    }
    Ok(())
}

/// A tenant's files: each one's path in the tenant folder, and on disk.
pub type Files = Vec<(String, PathBuf)>;

/// The tenant files under `dir` (a tenant's folder), by path in it, sorted: what
/// [`assemble`] reads and `native deploy` uploads. Folders under `scripts/` are walked at most
/// [`MAX_DEPTH`] deep; hidden ones (`.git`) are skipped.
pub fn files_of(dir: &Path) -> Result<Files> {
    walk(dir).map(|(files, _)| files)
}

/// [`files_of`], and the folders walked: the tenant's, `scripts/` when there is one, and each
/// folder under it.
fn walk(dir: &Path) -> Result<(Files, Vec<PathBuf>)> {
    let mut out = Vec::new();
    let mut walked = vec![dir.to_path_buf()];
    for top in ["config.json", ".luaurc"] {
        let p = dir.join(top);
        if p.is_file() {
            out.push((top.to_string(), p));
        }
    }
    let mut folders = vec![("scripts".to_string(), dir.join("scripts"), 0)];
    while let Some((rel, path, depth)) = folders.pop() {
        let rd = match std::fs::read_dir(&path) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && depth == 0 => continue,
            Err(e) => {
                return Err(Error::backend(
                    "embedded",
                    format!("cannot read {}", path.display()),
                    e,
                ))
            }
        };
        walked.push(path);
        for entry in rd.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            let p = entry.path();
            let r = format!("{rel}/{name}");
            let kind = entry.file_type().ok();
            if kind.is_some_and(|k| k.is_dir())
                || (kind.is_some_and(|k| k.is_symlink()) && p.is_dir())
            {
                if !name.starts_with('.') && depth < MAX_DEPTH {
                    folders.push((r, p, depth + 1));
                }
            } else if name.ends_with(".luau") {
                out.push((r, p));
            }
            if out.len() > MAX_FILES {
                return Err(Error::InvalidInput(format!(
                    "{} has more than {MAX_FILES} .luau files under scripts/",
                    dir.display()
                )));
            }
        }
    }
    out.sort();
    Ok((out, walked))
}

/// What a tenant's files looked like when it was read: each file's and folder's modification
/// time, size and inode. A different stamp means something was edited, added or removed.
#[derive(Debug)]
struct Stamp {
    /// Where the system can say so for one call a load: a watch over the folders, made before
    /// the files were read. Without one, `seen` and `racy` are compared.
    watch: Option<watch::Watch>,
    seen: Vec<(PathBuf, Option<Meta>)>,
    /// Whether a file was modified so shortly before it was read that a second edit could
    /// leave the same time and size (file systems keep times in clock ticks of a few ms): such
    /// a stamp counts as changed, and the tenant is read again until its files are older.
    racy: bool,
}

/// A file's modification time, size and inode.
type Meta = (std::time::SystemTime, u64, u64);

/// How recent a modification makes a stamp racy.
const RACY: std::time::Duration = std::time::Duration::from_millis(100);

fn stamp_of(dir: &Path, files: &[(String, PathBuf)], watch: Option<watch::Watch>) -> Stamp {
    // The folders: a file made, removed or renamed in one changes its time.
    let mut folders: Vec<PathBuf> = vec![dir.to_path_buf(), dir.join("scripts")];
    for (_, p) in files {
        if let Some(parent) = p.parent() {
            if !folders.iter().any(|f| f == parent) {
                folders.push(parent.to_path_buf());
            }
        }
    }
    // config.json and .luaurc, also when absent: making one changes the tenant.
    let mut paths = folders;
    paths.push(dir.join("config.json"));
    paths.push(dir.join(".luaurc"));
    paths.extend(files.iter().map(|(_, p)| p.clone()));
    let now = std::time::SystemTime::now();
    let mut racy = false;
    let seen = paths
        .into_iter()
        .map(|p| {
            let m = meta(&p);
            if let Some((t, _, _)) = m {
                racy |= now.duration_since(t).map_or(true, |age| age < RACY);
            }
            (p, m)
        })
        .collect();
    Stamp { watch, seen, racy }
}

/// A tenant as read, with the stamp of its files then.
type Read = (Stamp, Arc<Tenant>);

/// Tenants in a project folder: `tenants/<tenant>/config.json`, `.luaurc` and
/// `tenants/<tenant>/scripts/**.luau`. A tenant is read once and kept; each load then looks at
/// its files' modification times, sizes and inodes (a `stat` each) and reads it again when
/// any changed, so that `native serve` runs an edited script, module or config from the next
/// invocation on. An invocation holds the tenant it started with: versions never mix in one.
#[derive(Debug)]
pub struct DirTenants {
    root: PathBuf,
    cache: Mutex<HashMap<String, Arc<Read>>>,
}

impl DirTenants {
    /// Tenants under `<project>/tenants`.
    pub fn new(project: &Path) -> Self {
        DirTenants {
            root: project.join("tenants"),
            cache: Mutex::default(),
        }
    }

    /// The names of every tenant folder, sorted.
    pub fn names(&self) -> Result<Vec<String>> {
        let mut out = Vec::new();
        let rd = match std::fs::read_dir(&self.root) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(out),
            Err(e) => {
                return Err(Error::backend(
                    "embedded",
                    format!("cannot read {}", self.root.display()),
                    e,
                ))
            }
        };
        for entry in rd.flatten() {
            if entry.path().is_dir() {
                out.push(entry.file_name().to_string_lossy().into_owned());
            }
        }
        out.sort();
        Ok(out)
    }

    /// Reads a tenant from disk, without the cache.
    pub fn read(&self, tenant: &str) -> Result<Tenant> {
        self.read_stamped(tenant).map(|(_, t)| t)
    }

    /// Reads a tenant, with the stamp of its files taken before they were read (an edit
    /// made while reading shows as a change at the next load).
    fn read_stamped(&self, tenant: &str) -> Result<(Stamp, Tenant)> {
        check_name("tenant", tenant).map_err(Error::InvalidInput)?;
        let dir = self.root.join(tenant);
        if !dir.is_dir() {
            let names = self.names().unwrap_or_default();
            return Err(Error::no_tenant(
                tenant,
                format!(
                    "{}there is no folder tenants/{tenant}; the project's tenants: {}",
                    crate::text::suggest::did_you_mean(tenant, names.iter().map(String::as_str)),
                    if names.is_empty() {
                        "none (make one with `native init`)".to_string()
                    } else {
                        names.join(", ")
                    }
                ),
            ));
        }
        let shown = format!("tenants/{tenant}/");
        // The watch goes on before the files are read, so a write from then on is seen; the
        // folders are walked again after, for one made between the walk and the watch.
        let (mut files, mut folders) = walk(&dir)?;
        let mut watch = None;
        for _ in 0..3 {
            watch = watch::Watch::new(folders.iter().map(PathBuf::as_path));
            let again = walk(&dir)?;
            if again.1 == folders {
                files = again.0;
                break;
            }
            (files, folders) = again;
            watch = None;
        }
        let stamp = stamp_of(&dir, &files, watch);
        let mut texts = Vec::with_capacity(files.len());
        for (rel, path) in files {
            let text = std::fs::read_to_string(&path)
                .map_err(|e| Error::config(format!("{shown}{rel}"), "-", e))?;
            texts.push((rel, text));
        }
        Ok((stamp, assemble(tenant, &shown, texts)?))
    }
}

/// A file's modification time, size and inode, `None` when it is not there.
fn meta(p: &Path) -> Option<Meta> {
    let m = std::fs::metadata(p).ok()?;
    #[cfg(unix)]
    let ino = std::os::unix::fs::MetadataExt::ino(&m);
    #[cfg(not(unix))]
    let ino = 0;
    Some((m.modified().unwrap_or(std::time::UNIX_EPOCH), m.len(), ino))
}

/// Whether every file and folder of `stamp` is as it was.
fn unchanged(stamp: &Stamp) -> bool {
    match &stamp.watch {
        Some(w) => !w.changed(),
        None => !stamp.racy && stamp.seen.iter().all(|(p, was)| meta(p) == *was),
    }
}

#[async_trait]
impl TenantSource for DirTenants {
    async fn load(&self, tenant: &str) -> Result<Arc<Tenant>> {
        let cached = self
            .cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(tenant)
            .cloned();
        if let Some(entry) = cached {
            if unchanged(&entry.0) {
                return Ok(entry.1.clone());
            }
        }
        let (stamp, t) = self.read_stamped(tenant)?;
        let t = Arc::new(t);
        self.cache
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(tenant.to_string(), Arc::new((stamp, t.clone())));
        Ok(t)
    }

    async fn list(&self) -> Result<Vec<String>> {
        self.names()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, SystemTime};

    fn age(path: &Path, by_s: u64) {
        let f = std::fs::File::options().write(true).open(path).unwrap();
        f.set_modified(SystemTime::now() - Duration::from_secs(by_s))
            .unwrap();
    }

    #[test]
    fn without_a_watch_the_stamp_sees_an_edit_of_the_same_size_and_distrusts_fresh_files() {
        // GIVEN a tenant folder with a module, stamped without a watch
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("scripts/lib/a.luau");
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, "return 1").unwrap();
        let files = files_of(dir.path()).unwrap();
        // WHEN it was written just now THEN the stamp is racy: counted as changed
        assert!(!unchanged(&stamp_of(dir.path(), &files, None)));
        // WHEN the files and folders are older THEN an unchanged folder is unchanged
        age(&file, 60);
        std::thread::sleep(RACY);
        let stamp = stamp_of(dir.path(), &files, None);
        assert!(unchanged(&stamp));
        // WHEN the module is rewritten with text of the same size THEN the stamp says so
        std::fs::write(&file, "return 2").unwrap();
        age(&file, 30);
        assert!(!unchanged(&stamp));
    }

    #[test]
    fn a_schedule_names_a_script_with_on_queue() {
        // GIVEN configs whose schedule names a missing script, or one without on_queue
        let config = |script: &str| {
            format!(
                r#"{{"schedules": {{"nightly": {{"script": "{script}", "cron": "0 2 * * *"}}}}}}"#
            )
        };
        let files = |script: &str| {
            vec![
                ("config.json".to_string(), config(script)),
                (
                    "scripts/report.luau".to_string(),
                    "function on_invoke() end".to_string(),
                ),
                (
                    "scripts/ok.luau".to_string(),
                    "function on_queue(ctx, ev) end".to_string(),
                ),
            ]
        };
        // WHEN each tenant is assembled THEN the error names the file, the field and why
        let e = assemble("acme", "tenants/acme/", files("repot"))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("tenants/acme/config.json: schedules.nightly.script: ")
                && e.contains("did you mean \"report\""),
            "{e}"
        );
        let e = assemble("acme", "tenants/acme/", files("report"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("schedules.nightly.script: script \"report\" has no on_queue"),
            "{e}"
        );
        assert!(assemble("acme", "tenants/acme/", files("ok")).is_ok());
    }
}
