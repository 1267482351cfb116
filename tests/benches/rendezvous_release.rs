//! The time from the last arrival at a rendezvous barrier to each waiter's release, over HTTP
//! against a running server (started by `tests/benches/rendezvous.sh`, which passes
//! `NATIVE_BENCH_API` and `NATIVE_BENCH_KEY`; without them this prints how to run it).
//!
//! Each round: a barrier for 64; 63 arrive; 64 threads call WaitAtBarrier, each on its own
//! connection; after a pause that lets every wait park, the last peer arrives. A release is
//! when a waiter has read its response, measured from just before the last arrival was sent:
//! it includes the tripping request itself.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

fn call(addr: &str, path: &str, key: &str, method: &str, body: &Value) -> Value {
    let body = body.to_string();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_nodelay(true).unwrap();
    let req = format!(
        "POST {path}/{method} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nContent-Type: application/json\r\nAuthorization: Bearer {key}\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    let (head, body) = resp.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{method}: {resp}");
    serde_json::from_str(body).unwrap()
}

fn main() {
    let (Ok(api), Ok(key)) = (
        std::env::var("NATIVE_BENCH_API"),
        std::env::var("NATIVE_BENCH_KEY"),
    ) else {
        println!(
            "run tests/benches/rendezvous.sh: it starts native serve and passes the API and a key"
        );
        return;
    };
    let rest = api.strip_prefix("http://").expect("http:// URL");
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    let (addr, path, key) = (addr.to_string(), path.to_string(), key);
    let waiters: usize = 64;
    let rounds: usize = std::env::var("NATIVE_BENCH_ROUNDS")
        .ok()
        .and_then(|r| r.parse().ok())
        .unwrap_or(30);
    let mut samples: Vec<f64> = Vec::new();
    let mut trip_ms: Vec<f64> = Vec::new();
    for round in 0..rounds {
        let name = format!("rel{round}");
        let b = |extra: Value| {
            let mut v = json!({ "namespace_name": "default", "barrier_name": name });
            v.as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            v
        };
        call(
            &addr,
            &path,
            &key,
            "CreateBarrier",
            &b(json!({
            "expected_processes": waiters, "delete_inactive_after_seconds": 3600 })),
        );
        for p in 0..waiters - 1 {
            call(
                &addr,
                &path,
                &key,
                "ArriveAtBarrier",
                &b(json!({
                "process_id": format!("p{p}"), "expected_generation": 1 })),
            );
        }
        let done = Arc::new(Mutex::new(Vec::new()));
        let threads: Vec<_> = (0..waiters)
            .map(|_| {
                let (addr, path, key, done) =
                    (addr.clone(), path.clone(), key.clone(), done.clone());
                let body = b(json!({ "expected_generation": 1, "timeout_seconds": 60 }));
                std::thread::spawn(move || {
                    let out = call(&addr, &path, &key, "WaitAtBarrier", &body);
                    let at = Instant::now();
                    assert_eq!(out["outcome"], "BARRIER_WAIT_OUTCOME_TRIPPED");
                    done.lock().unwrap().push(at);
                })
            })
            .collect();
        std::thread::sleep(Duration::from_millis(500));
        let sent = Instant::now();
        call(
            &addr,
            &path,
            &key,
            "ArriveAtBarrier",
            &b(json!({
            "process_id": "last", "expected_generation": 1 })),
        );
        trip_ms.push(sent.elapsed().as_secs_f64() * 1000.0);
        for t in threads {
            t.join().unwrap();
        }
        samples.extend(
            done.lock()
                .unwrap()
                .iter()
                .map(|d| d.duration_since(sent).as_secs_f64() * 1000.0),
        );
    }
    let pct = |v: &mut Vec<f64>, p: f64| {
        v.sort_by(|a, b| a.total_cmp(b));
        v[((p / 100.0 * v.len() as f64) as usize).min(v.len() - 1)]
    };
    println!(
        "{} releases ({rounds} rounds of {waiters} waiters): p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms; the tripping arrival's own response: p50 {:.1} ms",
        samples.len(),
        pct(&mut samples, 50.0),
        pct(&mut samples, 99.0),
        samples.last().unwrap(),
        pct(&mut trip_ms, 50.0),
    );
}
