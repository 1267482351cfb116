//! Bad storage states and what `native` says about each (issue 29): an empty, truncated or
//! garbage database, an empty object content, an empty `callback.key`, a read-only folder and a
//! full disk (the last two through a fault layer under the `native` process,
//! `native_crashsim::faultfs`: its file calls under the project fail with EROFS or ENOSPC, as on
//! a read-only mount or a full disk, without root or a tmpfs). Each test prints the message it
//! got.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use native_crashsim::faultfs::Faults;
use native_tests::serve::Server;
use native_tests::{write_tenant, DEPLOYMENT};
use serde_json::{json, Value};

use crate::support::{native_bin, ok, run};

/// The failure of `native ARGS`: its stderr, printed for the record.
fn fails(project: &Path, args: &[&str]) -> String {
    let o = run(project, args);
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(!o.status.success(), "native {args:?} succeeded: {err}");
    eprintln!("native {args:?} says: {err}");
    err
}

const SCRIPTS: &[(&str, &str)] = &[
    (
        "put",
        "function on_invoke(ctx, ev) native.db.put('p', ev.k, { v = ev.k }) return true end",
    ),
    (
        "obj",
        "function on_invoke(ctx, ev) native.bucket.In.put(ev.k, string.rep('x', ev.n or 5)) return true end",
    ),
    (
        "read",
        "function on_invoke(ctx, ev) return #native.bucket.In.get(ev.k) end",
    ),
    ("router", "function on_route(ctx, ev) return 'noted' end"),
    ("noted", "function on_queue(ctx, ev) end"),
];

/// A project in `root` with some state: an item, an object, the callback key.
fn project_in(root: &Path) {
    std::fs::write(root.join("deployment.json"), DEPLOYMENT).unwrap();
    write_tenant(root, "acme", r#"{ "queue": true }"#, SCRIPTS);
    for i in 0..40 {
        ok(
            root,
            &[
                "invoke",
                "acme",
                "put",
                &json!({ "k": format!("k{i}") }).to_string(),
            ],
        );
    }
    ok(root, &["invoke", "acme", "obj", r#"{ "k": "x" }"#]);
    assert!(root.join(".native/callback.key").exists());
}

fn project() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    project_in(dir.path());
    dir
}

fn db(root: &Path) -> PathBuf {
    root.join(".native/native.db")
}

#[test]
fn an_empty_database_beside_the_projects_state_is_refused_not_made_anew() {
    let dir = project();
    let root = dir.path();
    std::fs::write(db(root), "").unwrap();
    let _ = std::fs::remove_file(root.join(".native/native.db-wal"));
    let err = fails(root, &["invoke", "acme", "put", r#"{ "k": "y" }"#]);
    assert!(err.contains(&db(root).display().to_string()), "{err}");
    assert!(
        err.contains("is empty or missing") && err.contains("restore"),
        "{err}"
    );
    assert_eq!(std::fs::metadata(db(root)).unwrap().len(), 0, "made anew");
    let err = fails(root, &["serve", "--listen", "127.0.0.1:0"]);
    assert!(err.contains("is empty or missing"), "{err}");
}

#[test]
fn a_truncated_database_is_named_with_what_to_do() {
    let dir = project();
    let root = dir.path();
    let len = std::fs::metadata(db(root)).unwrap().len();
    assert!(len > 8192, "{len}");
    std::fs::OpenOptions::new()
        .write(true)
        .open(db(root))
        .unwrap()
        .set_len(4096 + 100)
        .unwrap();
    let err = fails(root, &["doctor"]);
    assert!(err.contains(&db(root).display().to_string()), "{err}");
    assert!(err.contains("damaged") && err.contains("backup"), "{err}");
    let err = fails(root, &["serve", "--listen", "127.0.0.1:0"]);
    assert!(err.contains("damaged") && err.contains("backup"), "{err}");
}

#[test]
fn a_garbage_database_is_named_with_what_to_do() {
    let dir = project();
    let root = dir.path();
    let junk: Vec<u8> = (0..16384u32)
        .map(|i| (i.wrapping_mul(2654435761) >> 13) as u8)
        .collect();
    std::fs::write(db(root), junk).unwrap();
    let err = fails(root, &["invoke", "acme", "put", r#"{ "k": "y" }"#]);
    assert!(err.contains(&db(root).display().to_string()), "{err}");
    assert!(
        err.contains("is damaged or truncated") && err.contains("not a database"),
        "{err}"
    );
}

#[test]
fn an_empty_object_content_is_an_error_naming_the_object_never_a_short_read() {
    let dir = project();
    let root = dir.path();
    let blobs = root.join(".native/blobs");
    let sub = std::fs::read_dir(&blobs)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let blob = std::fs::read_dir(sub)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    std::fs::write(&blob, "").unwrap();
    let err = fails(root, &["invoke", "acme", "read", r#"{ "k": "x" }"#]);
    assert!(err.contains("object acme-in/acme/x is damaged"), "{err}");
    assert!(err.contains("has 0 bytes, not 5"), "{err}");
    // A content of the right size but not the bytes it is named by.
    std::fs::write(&blob, "yyyyy").unwrap();
    let err = fails(root, &["invoke", "acme", "read", r#"{ "k": "x" }"#]);
    assert!(err.contains("does not have the sha256"), "{err}");
    let out = run(root, &["doctor", "--deep"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success());
    assert!(
        text.contains("damaged objects: 1") && text.contains("acme-in/acme/x"),
        "{text}"
    );
}

#[test]
fn an_empty_callback_key_is_reported_as_such() {
    let dir = project();
    let root = dir.path();
    std::fs::write(root.join(".native/callback.key"), "").unwrap();
    let err = fails(root, &["invoke", "acme", "put", r#"{ "k": "y" }"#]);
    assert!(err.contains("callback.key is empty"), "{err}");
    assert!(err.contains("delete it to make a new key"), "{err}");
}

#[test]
fn a_read_only_folder_is_named_with_what_to_do() {
    let dir = project();
    let root = dir.path().canonicalize().unwrap();
    // WHEN the project's folder is read-only
    let faults = Faults::new(&root);
    faults.read_only();
    let mut cmd = Command::new(native_bin());
    faults.apply(&mut cmd);
    let o = cmd
        .arg("--project")
        .arg(&root)
        .args(["invoke", "acme", "put", r#"{ "k": "y" }"#])
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    // THEN native says which folder it cannot write and what to do
    let err = String::from_utf8_lossy(&o.stderr).into_owned();
    eprintln!("native invoke in a read-only folder says: {err}");
    assert!(!o.status.success(), "{err}");
    assert!(
        err.contains(&root.join(".native").display().to_string()),
        "{err}"
    );
    assert!(
        err.contains("cannot be written") || err.contains("cannot write"),
        "{err}"
    );
    assert!(err.contains("writable"), "{err}");
    // AND without the fault the same command works
    faults.clear();
    ok(&root, &["invoke", "acme", "put", r#"{ "k": "y" }"#]);
}

fn http(addr: &str, path: &str, key: &str, body: &Value) -> (u16, Value) {
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    let status = resp
        .split(' ')
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let (_, body) = resp.split_once("\r\n\r\n").unwrap_or(("", "null"));
    (status, serde_json::from_str(body).unwrap_or(Value::Null))
}

#[test]
fn a_full_disk_is_507_naming_the_file_and_leaves_no_temporary_file() {
    let dir = project();
    let root = &dir.path().canonicalize().unwrap();
    let key = ok(root, &["keys", "create", "acme"]).trim().to_string();
    let faults = Faults::new(root);
    let server = Server::start_with(&native_bin(), root, false, |cmd| {
        faults.apply(cmd);
    });
    let (status, _) = http(
        &server.addr,
        "/v1/invoke/obj",
        &key,
        &json!({ "k": "a", "n": 10 }),
    );
    assert_eq!(status, 200);
    // WHEN the disk is full
    faults.full();
    // THEN an object put is 507 with the cause and the file
    let (status, body) = http(
        &server.addr,
        "/v1/invoke/obj",
        &key,
        &json!({ "k": "big", "n": 200_000 }),
    );
    eprintln!("object put on a full disk: {status} {body}");
    assert_eq!(status, 507, "{body}");
    let msg = body["message"].as_str().unwrap();
    assert!(msg.contains("no space left on the device"), "{msg}");
    assert!(
        msg.contains(&root.join(".native").display().to_string()),
        "{msg}"
    );
    // and so is an item put, until the database cannot grow
    let mut item = (0, Value::Null);
    for i in 0..2000 {
        item = http(
            &server.addr,
            "/v1/invoke/put",
            &key,
            &json!({ "k": format!("{i:0>400}") }),
        );
        if item.0 != 200 {
            break;
        }
    }
    eprintln!("item put on a full disk: {} {}", item.0, item.1);
    assert_eq!(item.0, 507, "{}", item.1);
    assert!(
        item.1["message"].as_str().unwrap().contains("native.db"),
        "{}",
        item.1
    );
    // and no temporary file is left behind
    let tmp: Vec<_> = std::fs::read_dir(root.join(".native/tmp"))
        .unwrap()
        .collect();
    assert!(tmp.is_empty(), "{tmp:?}");
    // WHEN space comes back THEN writes go through again
    faults.clear();
    let (status, body) = http(
        &server.addr,
        "/v1/invoke/obj",
        &key,
        &json!({ "k": "big", "n": 200_000 }),
    );
    assert_eq!(status, 200, "{body}");
    drop(server);
}

#[test]
fn a_new_project_opened_by_many_processes_at_once_loses_nothing() {
    // Each process makes (or migrates) the database as it opens it: they must not trip over
    // each other's schema changes ("duplicate column name").
    for round in 0..3 {
        // GIVEN a project that has never been opened
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join("deployment.json"), DEPLOYMENT).unwrap();
        write_tenant(root, "acme", r#"{ "queue": true }"#, SCRIPTS);
        // WHEN 10 processes open it at the same moment, each writing an object
        let children: Vec<_> = (0..10)
            .map(|i| {
                Command::new(native_bin())
                    .arg("--project")
                    .arg(root)
                    .args(["invoke", "acme", "obj"])
                    .arg(json!({ "k": format!("k{i}") }).to_string())
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        // THEN every one succeeds, and every object is there
        for (i, c) in children.into_iter().enumerate() {
            let o = c.wait_with_output().unwrap();
            assert!(
                o.status.success(),
                "round {round}, process {i}: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        let want: String = (0..10).map(|i| format!("k{i}\n")).collect();
        assert_eq!(ok(root, &["ls", "acme", "In"]), want);
    }
}
