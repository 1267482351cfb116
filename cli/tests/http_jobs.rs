//! `job:http` through the `native` binary, against a partner API played by a small HTTP server
//! on 127.0.0.1 in the test: the seed's example through `native invoke` + `native drain --wait`
//! and through `native serve`, and SIGTERM to `native serve` in the middle of a request.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use native_tests::write_tenant;
use serde_json::{json, Value};

use crate::support::native_bin;

const SECRET: &str = "sk_test_cli_0123456789";

/// `native --project DIR ARGS` with `stdin`; asserts success and returns stdout.
fn native_in(project: &Path, args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(native_bin())
        .arg("--project")
        .arg(project)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "native {args:?}: {err}");
    assert!(
        !err.contains(SECRET),
        "native {args:?} printed the secret: {err}"
    );
    String::from_utf8(o.stdout).unwrap()
}

fn native(project: &Path, args: &[&str]) -> String {
    native_in(project, args, "")
}

/// The partner API: `/charges` answers 201 echoing the authorization header, after `delay`.
struct Api {
    port: u16,
    hits: Arc<AtomicUsize>,
    auth: Arc<Mutex<Option<String>>>,
}

fn api(delay: Duration) -> Api {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let hits = Arc::new(AtomicUsize::new(0));
    let auth = Arc::new(Mutex::new(None));
    let (h, a) = (hits.clone(), auth.clone());
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let Ok(s) = s else { return };
            let (h, a) = (h.clone(), a.clone());
            std::thread::spawn(move || answer(s, delay, h, a));
        }
    });
    Api { port, hits, auth }
}

fn answer(s: TcpStream, delay: Duration, hits: Arc<AtomicUsize>, auth: Arc<Mutex<Option<String>>>) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut len = 0usize;
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let lower = line.to_ascii_lowercase();
        if let Some(v) = lower.strip_prefix("content-length:") {
            len = v.trim().parse().unwrap_or(0);
        }
        if let Some(v) = line
            .strip_prefix("authorization:")
            .or(line.strip_prefix("Authorization:"))
        {
            *auth.lock().unwrap() = Some(v.trim().to_string());
        }
        if line == "\r\n" {
            break;
        }
    }
    let mut body = vec![0u8; len];
    let _ = r.read_exact(&mut body);
    hits.fetch_add(1, Ordering::SeqCst);
    std::thread::sleep(delay);
    let seen = auth.lock().unwrap().clone();
    let out = json!({ "id": "ch_1", "auth": seen }).to_string();
    let mut s = s;
    let _ = write!(
        s,
        "HTTP/1.1 201 Created\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{out}",
        out.len()
    );
}

const ROUTER: &str = r#"local function on_route(_ctx, event)
  local routed = native.batch.route(event)
  if routed then
    return routed.script and { script = routed.script, event = routed.event } or "gone"
  end
  return nil
end
return { on_route = on_route }"#;

/// The seed's scripts, the continuation keeping what it saw in Out.
const CHARGE: &str = r#"function on_invoke(ctx, ev)
  local job = native.batch.new()
  job:http("charge", {
    method = "POST",
    url = native.config.api_base .. "charges",
    headers = { authorization = "Bearer {{vault:stripe.key}}" },
    body = native.json.encode(ev.order),
    vault = { "header" },
  })
  job:state({ order = ev.order.id })
  job:continue_with("charged")
  return job:submit()
end"#;

const CHARGED: &str = r#"function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev, { allow_failure = true })
  if not job then return end
  if not job.ok then
    native.bucket.Out.put("charged/" .. job.state.order .. ".json", native.json.encode({ error = job.error }))
    return { delete = job:keys() }
  end
  local r = job.results.charge
  local body = native.json.decode(job:body("charge"))
  native.bucket.Out.put("charged/" .. job.state.order .. ".json", native.json.encode({ status = r.status, body = body }))
  return { delete = job:keys() }
end"#;

fn project(api: &Api) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("deployment.json"),
        r#"{ "buckets": { "map": { "Out": "shop-out" } },
             "batch": { "bucket": "shop-batch", "prefix": "tenants/" },
             "http": { "allow_private_networks": true } }"#,
    )
    .unwrap();
    let config = json!({
        "queue": true, "batch": true,
        "http": { "allow": [format!("127.0.0.1:{}", api.port)] },
        "vault": ["stripe.key"],
        "config": { "api_base": format!("http://127.0.0.1:{}/", api.port) },
    });
    write_tenant(
        dir.path(),
        "shop",
        &config.to_string(),
        &[
            ("router", ROUTER),
            ("gone", "function on_queue() end"),
            ("charge", CHARGE),
            ("charged", CHARGED),
        ],
    );
    native_in(
        dir.path(),
        &["vault", "set", "shop", "stripe.key"],
        &format!("{SECRET}\n"),
    );
    dir
}

fn charged(p: &Path, order: &str) -> Option<Value> {
    let o = Command::new(native_bin())
        .arg("--project")
        .arg(p)
        .args(["get", "shop", "Out", &format!("charged/{order}.json")])
        .output()
        .unwrap();
    o.status
        .success()
        .then(|| serde_json::from_slice(&o.stdout).unwrap())
}

#[test]
fn the_seed_example_runs_through_native_invoke_and_native_drain_wait() {
    // GIVEN the seed's scripts, a partner API and the key set with `native vault set`
    let api = api(Duration::from_millis(300));
    let dir = project(&api);
    let p = dir.path();
    assert_eq!(native(p, &["vault", "list", "shop"]), "stripe.key\n");
    // WHEN charge is invoked without draining, then the queues are drained with --wait
    let job = native(
        p,
        &[
            "invoke",
            "shop",
            "charge",
            r#"{"order":{"id":"o1","amount":5}}"#,
            "--no-drain",
        ],
    );
    assert!(job.trim().starts_with('"'), "{job}");
    assert_eq!(
        api.hits.load(Ordering::SeqCst),
        1,
        "invoke performed the request"
    );
    assert_eq!(
        charged(p, "o1"),
        None,
        "the continuation waits for the drain"
    );
    native(p, &["drain", "--wait"]);
    // THEN the partner got the secret and the continuation its answer, redacted
    assert_eq!(
        api.auth.lock().unwrap().as_deref(),
        Some(format!("Bearer {SECRET}").as_str())
    );
    let seen = charged(p, "o1").unwrap();
    assert_eq!(seen["status"], 201);
    assert_eq!(seen["body"]["auth"], "Bearer [redacted:stripe.key]");
}

/// A running `native serve`.
struct Serve {
    child: Child,
    addr: String,
}

impl Serve {
    fn start(p: &Path) -> Self {
        let mut child = Command::new(native_bin())
            .arg("--project")
            .arg(p)
            .args(["serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let addr = first
            .trim()
            .strip_prefix("listening on http://")
            .unwrap()
            .to_string();
        Serve { child, addr }
    }

    fn invoke(&self, key: &str, script: &str, body: &str) -> String {
        let mut s = TcpStream::connect(&self.addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        write!(
            s,
            "POST /v1/invoke/{script} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer {key}\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut resp = String::new();
        let _ = s.read_to_string(&mut resp);
        resp
    }

    /// SIGTERM, then the exit code and stderr.
    fn terminate(mut self) -> (i32, String) {
        let pid = self.child.id().to_string();
        assert!(Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .unwrap()
            .success());
        let status = self.child.wait().unwrap();
        let mut err = String::new();
        self.child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        (status.code().unwrap_or(-1), err)
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn wait_for(what: &str, mut f: impl FnMut() -> bool) {
    let t = Instant::now();
    while !f() {
        assert!(
            t.elapsed() < Duration::from_secs(20),
            "waited 20 s for {what}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn native_serve_performs_the_job_and_runs_the_continuation_by_itself() {
    // GIVEN the seed's scripts under `native serve`
    let api = api(Duration::from_millis(200));
    let dir = project(&api);
    let p = dir.path();
    let key = native(p, &["keys", "create", "shop"])
        .lines()
        .next()
        .unwrap()
        .to_string();
    let srv = Serve::start(p);
    // WHEN charge is invoked over HTTP
    let resp = srv.invoke(&key, "charge", r#"{"order":{"id":"o2","amount":9}}"#);
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    // THEN the server performs the request and runs charged with the answer
    wait_for("charged/o2.json", || charged(p, "o2").is_some());
    let seen = charged(p, "o2").unwrap();
    assert_eq!(seen["status"], 201);
    assert_eq!(seen["body"]["auth"], "Bearer [redacted:stripe.key]");
    let (code, err) = srv.terminate();
    assert_eq!(code, 0, "{err}");
    assert!(!err.contains(SECRET), "{err}");
}

#[test]
fn sigterm_mid_request_answers_the_job_server_stopping() {
    // GIVEN `native serve` with a charge in flight to an API that takes a minute
    let api = api(Duration::from_secs(60));
    let dir = project(&api);
    let p = dir.path();
    let key = native(p, &["keys", "create", "shop"])
        .lines()
        .next()
        .unwrap()
        .to_string();
    let srv = Serve::start(p);
    let resp = srv.invoke(&key, "charge", r#"{"order":{"id":"o3","amount":1}}"#);
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    wait_for("the request to reach the API", || {
        api.hits.load(Ordering::SeqCst) == 1
    });
    // WHEN the server gets SIGTERM
    let t = Instant::now();
    let (code, err) = srv.terminate();
    // THEN it exits at once, having failed the job with "server stopping"
    assert_eq!(code, 0, "{err}");
    assert!(t.elapsed() < Duration::from_secs(10), "{:?}", t.elapsed());
    native(p, &["drain", "--wait"]);
    let seen = charged(p, "o3").unwrap();
    assert_eq!(seen["error"], "charge: server stopping");
}

/// `native --project DIR ARGS` against the emulator, with `stdin`; asserts success.
fn native_aws(endpoint: &str, project: &Path, args: &[&str], stdin: &str) -> String {
    let mut child = Command::new(native_bin())
        .arg("--project")
        .arg(project)
        .args(args)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    let o = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(o.status.success(), "native {args:?}: {err}");
    assert!(!err.contains(SECRET), "{err}");
    String::from_utf8(o.stdout).unwrap()
}

#[test]
fn the_vault_verbs_work_on_secrets_manager_with_aws() {
    let endpoint = match std::env::var("NATIVE_TEST_AWS_ENDPOINT") {
        Ok(e) => e,
        Err(_) if std::env::var("NATIVE_SKIP_AWS").as_deref() == Ok("1") => return,
        Err(_) => panic!("NATIVE_TEST_AWS_ENDPOINT is not set: run tests/run.sh, which starts moto (or set NATIVE_SKIP_AWS=1)"),
    };
    // GIVEN a prefix of its own in the emulator's Secrets Manager
    let dir = tempfile::tempdir().unwrap();
    let prefix = format!("cli{}/", std::process::id());
    let p = dir.path();
    // WHEN a secret is set from stdin, listed, read by Secrets Manager's own API, and deleted
    native_aws(
        &endpoint,
        p,
        &["vault", "set", "acme", "stripe.key", "--aws", &prefix],
        &format!("{SECRET}\n"),
    );
    let listed = native_aws(
        &endpoint,
        p,
        &["vault", "list", "acme", "--aws", &prefix],
        "",
    );
    let code = format!(
        "import boto3\nsm = boto3.client('secretsmanager', endpoint_url='{endpoint}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\nprint(sm.get_secret_value(SecretId='{prefix}acme/stripe.key')['SecretString'])"
    );
    let o = Command::new("python3")
        .arg("-c")
        .arg(code)
        .output()
        .expect("python3");
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    native_aws(
        &endpoint,
        p,
        &["vault", "delete", "acme", "stripe.key", "--aws", &prefix],
        "",
    );
    let after = native_aws(
        &endpoint,
        p,
        &["vault", "list", "acme", "--aws", &prefix],
        "",
    );
    // THEN the secret lived at <prefix><tenant>/<name> without its newline, and is gone
    assert_eq!(listed, "stripe.key\n");
    assert_eq!(
        String::from_utf8_lossy(&o.stdout).trim_end_matches('\n'),
        SECRET
    );
    assert_eq!(after, "");
}
