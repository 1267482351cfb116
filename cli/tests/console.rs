//! The operator's console end to end: `native serve` on a project with barriers (one with a
//! member named like markup), a batch job, a rendezvous barrier, a timer, a dead letter and 2 500
//! barriers of another tenant; `native console --aws` on a deployment in the emulator. Each
//! test checks access and escaping over plain HTTP, then runs the browser scenario of
//! `tests/browser/console.py` in headless Chromium (Playwright), which acts as an operator.
//!
//! The browser is installed by the test command (`tests/browser/setup.sh`, called by
//! `tests/run.sh`), which sets NATIVE_TEST_BROWSER_PYTHON to its Python. Screenshots go to
//! `target/console-shots/`, or to `docs/console/` with NATIVE_UPDATE_SCREENSHOTS=1 (how the
//! guide's pictures are made).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use native_core::barrier::{Barriers, CreateSpec, Outcome};
use native_core::ports::{QueueKind, WorkMessage};
use native_core::rendezvous::Unlimited;
use native_tests::serve::Server;
use native_tests::{aws_endpoint, write_tenant, DEPLOYMENT};
use serde_json::json;

use crate::support::{native_bin, ok as native, root};

/// The Python with Playwright that the test command set up, or why there is none.
fn browser_python() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("NATIVE_TEST_BROWSER_PYTHON").filter(|p| !p.is_empty()) {
        return Some(PathBuf::from(p));
    }
    if std::env::var("NATIVE_SKIP_BROWSER").as_deref() == Ok("1") {
        eprintln!("NATIVE_SKIP_BROWSER=1: the browser part of the console tests is skipped");
        return None;
    }
    panic!(
        "NATIVE_TEST_BROWSER_PYTHON is not set. The console's browser tests need Chromium and \
         Playwright: run tests/run.sh (it installs both), or `export \
         NATIVE_TEST_BROWSER_PYTHON=$(bash tests/browser/setup.sh)`. To skip the browser part on \
         purpose, set NATIVE_SKIP_BROWSER=1."
    );
}

/// Runs a scenario of tests/browser/console.py against `url`; fails the test with its output.
/// Returns whether it ran (not when the browser part is skipped on purpose).
fn browse(scenario: &str, url: &str) -> bool {
    let Some(python) = browser_python() else {
        return false;
    };
    let shots = if std::env::var("NATIVE_UPDATE_SCREENSHOTS").as_deref() == Ok("1") {
        root().join("docs/console")
    } else {
        root().join("target/console-shots")
    };
    let out = Command::new(python)
        .arg(root().join("tests/browser/console.py"))
        .args([scenario, "--url", url, "--shots"])
        .arg(&shots)
        .stdin(Stdio::null())
        .output()
        .expect("the browser test's Python");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "browser scenario {scenario}:\n{text}");
    eprintln!("{}", text.trim_end());
    true
}

/// One HTTP/1.1 answer.
#[derive(Debug)]
struct Answer {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Answer {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// One request over a fresh connection.
fn http(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> Answer {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut resp = Vec::new();
    let _ = s.read_to_end(&mut resp);
    let text = String::from_utf8_lossy(&resp).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.lines();
    let status = lines
        .next()
        .and_then(|l| l.split(' ').nth(1))
        .and_then(|c| c.parse().ok())
        .unwrap_or_else(|| panic!("not an HTTP answer: {text:?}"));
    let headers = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Answer {
        status,
        headers,
        body: body.to_string(),
    }
}

/// `http://ADDR/console/?token=T` split into the address and the token.
fn split_url(url: &str) -> (String, String) {
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, query) = rest.split_once("/console/?token=").unwrap();
    (addr.to_string(), query.to_string())
}

/// Checks the console's access rules and escaping over plain HTTP; returns the cookie header.
fn check_access(addr: &str, token: &str, api_key: Option<&str>) -> String {
    // Without the token: 401, on pages and actions alike.
    for path in [
        "/console/",
        "/console/tenants/acme/barriers",
        "/console/nope",
    ] {
        let a = http(addr, "GET", path, &[], "");
        assert_eq!(a.status, 401, "{path}: {a:?}");
        assert!(a.body.contains("Not signed in"), "{}", a.body);
    }
    let a = http(
        addr,
        "POST",
        "/console/tenants/acme/dlq/redrive",
        &[],
        "all=1",
    );
    assert_eq!(a.status, 401);
    // A wrong token, and a tenant's API key in either place, open nothing.
    assert_eq!(
        http(addr, "GET", "/console/?token=0000", &[], "").status,
        401
    );
    if let Some(key) = api_key {
        let bearer = format!("Bearer {key}");
        let a = http(addr, "GET", "/console/", &[("Authorization", &bearer)], "");
        assert_eq!(a.status, 401, "an API key opened the console");
        let a = http(addr, "GET", &format!("/console/?token={key}"), &[], "");
        assert_eq!(a.status, 401, "an API key as token opened the console");
        let cookie = format!("native_console={key}");
        assert_eq!(
            http(addr, "GET", "/console/", &[("Cookie", &cookie)], "").status,
            401
        );
    }
    // The token: a cookie, HttpOnly and SameSite=Strict, and the same page without it.
    let a = http(
        addr,
        "GET",
        &format!("/console/tenants/acme/barriers?state=open&token={token}"),
        &[],
        "",
    );
    assert_eq!(a.status, 303, "{a:?}");
    assert_eq!(
        a.header("location"),
        Some("/console/tenants/acme/barriers?state=open")
    );
    let set = a.header("set-cookie").unwrap();
    assert!(
        set.contains("HttpOnly") && set.contains("SameSite=Strict"),
        "{set}"
    );
    let cookie = format!("native_console={token}");
    let page = http(
        addr,
        "GET",
        "/console/tenants/acme/barriers/order-7",
        &[("Cookie", &cookie)],
        "",
    );
    assert_eq!(page.status, 200, "{}", page.body);
    let csp = page.header("content-security-policy").unwrap();
    assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
    assert_eq!(page.header("referrer-policy"), Some("no-referrer"));
    // The member named like markup is text: escaped in the cell and in the form's field.
    assert!(
        page.body
            .contains("&lt;script&gt;alert(1)&lt;/script&gt;.xml"),
        "{}",
        page.body
    );
    assert!(!page.body.contains("<script>alert"), "{}", page.body);
    // An action without the page's CSRF token is refused, and changes nothing.
    let a = http(
        addr,
        "POST",
        "/console/tenants/acme/barriers/order-7/ack",
        &[
            ("Cookie", &cookie),
            ("Content-Type", "application/x-www-form-urlencoded"),
        ],
        "member=a.xml&outcome=ok&csrf=forged",
    );
    assert_eq!(a.status, 403, "{a:?}");
    let page = http(
        addr,
        "GET",
        "/console/tenants/acme/barriers/order-7?members=pending",
        &[("Cookie", &cookie)],
        "",
    );
    assert_eq!(page.body.matches("data-state=\"pending\"").count(), 3);
    cookie
}

const SETUP: &str = r#"
function on_invoke(ctx, ev)
  native.barrier.create({ id = "order-7", members = { "a.xml", "<script>alert(1)</script>.xml", "c.xml" },
    continue_with = "finalize", state = { ref = "order-7" }, deadline_s = 3600 })
  native.barrier.create({ id = "<img src=x onerror=alert(5)>/?#&\"'", members = { "m" } })
  native.barrier.create({ id = "order-6", members = { "x.xml", "y.xml" }, continue_with = "finalize" })
  native.barrier.ack("order-6", "x.xml", { ok = true, result = { pages = 3 } })
  native.barrier.ack("order-6", "y.xml", { ok = false, error = "schema violation" })
  native.rendezvous.create({ name = "phase_1", namespace = "default", expected_processes = 3,
    delete_inactive_after_seconds = 3600, description = "End of the map phase" })
  native.rendezvous.arrive({ name = "phase_1", process_id = "shard-0", expected_generation = 1, metadata = { host = "worker-a" } })
  native.rendezvous.arrive({ name = "phase_1", process_id = "shard-1", expected_generation = 1,
    metadata = { note = "<img src=x onerror=alert(2)>" } })
  native.timer.at({ in_s = 3600 }, "wake", { n = 1 })
  local job = native.batch.new({ id = "nightly-1", stale_after_s = 3600 })
  job:query("totals", "totals", {})
  job:continue_with("settled")
  job:submit()
  return { ok = true }
end
"#;
const FINALIZE: &str = r#"
function on_queue(ctx, ev)
  local b = native.barrier.hydrate(ev)
  if b then native.log("info", "finalized", { barrier = ev.barrier, failed = b.failed }) end
end
"#;
const ROUTER: &str = r#"
function on_route(ctx, ev)
  local routed = native.batch.route(ev)
  if routed then return routed.script and { script = routed.script, event = routed.event } or "wake" end
  return "wake"
end
"#;
const SETTLED: &str = r#"
function on_queue(ctx, ev)
  local job = native.batch.hydrate(ev)
  local n = 0
  if job then for _ in job:rows("totals") do n += 1 end end
  native.log("info", "settled", { rows = n })
end
"#;
const WAKE: &str = "function on_queue(ctx, ev) native.log('info', 'awake') end";
const REDRIVEN: &str = r#"
function on_queue(ctx, ev)
  if not native.db.get("ops", "fixed") then
    error("<img src=x onerror=\"document.title='pwned'\">boom")
  end
  native.log("info", "the dead letter ran", { n = ev.n, note = "<i>logged markup</i>" })
end
"#;
const FIX: &str = r#"function on_invoke(ctx, ev) native.db.put("ops", "fixed", true) end"#;

/// The hostile error a dead letter carries.
const DEAD_ERROR: &str = "<img src=x onerror=\"document.title='pwned'\">boom";

#[test]
fn console_on_native_serve_acts_on_barriers_and_dead_letters_in_a_browser() {
    // GIVEN a project: acme with a barrier with pending members (one named like markup), a
    // complete one, a rendezvous barrier, a timer, a batch job the partner answered, and a dead
    // letter; bulk with 2 500 barriers, every third complete
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(
        p,
        "acme",
        r#"{ "queue": true, "batch": true, "router": "router" }"#,
        &[
            ("setup", SETUP),
            ("finalize", FINALIZE),
            ("router", ROUTER),
            ("settled", SETTLED),
            ("wake", WAKE),
            ("redriven", REDRIVEN),
            ("fix", FIX),
        ],
    );
    write_tenant(p, "bulk", "{}", &[("wake", WAKE)]);
    native(p, &["invoke", "acme", "setup"]);
    let fixtures = p.join("fixtures");
    std::fs::create_dir_all(&fixtures).unwrap();
    std::fs::write(
        fixtures.join("totals.ndjson"),
        "{\"day\":1,\"n\":3}\n{\"day\":2,\"n\":5}\n{\"day\":3,\"n\":8}\n",
    )
    .unwrap();
    native(
        p,
        &["partner", "acme", "--fixtures", fixtures.to_str().unwrap()],
    );
    // A message whose script fails five times is a dead letter; then its cause is fixed.
    let sent = native_tests::cli::run(
        &native_bin(),
        p,
        &["send", "acme", "redriven", r#"{"n":1}"#],
    );
    assert_eq!(sent.status.code(), Some(1));
    for _ in 0..4 {
        native(p, &["clock", "advance", "6m"]);
        native_tests::cli::run(&native_bin(), p, &["drain"]);
    }
    let dead = native_tests::cli::run(&native_bin(), p, &["dlq", "acme"]);
    assert!(
        String::from_utf8_lossy(&dead.stderr).contains("1 dead letter(s)"),
        "{dead:?}"
    );
    native(p, &["invoke", "acme", "fix"]);
    let key = native(p, &["keys", "create", "acme"])
        .lines()
        .next()
        .unwrap()
        .to_string();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let project = native_core::local::Project::open(p).unwrap();
        let b = project.backend.backends();
        let bulk = Barriers {
            kv: b.kv.as_ref(),
            queue: b.queue.as_ref(),
            tenant: "bulk",
            queue_enabled: false,
            budget: &Unlimited,
        };
        for i in 0..2500 {
            let id = format!("batch-{i:05}");
            bulk.create(CreateSpec {
                id: Some(id.clone()),
                members: vec!["part-1".into()],
                ..Default::default()
            })
            .await
            .unwrap();
            if i % 3 == 0 {
                let ok = Outcome {
                    ok: true,
                    error: None,
                    result: None,
                };
                bulk.ack(&id, "part-1", ok).await.unwrap();
            }
        }
    });
    // AND native serve, which prints the console's URL with its token
    let srv = Server::start(&native_bin(), p, false);
    let (addr, token) = split_url(&srv.console);
    assert_eq!(addr, srv.addr);
    assert_eq!(
        std::fs::read_to_string(p.join(".native/console-token")).unwrap(),
        token,
        "the printed token is the one kept in .native/"
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(p.join(".native/console-token"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    // THEN over HTTP: only the token opens it, tenants' text is escaped, actions need CSRF
    check_access(&addr, &token, Some(&key));
    // AND in a browser, an operator finds the open barrier, acks its members, sees it complete
    // and its continuation run, redrives the dead letter and sees it run, reads the job, the
    // rendezvous barrier and the timer, and pages through 2 500 barriers
    let browsed = browse("local", &srv.console);
    // AND no page shows anything a tenant wrote as markup: every one of them, over HTTP
    let hostile_id = "<img src=x onerror=alert(5)>/?#&\"'";
    let encoded: String = hostile_id
        .bytes()
        .map(|b| match b {
            b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect();
    let cookie = format!("native_console={token}");
    let pages = [
        "/console/".to_string(),
        "/console/dlq".into(),
        "/console/tenants/acme".into(),
        "/console/tenants/acme/barriers".into(),
        "/console/tenants/acme/barriers/order-7".into(),
        "/console/tenants/acme/barriers/order-6".into(),
        format!("/console/tenants/acme/barriers/{encoded}"),
        "/console/tenants/acme/jobs".into(),
        "/console/tenants/acme/jobs/nightly-1?check=1".into(),
        "/console/tenants/acme/rendezvous".into(),
        "/console/tenants/acme/rendezvous/default".into(),
        "/console/tenants/acme/rendezvous/default/phase_1".into(),
        "/console/tenants/acme/timers".into(),
        "/console/tenants/acme/dlq".into(),
        "/console/tenants/acme/invocations".into(),
    ];
    let mut seen_escaped = 0;
    for path in &pages {
        let a = http(&addr, "GET", path, &[("Cookie", &cookie)], "");
        assert_eq!(a.status, 200, "{path}: {}", a.body);
        for raw in ["<img", "<script>alert", "<b>rejected", "<i>logged"] {
            assert!(
                !a.body.contains(raw),
                "{path} shows {raw:?} as markup:\n{}",
                a.body
            );
        }
        seen_escaped += a.body.matches("&lt;img src=x onerror=").count();
    }
    assert!(
        seen_escaped >= 4,
        "the hostile texts are on the pages, escaped"
    );
    // AND the store agrees with what the pages showed (the browser's acks and redrive)
    if !browsed {
        return;
    }
    let status = native(p, &["barrier", "status", "acme", "order-7"]);
    let status: serde_json::Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["pending"], 0, "{status}");
    assert_eq!(status["failed"], 1, "{status}");
    assert_eq!(status["dispatched"], true, "{status}");
}

/// `native console --aws` with `env` (and the emulator's endpoint and keys), on a free port.
fn console_aws(endpoint: &str, env: &[(String, String)], extra: &[&str]) -> (Child, String) {
    let mut cmd = Command::new(native_bin());
    cmd.args(["console", "--aws", "--listen", "127.0.0.1:0"])
        .args(extra)
        .env("AWS_ENDPOINT_URL", endpoint)
        .env("AWS_ACCESS_KEY_ID", "testing")
        .env("AWS_SECRET_ACCESS_KEY", "testing")
        .env("AWS_REGION", "us-east-1")
        .env("AWS_EC2_METADATA_DISABLED", "true")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let mut child = cmd.spawn().unwrap();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    let (mut first, mut second) = (String::new(), String::new());
    out.read_line(&mut first).unwrap();
    out.read_line(&mut second).unwrap();
    assert!(
        first.starts_with("listening on http://127.0.0.1:"),
        "{first:?}"
    );
    let url = second
        .strip_prefix("console: ")
        .unwrap_or_else(|| panic!("{second:?}"))
        .trim()
        .to_string();
    (child, url)
}

/// Stops a process this test started.
struct Stop(Child);

impl Drop for Stop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn console_aws_reads_and_acts_on_a_deployment_in_the_emulator() {
    let Some(endpoint) = aws_endpoint() else {
        return;
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    // GIVEN a deployment in the emulator with tenant acme deployed to its scripts bucket, a
    // barrier with pending members (one named like markup) and a dead letter
    let deployment =
        native_core::config::Deployment::from_json("deployment.json", DEPLOYMENT).unwrap();
    let stack = rt.block_on(native_tests::aws_env::stack(&endpoint, &deployment));
    let c = stack.config.clone();
    rt.block_on(async {
        let b = &stack.backends;
        for (key, body) in [
            ("acme/config.json", r#"{ "queue": true }"#),
            ("acme/scripts/finalize.luau", FINALIZE),
            ("acme/scripts/redriven.luau", REDRIVEN),
        ] {
            b.objects
                .put(
                    &c.scripts_bucket,
                    key,
                    bytes::Bytes::from(body.to_string()),
                    native_core::ports::PutMode::Overwrite,
                )
                .await
                .unwrap();
        }
        let barriers = Barriers {
            kv: b.kv.as_ref(),
            queue: b.queue.as_ref(),
            tenant: "acme",
            queue_enabled: true,
            budget: &Unlimited,
        };
        barriers
            .create(CreateSpec {
                id: Some("order-7".into()),
                members: vec![
                    "a.xml".into(),
                    "<script>alert(1)</script>.xml".into(),
                    "c.xml".into(),
                ],
                continue_with: Some("finalize".into()),
                ..Default::default()
            })
            .await
            .unwrap();
        let body = serde_json::to_string(&WorkMessage {
            tenant: "acme".into(),
            script: "redriven".into(),
            event: json!({ "n": 1 }),
            depth: 0,
            width: None,
            chain: None,
            once: None,
            slot: None,
        })
        .unwrap();
        b.queue
            .dead_letter_now(QueueKind::Work, &body, DEAD_ERROR)
            .await
            .unwrap();
    });
    let mut env = vec![
        ("NATIVE_TABLE".to_string(), c.table.clone()),
        ("NATIVE_EVENTS_QUEUE_URL".into(), c.events_queue_url.clone()),
        ("NATIVE_WORK_QUEUE_URL".into(), c.work_queue_url.clone()),
        ("NATIVE_SCRIPTS_BUCKET".into(), c.scripts_bucket.clone()),
        (
            "NATIVE_BUCKETS".into(),
            serde_json::to_string(&c.deployment.buckets.map).unwrap(),
        ),
    ];
    if let Some(b) = &c.deployment.batch {
        env.push(("NATIVE_BATCH_BUCKET".into(), b.bucket.clone()));
        env.push(("NATIVE_BATCH_PREFIX".into(), b.prefix.clone()));
    }
    // WHEN the operator runs native console --aws with the functions' variables
    let (child, url) = console_aws(&endpoint, &env, &[]);
    let _stop = Stop(child);
    let (addr, token) = split_url(&url);
    // THEN only the token opens it, tenants' text is escaped, actions need CSRF
    let cookie = check_access(&addr, &token, None);
    let front = http(&addr, "GET", "/console/", &[("Cookie", &cookie)], "");
    assert!(front.body.contains("acme"), "{}", front.body);
    assert!(front.body.contains("AWS"), "{}", front.body);
    // AND a chain's page, which only a local project's processes record, says how to read the
    // chain from the functions' logs instead
    let chain = "4bf92f3577b34da6a3ce929d0e0e4736";
    let page = http(
        &addr,
        "GET",
        &format!("/console/tenants/acme/chains/{chain}"),
        &[("Cookie", &cookie)],
        "",
    );
    assert_eq!(page.status, 404, "{}", page.body);
    assert!(
        page.body.contains("CloudWatch Logs Insights"),
        "{}",
        page.body
    );
    assert!(
        page.body
            .contains(&format!("filter trace = &quot;{chain}&quot;"))
            || page.body.contains(&format!("filter trace = \"{chain}\"")),
        "{}",
        page.body
    );
    // AND in a browser the operator acks a member and redrives the dead letter
    let browsed = browse("aws", &url);
    // AND the table and the queues agree: one member acked, the message is back on the work
    // queue (the deployment's functions run it there)
    rt.block_on(async {
        let b = &stack.backends;
        let barriers = Barriers {
            kv: b.kv.as_ref(),
            queue: b.queue.as_ref(),
            tenant: "acme",
            queue_enabled: true,
            budget: &Unlimited,
        };
        if browsed {
            let st = barriers.status("order-7", None, 10).await.unwrap().unwrap();
            assert_eq!(st.pending, 2, "{st:?}");
            let back = b.queue.receive(QueueKind::Work, 10, 30).await.unwrap();
            assert!(
                back.iter().any(|m| m.body.contains("redriven")),
                "the redriven message is on the work queue: {back:?}"
            );
        }
    });
    // AND with --function, the deployment is the one that function is configured for
    let function = format!("console-{}", std::process::id());
    let vars: serde_json::Map<String, serde_json::Value> =
        env.iter().map(|(k, v)| (k.clone(), json!(v))).collect();
    let py = format!(
        "import boto3, io, json, os, zipfile\n\
         kw = dict(endpoint_url='{endpoint}', region_name='us-east-1', aws_access_key_id='testing', aws_secret_access_key='testing')\n\
         role = boto3.client('iam', **kw).create_role(RoleName='{function}', AssumeRolePolicyDocument='{{}}')['Role']['Arn']\n\
         z = io.BytesIO(); w = zipfile.ZipFile(z, 'w'); w.writestr('bootstrap', 'x'); w.close()\n\
         boto3.client('lambda', **kw).create_function(FunctionName='{function}', Runtime='provided.al2023', Role=role, Handler='bootstrap', Code={{'ZipFile': z.getvalue()}}, Environment={{'Variables': json.loads(os.environ['VARS'])}})"
    );
    let o = Command::new("python3")
        .arg("-c")
        .arg(py)
        .env("VARS", serde_json::Value::Object(vars).to_string())
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let (child, url) = console_aws(&endpoint, &[], &["--function", &function]);
    let _stop2 = Stop(child);
    let (addr, token) = split_url(&url);
    let cookie = format!("native_console={token}");
    let page = http(
        &addr,
        "GET",
        "/console/tenants/acme/barriers/order-7",
        &[("Cookie", &cookie)],
        "",
    );
    assert_eq!(page.status, 200, "{}", page.body);
    assert!(page
        .body
        .contains(&format!("as function {function} sees it")));
    assert!(page
        .body
        .contains("&lt;script&gt;alert(1)&lt;/script&gt;.xml"));
}

#[test]
fn runs_are_recorded_with_their_chain_their_log_lines_and_their_errors() {
    // GIVEN a runtime that records runs, and a script that sends a message, sets a timer due at
    // once and creates a barrier whose continuation runs when its member is acked
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(
        p,
        "acme",
        r#"{ "queue": true }"#,
        &[
            (
                "start",
                r#"function on_invoke(ctx, ev)
                     native.log("info", "starting <b>now</b>")
                     native.queue.send("next", { step = 1 })
                     native.timer.at({ in_s = 0 }, "next", { step = 2 })
                     native.barrier.create({ id = "b", members = { "m" }, continue_with = "next" })
                     native.barrier.ack("b", "m")
                   end"#,
            ),
            (
                "next",
                r#"function on_queue(ctx, ev) native.log("info", "step", { depth = ctx.depth }) end"#,
            ),
            ("boom", "function on_invoke(ctx, ev) error('no way') end"),
        ],
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let project = native_core::local::Project::open(p).unwrap();
        let recent = std::sync::Arc::new(native_core::observe::recent::Recent::new());
        let runtime = std::sync::Arc::new(project.runtime().with_recent(recent.clone()));
        // WHEN it is invoked and the queues are drained
        runtime.invoke("acme", "start", json!({})).await.unwrap();
        native_core::local::drain(&runtime, Default::default())
            .await
            .unwrap();
        assert!(runtime.invoke("acme", "boom", json!({})).await.is_err());
        // THEN every run is recorded, newest first
        let all = native_core::observe::recent::RunFilter::default();
        let (runs, _) = recent.runs("acme", &all, None, 100).unwrap();
        let scripts: Vec<&str> = runs.iter().map(|r| r.script.as_str()).collect();
        assert_eq!(
            scripts,
            ["boom", "next", "next", "next", "start"],
            "{runs:?}"
        );
        let start = runs.last().unwrap();
        assert_eq!((start.trigger, start.depth), ("invoke", 0));
        assert!(
            start.logs[0].contains("starting <b>now</b>"),
            "{:?}",
            start.logs
        );
        // AND the message, the timer and the barrier's continuation are all of its chain, one
        // deeper
        for r in &runs[1..4] {
            assert_eq!(r.chain, start.chain, "{r:?}");
            assert_eq!((r.trigger, r.depth, r.error.as_deref()), ("queue", 1, None));
            assert!(r.logs[0].contains("\"depth\":1"), "{:?}", r.logs);
        }
        // AND a failed run carries its error and starts a chain of its own
        let boom = &runs[0];
        assert!(
            boom.error.as_deref().unwrap().contains("no way"),
            "{boom:?}"
        );
        assert_ne!(boom.chain, start.chain);
        let chain = native_core::observe::recent::RunFilter {
            chain: Some(start.chain.clone()),
            ..Default::default()
        };
        assert_eq!(recent.runs("acme", &chain, None, 100).unwrap().0.len(), 4);
        assert_eq!(
            recent
                .last_hour("acme", native_core::ports::now_ms())
                .unwrap(),
            (5, 1)
        );
    });
}

#[test]
fn the_served_console_shows_the_runs_of_the_verbs_on_the_project_too() {
    // GIVEN a project served by `native serve`
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    std::fs::write(p.join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(
        p,
        "acme",
        r#"{ "queue": true }"#,
        &[
            (
                "by_verb",
                r#"function on_invoke(ctx, ev) native.log("info", "from the verb") return 1 end"#,
            ),
            (
                "by_server",
                r#"function on_queue(ctx, ev) native.log("info", "from the server") end"#,
            ),
        ],
    );
    let srv = Server::start(&native_bin(), p, false);
    let (addr, token) = split_url(&srv.console);
    let cookie = format!("native_console={token}");
    // WHEN a verb on the same project invokes a script while it serves, and the server runs a
    // message that another verb sent
    native(p, &["invoke", "acme", "by_verb"]);
    native(p, &["send", "acme", "by_server"]);
    // THEN the console's Invocations page lists both runs, whichever process ran them
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let page = loop {
        let a = http(
            &addr,
            "GET",
            "/console/tenants/acme/invocations",
            &[("Cookie", &cookie)],
            "",
        );
        assert_eq!(a.status, 200, "{}", a.body);
        if a.body.contains(">by_server<") || std::time::Instant::now() > deadline {
            break a.body;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(page.contains(">by_server<"), "{page}");
    assert!(page.contains(">by_verb<"), "{page}");
    assert!(
        page.contains("2 invocations in the last hour, 0 failed"),
        "{page}"
    );
    assert!(
        page.contains("with the runs of the project&#39;s other native processes")
            || page.contains("with the runs of the project's other native processes"),
        "{page}"
    );
    // AND a run's page shows what the verb's run logged
    let seq = page
        .split("/invocations/")
        .filter_map(|rest| rest.split('"').next())
        .filter_map(|n| n.parse::<u64>().ok())
        .min()
        .expect("a link to a run");
    let one = http(
        &addr,
        "GET",
        &format!("/console/tenants/acme/invocations/{seq}"),
        &[("Cookie", &cookie)],
        "",
    );
    assert_eq!(one.status, 200, "{}", one.body);
    assert!(one.body.contains("from the verb"), "{}", one.body);
}
