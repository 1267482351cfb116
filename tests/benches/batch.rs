//! Rows through `job:rows` into a Luau loop, for plain and gzipped parts, beside the same
//! machine's raw gunzip + sha256 + JSON parse of the same bytes, measured in the same run; and
//! the peak memory of reading, for parts of 10 MB and 1 GB.
//!
//! Run: `cargo bench -p native-tests --bench batch` (add `-- --big` for the 1 GB parts). Each
//! figure is the fastest of three alternating runs (one for 1 GB parts, or with
//! `NATIVE_BENCH_MB=N`, which runs parts of N MB only, as under callgrind).
//!
//! The peers a tenant would otherwise pick, Node.js and CPython (`benches/peers/rows.js` and
//! `rows.py`: whole file in memory, sha256, gunzip, a JSON parse per line, a sum), run on the
//! same bytes in the same alternation when `node` / `python3` are on the PATH (`NATIVE_BENCH_PEERS=0`
//! skips them), and our rows/s is printed as a ratio to each.

use std::io::{BufRead, Read, Write};
use std::time::Instant;

use native_core::ports::PutMode;
use native_tests::TestProject;
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const MB: usize = 1024 * 1024;

fn rows(size: usize) -> (Vec<u8>, u64) {
    let mut out = Vec::with_capacity(size + 256);
    let mut n = 0u64;
    while out.len() < size {
        writeln!(
            out,
            r#"{{"id":{n},"name":"customer-{n}","email":"c{n}@example.com","amount":{}.{:02},"active":{},"tags":["a","b{}"]}}"#,
            n * 7 % 10_000,
            n % 100,
            n.is_multiple_of(3),
            n % 10
        )
        .unwrap();
        n += 1;
    }
    (out, n)
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(
        Vec::with_capacity(data.len() / 4),
        flate2::Compression::fast(),
    );
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

#[inline(never)]
/// The baseline: sha256 of the stored bytes, gunzip when gzipped, and a serde_json parse of
/// every line, streaming from the stored object's file.
fn raw(file: std::fs::File, gz: bool) -> u64 {
    struct Hash<R>(R, Sha256);
    impl<R: Read> Read for Hash<R> {
        fn read(&mut self, b: &mut [u8]) -> std::io::Result<usize> {
            let n = self.0.read(b)?;
            self.1.update(&b[..n]);
            Ok(n)
        }
    }
    let f = std::io::BufReader::with_capacity(256 * 1024, Hash(file, Sha256::new()));
    let r: Box<dyn BufRead> = if gz {
        Box::new(std::io::BufReader::with_capacity(
            256 * 1024,
            flate2::bufread::MultiGzDecoder::new(f),
        ))
    } else {
        Box::new(f)
    };
    let mut n = 0;
    for line in r.split(b'\n') {
        let line = line.unwrap();
        if !line.is_empty() {
            let _: Value = serde_json::from_slice(&line).unwrap();
            n += 1;
        }
    }
    n
}

/// A peer's time for the part in `path` (its own clock, without its process start), or `None`
/// when the peer is not installed or peers are switched off.
fn peer(
    cmd: &str,
    script: &str,
    path: &std::path::Path,
    sha: &str,
    gz: bool,
    n: u64,
) -> Option<f64> {
    if std::env::var("NATIVE_BENCH_PEERS").is_ok_and(|v| v == "0") {
        return None;
    }
    let script = format!("{}/benches/peers/{script}", env!("CARGO_MANIFEST_DIR"));
    let out = std::process::Command::new(cmd)
        .arg(script)
        .arg(path)
        .arg(sha)
        .arg(if gz { "gzip" } else { "plain" })
        .output()
        .ok()?;
    assert!(
        out.status.success(),
        "{cmd}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["rows"], json!(n), "{cmd} counted other rows");
    v["seconds"].as_f64()
}

fn peak_rss_reset() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}

fn peak_rss_mb() -> f64 {
    let s = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

fn main() {
    let big = std::env::args().any(|a| a == "--big");
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let deployment = r#"{ "batch": { "bucket": "bench-batch", "prefix": "" } }"#;
    let count = r#"function on_invoke(ctx, ev)
        local job = native.batch.hydrate(ev)
        local n, sum = 0, 0
        for row in job:rows("r") do n += 1 sum += row.amount end
        return n
    end"#;
    let p = TestProject::with_tenants(
        deployment,
        &[(
            "b",
            r#"{ "batch": true, "limits": { "timeout_s": 900, "max_stream_mb": 65536 } }"#,
            &[("count", count)],
        )],
    );
    // NATIVE_BENCH_MB=10 runs one size (e.g. under `valgrind --tool=callgrind`).
    let one: Option<usize> = std::env::var("NATIVE_BENCH_MB")
        .ok()
        .and_then(|v| v.parse().ok());
    let sizes: Vec<usize> = match one {
        Some(mb) => vec![mb * MB],
        None if big => vec![10 * MB, 1024 * MB],
        None => vec![10 * MB, 100 * MB],
    };
    println!(
        "{:<28} {:>10} {:>10} {:>12} {:>10} {:>12}",
        "part", "rows", "MB", "rows/s", "MB/s", "of raw"
    );
    let scratch = std::env::temp_dir().join(format!("native-bench-peers-{}", std::process::id()));
    for &size in &sizes {
        for gz in [false, true] {
            let (plain, n) = rows(size);
            let stored = if gz { gzip(&plain) } else { plain.clone() };
            let mb = plain.len() as f64 / MB as f64;
            drop(plain);
            let sha = hex::encode(Sha256::digest(&stored));
            std::fs::write(&scratch, &stored).unwrap();
            let job = format!("j{size}{gz}");
            let manifest = json!({ "ok": true, "results": { "r": { "rows": n, "parts": [{ "key": "r.0000", "bytes": stored.len(), "sha256": sha }] } } });
            let state = json!({ "v": 1, "job": job, "continue_with": null, "state": {}, "queries": ["r"], "created_ms": 0 });
            let objects = &p.rt.services.backends.objects;
            rt.block_on(async {
                objects
                    .put(
                        "bench-batch",
                        &format!("b/jobs/{job}/r.0000"),
                        stored.into(),
                        PutMode::Overwrite,
                    )
                    .await
                    .unwrap();
                objects
                    .put(
                        "bench-batch",
                        &format!("b/jobs/{job}/done.json"),
                        manifest.to_string().into(),
                        PutMode::Overwrite,
                    )
                    .await
                    .unwrap();
                objects
                    .put(
                        "bench-batch",
                        &format!("b/state/{job}.json"),
                        state.to_string().into(),
                        PutMode::Overwrite,
                    )
                    .await
                    .unwrap();
            });
            // The raw baseline reads the very file the embedded backend stores the part in.
            let stored_file = || {
                let key = format!("b/jobs/{job}/r.0000");
                p.project
                    .backend
                    .open_object("bench-batch", &key)
                    .unwrap()
                    .unwrap()
                    .1
            };

            // The machine is shared: take the fastest of a few alternating runs of each.
            let tries = if size > 200 * MB || one.is_some() {
                1
            } else {
                3
            };
            let (mut raw_s, mut ours_s) = (f64::MAX, f64::MAX);
            let (mut node_s, mut python_s) = (None::<f64>, None::<f64>);
            let (mut before, mut peak) = (0.0, 0.0);
            for _ in 0..tries {
                let t = Instant::now();
                assert_eq!(raw(stored_file(), gz), n);
                raw_s = raw_s.min(t.elapsed().as_secs_f64());
                if let Some(s) = peer("node", "rows.js", &scratch, &sha, gz, n) {
                    node_s = Some(node_s.map_or(s, |b| b.min(s)));
                }
                if let Some(s) = peer("python3", "rows.py", &scratch, &sha, gz, n) {
                    python_s = Some(python_s.map_or(s, |b| b.min(s)));
                }

                peak_rss_reset();
                before = peak_rss_mb();
                let t = Instant::now();
                let got = rt
                    .block_on(p.invoke("b", "count", json!({ "job": job })))
                    .unwrap();
                ours_s = ours_s.min(t.elapsed().as_secs_f64());
                peak = peak_rss_mb();
                assert_eq!(got, json!(n));
            }
            let label = format!("{} MB {}", size / MB, if gz { "gzip" } else { "plain" });
            println!(
                "{:<28} {:>10} {:>10.0} {:>12.0} {:>10.1} {:>12}",
                format!("raw: {label}"),
                n,
                mb,
                n as f64 / raw_s,
                mb / raw_s,
                "100%"
            );
            println!(
                "{:<28} {:>10} {:>10.0} {:>12.0} {:>10.1} {:>11.0}%   peak RSS {:.0} MB (process before: {:.0} MB)",
                format!("job:rows: {label}"),
                n,
                mb,
                n as f64 / ours_s,
                mb / ours_s,
                100.0 * raw_s / ours_s,
                peak,
                before
            );
            for (name, s) in [("Node.js", node_s), ("CPython", python_s)] {
                if let Some(s) = s {
                    println!(
                        "{:<28} {:>10} {:>10.0} {:>12.0} {:>10.1} {:>12}   job:rows is {:.2}x",
                        format!("{name}: {label}"),
                        n,
                        mb,
                        n as f64 / s,
                        mb / s,
                        format!("{:.0}%", 100.0 * raw_s / s),
                        s / ours_s
                    );
                }
            }
            rt.block_on(async {
                objects
                    .delete("bench-batch", &format!("b/jobs/{job}/r.0000"))
                    .await
                    .unwrap()
            });
        }
    }
    let _ = std::fs::remove_file(&scratch);
}
