//! Arrivals per second and the waiters' release, in each wire form of the rendezvous API side by
//! side, against a running server (started by `tests/benches/rendezvous.sh`, which passes
//! `NATIVE_BENCH_API` and `NATIVE_BENCH_KEY`; without them this prints how to run it): the JSON
//! form over HTTP/1.1, Connect binary (`application/proto`) over HTTP/1.1 and gRPC over HTTP/2
//! (h2c), each request a real message of the shipped proto.
//!
//! - Arrivals: 16 connections, each sending ArriveAtBarrier one after another with a new
//!   `process_id`, for `NATIVE_BENCH_SECONDS` (default 10) per form, at one barrier of
//!   1 000 000 per form.
//! - Release: `NATIVE_BENCH_ROUNDS` (default 20) rounds per form of a barrier for 64: 63 arrive,
//!   64 waiters each hold a WaitAtBarrier on their own connection in the form, then the last
//!   peer arrives in the form; a release is a waiter's answer read, from just before the last
//!   arrival was sent.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::{http1, http2};
use hyper::Request;
use hyper_util::rt::{TokioExecutor, TokioIo};
use native_core::inbound::rendezvous::pb;
use prost::Message;
use serde_json::{json, Value};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Form {
    Json,
    Proto,
    Grpc,
}

impl Form {
    fn name(self) -> &'static str {
        match self {
            Form::Json => "JSON, HTTP/1.1",
            Form::Proto => "Connect binary, HTTP/1.1",
            Form::Grpc => "gRPC, HTTP/2",
        }
    }
}

enum Conn {
    H1(http1::SendRequest<Full<Bytes>>),
    H2(http2::SendRequest<Full<Bytes>>),
}

#[derive(Clone)]
struct Api {
    addr: String,
    path: String,
    key: String,
}

impl Api {
    async fn connect(&self, form: Form) -> Conn {
        let tcp = tokio::net::TcpStream::connect(&self.addr).await.unwrap();
        tcp.set_nodelay(true).unwrap();
        let io = TokioIo::new(tcp);
        if form == Form::Grpc {
            let (s, c) = http2::handshake(TokioExecutor::new(), io).await.unwrap();
            tokio::spawn(c);
            Conn::H2(s)
        } else {
            let (s, c) = http1::handshake(io).await.unwrap();
            tokio::spawn(c);
            Conn::H1(s)
        }
    }

    /// One call in `form`; the answer's message bytes (JSON text for the JSON form).
    async fn call(
        &self,
        conn: &mut Conn,
        form: Form,
        method: &str,
        msg: &(dyn Fn() -> Vec<u8> + Sync),
        json: &Value,
    ) -> Vec<u8> {
        let (ct, body) = match form {
            Form::Json => ("application/json", json.to_string().into_bytes()),
            Form::Proto => ("application/proto", msg()),
            Form::Grpc => {
                let m = msg();
                let mut b = vec![0];
                b.extend((m.len() as u32).to_be_bytes());
                b.extend(m);
                ("application/grpc", b)
            }
        };
        let req = Request::post(format!("http://{}{}/{method}", self.addr, self.path))
            .header("host", &self.addr)
            .header("content-type", ct)
            .header("te", "trailers")
            .header("authorization", format!("Bearer {}", self.key))
            .body(Full::new(Bytes::from(body)))
            .unwrap();
        let resp = match conn {
            Conn::H1(s) => {
                s.ready().await.unwrap();
                s.send_request(req).await.unwrap()
            }
            Conn::H2(s) => {
                s.ready().await.unwrap();
                s.send_request(req).await.unwrap()
            }
        };
        assert_eq!(resp.status(), 200, "{method}");
        let collected = resp.into_body().collect().await.unwrap();
        if form == Form::Grpc {
            let t = collected.trailers().cloned().expect("grpc trailers");
            assert_eq!(
                t["grpc-status"],
                "0",
                "{method}: {:?}",
                t.get("grpc-message")
            );
            collected.to_bytes()[5..].to_vec()
        } else {
            collected.to_bytes().to_vec()
        }
    }

    async fn arrive(&self, conn: &mut Conn, form: Form, barrier: &str, process: &str) {
        let m = pb::ArriveAtBarrierRequest {
            namespace_name: "default".into(),
            barrier_name: barrier.into(),
            process_id: process.into(),
            expected_generation: 1,
            ..Default::default()
        };
        let j = json!({ "namespace_name": "default", "barrier_name": barrier,
            "process_id": process, "expected_generation": 1 });
        self.call(conn, form, "ArriveAtBarrier", &|| m.encode_to_vec(), &j)
            .await;
    }

    async fn create(&self, barrier: &str, n: i64) {
        let mut c = self.connect(Form::Json).await;
        let j = json!({ "namespace_name": "default", "barrier_name": barrier,
            "expected_processes": n, "delete_inactive_after_seconds": 3600 });
        self.call(&mut c, Form::Json, "CreateBarrier", &Vec::new, &j)
            .await;
    }
}

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.total_cmp(b));
    v[((p / 100.0 * v.len() as f64) as usize).min(v.len() - 1)]
}

async fn arrivals(api: &Api, form: Form, secs: u64) {
    let barrier = format!("load-{form:?}");
    api.create(&barrier, 1_000_000).await;
    let until = Instant::now() + Duration::from_secs(secs);
    let lat = Arc::new(Mutex::new(Vec::new()));
    let tasks: Vec<_> = (0..16)
        .map(|t| {
            let (api, barrier, lat) = (api.clone(), barrier.clone(), lat.clone());
            tokio::spawn(async move {
                let mut c = api.connect(form).await;
                let mut n = 0;
                while Instant::now() < until {
                    n += 1;
                    let at = Instant::now();
                    api.arrive(&mut c, form, &barrier, &format!("t{t}-{n}"))
                        .await;
                    lat.lock()
                        .unwrap()
                        .push(at.elapsed().as_secs_f64() * 1000.0);
                }
            })
        })
        .collect();
    for t in tasks {
        t.await.unwrap();
    }
    let mut lat = lat.lock().unwrap().clone();
    println!(
        "{:<26} arrivals: {:>6.0}/s ({} in {secs} s, 16 connections), median {:.2} ms, p99 {:.2} ms",
        form.name(),
        lat.len() as f64 / secs as f64,
        lat.len(),
        pct(&mut lat, 50.0),
        pct(&mut lat, 99.0),
    );
}

async fn release(api: &Api, form: Form, rounds: usize) {
    let waiters = 64;
    let mut samples = Vec::new();
    for round in 0..rounds {
        let barrier = format!("rel-{form:?}-{round}");
        api.create(&barrier, waiters as i64).await;
        let mut setup = api.connect(Form::Json).await;
        for p in 0..waiters - 1 {
            api.arrive(&mut setup, Form::Json, &barrier, &format!("p{p}"))
                .await;
        }
        let done = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for _ in 0..waiters {
            let (api, barrier, done) = (api.clone(), barrier.clone(), done.clone());
            tasks.push(tokio::spawn(async move {
                let mut c = api.connect(form).await;
                let m = pb::WaitAtBarrierRequest {
                    namespace_name: "default".into(),
                    barrier_name: barrier.clone(),
                    expected_generation: 1,
                    timeout_seconds: 60,
                };
                let j = json!({ "namespace_name": "default", "barrier_name": barrier,
                    "expected_generation": 1, "timeout_seconds": 60 });
                let out = api
                    .call(&mut c, form, "WaitAtBarrier", &|| m.encode_to_vec(), &j)
                    .await;
                let at = Instant::now();
                let tripped = match form {
                    Form::Json => {
                        serde_json::from_slice::<Value>(&out).unwrap()["outcome"]
                            == "BARRIER_WAIT_OUTCOME_TRIPPED"
                    }
                    _ => pb::WaitAtBarrierResponse::decode(&out[..]).unwrap().outcome == 1,
                };
                assert!(tripped);
                done.lock().unwrap().push(at);
            }));
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
        let mut last = api.connect(form).await;
        let sent = Instant::now();
        api.arrive(&mut last, form, &barrier, "last").await;
        for t in tasks {
            t.await.unwrap();
        }
        samples.extend(
            done.lock()
                .unwrap()
                .iter()
                .map(|d| d.duration_since(sent).as_secs_f64() * 1000.0),
        );
    }
    println!(
        "{:<26} release of 64 waiters: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({} releases)",
        form.name(),
        pct(&mut samples, 50.0),
        pct(&mut samples, 99.0),
        samples.last().unwrap(),
        samples.len(),
    );
}

#[tokio::main]
async fn main() {
    let (Ok(url), Ok(key)) = (
        std::env::var("NATIVE_BENCH_API"),
        std::env::var("NATIVE_BENCH_KEY"),
    ) else {
        println!(
            "run tests/benches/rendezvous.sh: it starts native serve and passes the API and a key"
        );
        return;
    };
    let rest = url.strip_prefix("http://").expect("http:// URL");
    let (addr, path) = rest.split_at(rest.find('/').unwrap());
    let api = Api {
        addr: addr.into(),
        path: path.into(),
        key,
    };
    let env = |k: &str, d: u64| {
        std::env::var(k)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(d)
    };
    let secs = env("NATIVE_BENCH_SECONDS", 10);
    let rounds = env("NATIVE_BENCH_ROUNDS", 20) as usize;
    for form in [Form::Json, Form::Proto, Form::Grpc] {
        arrivals(&api, form, secs).await;
    }
    for form in [Form::Json, Form::Proto, Form::Grpc] {
        release(&api, form, rounds).await;
    }
}
