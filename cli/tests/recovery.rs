//! Messages held by a `native serve` that was killed (`kill -9`) run within seconds of the
//! restart (issue 29): a received message names its owner, whose lock the kernel drops with
//! the process, so the next receive of a live process takes them back at once, instead of after
//! their lease (once a 900 s visibility).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use native_tests::serve::Server;
use native_tests::write_tenant;
use serde_json::{json, Value};

use crate::support::{native_bin, ok as native};

/// An HTTP server on 127.0.0.1 that holds every request unanswered until `answer` is set,
/// then answers each at once; counts the requests it has read.
struct Partner {
    port: u16,
    answer: Arc<AtomicBool>,
    seen: Arc<AtomicUsize>,
}

fn partner() -> Partner {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    let answer = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(AtomicUsize::new(0));
    let (a, s) = (answer.clone(), seen.clone());
    std::thread::spawn(move || {
        for conn in l.incoming().flatten() {
            let (a, s) = (a.clone(), s.clone());
            std::thread::spawn(move || {
                let mut r = BufReader::new(conn.try_clone().unwrap());
                let mut line = String::new();
                // The request head, up to its empty line (the scripts send no body).
                while r.read_line(&mut line).unwrap_or(0) > 0 && line != "\r\n" {
                    line.clear();
                }
                s.fetch_add(1, Ordering::SeqCst);
                while !a.load(Ordering::SeqCst) {
                    std::thread::sleep(Duration::from_millis(20));
                }
                let mut c = conn;
                let _ = c.write_all(
                    b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok",
                );
            });
        }
    });
    Partner { port, answer, seen }
}

fn invoke(addr: &str, key: &str, script: &str, body: &Value) -> Value {
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        s,
        "POST /v1/invoke/{script} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut resp = String::new();
    let _ = s.read_to_string(&mut resp);
    let (_, body) = resp.split_once("\r\n\r\n").unwrap_or(("", "null"));
    serde_json::from_str(body).unwrap_or(Value::Null)
}

#[test]
fn messages_of_a_killed_server_run_within_seconds_of_the_restart() {
    // GIVEN ten queued messages whose handler calls a partner that does not answer yet
    let p = partner();
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    std::fs::write(
        root.join("deployment.json"),
        json!({ "buckets": { "map": { "In": "acme-in" } }, "http": { "allow_private_networks": true } })
            .to_string(),
    )
    .unwrap();
    let config = json!({ "queue": true, "http": { "allow": [format!("127.0.0.1:{}", p.port)] } });
    write_tenant(
        root,
        "acme",
        &config.to_string(),
        &[
            (
                "send",
                "function on_invoke(ctx, ev) for i = 1, 10 do native.queue.send('slow', { n = i, url = ev.url }) end return true end",
            ),
            (
                "slow",
                "function on_queue(ctx, ev) native.http.request({ method = 'GET', url = ev.url, timeout_s = 600 }) native.db.put('done', tostring(ev.n), { ok = true }) end",
            ),
            (
                "count",
                "function on_invoke(ctx, ev) return #native.db.query('done', {}).items end",
            ),
        ],
    );
    let key = native(root, &["keys", "create", "acme"]).trim().to_string();
    let url = format!("http://127.0.0.1:{}/x", p.port);
    native(
        root,
        &[
            "invoke",
            "acme",
            "send",
            &json!({ "url": url }).to_string(),
            "--no-drain",
        ],
    );
    // WHEN a server takes them (its drain receives ten at a time and calls the partner for the
    // first) and is killed with SIGKILL while it holds them
    let mut s = Server::start(&native_bin(), root, false);
    let t = Instant::now();
    while p.seen.load(Ordering::SeqCst) == 0 {
        assert!(
            t.elapsed() < Duration::from_secs(30),
            "the server never called the partner"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    s.child.kill().unwrap();
    s.child.wait().unwrap();
    drop(s);
    // THEN a new server runs all ten within seconds of its start
    p.answer.store(true, Ordering::SeqCst);
    let started = Instant::now();
    let s = Server::start(&native_bin(), root, false);
    let mut done = 0;
    while started.elapsed() < Duration::from_secs(120) {
        done = invoke(&s.addr, &key, "count", &json!({}))
            .as_u64()
            .unwrap_or(0);
        if done == 10 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let took = started.elapsed();
    eprintln!(
        "after kill -9: {done} of 10 held messages ran {:.2} s after the restart",
        took.as_secs_f64()
    );
    assert_eq!(
        done, 10,
        "held messages still held {took:?} after the restart"
    );
    assert!(took < Duration::from_secs(10), "took {took:?}");
    drop(s);
}
