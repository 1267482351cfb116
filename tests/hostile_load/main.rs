//! The hostile-load suite (`tests/hostile_load/README.md`): what one tenant or one HTTP client
//! can throw at a running `native serve`, each case beside a canary of another tenant that must
//! answer during the attack and after it. Where `tests/hostile/` runs hostile *scripts* one at
//! a time in a process of its own, this suite runs *loads*: floods of connections, bodies and
//! messages, against the real listener and queue processing, and measures what they cost.
//!
//! One test, `hostile_load`, runs every case in [`cases::ALL`] in turn (never two at once:
//! they measure time and memory of a server they share the machine with), prints a table of
//! each case's figures and verdict, writes it to `target/hostile-load.txt`, and fails if any
//! case failed. `NATIVE_HOSTILE_LOAD_ONLY=name` runs the cases whose name contains `name`.
//!
//! A case is a function from a [`Ctx`] to its figures: it makes a project ([`Ctx::project`]),
//! starts `native serve` on it ([`Ctx::serve`], with the listener's bounds lowered through
//! `NATIVE_HTTP_*` so that timeouts show within seconds), starts a [`Canary`] of another tenant,
//! attacks, and checks. Adding a case is a function and a line in [`cases::ALL`].

mod cases;
mod net;

use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use native_tests::TenantSpec;
use serde_json::Value;

/// The `native` binary under test: this build's, or `NATIVE_HOSTILE_LOAD_BIN` (a release build,
/// for SECURITY.md's release figures; run by hand).
fn native_bin() -> PathBuf {
    std::env::var_os("NATIVE_HOSTILE_LOAD_BIN")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_native")))
}

/// Whether the binary under test is a release build (`native --version` says when it is not):
/// the figures are a release build's, and a case holds one to them.
pub fn release_build() -> bool {
    static RELEASE: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *RELEASE.get_or_init(|| {
        let out = Command::new(native_bin())
            .arg("--version")
            .output()
            .expect("native --version runs");
        !String::from_utf8_lossy(&out.stdout).contains("debug build")
    })
}

/// The canary tenant every case has: its `ping` answers at once.
pub const CANARY_TENANT: &str = "canary";
const CANARY_PING: &str = "function on_invoke(ctx, ev) return { pong = ctx.tenant } end";

/// What a case found: its figures, in order, as (what, value).
pub type Figures = Vec<(String, String)>;

/// One case of the suite.
pub struct Case {
    /// Its name (`NATIVE_HOSTILE_LOAD_ONLY` matches it).
    pub name: &'static str,
    /// What it throws at the server, in a line.
    pub what: &'static str,
    /// Runs it: its figures, or why it failed.
    pub run: fn(&mut Ctx) -> Result<Figures, String>,
}

/// What a case gets: a scratch folder, and the processes it started (stopped when it ends).
pub struct Ctx {
    /// A fresh folder for the case's project.
    pub dir: tempfile::TempDir,
    servers: Vec<Serve>,
}

impl Ctx {
    /// A project in the case's folder: `deployment` and the tenants (name, config, scripts),
    /// with the canary tenant added. Returns the project's folder.
    pub fn project(&self, deployment: &str, tenants: &[TenantSpec<'_>]) -> PathBuf {
        let root = self.dir.path().to_path_buf();
        std::fs::write(root.join("deployment.json"), deployment).unwrap();
        for (t, config, scripts) in tenants {
            native_tests::write_tenant(&root, t, config, scripts);
        }
        native_tests::write_tenant(&root, CANARY_TENANT, "{}", &[("ping", CANARY_PING)]);
        root
    }

    /// `native --project P ARGS`, asserting success: its stdout.
    pub fn native(&self, project: &Path, args: &[&str]) -> Result<String, String> {
        let o = Command::new(native_bin())
            .arg("--project")
            .arg(project)
            .args(args)
            .stdin(Stdio::null())
            .output()
            .map_err(|e| format!("cannot run native: {e}"))?;
        if !o.status.success() {
            return Err(format!(
                "native {args:?} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            ));
        }
        Ok(String::from_utf8_lossy(&o.stdout).into_owned())
    }

    /// An API key of `tenant` (`native keys create`).
    pub fn key(&self, project: &Path, tenant: &str) -> Result<String, String> {
        Ok(self
            .native(project, &["keys", "create", tenant])?
            .lines()
            .next()
            .unwrap_or_default()
            .to_string())
    }

    /// `native serve` on `project` on a free port of 127.0.0.1, with `env` (e.g. the
    /// listener's `NATIVE_HTTP_*` bounds); stopped when the case ends. Its stderr (script logs)
    /// is kept in the case's folder ([`Serve::log`]).
    pub fn serve(&mut self, project: &Path, env: &[(&str, &str)]) -> Result<Serve, String> {
        let log = self
            .dir
            .path()
            .join(format!("serve-{}.log", self.servers.len()));
        let mut cmd = Command::new(native_bin());
        cmd.arg("--project")
            .arg(project)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).map_err(|e| e.to_string())?);
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd
            .spawn()
            .map_err(|e| format!("cannot start native serve: {e}"))?;
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .map_err(|e| e.to_string())?;
        let addr = first
            .strip_prefix("listening on http://")
            .ok_or_else(|| format!("native serve said {first:?} first"))?
            .trim()
            .to_string();
        let s = Serve {
            pid: child.id(),
            addr,
            log,
            child: Arc::new(Mutex::new(child)),
        };
        self.servers.push(s.clone());
        Ok(s)
    }
}

impl Drop for Ctx {
    fn drop(&mut self) {
        for s in &self.servers {
            let mut c = s.child.lock().unwrap();
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// A running `native serve`.
#[derive(Clone)]
pub struct Serve {
    /// Its process id.
    pub pid: u32,
    /// `127.0.0.1:PORT`.
    pub addr: String,
    /// Its stderr.
    pub log: PathBuf,
    child: Arc<Mutex<Child>>,
}

/// A process's figures from `/proc/<pid>/status`.
#[derive(Debug, Clone, Copy, Default)]
pub struct Proc {
    /// Resident memory, KiB.
    pub rss_kb: u64,
    /// Peak resident memory, KiB.
    pub hwm_kb: u64,
    /// Threads.
    pub threads: u64,
}

impl Serve {
    /// Its memory and threads now.
    pub fn proc(&self) -> Proc {
        let text =
            std::fs::read_to_string(format!("/proc/{}/status", self.pid)).unwrap_or_default();
        let field = |name: &str| {
            text.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
                .unwrap_or(0)
        };
        Proc {
            rss_kb: field("VmRSS:"),
            hwm_kb: field("VmHWM:"),
            threads: field("Threads:"),
        }
    }

    /// Whether it still runs.
    pub fn alive(&self) -> bool {
        matches!(self.child.lock().unwrap().try_wait(), Ok(None))
    }

    /// What it wrote on stderr so far.
    pub fn stderr(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// `POST /v1/invoke/{script}` with `key`: status and JSON body.
    pub fn invoke(&self, key: &str, script: &str, body: &str) -> Result<(u16, Value), String> {
        net::request(
            &self.addr,
            "POST",
            &format!("/v1/invoke/{script}"),
            &[("Authorization", &format!("Bearer {key}"))],
            body.as_bytes(),
            Duration::from_secs(30),
        )
    }
}

/// Invocations of the canary tenant every 100 ms on their own thread, until stopped: each must
/// answer 200, within [`CANARY_SLOW`].
pub struct Canary {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<Vec<CanaryCall>>>,
}

/// One call of a canary: when it started, and how long it took or why it failed.
type CanaryCall = (Instant, Result<Duration, String>);

/// The slowest answer a canary may get during an attack (a debug build on a shared 2-core
/// machine; an answer in the absence of attack takes milliseconds).
pub const CANARY_SLOW: Duration = Duration::from_secs(5);

/// What [`Canary::stop_split`] saw: in all, before its instant, and from then on.
pub type Split = (CanaryReport, Option<CanaryReport>, Option<CanaryReport>);

/// What a canary saw.
#[derive(Debug)]
pub struct CanaryReport {
    /// Invocations made.
    pub calls: usize,
    /// The slowest answer.
    pub max: Duration,
    /// The 99th percentile.
    pub p99: Duration,
}

impl Canary {
    /// Starts invoking `ping` of the canary tenant on `serve` with `key`, every 100 ms.
    pub fn start(serve: &Serve, key: &str) -> Canary {
        Self::every(serve, key, Duration::from_millis(100))
    }

    /// Starts invoking `ping`, each call `pause` after the answer to the one before, on a
    /// connection of its own (as a new client comes).
    pub fn every(serve: &Serve, key: &str, pause: Duration) -> Canary {
        let (serve, key) = (serve.clone(), key.to_string());
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::spawn(move || {
            let mut seen = Vec::new();
            while !flag.load(Ordering::Relaxed) {
                seen.push((Instant::now(), ping(&serve, &key)));
                std::thread::sleep(pause);
            }
            seen
        });
        Canary {
            stop,
            thread: Some(thread),
        }
    }

    /// Stops it: what it saw, or the first answer that was not a prompt 200.
    pub fn stop(self) -> Result<CanaryReport, String> {
        self.stop_split(None).map(|(all, _, _)| all)
    }

    /// Stops it: what it saw in all, and, when `before` is given, what it saw of the calls it
    /// made before that instant (the first part of an attack) and of those it made from then
    /// on; or the first answer that was not a prompt 200.
    pub fn stop_split(mut self, before: Option<Instant>) -> Result<Split, String> {
        self.stop.store(true, Ordering::Relaxed);
        let seen = self.thread.take().unwrap().join().unwrap();
        let (mut times, mut early, mut late) = (Vec::new(), Vec::new(), Vec::new());
        for (at, s) in seen {
            let took = s.map_err(|e| format!("the canary failed during the attack: {e}"))?;
            times.push(took);
            match before {
                Some(b) if at < b => early.push(took),
                Some(_) => late.push(took),
                None => {}
            }
        }
        let all = CanaryReport::of(times).ok_or("the canary made no call")?;
        if all.max > CANARY_SLOW {
            return Err(format!(
                "the canary's slowest answer took {:?} (more than {CANARY_SLOW:?})",
                all.max
            ));
        }
        Ok((all, CanaryReport::of(early), CanaryReport::of(late)))
    }
}

impl CanaryReport {
    /// The figures of these answer times, if there are any.
    fn of(mut times: Vec<Duration>) -> Option<CanaryReport> {
        times.sort();
        let max = *times.last()?;
        Some(CanaryReport {
            calls: times.len(),
            max,
            p99: times[(times.len() * 99 / 100).min(times.len() - 1)],
        })
    }
}

impl Drop for Canary {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One canary invocation: its time, or why it was not a 200 with the canary's answer.
pub fn ping(serve: &Serve, key: &str) -> Result<Duration, String> {
    let t = Instant::now();
    match serve.invoke(key, "ping", "{}") {
        Ok((200, v)) if v["pong"] == CANARY_TENANT => Ok(t.elapsed()),
        Ok((status, v)) => Err(format!("{status} {v}")),
        Err(e) => Err(e),
    }
}

/// The canary's figures during an attack, and one more call after it.
pub fn canary_figures(c: Canary, serve: &Serve, key: &str) -> Result<Figures, String> {
    let during = c.stop()?;
    let after = ping(serve, key).map_err(|e| format!("the canary failed after the attack: {e}"))?;
    Ok(vec![(
        "canary (another tenant)".into(),
        format!(
            "{} calls during, p99 {} ms, max {} ms; after: {} ms",
            during.calls,
            during.p99.as_millis(),
            during.max.as_millis(),
            after.as_millis()
        ),
    )])
}

/// The CPU a process has used (user and system), in ms.
pub fn cpu_ms(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // After the command's closing parenthesis: state is field 3, utime 14 and stime 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<u64> = rest
        .split_whitespace()
        .map(|x| x.parse().unwrap_or(0))
        .collect();
    let ticks = f.get(11).copied().unwrap_or(0) + f.get(12).copied().unwrap_or(0);
    ticks * 10 // USER_HZ is 100 on Linux
}

/// Waits until `done` holds, for at most `limit`; how long it took, or the error.
pub fn wait_for(
    limit: Duration,
    what: &str,
    mut done: impl FnMut() -> Result<bool, String>,
) -> Result<Duration, String> {
    let t = Instant::now();
    loop {
        if done()? {
            return Ok(t.elapsed());
        }
        if t.elapsed() > limit {
            return Err(format!("{what}: not within {limit:?}"));
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Reads a child's output to the end (for commands run inside a network namespace).
pub fn read_all(mut r: impl Read) -> String {
    let mut s = String::new();
    let _ = r.read_to_string(&mut s);
    s
}

#[test]
fn hostile_load() {
    let only = std::env::var("NATIVE_HOSTILE_LOAD_ONLY").unwrap_or_default();
    let mut table = String::from("# hostile-load suite (tests/hostile_load)\n\n");
    let mut failed = Vec::new();
    let started = Instant::now();
    for case in cases::ALL.iter().filter(|c| c.name.contains(&only)) {
        let t = Instant::now();
        let mut ctx = Ctx {
            dir: tempfile::tempdir().unwrap(),
            servers: Vec::new(),
        };
        let outcome =
            std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (case.run)(&mut ctx)))
                .unwrap_or_else(|p| {
                    Err(p
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "panicked".into()))
                });
        drop(ctx);
        let verdict = if outcome.is_ok() { "pass" } else { "FAIL" };
        table.push_str(&format!(
            "## {verdict} {} ({:.1} s)\n{}\n",
            case.name,
            t.elapsed().as_secs_f64(),
            case.what
        ));
        match outcome {
            Ok(figures) => {
                for (k, v) in figures {
                    table.push_str(&format!("- {k}: {v}\n"));
                }
            }
            Err(e) => {
                table.push_str(&format!("- failed: {e}\n"));
                failed.push(case.name);
            }
        }
        table.push('\n');
        eprintln!("hostile_load: {verdict} {}", case.name);
    }
    table.push_str(&format!(
        "{} cases in {:.0} s\n",
        cases::ALL.iter().filter(|c| c.name.contains(&only)).count(),
        started.elapsed().as_secs_f64()
    ));
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/hostile-load.txt");
    let _ = std::fs::write(&out, &table);
    println!("{table}");
    assert!(failed.is_empty(), "failed: {failed:?}\n\n{table}");
}
